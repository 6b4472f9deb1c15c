//! Custom tools on SQLite: their own read-only connections, an authorizer
//! that allows reading the directory and nothing else, and a progress
//! handler that stops a statement at its deadline.
//!
//! Three independent locks keep a statement read-only: the connection is
//! opened `SQLITE_OPEN_READ_ONLY`, the authorizer denies every action but
//! reads (no writes, `ATTACH`, `PRAGMA`, transactions; no audit or
//! catalogue table), and `sqlite3_stmt_readonly` must hold.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use employee_directory::pinned::{PinError, PinnedConnection, PinnedFile};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use serde_json::{Map, Value};
use tokio::sync::Semaphore;

use super::limits::{Cancelled, Limits, raise_on_drop};
use super::spec::{DefinitionError, ToolSpec};
use super::{Error, sql};

/// Tables a custom statement may never read.
pub const PROTECTED_TABLES: [&str; 4] = [
    "audit_log",
    "tool_catalog",
    "tool_catalog_changes",
    "tool_catalog_generation",
];

/// SQLite's own virtual tables that are not directory data: storage
/// statistics and raw pages (they fail at run time under the authorizer
/// anyway, so they are refused when the tool is checked).
const INTERNAL_TABLES: [&str; 3] = ["dbstat", "sqlite_dbpage", "sqlite_stmt"];

/// Functions a custom statement may not call, and why.
const DENIED_FUNCTIONS: [(&str, &str); 2] = [
    ("load_extension", "which loads native code into the server"),
    ("fts3_tokenizer", "which registers native code"),
];

/// How long a custom statement waits for a writer's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// Virtual-machine steps between two checks of a statement's deadline,
/// cancellation and heap.
const CHECK_EVERY: i32 = 1_000;

thread_local! {
    /// Why the authorizer last refused something on this thread: read
    /// right after a failed prepare, so the refusal names its reason.
    static DENIED: RefCell<Option<Refusal>> = const { RefCell::new(None) };
}

/// One result column and its JSON type, when the declared type tells.
#[derive(Clone, Debug, PartialEq)]
pub struct OutColumn {
    /// Column name (its alias).
    pub name: String,
    /// `integer`, `number` or `string`; `None` for expressions.
    pub json_type: Option<&'static str>,
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The statement ran past the tool's timeout.
    #[error("the query ran longer than its limit of {0} ms")]
    Timeout(u64),
    /// A value, or all rows together, passed the answer's byte limit.
    #[error("the result is larger than {0} bytes")]
    TooLarge(usize),
    /// The statement made SQLite's heap grow past its bound.
    #[error("the query needed more than {0} bytes of memory")]
    Memory(usize),
    /// Every query connection is busy.
    #[error("too many custom queries are running")]
    Busy,
    /// The database refused an argument's value (e.g. an invalid date).
    #[error("invalid argument: {0}")]
    Argument(String),
    /// The database failed.
    #[error("{0}")]
    Database(String),
    /// The database file was replaced or removed while serving.
    #[error("{0}")]
    FileChanged(String),
}

const READ_ONLY: OpenFlags =
    OpenFlags::SQLITE_OPEN_READ_ONLY.union(OpenFlags::SQLITE_OPEN_NO_MUTEX);

/// Opens a read-only connection with the authorizer installed and its
/// values bounded by `limits` (`SQLITE_LIMIT_LENGTH`: a function asked for
/// a gigabyte fails at once with "string or blob too big").
pub fn open_read_only(path: &Path, limits: &Limits) -> Result<Connection, Error> {
    let mut conn =
        Connection::open_with_flags(path, READ_ONLY).map_err(|source| Error::OpenReadOnly {
            path: path.to_owned(),
            source,
        })?;
    configure(&mut conn, limits)?;
    Ok(conn)
}

/// [`open_read_only`] on the server's pinned file.
fn open_pinned(pin: &Arc<PinnedFile>, limits: &Limits) -> Result<PinnedConnection, RunError> {
    let conn = pin.open(READ_ONLY).map_err(|e| match e {
        PinError::Missing(_) | PinError::Replaced(_) => RunError::FileChanged(e.to_string()),
        other => RunError::Database(other.to_string()),
    })?;
    let mut conn = PinnedConnection::new(conn, Some(Arc::clone(pin)));
    configure(&mut conn, limits).map_err(|e| RunError::Database(e.to_string()))?;
    Ok(conn)
}

