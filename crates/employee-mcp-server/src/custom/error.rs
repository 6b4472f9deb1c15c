//! Why a custom-tool connection, definition file or reader role could not
//! be set up. A definition's own faults are [`super::spec::DefinitionError`]
//! and a call's are [`super::sqlite::RunError`].

use std::path::PathBuf;

use mcpwire_cluster::db_message;

use super::spec::MAX_FILE_BYTES;

/// A custom-tool setup error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The database file did not open read-only.
    #[error("cannot open {} read-only: {source}", path.display())]
    OpenReadOnly {
        /// The directory's file.
        path: PathBuf,
        /// SQLite's reason.
        source: rusqlite::Error,
    },
    /// The busy timeout could not be set.
    #[error("cannot configure the read-only connection: {0}")]
    Configure(#[source] rusqlite::Error),
    /// The value-length bound could not be set.
    #[error("cannot bound the read-only connection: {0}")]
    Bound(#[source] rusqlite::Error),
    /// The authorizer could not be installed.
    #[error("cannot install the authorizer: {0}")]
    Authorizer(#[source] rusqlite::Error),
    /// A definition file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// A definition file is over [`MAX_FILE_BYTES`].
    #[error("{} is over the limit of {MAX_FILE_BYTES} bytes", path.display())]
    FileTooLarge {
        /// The file.
        path: PathBuf,
    },
    /// A definition file is not text.
    #[error("{} is not UTF-8 text", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// A reader role name PostgreSQL would need quoted.
    #[error("invalid reader role {0:?}: use lowercase letters, digits and '_' (at most 63)")]
    InvalidRole(String),
    /// No PostgreSQL connection could be had from the pool.
    #[error("cannot reach PostgreSQL: {0}")]
    Unreachable(#[from] deadpool_postgres::PoolError),
    /// A PostgreSQL statement failed.
    #[error("{}", db_message(.0))]
    Postgres(#[from] tokio_postgres::Error),
    /// The user may not create or grant the reader role; a DBA must.
    #[error(
        "cannot set up the read-only role {role:?} for custom tools ({what}: {}); the user {user:?} may not do it, so a DBA must run once:\n{grants}",
        db_message(.source)
    )]
    RoleRefused {
        /// The reader role.
        role: String,
        /// The statement refused (`CREATE ROLE`, `GRANT role`, `GRANT SELECT`).
        what: &'static str,
        /// PostgreSQL's refusal.
        source: tokio_postgres::Error,
        /// The connecting user.
        user: String,
        /// What a DBA must run.
        grants: String,
    },
    /// The reader role can read tables custom tools must not reach.
    #[error(
        "the custom-tool role {role:?} can read more than the directory ({tables}); custom tools must not reach them: REVOKE SELECT ON {tables} FROM {role} (and make sure it is not a superuser)"
    )]
    RoleTooWide {
        /// The reader role.
        role: String,
        /// The extra tables, comma-separated.
        tables: String,
    },
}
