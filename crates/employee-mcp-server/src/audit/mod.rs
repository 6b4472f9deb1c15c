//! The audit trail: every `tools/call` appended to an `audit_log` table,
//! durably (WAL, `synchronous=FULL`) before the engine sends the answer,
//! plus a `tracing` event at DEBUG. On SQLite the table has a file of its
//! own beside the directory's ([`trail`]): an import holding the
//! directory's write lock never delays a call's commit. On PostgreSQL it
//! is a table of the shared database (row locks do not collide).
//!
//! The sink opens its own connection (the directory's pool is read-mostly
//! and tuned for speed, `synchronous=NORMAL`); the audit connection commits
//! every record with an fsync, so an answered call's record survives a
//! crash, a SIGKILL or a power loss. A writer thread owns the connection
//! ([`writer`]).
//!
//! What the trail may cost is bounded:
//! - arguments are redacted and cut by the engine
//!   ([`mcpwire_server::access::RedactionLimits`], 4 KiB); the sink cuts the
//!   error detail to [`MAX_DETAIL_BYTES`] and identities to
//!   [`MAX_IDENTITY_BYTES`];
//! - rate-limited calls are folded into one counted row per caller, tool
//!   and minute ([`writer`]), without their arguments;
//! - rows older than the retention (`--audit-retention`, 90 days by
//!   default) are deleted in small batches;
//! - a call whose record cannot be queued, or whose commit does not finish
//!   within the commit timeout (`--audit-commit-timeout-secs`, [`COMMIT_TIMEOUT`]
//!   by default), gets an error instead of waiting.
//!
//! The `audit` subcommand reads the same table ([`query`]).

pub mod activity;
mod error;
mod postgres;
mod sqlite;
mod store;
mod trail;
mod writer;

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, SecondsFormat, Utc};
use employee_directory::DatabaseUrl;
use employee_directory::pinned::PinnedFile;
use mcpwire_server::access::{AuditRecord, AuditSink, CallOutcome, RedactionLimits};
use rusqlite::{Connection, OpenFlags, params_from_iter};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

pub use error::Error;
pub use trail::file as trail_file;
use writer::{Message, Writer};

use crate::audit_stats::AuditStats;

/// How long a read (`audit` command, the catalogue's checks) waits for a
/// writer.
const READ_BUSY_TIMEOUT: Duration = Duration::from_secs(9);

/// The default of [`AuditOptions::commit_timeout`] (`--audit-commit-timeout-secs`).
pub const COMMIT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long shutdown waits for the last counts to be written.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the writer waits for another writer (the directory's seeding,
/// an `import` applying its rows, a second server on the same file): as
/// long as a caller can wait, so an import delays answers instead of
/// failing them, and a second shorter than the commit timeout, so a locked
/// database fails the batch in the writer rather than leaving it to finish
/// after the callers gave up.
fn writer_busy_timeout(commit_timeout: Duration) -> Duration {
    commit_timeout.saturating_sub(Duration::from_secs(1))
}

/// Records waiting for the writer; past this the disk is far behind and a
/// call fails at once instead of queueing.
const QUEUE_CAPACITY: usize = 4096;

/// Longest stored error detail, in bytes.
pub const MAX_DETAIL_BYTES: usize = 1024;

/// Longest stored subject, client id, client name or tool, in bytes.
pub const MAX_IDENTITY_BYTES: usize = 256;

/// The default of `--audit-retention`.
pub const DEFAULT_RETENTION: &str = "90d";

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

/// Runs `work` on a plain thread: the PostgreSQL code drives its own
/// runtime, which cannot start inside the caller's.
fn off_runtime<T: Send>(work: impl FnOnce() -> Result<T, Error> + Send) -> Result<T, Error> {
    std::thread::scope(|scope| {
        scope.spawn(work).join().unwrap_or_else(|_| {
            Err(Error::Unusable(
                "the audit database thread panicked".to_owned(),
            ))
        })
    })
}

/// How long audit rows are kept (`--audit-retention`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention(pub Option<Duration>);

impl FromStr for Retention {
    type Err = String;

    /// `90d`, `12h`, `30m`, `45s`, `2w`; `0` or `off` keeps rows forever.
    fn from_str(text: &str) -> Result<Retention, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("off") || text == "0" {
            return Ok(Retention(None));
        }
        match parse_duration(text) {
            Some(d) if !d.is_zero() => Ok(Retention(Some(d))),
            _ => Err(format!(
                "invalid retention \"{text}\": use a duration such as 90d, 12h or 30m, or off"
            )),
        }
    }
}

