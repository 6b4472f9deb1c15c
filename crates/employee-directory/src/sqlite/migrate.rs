//! Applies the schema migrations ([`crate::migrations`]) to a SQLite file.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::error::DirectoryError;
use crate::migrations::{MIGRATIONS, latest_version, too_new};

/// Applies pending migrations in one immediate transaction, so two processes
/// opening the same file cannot both apply them. Returns how many ran.
pub(crate) fn migrate(conn: &mut Connection) -> Result<usize, DirectoryError> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER NOT NULL PRIMARY KEY,
             name       TEXT NOT NULL,
             applied_at TEXT NOT NULL
         )",
    )
    .map_err(DirectoryError::db("create schema_migrations"))?;

    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(DirectoryError::db("begin migration transaction"))?;
    let current = current_version(&tx)?;
    if current > latest_version() {
        return Err(too_new(current));
    }
    let mut applied = 0;
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        let fail = |e: rusqlite::Error| DirectoryError::Migration {
            version: m.version,
            name: m.name,
            message: e.to_string(),
        };
        tx.execute_batch(m.sqlite).map_err(fail)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name, applied_at)
             VALUES (?1, ?2, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))",
            params![m.version, m.name],
        )
        .map_err(fail)?;
        tracing::info!(
            version = m.version,
            name = m.name,
            "applied schema migration"
        );
        applied += 1;
    }
    tx.commit()
        .map_err(DirectoryError::db("commit migrations"))?;
    Ok(applied)
}

/// Highest applied migration, 0 for a fresh database.
pub(crate) fn current_version(conn: &Connection) -> Result<u32, DirectoryError> {
    let version: Option<u32> = conn
        .query_row("SELECT MAX(version) FROM schema_migrations", [], |row| {
            row.get(0)
        })
        .optional()
        .map_err(DirectoryError::db("read schema version"))?
        .flatten();
    Ok(version.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrate_twice_is_a_no_op() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), MIGRATIONS.len());
        assert_eq!(migrate(&mut conn).unwrap(), 0);
        assert_eq!(current_version(&conn).unwrap(), latest_version());
    }
}
