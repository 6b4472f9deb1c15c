//! The audit trail: every `tools/call` appended to an `audit_log` table in
//! the directory's own SQLite file, durably (WAL, `synchronous=FULL`)
//! before the engine sends the answer, plus a structured `tracing` event.
//!
//! The sink opens its own connection (the directory's pool is read-mostly
//! and tuned for speed, `synchronous=NORMAL`); the audit connection commits
//! every record with an fsync, so an answered call's record survives a
//! crash, a SIGKILL or a power loss. Inserts run on the blocking pool.
//!
//! The `audit` subcommand reads the same table ([`query`]).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, SecondsFormat, Utc};
use mcp_server::access::{AuditRecord, AuditSink};
use rusqlite::{Connection, OpenFlags, params_from_iter};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

/// How long a write waits for another writer (the directory's seeding, or
/// a second server on the same file) before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS audit_log (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    at               TEXT    NOT NULL,
    at_unix_ms       INTEGER NOT NULL,
    subject          TEXT,
    client_id        TEXT,
    client_name      TEXT,
    remote_addr      TEXT,
    tool             TEXT    NOT NULL,
    arguments        TEXT    NOT NULL,
    outcome          TEXT    NOT NULL,
    detail           TEXT,
    latency_ms       INTEGER NOT NULL,
    protocol_version TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_log_at ON audit_log (at_unix_ms);
CREATE INDEX IF NOT EXISTS audit_log_tool ON audit_log (tool, at_unix_ms);
CREATE INDEX IF NOT EXISTS audit_log_subject ON audit_log (subject, at_unix_ms);
";

/// Where the audit table lives, from the `--database` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A database file (the directory's).
    File(PathBuf),
    /// A private in-memory database: records live as long as the process.
    Memory,
}

impl Location {
    /// Reads the same URLs as the directory: `sqlite://PATH`,
    /// `sqlite:///abs/path`, `sqlite::memory:` (a `?query` is ignored).
    pub fn from_url(url: &str) -> Result<Location, String> {
        let url = url.trim();
        if url == "sqlite::memory:" || url == "sqlite://:memory:" {
            return Ok(Location::Memory);
        }
        let path = url
            .strip_prefix("sqlite://")
            .and_then(|rest| rest.split('?').next())
            .filter(|p| !p.is_empty())
            .ok_or_else(|| {
                format!("unsupported database URL \"{url}\"; use sqlite://PATH or sqlite::memory:")
            })?;
        Ok(Location::File(PathBuf::from(path)))
    }
}

fn open(location: &Location, create: bool) -> Result<Connection, String> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = match location {
        Location::File(path) => Connection::open_with_flags(path, flags),
        Location::Memory => Connection::open_in_memory(),
    }
    .map_err(|e| format!("cannot open the audit database {}: {e}", describe(location)))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| format!("cannot configure the audit database: {e}"))?;
    if let Location::File(_) = location {
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(|e| format!("cannot switch the audit database to WAL: {e}"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(%mode, "audit database did not switch to WAL journal mode");
        }
        // Every commit reaches the disk before the answer leaves.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(|e| format!("cannot set synchronous=FULL on the audit database: {e}"))?;
    }
    Ok(conn)
}

fn describe(location: &Location) -> String {
    match location {
        Location::File(p) => p.display().to_string(),
        Location::Memory => "(in memory)".to_owned(),
    }
}

/// One record waiting to be written, and who waits for the commit.
type Pending = (AuditRecord, oneshot::Sender<Result<(), String>>);

/// Most records committed in one transaction.
const MAX_BATCH: usize = 256;

/// An [`AuditSink`] appending to `audit_log`.
///
/// A dedicated writer thread owns the connection and commits records in
/// groups: every record that arrives while a commit is in flight goes into
/// the next transaction, so concurrent calls share one fsync instead of
/// queueing for one each. A call is acknowledged only after the commit
/// holding its record, so durability is unchanged.
#[derive(Clone)]
pub struct SqliteAudit {
    queue: mpsc::Sender<Pending>,
}