/// `90s`, `15m`, `1h`, `7d`, `2w`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().ok()?;
    let unit_secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return None,
    };
    n.checked_mul(unit_secs).map(Duration::from_secs)
}

/// Opens the audit database: the trail file through `pin` (a server), or
/// a private in-memory database.
fn open(
    location: &DatabaseUrl,
    pin: Option<&PinnedFile>,
    busy: Duration,
) -> Result<Connection, Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let failed = || format!("cannot open the audit database {}", describe(location));
    let conn = match (location, pin) {
        (DatabaseUrl::Sqlite { .. }, Some(pin)) => {
            pin.open(flags).map_err(Error::pinned(failed()))?
        }
        (DatabaseUrl::Memory, _) => {
            Connection::open_in_memory().map_err(Error::sqlite(failed()))?
        }
        _ => {
            return Err(Error::Unusable(
                "not a SQLite trail file or in-memory database".to_owned(),
            ));
        }
    };
    conn.busy_timeout(busy)
        .map_err(Error::sqlite("cannot configure the audit database"))?;
    if let DatabaseUrl::Sqlite { .. } = location {
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(Error::sqlite("cannot switch the audit database to WAL"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(%mode, "audit database did not switch to WAL journal mode");
        }
        // Every commit reaches the disk before the answer leaves.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(Error::sqlite(
                "cannot set synchronous=FULL on the audit database",
            ))?;
    }
    Ok(conn)
}

/// Creates the trail file beside the directory's file `path` if missing,
/// pins it, and moves rows an earlier version left in the directory's
/// file into it. `directory` is the directory's pin (a server), if any.
fn open_trail(
    path: &Path,
    directory: Option<&PinnedFile>,
    busy: Duration,
) -> Result<(Connection, Arc<PinnedFile>), Error> {
    let file = trail::file(path);
    let location = DatabaseUrl::Sqlite {
        path: file.clone(),
        url: file.display().to_string(),
    };
    let create = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    drop(
        Connection::open_with_flags(&file, create).map_err(Error::sqlite(format!(
            "cannot create the audit database {}",
            file.display()
        )))?,
    );
    let pin = Arc::new(PinnedFile::pin(&file).map_err(Error::pinned(""))?);
    let conn = open(&location, Some(&pin), busy)?;
    migrate(&conn)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let dir_conn = match directory {
        Some(pin) => pin.open(flags).map_err(Error::pinned(""))?,
        None => Connection::open_with_flags(path, flags)
            .map_err(Error::sqlite(format!("cannot open {}", path.display())))?,
    };
    dir_conn
        .busy_timeout(busy)
        .map_err(Error::sqlite("cannot configure the directory connection"))?;
    let moved = trail::adopt(&dir_conn, &file)?;
    if moved > 0 {
        tracing::info!(rows = moved, trail = %file.display(), "moved audit_log out of the directory's file");
    }
    Ok((conn, pin))
}

/// Columns added after the first deployments, with their types: `count`
/// (rate-limited calls folded into the row; NULL means one call) and `via`
/// (the view that made the call through its host).
const ADDED_COLUMNS: [(&str, &str); 2] = [("count", "INTEGER"), ("via", "TEXT")];

/// Creates the table and indexes if missing and brings an older table up
/// to date with [`ADDED_COLUMNS`].
fn migrate(conn: &Connection) -> Result<(), Error> {
    conn.execute_batch(SCHEMA)
        .map_err(Error::sqlite("cannot create the audit_log table"))?;
    for (name, kind) in ADDED_COLUMNS {
        if has_column(conn, name)? {
            continue;
        }
        let added = conn.execute_batch(&format!("ALTER TABLE audit_log ADD COLUMN {name} {kind}"));
        // Another server on the same file may have added it in between.
        if let Err(e) = added
            && !has_column(conn, name)?
        {
            return Err(Error::sqlite(format!(
                "cannot add the {name} column to audit_log"
            ))(e));
        }
    }
    Ok(())
}

