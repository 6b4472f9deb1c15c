//! Errors returned by the directory.
//!
//! "Not found" is never an error: queries return `Ok(None)` (or an empty
//! result) for unknown ids so callers can build helpful messages. Errors are
//! reserved for problems an operator has to fix (bad URL, unreadable file,
//! broken schema).

/// Everything that can go wrong while opening or querying the directory.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    /// The database URL uses a scheme this build does not support.
    #[error(
        "unsupported database URL `{url}`: supported forms are `sqlite://PATH` \
         (file, created if missing) and `sqlite::memory:` (in-memory, for tests)"
    )]
    UnsupportedUrl {
        /// The URL as given by the caller.
        url: String,
    },

    /// The database could not be opened or reached.
    #[error("employee database is unavailable: {message}")]
    Unavailable {
        /// What was attempted, what failed and what to check.
        message: String,
        /// The underlying driver error, when there is one.
        #[source]
        source: Option<rusqlite::Error>,
    },

    /// A query failed.
    #[error("employee database query failed ({context}): {source}")]
    Database {
        /// Which operation failed.
        context: &'static str,
        /// The underlying driver error.
        #[source]
        source: rusqlite::Error,
    },

    /// Applying a schema migration failed.
    #[error("schema migration {version} ({name}) failed: {message}")]
    Migration {
        /// Migration version number.
        version: u32,
        /// Migration file name.
        name: &'static str,
        /// What went wrong and what to do about it.
        message: String,
    },

    /// Inserting the seed data failed.
    #[error("seeding the employee database failed: {0}")]
    Seed(String),

    /// A blocking database task panicked or was cancelled.
    #[error("database worker task failed: {0}")]
    TaskJoin(#[from] tokio::task::JoinError),
}

impl DirectoryError {
    /// Wraps a driver error raised by the named operation.
    pub(crate) fn db(context: &'static str) -> impl FnOnce(rusqlite::Error) -> DirectoryError {
        move |source| DirectoryError::Database { context, source }
    }
}
