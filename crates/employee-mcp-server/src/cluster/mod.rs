//! State shared by replicas of the server on one PostgreSQL database:
//! legacy sessions, events between replicas, tasks, rate limits and the
//! request-state key. On SQLite (one process) the library's in-memory
//! defaults are used and nothing here runs.
//!
//! Each concern is one file; each owns its tables, created by
//! [`migrate`] in order.

use deadpool_postgres::Pool;

/// `CREATE … IF NOT EXISTS` statements of every shared-state table, applied
/// in order at startup (idempotent, so replicas may start together).
const MIGRATIONS: &[&str] = &[];

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