fn has_column(conn: &Connection, name: &str) -> Result<bool, Error> {
    let read = |e| Error::sqlite("cannot read the audit_log schema")(e);
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_info('audit_log')")
        .map_err(read)?;
    let names = stmt
        .query_map([], |row| row.get::<_, String>(0))
        .map_err(read)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(read)?;
    Ok(names.iter().any(|n| n == name))
}

fn describe(location: &DatabaseUrl) -> String {
    match location {
        DatabaseUrl::Sqlite { path: p, .. } => p.display().to_string(),
        DatabaseUrl::Memory => "(in memory)".to_owned(),
        DatabaseUrl::Postgres(_) => location.redacted(),
    }
}

/// One record as stored: times formatted, arguments serialized, text
/// fields cut to their limits.
#[derive(Clone, Debug)]
struct Entry {
    at: String,
    at_unix_ms: i64,
    subject: Option<String>,
    client_id: Option<String>,
    client_name: Option<String>,
    remote_addr: Option<String>,
    tool: String,
    arguments: String,
    outcome: CallOutcome,
    detail: Option<String>,
    latency_ms: i64,
    protocol_version: String,
    via: Option<String>,
}

impl Entry {
    fn new(r: AuditRecord) -> Entry {
        let (at, at_unix_ms) = timestamp(r.at);
        let ident = |s: Option<String>| s.map(|s| cut(s, MAX_IDENTITY_BYTES));
        Entry {
            at,
            at_unix_ms,
            subject: ident(r.subject),
            client_id: ident(r.client_id),
            client_name: ident(r.client_name),
            remote_addr: ident(r.remote_addr),
            tool: cut(r.tool, MAX_IDENTITY_BYTES),
            arguments: stored_arguments(&r.arguments),
            outcome: r.outcome,
            detail: r.detail.map(|d| cut(d, MAX_DETAIL_BYTES)),
            latency_ms: i64::try_from(r.latency_ms).unwrap_or(i64::MAX),
            protocol_version: cut(r.protocol_version, MAX_IDENTITY_BYTES),
            via: ident(r.via),
        }
    }
}

/// The arguments' JSON. The engine already cut them to
/// [`RedactionLimits`]; a record from elsewhere that is still too large is
/// replaced by a marker, so the bound holds whatever the source.
fn stored_arguments(arguments: &serde_json::Value) -> String {
    let json = serde_json::to_string(arguments).unwrap_or_else(|_| "{}".to_owned());
    if json.len() <= RedactionLimits::DEFAULT.max_bytes {
        return json;
    }
    serde_json::json!({ "_truncated": true, "_bytes": json.len() }).to_string()
}

