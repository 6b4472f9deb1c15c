//! Custom tools on SQLite: their own read-only connections, an authorizer
//! that allows reading the directory and nothing else, and a progress
//! handler that stops a statement at its deadline.
//!
//! Three independent locks keep a statement read-only: the connection is
//! opened `SQLITE_OPEN_READ_ONLY`, the authorizer denies every action but
//! reads (no writes, `ATTACH`, `PRAGMA`, transactions; no audit or
//! catalogue table), and `sqlite3_stmt_readonly` must hold.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use employee_directory::pinned::{PinError, PinnedConnection, PinnedFile};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use serde_json::{Map, Value};
use tokio::sync::Semaphore;

use super::spec::{DefinitionError, ToolSpec};
use super::sql;

/// Tables a custom statement may never read.
pub const PROTECTED_TABLES: [&str; 4] = [
    "audit_log",
    "tool_catalog",
    "tool_catalog_changes",
    "tool_catalog_generation",
];

/// How long a custom statement waits for a writer's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

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

/// Opens a read-only connection with the authorizer installed.
pub fn open_read_only(path: &Path) -> Result<Connection, String> {
    let conn = Connection::open_with_flags(path, READ_ONLY)
        .map_err(|e| format!("cannot open {} read-only: {e}", path.display()))?;
    guard(conn)
}

/// [`open_read_only`] on the server's pinned file.
fn open_pinned(pin: &Arc<PinnedFile>) -> Result<PinnedConnection, RunError> {
    let conn = pin.open(READ_ONLY).map_err(|e| match e {
        PinError::Missing(_) | PinError::Replaced(_) => RunError::FileChanged(e.to_string()),
        other => RunError::Database(other.to_string()),
    })?;
    let mut conn = PinnedConnection::new(conn, Some(Arc::clone(pin)));
    configure(&mut conn).map_err(RunError::Database)?;
    Ok(conn)
}

fn guard(mut conn: Connection) -> Result<Connection, String> {
    configure(&mut conn)?;
    Ok(conn)
}

/// Busy timeout and the authorizer.
fn configure(conn: &mut Connection) -> Result<(), String> {
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| format!("cannot configure the read-only connection: {e}"))?;
    conn.authorizer(Some(authorize))
        .map_err(|e| format!("cannot install the authorizer: {e}"))
}

/// Reads of unprotected tables, `SELECT`, functions and recursive CTEs.
fn authorize(ctx: AuthContext<'_>) -> Authorization {
    match ctx.action {
        AuthAction::Select | AuthAction::Function { .. } | AuthAction::Recursive => {
            Authorization::Allow
        }
        AuthAction::Read { table_name, .. } if readable(table_name) => Authorization::Allow,
        _ => Authorization::Deny,
    }
}

/// Directory tables: not the audit trail or the catalogue, not SQLite's
/// own tables, not the `pragma_*` table-valued functions (PRAGMA by
/// another name).
fn readable(table: &str) -> bool {
    let lower = table.to_ascii_lowercase();
    !PROTECTED_TABLES.contains(&lower.as_str())
        && !lower.starts_with("sqlite_")
        && !lower.starts_with("pragma_")
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
    let stmt = conn.prepare(text).map_err(|e| {
        err(match e.sqlite_error_code() {
            Some(ErrorCode::AuthorizationForStatementDenied) => format!(
                "not allowed in a read-only tool ({e}): only SELECT on directory tables; no writes, ATTACH, PRAGMA, or {}",
                PROTECTED_TABLES.join(", ")
            ),
            _ => format!("does not prepare on the target database: {e}"),
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
    /// Deadline for the statement.
    pub timeout: Duration,
}

impl Executor {
    /// An executor on the database file at `path`, running at most
    /// `max_connections` statements at once.
    pub fn new(path: PathBuf, max_connections: usize) -> Self {
        Self {
            path,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(max_connections.max(1))),
            pin: OnceLock::new(),
        }
    }

    /// Serves from the pinned file only (set once, before serving).
    pub fn pin(&self, pin: Arc<PinnedFile>) {
        let _ = self.pin.set(pin);
    }

    /// Runs `query` on a blocking thread: `(rows, truncated)`.
    pub async fn run(self: &Arc<Self>, query: Query) -> Result<(Vec<Value>, bool), RunError> {
        // Waiting for a connection is bounded by the engine's call timeout.
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| RunError::Busy)?;
        let this = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            this.run_blocking(&query)
        })
        .await
        .map_err(|e| RunError::Database(format!("query thread failed: {e}")))?
    }

    fn run_blocking(&self, query: &Query) -> Result<(Vec<Value>, bool), RunError> {
        if let Some(pin) = self.pin.get() {
            pin.check()
                .map_err(|e| RunError::FileChanged(e.to_string()))?;
        }
        let taken = self.idle.lock().ok().and_then(|mut v| v.pop());
        let mut conn = match (taken, self.pin.get()) {
            (Some(c), _) => c,
            (None, Some(pin)) => open_pinned(pin)?,
            (None, None) => PinnedConnection::new(
                open_read_only(&self.path).map_err(RunError::Database)?,
                None,
            ),
        };
        let result = execute(&mut conn, query);
        if !matches!(result, Err(RunError::Database(_)))
            && let Ok(mut idle) = self.idle.lock()
        {
            idle.push(conn);
        }
        result
    }
}

fn execute(conn: &mut Connection, query: &Query) -> Result<(Vec<Value>, bool), RunError> {
    let deadline = Instant::now() + query.timeout;
    let _ = conn.progress_handler(1_000, Some(move || Instant::now() > deadline));
    let result = fetch(conn, query);
    let _ = conn.progress_handler(0, None::<fn() -> bool>);
    result.map_err(|e| match e.sqlite_error_code() {
        Some(ErrorCode::OperationInterrupted) => {
            RunError::Timeout(u64::try_from(query.timeout.as_millis()).unwrap_or(u64::MAX))
        }
        _ => RunError::Database(e.to_string()),
    })
}

fn fetch(conn: &Connection, query: &Query) -> rusqlite::Result<(Vec<Value>, bool)> {
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
    while let Some(row) = rows.next()? {
        if out.len() == query.row_limit as usize {
            return Ok((out, true));
        }
        let mut object = Map::new();
        for (i, column) in query.columns.iter().enumerate() {
            object.insert(column.name.clone(), to_json(row.get_ref(i)?, column));
        }
        out.push(Value::Object(object));
    }
    Ok((out, false))
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
