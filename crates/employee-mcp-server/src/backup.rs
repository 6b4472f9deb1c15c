//! The `backup` and `restore` subcommands: the only supported way to copy
//! or bring back a SQLite database a server is serving from.
//!
//! Replacing the file itself under a running server is refused (the file
//! is pinned, see `employee_directory::pinned`): SQLite finds `-wal` and
//! `-shm` by name, so a swapped file can be paired with the old one's WAL.
//! Instead:
//! - `backup` writes a consistent copy with `VACUUM INTO` (a read
//!   transaction: servers keep answering and writing meanwhile);
//! - `restore` changes the live file's rows in ONE transaction: the
//!   directory tables and the tool catalogue take the backup's rows, the
//!   audit trail and the catalogue's change history are kept (the audit
//!   trail is never rolled back), and the directory's triggers bump its
//!   generation counter, so every running server's read cache drops the
//!   answers it held. Running servers see the catalogue's generation move
//!   and reload their tool set.
//!
//! PostgreSQL has pg_dump and pg_restore; a PostgreSQL URL is refused.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use employee_directory::DatabaseUrl;

/// How long `restore` waits for a server's write (an audit commit) to
/// finish before it takes the write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Tables a restore never takes from the backup: the audit trail and the
/// catalogue's change history (append-only records of what happened),
/// the counters (bumped instead), and the schema's bookkeeping.
const KEPT: [&str; 5] = [
    "audit_log",
    "tool_catalog_changes",
    "tool_catalog_generation",
    "directory_generation",
    "schema_migrations",
];

