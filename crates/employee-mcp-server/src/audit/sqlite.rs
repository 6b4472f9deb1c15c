//! The audit store on SQLite: rows go into the trail's own file, on a
//! connection pinned to it (a replaced file is refused).

use std::sync::{Arc, LazyLock};

use employee_directory::pinned::{PinnedConnection, PinnedFile};
use rusqlite::Connection;

use super::store::Store;
use super::{Entry, Error};

/// The SQLite store: one connection owned by the writer thread, on the
/// pinned database file (no pin in memory).
pub(super) struct SqliteStore {
    conn: PinnedConnection,
    pin: Option<Arc<PinnedFile>>,
}

impl SqliteStore {
    pub(super) fn new(conn: Connection, pin: Option<Arc<PinnedFile>>) -> SqliteStore {
        SqliteStore {
            conn: PinnedConnection::new(conn, pin.clone()),
            pin,
        }
    }
}

fn failed(e: rusqlite::Error) -> Error {
    Error::sqlite("cannot append to audit_log")(e)
}

/// Rows per multi-row INSERT, largest first and ending with 1: a few
/// statement shapes, each prepared once and cached.
const ROWS_PER_INSERT: [usize; 3] = [16, 4, 1];

/// Values bound per row.
const COLUMNS: usize = 14;

/// `INSERT INTO audit_log … VALUES (…), …` for `ROWS_PER_INSERT[shape]`
/// rows, written once: the statement cache looks it up by its text on
/// every insert.
fn insert_sql(shape: usize) -> &'static str {
    static SQL: LazyLock<Vec<String>> = LazyLock::new(|| {
        let row = format!("({})", vec!["?"; COLUMNS].join(", "));
        ROWS_PER_INSERT
            .iter()
            .map(|&rows| {
                format!(
                    "INSERT INTO audit_log (at, at_unix_ms, subject, client_id, client_name,
                         remote_addr, tool, arguments, outcome, detail, latency_ms,
                         protocol_version, count, via)
                     VALUES {}",
                    vec![row.as_str(); rows].join(", ")
                )
            })
            .collect()
    });
    SQL[shape].as_str()
}

/// The shape of a one-row insert.
const ONE_ROW: usize = ROWS_PER_INSERT.len() - 1;

/// Binds entry `e` as row `row` (from 0) of an [`insert_sql`] statement.
fn bind_row(
    stmt: &mut rusqlite::CachedStatement<'_>,
    row: usize,
    e: &Entry,
    count: Option<i64>,
) -> rusqlite::Result<()> {
    let values: [&dyn rusqlite::ToSql; COLUMNS] = [
        &e.at,
        &e.at_unix_ms,
        &e.subject,
        &e.client_id,
        &e.client_name,
        &e.remote_addr,
        &e.tool,
        &e.arguments,
        &e.outcome.as_str(),
        &e.detail,
        &e.latency_ms,
        &e.protocol_version,
        &count,
        &e.via,
    ];
    let first = row * COLUMNS + 1;
    values
        .iter()
        .enumerate()
        .try_for_each(|(i, v)| stmt.raw_bind_parameter(first + i, v))
}

impl Store for SqliteStore {
    fn verify(&self) -> Result<(), Error> {
        match &self.pin {
            // A row written to a replaced (or deleted) file would be lost
            // with it while its call was answered.
            Some(pin) => pin
                .check()
                .map_err(Error::pinned("cannot append to audit_log")),
            None => Ok(()),
        }
    }

    fn begin(&mut self) -> Result<(), Error> {
        self.conn.execute_batch("BEGIN").map_err(failed)
    }

    fn commit(&mut self) -> Result<(), Error> {
        self.conn.execute_batch("COMMIT").map_err(failed)
    }

    fn rollback(&mut self) {
        if !self.conn.is_autocommit()
            && let Err(e) = self.conn.execute_batch("ROLLBACK")
        {
            tracing::warn!(error = %e, "cannot roll back the audit transaction");
        }
    }

    fn insert(&mut self, e: &Entry, count: Option<i64>) -> Result<i64, Error> {
        let mut stmt = self
            .conn
            .prepare_cached(insert_sql(ONE_ROW))
            .map_err(failed)?;
        bind_row(&mut stmt, 0, e, count).map_err(failed)?;
        stmt.raw_execute().map_err(failed)?;
        Ok(self.conn.last_insert_rowid())
    }

    fn insert_all(&mut self, entries: &[Entry]) -> Result<(), Error> {
        // A group under load is a few dozen records: one statement per
        // chunk opens the table, its indexes and the AUTOINCREMENT counter
        // once, instead of once per row.
        let mut rest = entries;
        while !rest.is_empty() {
            let shape = ROWS_PER_INSERT
                .iter()
                .position(|&n| n <= rest.len())
                .unwrap_or(ONE_ROW);
            let (chunk, tail) = rest.split_at(ROWS_PER_INSERT[shape]);
            let mut stmt = self
                .conn
                .prepare_cached(insert_sql(shape))
                .map_err(failed)?;
            for (i, e) in chunk.iter().enumerate() {
                bind_row(&mut stmt, i, e, None).map_err(failed)?;
            }
            stmt.raw_execute().map_err(failed)?;
            rest = tail;
        }
        Ok(())
    }

    fn store_count(&mut self, row: i64, count: i64, latency_ms: i64) -> Result<(), Error> {
        self.conn
            .prepare_cached(
                "UPDATE audit_log SET count = ?1, latency_ms = MAX(latency_ms, ?2) WHERE id = ?3",
            )
            .and_then(|mut stmt| stmt.execute(rusqlite::params![count, latency_ms, row]))
            .map(drop)
            .map_err(failed)
    }

    fn prune(&mut self, cutoff_ms: i64, limit: i64) -> Result<usize, Error> {
        self.conn
            .prepare_cached(
                "DELETE FROM audit_log WHERE id IN
                     (SELECT id FROM audit_log WHERE at_unix_ms < ?1 ORDER BY at_unix_ms LIMIT ?2)",
            )
            .and_then(|mut stmt| stmt.execute(rusqlite::params![cutoff_ms, limit]))
            .map_err(Error::sqlite("cannot prune audit_log"))
    }

    fn checkpoint(&mut self) {
        if let Err(e) = self
            .conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
        {
            tracing::warn!(error = %e, "cannot checkpoint the audit database");
        }
    }

    #[cfg(test)]
    fn dump(&mut self) -> Vec<(String, String, i64)> {
        let mut stmt = self
            .conn
            .prepare("SELECT tool, arguments, COALESCE(count, 1) FROM audit_log ORDER BY id")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }
}