/// Busy timeout, the value-length bound and the authorizer.
fn configure(conn: &mut Connection, limits: &Limits) -> Result<(), Error> {
    conn.busy_timeout(BUSY_TIMEOUT).map_err(Error::Configure)?;
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, limits.max_value_bytes())
        .map_err(Error::Bound)?;
    conn.authorizer(Some(authorize)).map_err(Error::Authorizer)
}

/// Why the authorizer refused a step of a statement (the reason a
/// refused definition names).
#[derive(Debug, thiserror::Error)]
enum Refusal {
    /// A function of [`DENIED_FUNCTIONS`].
    #[error("it calls {function}(), {why}")]
    Function {
        function: &'static str,
        why: &'static str,
    },
    /// Anything but reading.
    #[error("it does more than read ({0})")]
    NotARead(String),
    /// The audit trail or the catalogue.
    #[error("it reads {0}, which is the audit trail or the tool catalogue, not directory data")]
    Protected(String),
    /// SQLite's own tables.
    #[error("it reads {0}, SQLite's own data, not the directory")]
    Internal(String),
    /// A `pragma_*` table-valued function.
    #[error("it calls {0}, which is a PRAGMA")]
    Pragma(String),
}

/// Reads of directory tables, `SELECT`, recursive CTEs and functions
/// other than [`DENIED_FUNCTIONS`]; a refusal's reason is kept for
/// [`check`].
fn authorize(ctx: AuthContext<'_>) -> Authorization {
    match verdict(&ctx.action) {
        Ok(()) => Authorization::Allow,
        Err(reason) => {
            DENIED.with(|d| *d.borrow_mut() = Some(reason));
            Authorization::Deny
        }
    }
}

fn verdict(action: &AuthAction<'_>) -> Result<(), Refusal> {
    match action {
        AuthAction::Select | AuthAction::Recursive => Ok(()),
        AuthAction::Function { function_name } => {
            let lower = function_name.to_ascii_lowercase();
            match DENIED_FUNCTIONS.iter().find(|(f, _)| *f == lower) {
                Some(&(function, why)) => Err(Refusal::Function { function, why }),
                None => Ok(()),
            }
        }
        AuthAction::Read { table_name, .. } => readable(table_name),
        other => Err(Refusal::NotARead(format!("{other:?}"))),
    }
}

/// Directory tables: not the audit trail or the catalogue, not SQLite's
/// own tables or statistics, not the `pragma_*` table-valued functions
/// (PRAGMA by another name).
fn readable(table: &str) -> Result<(), Refusal> {
    let lower = table.to_ascii_lowercase();
    if PROTECTED_TABLES.contains(&lower.as_str()) {
        Err(Refusal::Protected(table.to_owned()))
    } else if INTERNAL_TABLES.contains(&lower.as_str()) || lower.starts_with("sqlite_") {
        Err(Refusal::Internal(table.to_owned()))
    } else if lower.starts_with("pragma_") {
        Err(Refusal::Pragma(table.to_owned()))
    } else {
        Ok(())
    }
}

/// Checks a tool's statement against the database: one statement, it
/// prepares under the authorizer, it is read-only, it uses exactly the
/// declared parameters, its columns have distinct names. Returns the
/// result columns.
pub fn check(conn: &Connection, spec: &ToolSpec) -> Result<Vec<OutColumn>, DefinitionError> {
    let text = spec.sql_for("sqlite");
    let err = |reason: String| DefinitionError::new(&spec.name, "sql", reason);
    let scan = sql::scan(text);
    super::check_parameters(spec, &scan)?;
    DENIED.with(|d| d.borrow_mut().take());
    let stmt = conn.prepare(text).map_err(|e| {
        // A refused function fails as a plain error, a refused action as
        // SQLITE_AUTH: either way the authorizer kept the reason.
        let denied = DENIED.with(|d| d.borrow_mut().take());
        err(match (denied, e.sqlite_error_code()) {
            (None, code) if code != Some(ErrorCode::AuthorizationForStatementDenied) => {
                format!("does not prepare on the target database: {e}")
            }
            (reason, _) => format!(
                "not allowed in a read-only tool: {}; only SELECT on directory tables; no writes, ATTACH, PRAGMA, load_extension, dbstat, or {}",
                reason.map_or_else(|| e.to_string(), |r| r.to_string()),
                PROTECTED_TABLES.join(", ")
            ),
        })
    })?;
    if !stmt.readonly() {
        return Err(err("the statement is not read-only".into()));
    }
    let columns: Vec<OutColumn> = stmt
        .columns()
        .map(|c| OutColumn {
            name: c.name().to_owned(),
            json_type: c.decl_type().and_then(json_type),
        })
        .collect();
    super::check_columns(spec, &columns)?;
    Ok(columns)
}

