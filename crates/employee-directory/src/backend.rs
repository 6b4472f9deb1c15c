//! The database seam: one variant per supported backend.
//!
//! `Directory` only talks to [`Backend`]; adding PostgreSQL means adding a
//! `postgres` module with the same methods, a variant here, a URL scheme in
//! [`Backend::open`] and an arm in `dispatch!` (in `lib.rs`).

use crate::error::DirectoryError;
use crate::options::DirectoryOptions;
use crate::postgres::{self, PostgresBackend};
use crate::sqlite::{self, SqliteBackend};

pub(crate) enum Backend {
    Sqlite(SqliteBackend),
    /// Boxed: its pool and watcher make it much larger than the SQLite one.
    Postgres(Box<PostgresBackend>),
}

impl Backend {
    /// Opens the backend named by the URL scheme.
    pub(crate) async fn open(
        url: &str,
        options: DirectoryOptions,
    ) -> Result<Backend, DirectoryError> {
        if let Some(target) = sqlite::parse_url(url) {
            return Ok(Backend::Sqlite(
                SqliteBackend::open(target?, options).await?,
            ));
        }
        if postgres::is_url(url) {
            return Ok(Backend::Postgres(Box::new(
                PostgresBackend::open(url.trim(), options).await?,
            )));
        }
        Err(DirectoryError::UnsupportedUrl {
            url: url.to_string(),
        })
    }

    /// Short backend name for logs and health output.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }
}
