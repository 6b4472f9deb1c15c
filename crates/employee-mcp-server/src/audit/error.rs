//! What can go wrong with the audit trail, as values. A call whose record
//! fails is refused with the message (through the library's `AuditSink`,
//! which speaks `String`); the `audit` command prints it.

use std::borrow::Cow;
use std::time::Duration;

use employee_directory::pinned::PinError;
use mcpwire_cluster::db_message;

/// An audit trail failure; the message names what the trail was doing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// SQLite failed while doing what `doing` says.
    #[error("{doing}: {source}")]
    Sqlite {
        doing: Cow<'static, str>,
        #[source]
        source: rusqlite::Error,
    },
    /// PostgreSQL failed; `message` is the server's own words (with the
    /// detail tokio-postgres keeps apart).
    #[error("{doing}: {message}")]
    Postgres {
        doing: Cow<'static, str>,
        message: String,
    },
    /// A file, thread or runtime the trail needs could not be had.
    #[error("{doing}: {source}")]
    Io {
        doing: Cow<'static, str>,
        #[source]
        source: std::io::Error,
    },
    /// The trail file could not be pinned or opened through its pin.
    #[error("{doing}{sep}{source}", sep = if doing.is_empty() { "" } else { ": " })]
    Pinned {
        doing: Cow<'static, str>,
        #[source]
        source: PinError,
    },
    /// The database cannot hold or serve a trail as asked (not a trail
    /// file, not a SQLite database, no audit table).
    #[error("{0}")]
    Unusable(String),
    /// PostgreSQL did not answer within the trail's bound.
    #[error("{what} did not answer within {} s", .within.as_secs())]
    NoAnswer {
        what: &'static str,
        within: Duration,
    },
    /// The writer thread is gone (stopped or panicked).
    #[error("the audit writer has stopped")]
    Stopped,
    /// The writer's queue is full: the disk is far behind.
    #[error("the audit writer is behind (queue full)")]
    Behind,
    /// The caller waited the whole commit timeout.
    #[error("the audit commit did not finish within {} s", .0.as_secs())]
    CommitTimeout(Duration),
}

impl Error {
    /// Maps a SQLite error, for `map_err`.
    pub(crate) fn sqlite(
        doing: impl Into<Cow<'static, str>>,
    ) -> impl FnOnce(rusqlite::Error) -> Error {
        let doing = doing.into();
        move |source| Error::Sqlite { doing, source }
    }

    /// Maps a PostgreSQL error, for `map_err`.
    pub(crate) fn postgres(
        doing: impl Into<Cow<'static, str>>,
    ) -> impl FnOnce(tokio_postgres::Error) -> Error {
        let doing = doing.into();
        move |e| Error::Postgres {
            doing,
            message: db_message(&e),
        }
    }

    /// Maps a pinning error, for `map_err`; an empty `doing` shows the
    /// pin's own message alone.
    pub(crate) fn pinned(doing: impl Into<Cow<'static, str>>) -> impl FnOnce(PinError) -> Error {
        let doing = doing.into();
        move |source| Error::Pinned { doing, source }
    }

    /// Maps an I/O error, for `map_err`.
    pub(crate) fn io(doing: impl Into<Cow<'static, str>>) -> impl FnOnce(std::io::Error) -> Error {
        let doing = doing.into();
        move |source| Error::Io { doing, source }
    }
}

/// The library's audit sink (`AuditSink::record`) speaks `String`.
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}