/// `s` cut to at most `max` bytes on a character boundary, with a marker.
fn cut(mut s: String, max: usize) -> String {
    const MARK: &str = "… [truncated]";
    if s.len() <= max {
        return s;
    }
    let mut end = max.saturating_sub(MARK.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s.push_str(MARK);
    s
}

/// An [`AuditSink`] appending to `audit_log` (SQLite or PostgreSQL).
///
/// A dedicated writer thread owns the connection and commits records in
/// groups: every record that arrives while a commit is in flight goes into
/// the next transaction, so concurrent calls share one fsync instead of
/// queueing for one each. A call is acknowledged only after the commit
/// holding its record, so durability is unchanged, with one exception:
/// a rate-limited call folded into an already stored per-minute row is
/// acknowledged without waiting for a disk write (its count reaches the row
/// within seconds, and at the latest at shutdown). The refused call did no
/// work, so nothing unaudited leaves the server; a crash may lose the last
/// few seconds of such counts.
#[derive(Clone)]
pub struct Audit {
    queue: mpsc::Sender<Message>,
    /// How long a call waits for its record's commit.
    commit_timeout: Duration,
    /// Queue depth, commit latency and health (`/metrics`, `/readyz`).
    stats: Arc<AuditStats>,
}

/// Settings of [`Audit`].
#[derive(Clone, Debug)]
pub struct AuditOptions {
    /// Rows older than this are deleted; `None` keeps them forever.
    pub retention: Option<Duration>,
    /// The directory's pinned file (SQLite file): the writer opens it
    /// through the pin and commits nothing once another file took its
    /// place.
    pub pin: Option<Arc<PinnedFile>>,
    /// Longest a call waits for its record's commit before it is answered
    /// with an error ("audit trail unavailable"); a commit running longer
    /// makes `/readyz` report the writer stalled.
    pub commit_timeout: Duration,
}

/// `PRAGMA cache_size` of the writer's connection: 256 KiB (SQLite reads
/// a negative size as KiB, a positive one as pages).
const WRITER_CACHE_SIZE: i64 = -256;

impl Audit {
    /// Opens the database (already created by the directory), creates or
    /// migrates the table and starts the writer thread.
    pub fn open(location: &DatabaseUrl, options: AuditOptions) -> Result<Audit, Error> {
        if *location == DatabaseUrl::Memory {
            tracing::warn!(
                "audit trail kept in memory (sqlite::memory: database); it is lost when the server stops"
            );
        }
        let store: Box<dyn store::Store> = match location {
            // Its own runtime must be built off the caller's async threads.
            DatabaseUrl::Postgres(url) => Box::new(off_runtime(|| postgres::PgStore::open(url))?),
            _ => {
                let busy = writer_busy_timeout(options.commit_timeout);
                let (conn, pin) = match location {
                    DatabaseUrl::Sqlite { path, .. } => {
                        let (conn, pin) = open_trail(path, options.pin.as_deref(), busy)?;
                        (conn, Some(pin))
                    }
                    _ => {
                        let conn = open(location, None, busy)?;
                        migrate(&conn)?;
                        (conn, None)
                    }
                };
                // The writer appends (and prunes the oldest rows): it only
                // walks the edges of the table and its indexes, so the
                // default 2 MiB page cache would mostly hold pages it never
                // reads again.
                conn.pragma_update(None, "cache_size", WRITER_CACHE_SIZE)
                    .map_err(Error::sqlite("cannot size the audit writer's page cache"))?;
                Box::new(sqlite::SqliteStore::new(conn, pin))
            }
        };
        let (queue, rx) = mpsc::channel(QUEUE_CAPACITY);
        writer::start_ticker(queue.downgrade())?;
        let stats = Arc::new(AuditStats::new(options.commit_timeout));
        let writer = Writer::new(store, options.retention, Arc::clone(&stats));
        std::thread::Builder::new()
            .name("audit-writer".to_owned())
            .spawn(move || writer.run(rx))
            .map_err(Error::io("cannot start the audit writer thread"))?;
        Ok(Audit {
            queue,
            stats,
            commit_timeout: options.commit_timeout,
        })
    }

    /// The writer's counters.
    pub fn stats(&self) -> &Arc<AuditStats> {
        &self.stats
    }

    /// Whether the writer is committing (for readiness).
    pub fn health(&self) -> Result<(), crate::audit_stats::Unhealthy> {
        self.stats.health(!self.queue.is_closed())
    }

    /// Writes what is held in memory (rate-limited counts) and waits for
    /// it; called once the server stopped answering.
    pub async fn close(&self) {
        let (done, flushed) = oneshot::channel();
        let sent = tokio::time::timeout(CLOSE_TIMEOUT, self.queue.send(Message::Close(done)));
        if matches!(sent.await, Ok(Ok(()))) {
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, flushed).await;
        }
    }
}