impl SqliteAudit {
    /// Opens the database (already created by the directory) and creates
    /// the table and its indexes if missing.
    pub fn open(location: &Location) -> Result<SqliteAudit, String> {
        if *location == Location::Memory {
            tracing::warn!(
                "audit trail kept in memory (sqlite::memory: database); it is lost when the server stops"
            );
        }
        let conn = open(location, true)?;
        conn.execute_batch(SCHEMA)
            .map_err(|e| format!("cannot create the audit_log table: {e}"))?;
        let (queue, rx) = mpsc::channel(4096);
        std::thread::Builder::new()
            .name("audit-writer".to_owned())
            .spawn(move || write_loop(conn, rx))
            .map_err(|e| format!("cannot start the audit writer thread: {e}"))?;
        Ok(SqliteAudit { queue })
    }

    fn insert(conn: &Connection, r: &AuditRecord) -> rusqlite::Result<()> {
        let (at, ms) = timestamp(r.at);
        let arguments = serde_json::to_string(&r.arguments).unwrap_or_else(|_| "{}".to_owned());
        conn.execute(
            "INSERT INTO audit_log (at, at_unix_ms, subject, client_id, client_name, remote_addr,
                 tool, arguments, outcome, detail, latency_ms, protocol_version)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            rusqlite::params![
                at,
                ms,
                r.subject,
                r.client_id,
                r.client_name,
                r.remote_addr,
                r.tool,
                arguments,
                r.outcome.as_str(),
                r.detail,
                i64::try_from(r.latency_ms).unwrap_or(i64::MAX),
                r.protocol_version,
            ],
        )?;
        Ok(())
    }
}

impl AuditSink for SqliteAudit {
    fn record(
        &self,
        record: AuditRecord,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>> {
        Box::pin(async move {
            let (at, _) = timestamp(record.at);
            tracing::info!(
                target: "audit",
                at = %at,
                subject = record.subject.as_deref().unwrap_or("-"),
                client_id = record.client_id.as_deref().unwrap_or("-"),
                client_name = record.client_name.as_deref().unwrap_or("-"),
                remote_addr = record.remote_addr.as_deref().unwrap_or("-"),
                tool = %record.tool,
                arguments = %record.arguments,
                outcome = record.outcome.as_str(),
                detail = record.detail.as_deref().unwrap_or(""),
                latency_ms = record.latency_ms,
                protocol_version = %record.protocol_version,
                "audit"
            );
            let (ack, committed) = oneshot::channel();
            self.queue
                .send((record, ack))
                .await
                .map_err(|_| "the audit writer has stopped".to_owned())?;
            committed
                .await
                .map_err(|_| "the audit writer has stopped".to_owned())?
        })
    }
}

/// The writer thread: take what is queued, commit it as one transaction,
/// acknowledge every record in it.
fn write_loop(mut conn: Connection, mut rx: mpsc::Receiver<Pending>) {
    while let Some(first) = rx.blocking_recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        let outcome = (|| {
            let tx = conn.transaction()?;
            for (record, _) in &batch {
                SqliteAudit::insert(&tx, record)?;
            }
            tx.commit()
        })()
        .map_err(|e| format!("cannot append to audit_log: {e}"));
        if let Err(e) = &outcome {
            tracing::error!(error = %e, records = batch.len(), "audit commit failed");
        }
        for (_, ack) in batch {
            let _ = ack.send(outcome.clone());
        }
    }
}

/// RFC 3339 UTC with milliseconds, and unix milliseconds.
fn timestamp(at: SystemTime) -> (String, i64) {
    let ms = at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let dt: DateTime<Utc> = at.into();
    (dt.to_rfc3339_opts(SecondsFormat::Millis, true), ms)
}

/// A filter for [`query`]; every field optional.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Records at or after this time (unix ms).
    pub since_ms: Option<i64>,
    /// Records before this time (unix ms).
    pub until_ms: Option<i64>,
    /// Only this tool.
    pub tool: Option<String>,
    /// Only this subject.
    pub subject: Option<String>,
    /// Only this outcome (`success`, `tool_error`, …).
    pub outcome: Option<String>,
    /// Most rows returned (the newest).
    pub limit: u32,
}

/// One stored record, as the `audit` subcommand prints it.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Row id (insertion order).
    pub id: i64,
    /// RFC 3339 UTC time.
    pub at: String,
    /// Unix milliseconds.
    pub at_unix_ms: i64,
    /// Token subject.
    pub subject: Option<String>,
    /// OAuth client id.
    pub client_id: Option<String>,
    /// Self-reported client name.
    pub client_name: Option<String>,
    /// Peer address.
    pub remote_addr: Option<String>,
    /// Tool name.
    pub tool: String,
    /// Redacted arguments.
    pub arguments: serde_json::Value,
    /// Outcome.
    pub outcome: String,
    /// Error detail.
    pub detail: Option<String>,
    /// Latency in milliseconds.
    pub latency_ms: i64,
    /// Protocol revision.
    pub protocol_version: String,
}

