//! State shared by replicas of the server on one PostgreSQL database:
//! legacy sessions, events between replicas, tasks, rate limits and the
//! request-state key. On SQLite (one process) the library's in-memory
//! defaults are used and nothing here runs.
//!
//! Each concern is one file; each owns its tables, created by
//! [`migrate`] in order.

pub mod limits;
pub mod tasks;
#[cfg(test)]
mod tests;

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};

/// `CREATE … IF NOT EXISTS` statements of every shared-state table, applied
/// in order at startup (idempotent, so replicas may start together).
const MIGRATIONS: &[&str] = &[tasks::MIGRATION, limits::MIGRATION];

/// A driver error with the server's message (its `Display` alone says
/// only "db error").
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    }
}

/// Whether `--database` names a PostgreSQL database.
pub fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

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

/// Creates the shared-state tables if missing.
pub async fn migrate(pool: &Pool) -> Result<(), String> {
    let mut client = pool
        .get()
        .await
        .map_err(|e| format!("cannot reach PostgreSQL for the shared state: {e}"))?;
    let failed = |e: tokio_postgres::Error| {
        format!("creating the shared-state tables failed: {}", describe(&e))
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
