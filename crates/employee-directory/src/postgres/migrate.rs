//! Schema migrations and first-time seeding on PostgreSQL, safe when several
//! servers start at once on the same (possibly empty) database.

use deadpool_postgres::ClientWrapper;

use crate::error::DirectoryError;
use crate::migrations::{MIGRATIONS, latest_version, too_new};

/// Serialises migrating and seeding across servers (any constant unique to
/// this purpose; the shared-state tables use another).
const BOOTSTRAP_LOCK: i64 = 7_402_117_000;

/// How long migrating and seeding may take at start (waiting for another
/// server doing it included), instead of a query's statement timeout.
pub(crate) const MIGRATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

/// Migrates and seeds if needed. A database that is already current and
/// seeded is only read (no lock, no writes), so replicas start fast.
/// Returns (migrations applied, seeded). Without `demo_data` an empty
/// database stays empty.
pub(crate) async fn bootstrap(
    client: &mut ClientWrapper,
    demo_data: bool,
    demo_employees: Option<u32>,
) -> Result<(usize, bool), DirectoryError> {
    if is_ready(client).await {
        return Ok((0, false));
    }
    let fail = DirectoryError::pg("bootstrap transaction");
    let tx = client.transaction().await.map_err(fail)?;
    // Whoever gets the lock first does the work; the others then find the
    // database current when they check again below. Migrating a large
    // directory (an index or an aggregate over a million employees) and
    // seeding a large demo take longer than a query may: the statement
    // timeout is lifted for this transaction only (see MIGRATION_TIMEOUT).
    tx.batch_execute(&format!(
        "SET LOCAL statement_timeout = 0;
         SELECT pg_advisory_xact_lock({BOOTSTRAP_LOCK});
         CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER NOT NULL PRIMARY KEY,
             name       TEXT NOT NULL,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    ))
    .await
    .map_err(DirectoryError::pg("lock and create schema_migrations"))?;
    let row = tx
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            &[],
        )
        .await
        .map_err(DirectoryError::pg("read schema version"))?;
    let current = u32::try_from(row.get::<_, i32>(0)).unwrap_or(0);
    if current > latest_version() {
        return Err(too_new(current));
    }
    let mut applied = 0;
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        let failed = |e: tokio_postgres::Error| DirectoryError::Migration {
            version: m.version,
            name: m.name,
            message: e.to_string(),
        };
        tx.batch_execute(m.postgres).await.map_err(failed)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            &[&(m.version as i32), &m.name],
        )
        .await
        .map_err(failed)?;
        tracing::info!(
            version = m.version,
            name = m.name,
            "applied schema migration"
        );
        applied += 1;
    }
    let seeded = demo_data && super::seed::seed_if_empty(&tx, demo_employees).await?;
    tx.commit()
        .await
        .map_err(DirectoryError::pg("commit migrations and seed"))?;
    Ok((applied, seeded))
}

/// Whether the schema is current and seeded, without locking; any error
/// (tables missing, ...) means "check under the lock".
async fn is_ready(client: &ClientWrapper) -> bool {
    let sql = "SELECT (SELECT MAX(version) FROM schema_migrations),
                      EXISTS (SELECT 1 FROM employees)";
    match client.query_one(sql, &[]).await {
        Ok(row) => {
            let version: Option<i32> = row.get(0);
            let seeded: bool = row.get(1);
            seeded && version == i32::try_from(latest_version()).ok()
        }
        Err(_) => false,
    }
}
