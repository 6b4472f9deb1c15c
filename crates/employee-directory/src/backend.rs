//! The database seam: one variant per supported backend.
//!
//! `Directory` only talks to [`Backend`]: SQLite or PostgreSQL, as the
//! [`DatabaseUrl`] says. Another backend would be a module with the same
//! methods, a variant here and in `DatabaseUrl`, and an arm in `dispatch!`
//! (in `lib.rs`).

use crate::database_url::DatabaseUrl;
use crate::error::DirectoryError;
use crate::options::DirectoryOptions;
use crate::postgres::PostgresBackend;
use crate::sqlite::{SqliteBackend, Target};

pub(crate) enum Backend {
    Sqlite(SqliteBackend),
    /// Boxed: its pool and watcher make it much larger than the SQLite one.
    Postgres(Box<PostgresBackend>),
}

impl Backend {
    /// Opens the backend `url` names.
    pub(crate) async fn open(
        url: &DatabaseUrl,
        options: DirectoryOptions,
    ) -> Result<Backend, DirectoryError> {
        Ok(match url {
            DatabaseUrl::Sqlite { path, .. } => {
                Backend::Sqlite(SqliteBackend::open(Target::File(path.clone()), options).await?)
            }
            DatabaseUrl::Memory => {
                Backend::Sqlite(SqliteBackend::open(Target::Memory, options).await?)
            }
            DatabaseUrl::Postgres(url) => {
                Backend::Postgres(Box::new(PostgresBackend::open(url, options).await?))
            }
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