/// The JSON type of a declared SQLite type, by SQLite's affinity rules.
fn json_type(decl: &str) -> Option<&'static str> {
    let d = decl.to_ascii_uppercase();
    if d.contains("INT") {
        Some("integer")
    } else if d.contains("CHAR") || d.contains("CLOB") || d.contains("TEXT") {
        Some("string")
    } else if d.contains("REAL") || d.contains("FLOA") || d.contains("DOUB") {
        Some("number")
    } else {
        None
    }
}

/// Runs custom statements on a small pool of read-only connections.
pub struct Executor {
    path: PathBuf,
    idle: Mutex<Vec<PinnedConnection>>,
    permits: Arc<Semaphore>,
    limits: Limits,
    /// The server's pinned file: checked before every call, and new
    /// connections are opened through it.
    pin: OnceLock<Arc<PinnedFile>>,
}

/// One call's input.
pub struct Query {
    /// The statement.
    pub sql: String,
    /// Values by parameter name (absent optional parameters bind NULL).
    pub arguments: Map<String, Value>,
    /// Result columns, as checked.
    pub columns: Vec<OutColumn>,
    /// Most rows.
    pub row_limit: u32,
    /// Deadline for the statement (already the smaller of the tool's and
    /// the call's).
    pub timeout: Duration,
}

impl Executor {
    /// An executor on the database file at `path`, running at most
    /// `max_connections` statements at once, each within `limits`.
    pub fn new(path: PathBuf, max_connections: usize, limits: Limits) -> Self {
        Self {
            path,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(max_connections.max(1))),
            limits,
            pin: OnceLock::new(),
        }
    }

    /// The bounds every statement runs within.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Serves from the pinned file only (set once, before serving).
    pub fn pin(&self, pin: Arc<PinnedFile>) {
        let _ = self.pin.set(pin);
    }

    /// Runs `query` on a blocking thread: `(rows, truncated)`. If this
    /// future is dropped (the call timed out or was cancelled), the
    /// statement stops at its next progress check.
    pub async fn run(self: &Arc<Self>, query: Query) -> Result<(Vec<Value>, bool), RunError> {
        // Waiting for a connection is bounded by the engine's call timeout.
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| RunError::Busy)?;
        let cancelled = Cancelled::default();
        let _guard = raise_on_drop(&cancelled);
        let this = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            this.run_blocking(&query, cancelled)
        })
        .await
        .map_err(|e| RunError::Database(format!("query thread failed: {e}")))?
    }

    fn run_blocking(
        &self,
        query: &Query,
        cancelled: Cancelled,
    ) -> Result<(Vec<Value>, bool), RunError> {
        if let Some(pin) = self.pin.get() {
            pin.check()
                .map_err(|e| RunError::FileChanged(e.to_string()))?;
        }
        let taken = self.idle.lock().ok().and_then(|mut v| v.pop());
        let mut conn = match (taken, self.pin.get()) {
            (Some(c), _) => c,
            (None, Some(pin)) => open_pinned(pin, &self.limits)?,
            (None, None) => PinnedConnection::new(
                open_read_only(&self.path, &self.limits)
                    .map_err(|e| RunError::Database(e.to_string()))?,
                None,
            ),
        };
        let result = execute(&mut conn, query, &self.limits, cancelled);
        if !matches!(result, Err(RunError::Database(_)))
            && let Ok(mut idle) = self.idle.lock()
        {
            idle.push(conn);
        }
        result
    }
}

/// Why the progress handler stopped a statement.
const STOP_TIME: u8 = 1;
const STOP_MEMORY: u8 = 2;

/// The bytes SQLite holds now, in the whole process (the heap bound is a
/// growth bound, so the directory's and the audit's own use do not count).
fn heap_used() -> i64 {
    // SAFETY: sqlite3_memory_used only reads SQLite's allocation counter.
    unsafe { rusqlite::ffi::sqlite3_memory_used() }
}

