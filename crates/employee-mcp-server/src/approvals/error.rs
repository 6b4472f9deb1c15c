//! Why an approvals read or decision failed, or why the `approvals`
//! command refused. Each variant prints the text the command line has
//! always shown for it.

use std::path::PathBuf;

use mcpwire_cluster::db_message;

/// An approvals error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No approval has that id (a decision).
    #[error("no approval {0}; `approvals list` shows the pending ones")]
    NotFound(String),
    /// No approval has that id (`approvals show`).
    #[error("no approval {0}")]
    NoApproval(String),
    /// It is not pending any more.
    #[error("approval {id} is {status}; only a pending approval can be decided")]
    NotPending {
        /// The approval.
        id: String,
        /// Where it stands.
        status: String,
    },
    /// The approver asked for the call.
    #[error("{0} asked for this call; an approver cannot decide their own call")]
    OwnCall(String),
    /// An in-memory database: no other process sees its approvals.
    #[error(
        "an in-memory database has no approvals another process can see; use a sqlite:// file or PostgreSQL"
    )]
    InMemory,
    /// The trail file could not be opened.
    #[error("cannot open the approvals in {}: {source}", path.display())]
    Open {
        /// The audit trail's file.
        path: PathBuf,
        /// SQLite's reason.
        source: rusqlite::Error,
    },
    /// A SQLite statement failed.
    #[error("approvals (SQLite): {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A PostgreSQL statement failed.
    #[error("approvals (PostgreSQL): {}", db_message(.0))]
    Postgres(#[from] tokio_postgres::Error),
    /// No PostgreSQL connection could be had from the pool.
    #[error("approvals: cannot reach PostgreSQL: {0}")]
    Unreachable(#[from] deadpool_postgres::PoolError),
    /// The PostgreSQL pool could not be built (the cluster crate's text).
    #[error("{0}")]
    Pool(String),
    /// A blocking task died.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
    /// A row could not be printed as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl Error {
    /// Whether the store failed (rather than the decision being refused).
    pub fn is_store(&self) -> bool {
        !matches!(
            self,
            Self::NotFound(_) | Self::NoApproval(_) | Self::NotPending { .. } | Self::OwnCall(_)
        )
    }
}
