//! State shared by replicas of the server on one PostgreSQL database:
//! legacy sessions, events between replicas, tasks, rate limits and the
//! request-state key. On SQLite (one process) the library's in-memory
//! defaults are used and nothing here runs.
//!
//! Each concern is one file; each owns its tables, created by
//! [`migrate`] in order.

pub mod bus;
pub mod key;
pub mod limits;
pub mod sessions;
pub mod shares;
pub mod slices;
pub mod tasks;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use mcpwire_server::AccessOptions;
use mcpwire_server::access::CallLimiter;
use mcpwire_server::shared::Shared;
use mcpwire_server::tasks::TaskBackend;

/// `CREATE … IF NOT EXISTS` statements of every shared-state table, applied
/// in order at startup (idempotent, so replicas may start together).
const MIGRATIONS: &[&str] = &[
    sessions::MIGRATION,
    bus::MIGRATION,
    key::MIGRATION,
    tasks::MIGRATION,
    limits::MIGRATION,
    slices::MIGRATION,
    shares::MIGRATION,
];

/// A pool of at most `size` connections for the shared state; getting a
/// connection (or making one) fails after `timeout` rather than hanging
/// when the database is down.
pub fn pool(url: &str, size: usize, timeout: Duration) -> Result<Pool, String> {
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e| format!("invalid PostgreSQL URL for the shared state: {e}"))?;
    config.connect_timeout(timeout);
    let manager = Manager::from_config(
        config,
        tokio_postgres::NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size.max(1))
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(timeout))
        .create_timeout(Some(timeout))
        .recycle_timeout(Some(timeout))
        .build()
        .map_err(|e| format!("cannot set up the PostgreSQL pool for the shared state: {e}"))
}

/// What a replica shares with the others through PostgreSQL.
pub struct Replication {
    /// Sessions and the bus, for `ServerBuilder::shared`.
    pub shared: Shared,
    /// The cluster's request-state key (unless a key file is given).
    pub key: [u8; 32],
    /// Task records, for `ServerBuilder::task_backend`.
    pub tasks: Arc<dyn TaskBackend>,
    /// Rate and concurrency limits, for `ServerBuilder::limiter`.
    pub limiter: Arc<dyn CallLimiter>,
    /// The same limits, to give unspent tokens back at shutdown.
    pub limits: Arc<limits::PgLimiter>,
}

/// Connects the shared state on PostgreSQL: tables, key, sessions, bus,
/// tasks and limits, on one pool of `size` connections.
pub async fn connect(url: &str, size: usize, timeout: Duration) -> Result<Replication, String> {
    let pool = pool(url, size, timeout)?;
    migrate(&pool).await?;
    let key = key::shared(&pool).await?;
    let bus = bus::PgBus::start(url, pool.clone())?;
    let mut shared = Shared::new(Arc::new(sessions::PgSessions::new(pool.clone())), bus);
    shared.timeout = timeout;
    let defaults = AccessOptions::default();
    let limits = limits::PgLimitOptions {
        timeout,
        idle_ttl: defaults.idle_bucket_ttl,
        max_buckets: defaults.max_tracked_callers,
        lease_ttl: limits::LEASE_TTL,
    };
    let tasks = Arc::new(tasks::PgTasks::new(pool.clone(), timeout));
    let limits = limits::PgLimiter::new(pool, limits);
    Ok(Replication {
        shared,
        key,
        tasks,
        limiter: Arc::new(limits::SharedLimiter(Arc::clone(&limits))),
        limits,
    })
}

/// The server's own words for a database error (tokio-postgres prints
/// only "db error"), else the driver's.
pub fn db_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => e.to_string(),
    }
}

/// Creates the shared-state tables if missing.
pub async fn migrate(pool: &Pool) -> Result<(), String> {
    let mut client = pool
        .get()
        .await
        .map_err(|e| format!("cannot reach PostgreSQL for the shared state: {e}"))?;
    let failed = |e: tokio_postgres::Error| {
        format!(
            "creating the shared-state tables failed: {}",
            db_message(&e)
        )
    };
    let tx = client.transaction().await.map_err(failed)?;
    // Replicas starting together would race on `CREATE … IF NOT EXISTS`.
    tx.batch_execute("SELECT pg_advisory_xact_lock(7402117001)")
        .await
        .map_err(failed)?;
    for sql in MIGRATIONS {
        tx.batch_execute(sql).await.map_err(failed)?;
    }
    tx.commit().await.map_err(failed)
}

#[cfg(test)]
#[path = "../../../scripts/pg_scratch.rs"]
#[allow(dead_code)]
mod pg;

/// Test helpers: a migrated pool on a fresh database of the scratch cluster.
#[cfg(test)]
pub mod testing {
    pub use super::pg::{fresh_database, psql};

    /// A fresh database's URL and a migrated pool on it.
    pub async fn fresh_pool() -> (String, deadpool_postgres::Pool) {
        let url = tokio::task::spawn_blocking(fresh_database)
            .await
            .expect("fresh database");
        let pool = super::pool(&url, 4, std::time::Duration::from_secs(5)).expect("pool");
        super::migrate(&pool).await.expect("migrate");
        (url, pool)
    }

    /// Rows in a table.
    pub fn psql_count(url: &str, table: &str) -> i64 {
        psql(url, &format!("SELECT count(*) FROM {table}"))
            .parse()
            .expect("a count")
    }
}
