//! Tunable bounds of a [`crate::Directory`].

use std::time::Duration;

/// Default for [`DirectoryOptions::busy_timeout`].
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Default for [`DirectoryOptions::acquire_timeout`].
pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// Default for [`DirectoryOptions::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// Default for [`DirectoryOptions::statement_timeout`].
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// Bounds on how long a query may wait before it fails with
/// [`crate::DirectoryError::Unavailable`], so that calls never stall
/// indefinitely behind another process or stuck work.
///
/// A call waits at most `acquire_timeout` for a pooled connection, then at
/// most `busy_timeout` for each SQLite lock it needs (SQLite) or at most
/// `statement_timeout` per query (PostgreSQL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirectoryOptions {
    /// How long a query waits on a database locked by another connection or
    /// process before failing with [`crate::UnavailableReason::Locked`].
    pub busy_timeout: Duration,
    /// How long a query waits for a free pooled connection before failing
    /// with [`crate::UnavailableReason::Overloaded`].
    pub acquire_timeout: Duration,
    /// Most connections the pool opens. SQLite uses fewer when the machine
    /// has fewer cores (at most 8); PostgreSQL opens up to this many per
    /// server process, so replicas × this must stay below the server's
    /// `max_connections`.
    pub max_connections: usize,
    /// PostgreSQL only: the server cancels a query running longer than this
    /// (`statement_timeout` of every connection), and the client gives up
    /// on an unresponsive server after it.
    pub statement_timeout: Duration,
    /// Bytes (of JSON) of answers kept in memory while the directory is
    /// unchanged, so repeated reads run no SQL; 0 turns the cache off.
    /// Default [`crate::DEFAULT_CACHE_BYTES`].
    pub cache_bytes: usize,
    /// People in the company seeded into an empty database: `None` is the
    /// demo company (about 1,400 people), `Some(n)` a generated company of
    /// exactly `n` ([`crate::MIN_DEMO_EMPLOYEES`] to
    /// [`crate::MAX_DEMO_EMPLOYEES`]). A database that already has
    /// employees is never reseeded.
    pub demo_employees: Option<u32>,
    /// Whether a new (empty) database is filled with the demo company;
    /// `false` leaves it empty for an import (`--no-demo-data`).
    pub demo_data: bool,
}

impl Default for DirectoryOptions {
    fn default() -> Self {
        DirectoryOptions {
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            acquire_timeout: DEFAULT_ACQUIRE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            statement_timeout: DEFAULT_STATEMENT_TIMEOUT,
            cache_bytes: crate::DEFAULT_CACHE_BYTES,
            demo_employees: None,
            demo_data: true,
        }
    }
}

/// The database every command uses when none is given: a SQLite file in
/// the working directory.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://employees.db";