impl AuditSink for Audit {
    fn record(
        &self,
        record: AuditRecord,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>> {
        Box::pin(async move {
            let entry = Entry::new(record);
            // The table is the record; this line only helps debugging and
            // carries neither the arguments (their size only) nor the
            // caller's address.
            tracing::debug!(
                target: "audit",
                subject = entry.subject.as_deref().unwrap_or("-"),
                client_id = entry.client_id.as_deref().unwrap_or("-"),
                tool = %entry.tool,
                outcome = entry.outcome.as_str(),
                latency_ms = entry.latency_ms,
                arguments_bytes = entry.arguments.len(),
                "audit"
            );
            let (ack, committed) = oneshot::channel();
            self.stats.enqueued();
            self.queue
                .try_send(Message::Record(Box::new(entry), ack))
                .inspect_err(|_| self.stats.not_enqueued())
                .map_err(|e| match e {
                    mpsc::error::TrySendError::Full(_) => Error::Behind,
                    mpsc::error::TrySendError::Closed(_) => Error::Stopped,
                })?;
            match tokio::time::timeout(self.commit_timeout, committed).await {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(_)) => Err(Error::Stopped.into()),
                Err(_) => Err(Error::CommitTimeout(self.commit_timeout).into()),
            }
        })
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
    /// Only rows with a smaller id (the console's "older" cursor).
    pub before_id: Option<i64>,
    /// Only rows with a larger id (the console's live tail).
    pub after_id: Option<i64>,
    /// Most rows returned (the newest, or the oldest with `oldest_first`).
    pub limit: u32,
    /// The oldest `limit` rows by id instead of the newest: a tail after
    /// `after_id` reads on from its cursor and skips none, however many
    /// rows came in between two reads.
    pub oldest_first: bool,
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
    /// Calls the row stands for: 1, or more for rate-limited calls folded
    /// into one row per caller, tool and minute.
    pub count: i64,
    /// The view (`ui://` URI) that made the call through its host; `None`
    /// for a call from the model or the client.
    pub via: Option<String>,
}

/// The columns a [`Row`] is read from, in the order [`row_from!`] reads
/// them; the query adds the count as the last one.
const ROW_COLUMNS: &str = "id, at, at_unix_ms, subject, client_id, client_name, remote_addr, \
                           tool, arguments, outcome, detail, latency_ms, protocol_version";

/// A [`Row`] from a result row of `SELECT {ROW_COLUMNS}, count, via`, read with
/// the driver's `$get` (`get` for SQLite, `try_get` for PostgreSQL): the
/// column order is written once for both backends.
macro_rules! row_from {
    ($row:ident, $get:ident) => {{
        let arguments: String = $row.$get(8)?;
        Row {
            id: $row.$get(0)?,
            at: $row.$get(1)?,
            at_unix_ms: $row.$get(2)?,
            subject: $row.$get(3)?,
            client_id: $row.$get(4)?,
            client_name: $row.$get(5)?,
            remote_addr: $row.$get(6)?,
            tool: $row.$get(7)?,
            arguments: serde_json::from_str(&arguments)
                .unwrap_or(serde_json::Value::String(arguments)),
            outcome: $row.$get(9)?,
            detail: $row.$get(10)?,
            latency_ms: $row.$get(11)?,
            protocol_version: $row.$get(12)?,
            count: $row.$get(13)?,
            via: $row.$get(14)?,
        }
    }};
}
use row_from;

/// Opens a database file for the `audit` command: read-only, so reading
/// never changes it (no journal-mode switch, no table created), and only
/// a regular file (a device such as `/dev/zero` is no database).
fn open_for_reading(path: &Path) -> Result<Connection, Error> {
    let meta =
        std::fs::metadata(path).map_err(Error::io(format!("no database at {}", path.display())))?;
    if !meta.is_file() {
        return Err(Error::Unusable(format!(
            "{} is not a database file (not a regular file); check --database",
            path.display()
        )));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(Error::sqlite(format!(
        "cannot open {} read-only",
        path.display()
    )))?;
    conn.busy_timeout(READ_BUSY_TIMEOUT)
        .map_err(Error::sqlite("cannot configure the audit database"))?;
    Ok(conn)
}

/// Whether the database has a table `name`; a file that is not a SQLite
/// database says so here, at its first read.
fn has_table(conn: &Connection, name: &str, location: &DatabaseUrl) -> Result<bool, Error> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
        [name],
        |row| row.get(0),
    )
    .map_err(|e| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => Error::Unusable(format!(
            "{} is not a SQLite database; check --database",
            describe(location)
        )),
        _ => Error::sqlite("cannot read the audit database")(e),
    })
}