/// Reads records matching `filter`, oldest first (the newest `limit`).
pub fn query(location: &Location, filter: &Filter) -> Result<Vec<Row>, String> {
    if let Location::File(path) = location
        && !Path::new(path).exists()
    {
        return Err(format!("no database at {}", path.display()));
    }
    let conn = open(location, false)?;
    let exists: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_log')",
            [],
            |row| row.get(0),
        )
        .map_err(|e| format!("cannot read the audit database: {e}"))?;
    if !exists {
        return Ok(Vec::new());
    }
    let mut sql = String::from(
        "SELECT id, at, at_unix_ms, subject, client_id, client_name, remote_addr, tool, arguments,
                outcome, detail, latency_ms, protocol_version FROM audit_log WHERE 1 = 1",
    );
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    if let Some(v) = filter.since_ms {
        sql.push_str(" AND at_unix_ms >= ?");
        args.push(v.into());
    }
    if let Some(v) = filter.until_ms {
        sql.push_str(" AND at_unix_ms < ?");
        args.push(v.into());
    }
    for (column, value) in [
        ("tool", &filter.tool),
        ("subject", &filter.subject),
        ("outcome", &filter.outcome),
    ] {
        if let Some(v) = value {
            sql.push_str(&format!(" AND {column} = ?"));
            args.push(v.clone().into());
        }
    }
    sql.push_str(" ORDER BY at_unix_ms DESC, id DESC LIMIT ?");
    args.push(i64::from(filter.limit).into());
    let mut stmt = conn
        .prepare(&sql)
        .map_err(|e| format!("cannot query audit_log: {e}"))?;
    let rows = stmt
        .query_map(params_from_iter(args), |row| {
            let arguments: String = row.get(8)?;
            Ok(Row {
                id: row.get(0)?,
                at: row.get(1)?,
                at_unix_ms: row.get(2)?,
                subject: row.get(3)?,
                client_id: row.get(4)?,
                client_name: row.get(5)?,
                remote_addr: row.get(6)?,
                tool: row.get(7)?,
                arguments: serde_json::from_str(&arguments)
                    .unwrap_or(serde_json::Value::String(arguments)),
                outcome: row.get(9)?,
                detail: row.get(10)?,
                latency_ms: row.get(11)?,
                protocol_version: row.get(12)?,
            })
        })
        .map_err(|e| format!("cannot query audit_log: {e}"))?;
    let mut out = rows
        .collect::<Result<Vec<Row>, _>>()
        .map_err(|e| format!("cannot read audit_log: {e}"))?;
    out.reverse();
    Ok(out)
}

/// Parses `--since`/`--until`: an RFC 3339 time, or a duration back from
/// now such as `90s`, `15m`, `1h`, `7d`, `2w`. Returns unix milliseconds.
pub fn parse_time(text: &str, now: SystemTime) -> Result<i64, String> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.timestamp_millis());
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| bad_time(text))?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        "w" => n * 7 * 86_400,
        _ => return Err(bad_time(text)),
    };
    let at = now
        .checked_sub(Duration::from_secs(secs))
        .unwrap_or(UNIX_EPOCH);
    Ok(timestamp(at).1)
}

fn bad_time(text: &str) -> String {
    format!(
        "invalid time \"{text}\": use RFC 3339 (2026-10-01T09:00:00Z) or a duration back from now (30m, 1h, 7d)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_times() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(parse_time("1h", now), Ok((1_000_000 - 3600) * 1000));
        assert_eq!(parse_time("7d", now), Ok((1_000_000 - 7 * 86_400) * 1000));
        assert_eq!(parse_time("1970-01-01T00:00:01Z", now), Ok(1000), "rfc3339");
        assert!(parse_time("yesterday", now).is_err());
        assert!(parse_time("5y", now).is_err());
    }

    #[test]
    fn reads_urls() {
        assert_eq!(Location::from_url("sqlite::memory:"), Ok(Location::Memory));
        assert_eq!(
            Location::from_url("sqlite://data/hr.db?mode=rwc"),
            Ok(Location::File(PathBuf::from("data/hr.db")))
        );
        assert!(Location::from_url("postgres://x").is_err());
    }
}
