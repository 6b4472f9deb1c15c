//! Errors returned by the directory.
//!
//! "Not found" is never an error: queries return `Ok(None)` (or an empty
//! result) for unknown ids so callers can build helpful messages. Errors are
//! reserved for problems an operator has to fix (bad URL, unreadable file,
//! broken schema).

use tokio_postgres::error::SqlState;

/// Everything that can go wrong while opening or querying the directory.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    /// The database URL uses a scheme this build does not support.
    #[error(
        "unsupported database URL `{url}`: supported forms are `sqlite://PATH` \
         (file, created if missing), `sqlite::memory:` (in-memory, for tests) and \
         `postgres://USER@HOST:PORT/DATABASE` (an existing PostgreSQL database)"
    )]
    UnsupportedUrl {
        /// The URL as given by the caller.
        url: String,
    },

    /// The database could not be opened or reached.
    #[error("employee database is unavailable: {message}")]
    Unavailable {
        /// Why, in a form callers can branch on (see [`UnavailableReason`]).
        reason: UnavailableReason,
        /// What was attempted, what failed and what to check.
        message: String,
        /// The underlying driver error, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
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

    /// A PostgreSQL query failed (not a connection problem: those are
    /// [`DirectoryError::Unavailable`]).
    #[error("employee database query failed ({context}): {}", pg_detail(.source))]
    Postgres {
        /// Which operation failed.
        context: &'static str,
        /// The underlying driver error.
        #[source]
        source: tokio_postgres::Error,
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

/// Why the database is unavailable, so that a caller can tell the model or
/// operator what to do without parsing messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnavailableReason {
    /// The database file was deleted or moved away while serving; it is not
    /// recreated (that would serve an empty directory). Calls succeed again
    /// only if the same file is moved back; a copy put back is
    /// [`UnavailableReason::Replaced`].
    Missing,
    /// Another file took the database file's place while serving (a
    /// rename onto the path, a backup copied back): it is refused until
    /// the directory is reopened (the server restarted), since SQLite
    /// could pair it with the old file's WAL.
    Replaced,
    /// A file exists at the path but is not an employee database (not
    /// SQLite, or the schema/migrations are missing or from another version).
    NotEmployeeDatabase,
    /// Another process held a lock on the database for longer than the busy
    /// timeout.
    Locked,
    /// No pooled connection became free within the acquire timeout (the
    /// server is overloaded or a query is stuck).
    Overloaded,
    /// The database server cannot be reached or dropped the connection
    /// (stopped, restarting, network down). Calls succeed again once it is
    /// back; the pool reconnects by itself.
    Unreachable,
    /// A query ran longer than the statement timeout and was cancelled.
    TimedOut,
    /// Anything else: the file cannot be opened or created, the pool shut
    /// down, the in-memory database was lost, the server refused the login.
    Other,
}

impl UnavailableReason {
    /// Whether retrying the same call later may succeed without an operator
    /// doing anything.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            UnavailableReason::Locked
                | UnavailableReason::Overloaded
                | UnavailableReason::Unreachable
                | UnavailableReason::TimedOut
        )
    }
}

impl DirectoryError {
    /// Why the database is unavailable, for [`DirectoryError::Unavailable`].
    pub fn unavailable_reason(&self) -> Option<UnavailableReason> {
        match self {
            DirectoryError::Unavailable { reason, .. } => Some(*reason),
            _ => None,
        }
    }

    /// An [`DirectoryError::Unavailable`] without a driver error.
    pub(crate) fn unavailable(reason: UnavailableReason, message: String) -> DirectoryError {
        DirectoryError::Unavailable {
            reason,
            message,
            source: None,
        }
    }

    /// Wraps a PostgreSQL error raised by the named operation; connection
    /// failures become [`DirectoryError::Unavailable`].
    pub(crate) fn pg(
        context: &'static str,
    ) -> impl FnOnce(tokio_postgres::Error) -> DirectoryError {
        move |source| classify_pg(context, source)
    }

    /// Wraps a driver error raised by the named operation.
    pub(crate) fn db(context: &'static str) -> impl FnOnce(rusqlite::Error) -> DirectoryError {
        move |source| DirectoryError::Database { context, source }
    }
}

/// The server's message for a PostgreSQL error (its `Display` only says
/// "db error").
fn pg_detail(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => error.to_string(),
    }
}

/// Maps a query error: connection losses and server shutdowns become
/// [`UnavailableReason::Unreachable`], cancelled statements
/// [`UnavailableReason::TimedOut`], a missing schema
/// [`UnavailableReason::NotEmployeeDatabase`]; the rest are query failures.
pub(crate) fn classify_pg(context: &'static str, error: tokio_postgres::Error) -> DirectoryError {
    let unavailable = |reason, message: String, error| DirectoryError::Unavailable {
        reason,
        message,
        source: Some(Box::new(error)),
    };
    let code = error.code().cloned();
    let io = std::error::Error::source(&error).is_some_and(|s| s.is::<std::io::Error>());
    if error.is_closed() || io {
        return unavailable(
            UnavailableReason::Unreachable,
            format!(
                "the connection to PostgreSQL was lost during {context} ({error}); the server \
                 may be restarting, the call can be retried"
            ),
            error,
        );
    }
    let Some(code) = code else {
        return DirectoryError::Postgres {
            context,
            source: error,
        };
    };
    let class = &code.code()[..2];
    if class == "08" || class == "57" && code != SqlState::QUERY_CANCELED {
        unavailable(
            UnavailableReason::Unreachable,
            format!(
                "PostgreSQL is shutting down or restarting ({error}) during {context}; the call \
                 can be retried"
            ),
            error,
        )
    } else if code == SqlState::QUERY_CANCELED {
        unavailable(
            UnavailableReason::TimedOut,
            format!(
                "{context} exceeded the statement timeout and was cancelled; raise \
                 --db-statement-timeout or check the server's load"
            ),
            error,
        )
    } else if code == SqlState::UNDEFINED_TABLE || code == SqlState::UNDEFINED_COLUMN {
        unavailable(
            UnavailableReason::NotEmployeeDatabase,
            format!(
                "the PostgreSQL database has no employee schema ({error}); point --database at \
                 the employee database or restart the server to migrate it"
            ),
            error,
        )
    } else {
        DirectoryError::Postgres {
            context,
            source: error,
        }
    }
}