/// A read-only connection to a SQLite trail, or `None` when no server has
/// written one yet.
fn reading(location: &DatabaseUrl) -> Result<Option<Connection>, Error> {
    let conn = match location {
        DatabaseUrl::Sqlite { path, .. } => {
            let directory = open_for_reading(path)?;
            let file = trail::file(path);
            // Before a server of this version opened the directory, its
            // trail is still inside the directory's file.
            if file.is_file() {
                open_for_reading(&file)?
            } else {
                directory
            }
        }
        _ => open(location, None, READ_BUSY_TIMEOUT)?,
    };
    if !has_table(&conn, "audit_log", location)? {
        // A directory no server has served yet has no trail; any other
        // file is not ours to read.
        if let DatabaseUrl::Sqlite { path, .. } = location
            && !has_table(&conn, "employees", location)?
        {
            return Err(Error::Unusable(format!(
                "{} is not an employee directory (it has no audit_log or employees table); check --database",
                path.display()
            )));
        }
        return Ok(None);
    }
    Ok(Some(conn))
}

/// Calls per minute from `since_ms` (unix milliseconds), every minute up
/// to `until_ms` present ([`activity::fill`]).
pub fn activity(
    location: &DatabaseUrl,
    since_ms: i64,
    until_ms: i64,
) -> Result<Vec<activity::Minute>, Error> {
    let minutes = match location {
        DatabaseUrl::Postgres(url) => off_runtime(|| postgres::activity(url, since_ms))?,
        _ => match reading(location)? {
            None => Vec::new(),
            Some(conn) => {
                let count = if has_column(&conn, "count")? {
                    "COALESCE(count, 1)"
                } else {
                    "1"
                };
                let read = Error::sqlite("cannot read audit_log");
                let mut stmt = conn.prepare(&activity::sql(count)).map_err(read)?;
                stmt.query_map([since_ms], |row| Ok(activity::minute_from!(row, get)))
                    .map_err(Error::sqlite("cannot read audit_log"))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(Error::sqlite("cannot read audit_log"))?
            }
        },
    };
    Ok(activity::fill(minutes, since_ms, until_ms))
}

/// Reads records matching `filter`, oldest first (the newest `limit`).
pub fn query(location: &DatabaseUrl, filter: &Filter) -> Result<Vec<Row>, Error> {
    if let DatabaseUrl::Postgres(url) = location {
        return off_runtime(|| postgres::query(url, filter));
    }
    let Some(conn) = reading(location)? else {
        return Ok(Vec::new());
    };
    // A table from before `count` existed (no server of this version has
    // opened it yet): read it as one call per row.
    let count = if has_column(&conn, "count")? {
        "COALESCE(count, 1)"
    } else {
        "1"
    };
    let via = if has_column(&conn, "via")? {
        "via"
    } else {
        "NULL"
    };
    let mut sql = format!("SELECT {ROW_COLUMNS}, {count}, {via} FROM audit_log WHERE 1 = 1");
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    if let Some(v) = filter.since_ms {
        sql.push_str(" AND at_unix_ms >= ?");
        args.push(v.into());
    }
    if let Some(v) = filter.until_ms {
        sql.push_str(" AND at_unix_ms < ?");
        args.push(v.into());
    }
    if let Some(v) = filter.before_id {
        sql.push_str(" AND id < ?");
        args.push(v.into());
    }
    if let Some(v) = filter.after_id {
        sql.push_str(" AND id > ?");
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
    sql.push_str(if filter.oldest_first {
        " ORDER BY id LIMIT ?"
    } else {
        " ORDER BY at_unix_ms DESC, id DESC LIMIT ?"
    });
    args.push(i64::from(filter.limit).into());
    let mut stmt = conn
        .prepare(&sql)
        .map_err(Error::sqlite("cannot query audit_log"))?;
    let rows = stmt
        .query_map(params_from_iter(args), |row| Ok(row_from!(row, get)))
        .map_err(Error::sqlite("cannot query audit_log"))?;
    let mut out = rows
        .collect::<Result<Vec<Row>, _>>()
        .map_err(Error::sqlite("cannot read audit_log"))?;
    if !filter.oldest_first {
        out.reverse();
    }
    Ok(out)
}

/// Parses `--since`/`--until`: an RFC 3339 time, or a duration back from
/// now such as `90s`, `15m`, `1h`, `7d`, `2w`. Returns unix milliseconds.
pub fn parse_time(text: &str, now: SystemTime) -> Result<i64, String> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.timestamp_millis());
    }
    let back = parse_duration(text).ok_or_else(|| bad_time(text))?;
    // Records are never older than 1970; a duration reaching further back
    // is a typo, and beyond chrono's range it cannot even be formatted.
    let at = now
        .checked_sub(back)
        .filter(|at| *at >= UNIX_EPOCH)
        .ok_or_else(|| {
            format!(
                "invalid time \"{text}\": that reaches back before 1970; use a shorter duration, or leave the flag out to include every record"
            )
        })?;
    Ok(timestamp(at).1)
}