/// Why a backup or a restore did not happen; the message is the CLI's.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// `--database` names an in-memory database.
    #[error("{0} needs a database file (sqlite://PATH), not an in-memory database")]
    InMemory(&'static str),
    /// `--database` names a PostgreSQL database.
    #[error(
        "{0} is for SQLite files; for PostgreSQL use pg_dump and pg_restore (see \
         docs/operating.md, \"Backup and restore\")"
    )]
    Postgres(&'static str),
    /// The live database file is not there.
    #[error("no database at {}", .0.display())]
    NoDatabase(PathBuf),
    /// The backup file to restore from is not there.
    #[error("no backup file at {}", .0.display())]
    NoBackup(PathBuf),
    /// A backup never overwrites a file.
    #[error("{} already exists; a backup never overwrites a file: choose a new name", .0.display())]
    Exists(PathBuf),
    /// `restore --from` names the live file.
    #[error("the backup is the live database itself")]
    SameFile,
    /// A path SQLite cannot be given.
    #[error("{} is not a UTF-8 path", .0.display())]
    NotUtf8(PathBuf),
    /// A path that cannot be made absolute.
    #[error("cannot resolve {}: {source}", .path.display())]
    Resolve {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file does not open as a SQLite database.
    #[error("cannot open {}: {source}", .path.display())]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// The connection's busy timeout could not be set.
    #[error("cannot configure the connection: {0}")]
    Configure(rusqlite::Error),
    /// The backup file does not attach.
    #[error("cannot open the backup {}: {source}", .path.display())]
    Attach {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// `VACUUM INTO` failed (disk full, permissions).
    #[error("cannot write the {what} to {}: {source}", .path.display())]
    Write {
        what: &'static str,
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// A file that holds no employee directory.
    #[error("{} is not an employee directory ({why})", .path.display())]
    NotDirectory { path: PathBuf, why: String },
    /// Backup and live database at different schema versions.
    #[error(
        "the backup's schema is at version {backup}, the live database's at {live}: restore it \
         into a database of the same version (start a server of that version on a copy of the \
         backup to migrate it, then back that up)"
    )]
    Version { backup: u32, live: u32 },
    /// `quick_check` could not run.
    #[error("cannot check the backup: {0}")]
    Check(rusqlite::Error),
    /// `quick_check` found damage.
    #[error("the backup {} is damaged: {detail}", .path.display())]
    Damaged { path: PathBuf, detail: String },
    /// The restore's transaction failed and was rolled back.
    #[error("restore failed, nothing was changed: {0}")]
    Restore(rusqlite::Error),
}

/// The SQLite file behind `url`, or why there is none.
fn sqlite_file(url: &DatabaseUrl, what: &'static str) -> Result<PathBuf, BackupError> {
    match url {
        DatabaseUrl::Sqlite { path, .. } => Ok(path.clone()),
        DatabaseUrl::Memory => Err(BackupError::InMemory(what)),
        DatabaseUrl::Postgres(_) => Err(BackupError::Postgres(what)),
    }
}

/// Opens `path` with `flags` and the busy timeout.
fn connect(path: &Path, flags: OpenFlags) -> Result<Connection, BackupError> {
    let conn = Connection::open_with_flags(path, flags).map_err(|source| BackupError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(BackupError::Configure)?;
    Ok(conn)
}

/// `path` as text for SQLite.
fn utf8(path: &Path) -> Result<&str, BackupError> {
    path.to_str()
        .ok_or_else(|| BackupError::NotUtf8(path.to_path_buf()))
}

/// `backup`: a consistent copy of the live database at `out`, which must
/// not exist. Returns a one-line summary.
pub fn backup(url: &DatabaseUrl, out: &Path) -> Result<String, BackupError> {
    let path = sqlite_file(url, "backup")?;
    if !path.exists() {
        return Err(BackupError::NoDatabase(path));
    }
    let trail = crate::audit::trail_file(&path);
    let trail_out = crate::audit::trail_file(out);
    for target in [out, trail_out.as_path()] {
        if target.exists() {
            return Err(BackupError::Exists(target.to_path_buf()));
        }
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = connect(&path, flags)?;
    check_directory(&conn, "main", &path)?;
    vacuum_into(&conn, out, "backup")?;
    let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    let mut summary = format!(
        "backed up {} to {} ({bytes} bytes)",
        path.display(),
        out.display()
    );
    if trail.is_file() {
        copy_trail(&trail, &trail_out)?;
        summary.push_str(&format!(
            "\nbacked up the audit trail {} to {}",
            trail.display(),
            trail_out.display()
        ));
    }
    Ok(summary)
}

/// A consistent copy of the audit trail file (its own `VACUUM INTO`).
fn copy_trail(trail: &Path, out: &Path) -> Result<(), BackupError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    vacuum_into(&connect(trail, flags)?, out, "audit trail's backup")
}

/// `VACUUM INTO out`: a consistent copy of `conn`'s main database.
fn vacuum_into(conn: &Connection, out: &Path, what: &'static str) -> Result<(), BackupError> {
    conn.execute("VACUUM INTO ?1", [utf8(out)?])
        .map(drop)
        .map_err(|source| BackupError::Write {
            what,
            path: out.to_path_buf(),
            source,
        })
}

/// Rows of the audit trail kept by a restore: the trail file's, or the
/// table an earlier version kept in the directory's file.
fn trail_rows(tx: &Connection, path: &Path) -> i64 {
    let trail = crate::audit::trail_file(path);
    if !trail.is_file() {
        return count(tx, "main", "audit_log").unwrap_or(0);
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    Connection::open_with_flags(&trail, flags)
        .and_then(|conn| conn.query_row("SELECT count(*) FROM audit_log", [], |r| r.get(0)))
        .unwrap_or(0)
}

/// `restore`: the backup's directory and catalogue rows into the live
/// database, in one transaction; returns the per-table summary.
pub fn restore(url: &DatabaseUrl, from: &Path) -> Result<String, BackupError> {
    let path = sqlite_file(url, "restore")?;
    if !from.is_file() {
        return Err(BackupError::NoBackup(from.to_path_buf()));
    }
    if same_file(&path, from) {
        return Err(BackupError::SameFile);
    }
    // No CREATE: a missing live file is an error, not an empty directory.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let mut conn = connect(&path, flags)?;
    let live = check_directory(&conn, "main", &path)?;
    conn.execute("ATTACH DATABASE ?1 AS backup", [read_only_uri(from)?])
        .map_err(|source| BackupError::Attach {
            path: from.to_path_buf(),
            source,
        })?;
    let backup = check_directory(&conn, "backup", from)?;
    if backup != live {
        return Err(BackupError::Version { backup, live });
    }
    let ok: String = conn
        .query_row("PRAGMA backup.quick_check", [], |r| r.get(0))
        .map_err(BackupError::Check)?;
    if ok != "ok" {
        return Err(BackupError::Damaged {
            path: from.to_path_buf(),
            detail: ok,
        });
    }
    let summary = replace_rows(&mut conn, &path)?;
    let _ = conn.execute_batch("DETACH DATABASE backup");
    Ok(summary)
}

/// The transaction of [`restore`]: every table of the live database but
/// the [`KEPT`] ones takes the backup's rows.
fn replace_rows(conn: &mut Connection, path: &Path) -> Result<String, BackupError> {
    let failed = BackupError::Restore;
    // Checked at the commit: rows go in table by table.
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(failed)?;
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(failed)?;
    tx.pragma_update(None, "defer_foreign_keys", true)
        .map_err(failed)?;
    let in_backup = tables(&tx, "backup").map_err(failed)?;
    let replaced: Vec<String> = tables(&tx, "main")
        .map_err(failed)?
        .into_iter()
        .filter(|t| !KEPT.contains(&t.as_str()) && in_backup.contains(t))
        .collect();
    // Every table emptied before any is filled: a cascade from a parent
    // deleted later would otherwise remove rows already restored.
    let mut before = Vec::with_capacity(replaced.len());
    for table in replaced.iter().rev() {
        before.push(count(&tx, "main", table).map_err(failed)?);
        tx.execute(&format!("DELETE FROM main.\"{table}\""), [])
            .map_err(failed)?;
    }
    before.reverse();
    let mut lines = Vec::new();
    for (table, before) in replaced.iter().zip(before) {
        let columns = columns(&tx, table).map_err(failed)?;
        // Emptied again: the report aggregates are filled by triggers as
        // employees go back in, and then take the backup's exact rows.
        tx.execute(&format!("DELETE FROM main.\"{table}\""), [])
            .map_err(failed)?;
        tx.execute(
            &format!(
                "INSERT INTO main.\"{table}\" ({columns}) SELECT {columns} FROM backup.\"{table}\""
            ),
            [],
        )
        .map_err(failed)?;
        let after = count(&tx, "main", table).map_err(failed)?;
        lines.push(format!("  {table:<24} {before:>8} -> {after:>8} rows"));
    }
    // Running servers reload their tool set when this counter moves.
    let catalogue = tx
        .execute(
            "UPDATE main.tool_catalog_generation SET generation = generation + 1 WHERE id = 1",
            [],
        )
        .is_ok();
    if catalogue {
        let _ = tx.execute(
            "INSERT INTO main.tool_catalog_changes (at, actor, action, tool, detail) \
             VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?1, 'restore', '*', 'catalogue restored from a backup')",
            [crate::actor::actor(None)],
        );
    }
    let audit = trail_rows(&tx, path);
    tx.commit().map_err(failed)?;
    lines.push(format!("  audit_log kept ({audit} rows)"));
    Ok(format!("restored:\n{}", lines.join("\n")))
}

/// Checks that `schema` holds an employee directory; returns its schema
/// version.
fn check_directory(conn: &Connection, schema: &str, path: &Path) -> Result<u32, BackupError> {
    let not = |why: String| BackupError::NotDirectory {
        path: path.to_path_buf(),
        why,
    };
    let has = tables(conn, schema).map_err(|e| not(e.to_string()))?;
    for needed in ["schema_migrations", "employees", "departments"] {
        if !has.iter().any(|t| t == needed) {
            return Err(not(format!("no {needed} table")));
        }
    }
    let version: Option<u32> = conn
        .query_row(
            &format!("SELECT MAX(version) FROM {schema}.schema_migrations"),
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| not(e.to_string()))?
        .flatten();
    version.ok_or_else(|| not("its migrations table is empty".to_owned()))
}

/// Tables of `schema`, in creation order, without SQLite's own and
/// without virtual tables and their shadow tables: those (the FTS5 skill
/// index) are kept in step by triggers on the tables they index, and their
/// internal rows must never be copied or deleted by hand.
fn tables(conn: &Connection, schema: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT t.name FROM {schema}.sqlite_master t WHERE t.type = 'table' \
         AND t.name NOT LIKE 'sqlite_%' AND t.sql NOT LIKE 'CREATE VIRTUAL TABLE%' \
         AND NOT EXISTS (SELECT 1 FROM {schema}.sqlite_master v \
             WHERE v.type = 'table' AND v.sql LIKE 'CREATE VIRTUAL TABLE%' \
             AND substr(t.name, 1, length(v.name) + 1) = v.name || '_') \
         ORDER BY t.rowid"
    ))?;
    stmt.query_map([], |r| r.get(0))?.collect()
}

/// The columns the live table and the backup's share, quoted, for an
/// INSERT … SELECT by name: a backup from an older version lacks columns
/// added since (e.g. the catalogue's approval override), which then take
/// their defaults.
fn columns(conn: &Connection, table: &str) -> rusqlite::Result<String> {
    let mut stmt = conn.prepare(
        "SELECT m.name FROM pragma_table_info(?1, 'main') m \
          WHERE m.name IN (SELECT b.name FROM pragma_table_info(?1, 'backup') b) \
          ORDER BY m.cid",
    )?;
    let names: Vec<String> = stmt
        .query_map([table], |r| r.get::<_, String>(0))?
        .collect::<Result<_, _>>()?;
    Ok(names
        .iter()
        .map(|n| format!("\"{}\"", n.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(", "))
}

fn count(conn: &Connection, schema: &str, table: &str) -> rusqlite::Result<i64> {
    conn.query_row(
        &format!("SELECT COUNT(*) FROM {schema}.\"{table}\""),
        [],
        |r| r.get(0),
    )
}

/// `file:` URI opening `path` read-only (nothing is written next to the
/// backup).
fn read_only_uri(path: &Path) -> Result<String, BackupError> {
    let absolute = std::path::absolute(path).map_err(|source| BackupError::Resolve {
        path: path.to_path_buf(),
        source,
    })?;
    let text = utf8(&absolute)?;
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' | '?' | '#' => escaped.push_str(&format!("%{:02X}", c as u32)),
            c => escaped.push(c),
        }
    }
    Ok(format!("file:{escaped}?mode=ro"))
}

#[cfg(unix)]
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(a: &Path, b: &Path) -> bool {
    a.canonicalize().ok() == b.canonicalize().ok()
}
