//! Where a SQLite directory's audit trail lives: its own file beside the
//! directory's (`hr.db` → `hr.audit.db`), so an import holding the
//! directory's write lock for seconds never delays a call's audit commit.
//!
//! Servers of earlier versions kept `audit_log` inside the directory's
//! file; the first server of this version to open it moves those rows
//! into the trail file ([`adopt`]).

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::Error;

/// The audit trail's file for the directory file at `directory`:
/// `.audit` before the extension (`hr.db` → `hr.audit.db`, `hr` →
/// `hr.audit`), in the same folder.
pub fn file(directory: &Path) -> PathBuf {
    let stem = directory.file_stem().unwrap_or_default();
    let mut name = stem.to_os_string();
    name.push(".audit");
    if let Some(ext) = directory.extension() {
        name.push(".");
        name.push(ext);
    }
    directory.with_file_name(name)
}

/// The columns both tables have, in the trail's order.
const COLUMNS: &str = "id, at, at_unix_ms, subject, client_id, client_name, remote_addr, tool, \
                       arguments, outcome, detail, latency_ms, protocol_version";

/// Moves an `audit_log` table left in the directory's file by an earlier
/// version into the trail file at `trail` (already created and migrated):
/// rows are copied with their ids (`INSERT OR IGNORE`, so a copy cut short
/// by a crash is finished, never doubled), then the old table is dropped.
/// Returns how many rows were moved.
pub(super) fn adopt(directory: &Connection, trail: &Path) -> Result<usize, Error> {
    let failed = |e| Error::sqlite(format!("cannot move audit_log into {}", trail.display()))(e);
    let legacy: bool = directory
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'audit_log')",
            [],
            |row| row.get(0),
        )
        .map_err(failed)?;
    if !legacy {
        return Ok(0);
    }
    // The first deployments had no `count` column: one call per row.
    let has_count: bool = directory
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('audit_log', 'main') WHERE name = 'count')",
            [],
            |row| row.get(0),
        )
        .map_err(failed)?;
    let count = if has_count { "count" } else { "NULL" };
    let target = trail
        .to_str()
        .ok_or_else(|| Error::Unusable(format!("{} is not a UTF-8 path", trail.display())))?;
    directory
        .execute("ATTACH DATABASE ?1 AS trail", [target])
        .map_err(failed)?;
    let moved = copy_and_drop(directory, count).map_err(failed);
    let detached = directory.execute_batch("DETACH DATABASE trail");
    let moved = moved?;
    detached.map_err(failed)?;
    Ok(moved)
}

/// The copy (committed in the trail first) and the drop (in the
/// directory): with WAL one transaction is atomic per file only, so the
/// copy must be repeatable, which `INSERT OR IGNORE` on the ids makes it.
fn copy_and_drop(directory: &Connection, count: &str) -> rusqlite::Result<usize> {
    directory.execute_batch("BEGIN IMMEDIATE")?;
    let copied = directory.execute(
        &format!(
            "INSERT OR IGNORE INTO trail.audit_log ({COLUMNS}, count)
             SELECT {COLUMNS}, {count} FROM main.audit_log"
        ),
        [],
    );
    let done = copied.and_then(|n| {
        directory.execute_batch("DROP TABLE main.audit_log; COMMIT")?;
        Ok(n)
    });
    if done.is_err() && !directory.is_autocommit() {
        let _ = directory.execute_batch("ROLLBACK");
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trail_sits_beside_the_directory() {
        assert_eq!(
            file(Path::new("/var/hr/hr.db")),
            Path::new("/var/hr/hr.audit.db")
        );
        assert_eq!(file(Path::new("data/hr")), Path::new("data/hr.audit"));
        assert_eq!(
            file(Path::new("a.b/people.sqlite3")),
            Path::new("a.b/people.audit.sqlite3")
        );
    }
}