/// Runs `query` under a progress handler that interrupts it at its
/// deadline, when its call is over, or when SQLite's heap grew by more
/// than the bound since it started (SQLite's hard heap limit is
/// process-wide: it would fail the directory's and the audit writer's
/// allocations too, so the bound is enforced here, on custom statements
/// only).
fn execute(
    conn: &mut Connection,
    query: &Query,
    limits: &Limits,
    cancelled: Cancelled,
) -> Result<(Vec<Value>, bool), RunError> {
    let deadline = Instant::now() + query.timeout;
    let heap_limit =
        heap_used().saturating_add(i64::try_from(limits.max_heap_bytes).unwrap_or(i64::MAX));
    let stop = Arc::new(AtomicU8::new(0));
    let why = Arc::clone(&stop);
    conn.progress_handler(
        CHECK_EVERY,
        Some(move || {
            let reason = if Instant::now() > deadline || cancelled.is_set() {
                STOP_TIME
            } else if heap_used() > heap_limit {
                STOP_MEMORY
            } else {
                return false;
            };
            why.store(reason, Ordering::Relaxed);
            true
        }),
    )
    .map_err(|e| RunError::Database(e.to_string()))?;
    let result = fetch(conn, query, limits.max_result_bytes);
    let _ = conn.progress_handler(0, None::<fn() -> bool>);
    result.map_err(|e| match e {
        Fetch::TooLarge => RunError::TooLarge(limits.max_result_bytes),
        Fetch::Sqlite(e) => match e.sqlite_error_code() {
            Some(ErrorCode::OperationInterrupted)
                if stop.load(Ordering::Relaxed) == STOP_MEMORY =>
            {
                RunError::Memory(limits.max_heap_bytes)
            }
            Some(ErrorCode::OperationInterrupted) => {
                RunError::Timeout(u64::try_from(query.timeout.as_millis()).unwrap_or(u64::MAX))
            }
            Some(ErrorCode::TooBig) => RunError::TooLarge(limits.max_result_bytes),
            _ => RunError::Database(e.to_string()),
        },
    })
}

/// Why [`fetch`] stopped.
enum Fetch {
    /// The rows read so far passed the byte budget.
    TooLarge,
    /// SQLite failed (or was interrupted).
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for Fetch {
    fn from(e: rusqlite::Error) -> Self {
        Fetch::Sqlite(e)
    }
}

/// Reads at most `row_limit` rows and `max_bytes` of values.
fn fetch(conn: &Connection, query: &Query, max_bytes: usize) -> Result<(Vec<Value>, bool), Fetch> {
    let mut stmt = conn.prepare_cached(&query.sql)?;
    for i in 1..=stmt.parameter_count() {
        let name = stmt
            .parameter_name(i)
            .map(|n| n.trim_start_matches(':').to_owned())
            .unwrap_or_default();
        let value = query.arguments.get(&name).unwrap_or(&Value::Null);
        bind(&mut stmt, i, value)?;
    }
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    let mut bytes = 0usize;
    while let Some(row) = rows.next()? {
        if out.len() == query.row_limit as usize {
            return Ok((out, true));
        }
        let mut object = Map::new();
        for (i, column) in query.columns.iter().enumerate() {
            let value = row.get_ref(i)?;
            bytes = bytes.saturating_add(column.name.len() + value_bytes(value));
            if bytes > max_bytes {
                return Err(Fetch::TooLarge);
            }
            object.insert(column.name.clone(), to_json(value, column));
        }
        out.push(Value::Object(object));
    }
    Ok((out, false))
}

/// About what a value costs in the answer.
fn value_bytes(value: ValueRef<'_>) -> usize {
    match value {
        ValueRef::Text(t) | ValueRef::Blob(t) => t.len() + 2,
        _ => 8,
    }
}

/// Binds a validated argument (a scalar, by the tool's schema).
fn bind(stmt: &mut rusqlite::Statement<'_>, i: usize, value: &Value) -> rusqlite::Result<()> {
    match value {
        Value::Null => stmt.raw_bind_parameter(i, rusqlite::types::Null),
        Value::Bool(b) => stmt.raw_bind_parameter(i, *b),
        Value::Number(n) => match n.as_i64() {
            Some(v) => stmt.raw_bind_parameter(i, v),
            None => stmt.raw_bind_parameter(i, n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => stmt.raw_bind_parameter(i, s.as_str()),
        other => stmt.raw_bind_parameter(i, other.to_string()),
    }
}

/// A value as JSON of the column's type; a value SQLite stored with
/// another type than declared becomes null rather than break the schema.
fn to_json(value: ValueRef<'_>, column: &OutColumn) -> Value {
    let v = match value {
        ValueRef::Null | ValueRef::Blob(_) => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        ValueRef::Text(t) => Value::from(String::from_utf8_lossy(t).into_owned()),
    };
    let fits = match (column.json_type, &v) {
        (_, Value::Null) | (None, _) => true,
        (Some("integer"), Value::Number(n)) => n.is_i64(),
        (Some("number"), Value::Number(_)) => true,
        (Some("string"), Value::String(_)) => true,
        _ => false,
    };
    if fits { v } else { Value::Null }
}
