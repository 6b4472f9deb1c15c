//! State shared by replicas of the server on one PostgreSQL database:
//! legacy sessions, events between replicas, tasks, rate limits and the
//! request-state key. On SQLite (one process) the library's in-memory
//! defaults are used and nothing here runs.
//!
//! Each concern is one file; each owns its tables, created by
//! [`migrate`] in order.

pub mod bus;
pub mod key;
pub mod sessions;

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Pool, Runtime};
use mcp_server::shared::Shared;

/// `CREATE … IF NOT EXISTS` statements of every shared-state table, applied
/// in order at startup (idempotent, so replicas may start together).
const MIGRATIONS: &[&str] = &[sessions::MIGRATION, bus::MIGRATION, key::MIGRATION];

/// Whether a `--database` value names PostgreSQL.
pub fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// A pool on `url` whose waits are bounded (an outage fails requests
/// instead of hanging them).
pub fn pool(url: &str, size: usize, timeout: Duration) -> Result<Pool, String> {
    let config: tokio_postgres::Config = url
        .parse()
        .map_err(|e| format!("invalid PostgreSQL URL: {e}"))?;
    let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
    Pool::builder(manager)
        .max_size(size.max(1))
        .wait_timeout(Some(timeout))
        .create_timeout(Some(timeout))
        .recycle_timeout(Some(timeout))
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|e| format!("cannot build the PostgreSQL pool: {e}"))
}

/// What a replica shares with the others.
pub struct Replication {
    /// Sessions and the bus, for `ServerBuilder::shared`.
    pub shared: Shared,
    /// The cluster's request-state key (unless a key file is given).
    pub key: [u8; 32],
}

/// Connects the shared state on PostgreSQL: tables, key, sessions, bus.
pub async fn connect(url: &str, size: usize, timeout: Duration) -> Result<Replication, String> {
    let pool = pool(url, size, timeout)?;
    migrate(&pool).await?;
    let key = key::shared(&pool).await?;
    let bus = bus::PgBus::start(url, pool.clone())?;
    let mut shared = Shared::new(Arc::new(sessions::PgSessions::new(pool)), bus);
    shared.timeout = timeout;
    Ok(Replication { shared, key })
}

/// Creates the shared-state tables if missing.
pub async fn migrate(pool: &Pool) -> Result<(), String> {
    let mut client = pool
        .get()
        .await
        .map_err(|e| format!("cannot reach PostgreSQL for the shared state: {e}"))?;
    let failed = |e: tokio_postgres::Error| format!("creating the shared-state tables failed: {e}");
    let tx = client.transaction().await.map_err(failed)?;
    // Replicas starting together would race on `CREATE … IF NOT EXISTS`.
    tx.batch_execute("SELECT pg_advisory_xact_lock(7_402_117_001)")
        .await
        .map_err(failed)?;
    for sql in MIGRATIONS {
        tx.batch_execute(sql).await.map_err(failed)?;
    }
    tx.commit().await.map_err(failed)
}

#[cfg(test)]
#[path = "../../../employee-directory/tests/common/pg.rs"]
#[allow(dead_code)]
mod pg;

/// Test helpers: a migrated pool on a fresh database of the scratch cluster.
#[cfg(test)]
pub mod testing {
    pub use super::pg::{cluster_url, fresh_database, psql};

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