/// `--since`/`--until` as clap reads them: unix milliseconds, or an
/// argument error (exit 2) naming the flag.
pub fn parse_time_arg(text: &str) -> Result<i64, String> {
    parse_time(text, SystemTime::now())
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
    fn a_tail_reads_the_oldest_rows_after_its_cursor() {
        let dir = std::env::temp_dir().join(format!("audit-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("hr.db");
        let _ = std::fs::remove_file(&path);
        let conn = Connection::open(&path).unwrap();
        migrate(&conn).unwrap();
        for i in 1..=5 {
            conn.execute(
                "INSERT INTO audit_log (at, at_unix_ms, tool, arguments, outcome, latency_ms, protocol_version)
                 VALUES ('t', ?1, 'x', '{}', 'success', 0, '2026-07-28')",
                [i],
            )
            .unwrap();
        }
        drop(conn);
        let url = DatabaseUrl::Sqlite {
            path: path.clone(),
            url: format!("sqlite://{}", path.display()),
        };
        let ids = |filter: Filter| -> Vec<i64> {
            query(&url, &filter).unwrap().iter().map(|r| r.id).collect()
        };
        let tail = Filter {
            after_id: Some(1),
            limit: 2,
            ..Filter::default()
        };
        // The newest two would skip rows 2 and 3; a tail must not.
        assert_eq!(ids(tail.clone()), vec![4, 5]);
        let tail = Filter {
            oldest_first: true,
            ..tail
        };
        assert_eq!(ids(tail), vec![2, 3]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parses_times() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(parse_time("1h", now), Ok((1_000_000 - 3600) * 1000));
        assert_eq!(parse_time("7d", now), Ok((1_000_000 - 7 * 86_400) * 1000));
        assert_eq!(parse_time("1970-01-01T00:00:01Z", now), Ok(1000), "rfc3339");
        assert!(parse_time("yesterday", now).is_err());
        assert!(parse_time("5y", now).is_err());
        assert!(parse_time("11575d", now).is_err(), "before 1970");
        assert!(parse_time("99999999999d", now).is_err());
        assert!(parse_time("9223372036854775807s", now).is_err());
    }

    #[test]
    fn reads_retentions() {
        let days = |n: u64| Ok(Retention(Some(Duration::from_secs(n * 86_400))));
        assert_eq!("90d".parse(), days(90));
        assert_eq!(
            "12h".parse(),
            Ok(Retention(Some(Duration::from_secs(12 * 3600))))
        );
        assert_eq!("off".parse(), Ok(Retention(None)));
        assert_eq!("0".parse(), Ok(Retention(None)));
        assert!("0d".parse::<Retention>().is_err());
        assert!("90".parse::<Retention>().is_err());
        assert!("99999999999999999999w".parse::<Retention>().is_err());
    }

    #[test]
    fn migrates_an_old_table_once() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        assert!(!has_column(&conn, "count").unwrap());
        migrate(&conn).unwrap();
        assert!(has_column(&conn, "count").unwrap());
        migrate(&conn).unwrap();
    }

    #[test]
    fn cuts_on_character_boundaries() {
        assert_eq!(cut("short".to_owned(), 20), "short");
        let long = "é".repeat(100);
        let c = cut(long, 30);
        assert!(c.len() <= 30 && c.ends_with("… [truncated]"), "{c}");
    }
}
