//! Custom tools on PostgreSQL: every statement runs in a `READ ONLY`
//! transaction, under a role that may only read the directory tables
//! (`SET LOCAL ROLE`), with `SET LOCAL statement_timeout` at the tool's
//! timeout.
//!
//! Checks before a definition is accepted: the statement starts with
//! `SELECT`/`WITH`/`VALUES`/`TABLE`, calls none of the functions that
//! write or change the session ([`DENIED_FUNCTIONS`]), prepares with
//! parameters typed from its JSON Schema, and passes `EXPLAIN` under the
//! reader role in a read-only transaction: `EXPLAIN` runs the executor's
//! permission checks without running the statement, so a write (a
//! data-modifying CTE, `SELECT … FOR UPDATE`) or a read of the audit,
//! catalogue or `mcp_*` tables is refused with "permission denied".

use deadpool_postgres::{Pool, Transaction};
use futures_util::StreamExt;
use serde_json::{Map, Value};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use super::limits::Limits;
use super::spec::{DefinitionError, ToolSpec};
use super::sqlite::{OutColumn, Query, RunError};
use super::{Error, sql};

/// Default name of the role custom statements run as.
pub const DEFAULT_READER_ROLE: &str = "employee_mcp_reader";

/// The directory's tables: the only ones the reader role may read (a unit
/// test keeps this list equal to the directory's migrations).
pub const DIRECTORY_TABLES: [&str; 21] = [
    "departments",
    "teams",
    "locations",
    "roles",
    "compensation_bands",
    "employees",
    "skills",
    "employee_skills",
    "employment_history",
    "leave_balances",
    "band_salaries",
    "directory_meta",
    "directory_generation",
    "import_history",
    "report_bands",
    "report_days",
    "report_headcount",
    "report_salaries",
    "roster_places",
    "roster_teams",
    "skill_counts",
];

/// Functions a custom statement may not call: they write, take locks, or
/// change the session (`set_config('role', …)` would undo `SET ROLE`), or
/// run SQL given as text.
const DENIED_FUNCTIONS: [&str; 14] = [
    "set_config",
    "nextval",
    "setval",
    "pg_notify",
    "txid_current",
    "pg_current_xact_id",
    "pg_export_snapshot",
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_reload_conf",
    "pg_rotate_logfile",
    "pg_switch_wal",
    "pg_create_restore_point",
    "pg_logical_emit_message",
];

/// Prefixes and suffixes of denied function families.
const DENIED_PREFIXES: [&str; 5] = [
    "pg_advisory",
    "pg_try_advisory",
    "lo_",
    "dblink",
    "pg_stat_reset",
];
const DENIED_SUFFIXES: [&str; 3] = ["_to_xml", "_to_xmlschema", "_to_xml_and_xmlschema"];

fn denied(word: &str) -> bool {
    DENIED_FUNCTIONS.contains(&word)
        || DENIED_PREFIXES.iter().any(|p| word.starts_with(p))
        || DENIED_SUFFIXES.iter().any(|s| word.ends_with(s))
}

/// The SQL a DBA runs once so that `user` may run custom tools as `role`.
pub fn grants_sql(role: &str, user: &str) -> String {
    format!(
        "CREATE ROLE {role} NOLOGIN;\nGRANT {role} TO {user};\nGRANT USAGE ON SCHEMA public TO {role};\nGRANT SELECT ON {} TO {role};",
        DIRECTORY_TABLES.join(", ")
    )
}

/// A valid role name: a plain lowercase identifier, so it needs no quoting.
pub fn valid_role(role: &str) -> bool {
    !role.is_empty()
        && role.len() <= 63
        && role.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && role
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

fn pg_error(e: &tokio_postgres::Error) -> String {
    mcpwire_cluster::db_message(e)
}

/// How many times a reader-role setup is tried before its error stands.
const READER_ATTEMPTS: u64 = 3;

/// Creates the reader role and its grants where missing, or says exactly
/// what a DBA must run. Idempotent; reads only when all is in place.
pub async fn ensure_reader(pool: &Pool, role: &str) -> Result<(), Error> {
    // Replicas starting together race on the same catalog rows ("tuple
    // concurrently updated"); a retry finds the other's work done.
    let mut attempt = 1;
    loop {
        match ensure_reader_once(pool, role).await {
            Ok(()) => return Ok(()),
            Err(e) if attempt >= READER_ATTEMPTS => return Err(e),
            Err(_) => {}
        }
        tokio::time::sleep(std::time::Duration::from_millis(100 * attempt)).await;
        attempt += 1;
    }
}

async fn ensure_reader_once(pool: &Pool, role: &str) -> Result<(), Error> {
    if !valid_role(role) {
        return Err(Error::InvalidRole(role.to_owned()));
    }
    let client = pool.get().await?;
    let user: String = client
        .query_one("SELECT current_user::text", &[])
        .await?
        .get(0);
    let refused = |what: &'static str, source: tokio_postgres::Error| Error::RoleRefused {
        role: role.to_owned(),
        what,
        source,
        user: user.clone(),
        grants: grants_sql(role, &user),
    };
    let exists = |sql: &'static str| {
        let client = &client;
        async move {
            client
                .query_one(sql, &[&role])
                .await
                .and_then(|r| r.try_get::<_, bool>(0))
        }
    };
    let has_role = "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)";
    if !exists(has_role).await? {
        // Another process may create it at the same moment: fine.
        if let Err(e) = client
            .batch_execute(&format!("CREATE ROLE {role} NOLOGIN"))
            .await
            && !exists(has_role).await.unwrap_or(false)
        {
            return Err(refused("CREATE ROLE", e));
        }
    }
    let member = "SELECT pg_has_role(current_user, $1, 'MEMBER')";
    if !exists(member).await? {
        client
            .batch_execute(&format!("GRANT {role} TO CURRENT_USER"))
            .await
            .map_err(|e| refused("GRANT role", e))?;
    }
    for table in DIRECTORY_TABLES {
        let row = client
            .query_one(
                "SELECT to_regclass($1) IS NULL OR has_table_privilege($2, $1, 'SELECT')",
                &[&table, &role],
            )
            .await?;
        if !row.try_get::<_, bool>(0)? {
            client
                .batch_execute(&format!("GRANT SELECT ON {table} TO {role}"))
                .await
                .map_err(|e| refused("GRANT SELECT", e))?;
        }
    }
    check_reader_is_narrow(&client, role).await
}

/// Refuses a role that can read more than the directory (a superuser, or
/// one granted the audit, catalogue or cluster tables).
async fn check_reader_is_narrow(
    client: &deadpool_postgres::Object,
    role: &str,
) -> Result<(), Error> {
    let rows = client
        .query(
            "SELECT c.relname::text FROM pg_class c
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'v', 'm', 'p')
               AND NOT (c.relname = ANY ($2))
               AND has_table_privilege($1, c.oid, 'SELECT')
             ORDER BY 1",
            &[&role, &DIRECTORY_TABLES.to_vec()],
        )
        .await?;
    let extra: Vec<String> = rows
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    if extra.is_empty() {
        return Ok(());
    }
    Err(Error::RoleTooWide {
        role: role.to_owned(),
        tables: extra.join(", "),
    })
}

/// The PostgreSQL type a JSON Schema parameter type binds as.
fn param_type(spec: &ToolSpec, name: &str) -> Type {
    let ty = spec
        .parameters
        .as_ref()
        .and_then(|p| p.get("properties"))
        .and_then(|p| p.get(name))
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str);
    match ty {
        Some("integer") => Type::INT8,
        Some("number") => Type::FLOAT8,
        Some("boolean") => Type::BOOL,
        _ => Type::TEXT,
    }
}

/// The JSON type of a result column's PostgreSQL type; `None` for a type
/// custom tools do not return (cast it to text).
pub fn json_type(ty: &Type) -> Option<&'static str> {
    match *ty {
        Type::INT2 | Type::INT4 | Type::INT8 | Type::OID => Some("integer"),
        Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC => Some("number"),
        Type::BOOL => Some("boolean"),
        Type::TEXT
        | Type::VARCHAR
        | Type::BPCHAR
        | Type::NAME
        | Type::DATE
        | Type::TIMESTAMP
        | Type::TIMESTAMPTZ
        | Type::JSON
        | Type::JSONB => Some("string"),
        _ => None,
    }
}

/// The statement in PostgreSQL form and its parameter types.
pub struct Prepared {
    /// With `$n` for each `:name`.
    pub sql: String,
    /// Parameter names in `$n` order.
    pub names: Vec<String>,
    /// Their types.
    pub types: Vec<Type>,
}

/// The statement of `spec` as PostgreSQL runs it.
pub fn prepared(spec: &ToolSpec) -> Prepared {
    let text = spec.sql_for("postgres");
    let (sql, names) = sql::to_numbered(text, &sql::scan_postgres(text));
    let types = names.iter().map(|n| param_type(spec, n)).collect();
    Prepared { sql, names, types }
}

/// Name of the column [`capped`] adds: the row's size in bytes.
const SIZE_COLUMN: &str = "__mcp_row_bytes";

/// Rows asked of the portal at a time: reading stops between batches as
/// soon as the byte budget is spent.
const BATCH_ROWS: i32 = 64;

/// `sql` (a query in `$n` form) wrapped so that no row PostgreSQL sends
/// can be larger than the answer may be: each row's size (its columns as
/// text) is computed on the server, every column of a larger row comes
/// back NULL, and the size is returned as one more column for the
/// caller's byte budget. The driver buffers whole rows, so capping them in
/// SQL is what keeps a `repeat('x', 400000000)` out of this process.
pub fn capped(sql: &str, columns: &[OutColumn], limits: &Limits) -> String {
    let body = &sql[..sql::scan_postgres(sql).end];
    let quoted: Vec<String> = columns
        .iter()
        .map(|c| format!("\"{}\"", c.name.replace('"', "\"\"")))
        .collect();
    let size = quoted
        .iter()
        .map(|c| format!("COALESCE(octet_length(q.{c}::text), 0)"))
        .collect::<Vec<_>>()
        .join(" + ");
    let max = limits.max_result_bytes;
    let outer = quoted
        .iter()
        .map(|c| format!("CASE WHEN w.{SIZE_COLUMN} > {max} THEN NULL ELSE w.{c} END AS {c}"))
        .collect::<Vec<_>>()
        .join(", ");
    // OFFSET 0 keeps the inner query from being flattened, so the size is
    // computed once per row; the newline ends a trailing `--` comment.
    format!(
        "SELECT {outer}, w.{SIZE_COLUMN}::int8 AS {SIZE_COLUMN} FROM (SELECT q.*, ({size})::int8 AS {SIZE_COLUMN} FROM (\n{body}\n) AS q({}) OFFSET 0) AS w",
        quoted.join(", ")
    )
}

/// Starts the transaction every custom statement runs in.
async fn read_only_tx<'a>(
    client: &'a mut deadpool_postgres::Object,
    role: &str,
    timeout_ms: u64,
) -> Result<Transaction<'a>, tokio_postgres::Error> {
    let tx = client.build_transaction().read_only(true).start().await?;
    tx.batch_execute(&format!(
        "SET LOCAL ROLE {role}; SET LOCAL statement_timeout = {timeout_ms}; \
         SET LOCAL standard_conforming_strings = on; SET LOCAL DateStyle = 'ISO, YMD'"
    ))
    .await?;
    Ok(tx)
}

/// Checks a tool's statement on PostgreSQL; returns its result columns.
pub async fn check(
    pool: &Pool,
    role: &str,
    spec: &ToolSpec,
) -> Result<Vec<OutColumn>, DefinitionError> {
    let err = |reason: String| DefinitionError::new(&spec.name, "sql", reason);
    let text = spec.sql_for("postgres");
    let scan = sql::scan_postgres(text);
    super::check_parameters(spec, &scan)?;
    if scan.dollar {
        return Err(err(
            "no `$` outside string literals: use named parameters (:name) and '…' strings, not $1 or dollar quoting".into(),
        ));
    }
    let first = scan.words.first().map(String::as_str).unwrap_or("");
    if !matches!(first, "select" | "with" | "values" | "table") {
        return Err(err(format!(
            "not allowed in a read-only tool: the statement must be a query starting with SELECT, WITH, VALUES or TABLE, not {first:?}"
        )));
    }
    if let Some(f) = scan.words.iter().find(|w| denied(w)) {
        return Err(err(format!(
            "calls {f}(), which is not allowed in a read-only tool (it writes, locks or changes the session)"
        )));
    }
    let p = prepared(spec);
    let mut client = pool.get().await.map_err(|e| {
        err(format!(
            "cannot reach PostgreSQL to check the statement: {e}"
        ))
    })?;
    let tx = read_only_tx(&mut client, role, spec.timeout_ms)
        .await
        .map_err(|e| err(format!("cannot check the statement: {}", pg_error(&e))))?;
    let refused = |e: tokio_postgres::Error| err(refusal(&e));
    let stmt = tx.prepare_typed(&p.sql, &p.types).await.map_err(refused)?;
    explain(&tx, &p, spec).await?;
    let mut columns = Vec::new();
    for c in stmt.columns() {
        let json_type = json_type(c.type_()).ok_or_else(|| {
            err(format!(
                "column {:?} has type {}, which custom tools do not return; cast it, e.g. `… ::text AS \"{}\"`",
                c.name(),
                c.type_(),
                c.name()
            ))
        })?;
        columns.push(OutColumn {
            name: c.name().to_owned(),
            json_type: Some(json_type),
        });
    }
    super::check_columns(spec, &columns)?;
    // The form calls run in (see `capped`) must prepare too.
    tx.prepare_typed(&capped(&p.sql, &columns, &Limits::default()), &p.types)
        .await
        .map_err(refused)?;
    Ok(columns)
}

/// Plans the statement with `EXPLAIN` (NULL for every parameter): the
/// executor's permission checks run, the statement does not. A plan step
/// that writes or locks rows is refused too.
async fn explain(
    tx: &Transaction<'_>,
    p: &Prepared,
    spec: &ToolSpec,
) -> Result<(), DefinitionError> {
    let err = |reason: String| DefinitionError::new(&spec.name, "sql", reason);
    let refused = |e: tokio_postgres::Error| err(refusal(&e));
    let explain = format!("EXPLAIN (FORMAT JSON) {}", p.sql);
    let plan_stmt = tx
        .prepare_typed(&explain, &p.types)
        .await
        .map_err(refused)?;
    let params: Vec<&(dyn ToSql + Sync)> = p.types.iter().map(|_| &Null as _).collect();
    let plan: Value = tx
        .query_one(&plan_stmt, &params)
        .await
        .map_err(refused)?
        .try_get(0)
        .map_err(|e| err(format!("unreadable plan: {e}")))?;
    if let Some(node) = writing_node(&plan) {
        return Err(err(format!(
            "the statement is not read-only (its plan has a {node} step)"
        )));
    }
    Ok(())
}

/// The reason for a statement PostgreSQL refused, with its hint.
fn refusal(e: &tokio_postgres::Error) -> String {
    let Some(db) = e.as_db_error() else {
        return format!("cannot check the statement: {e}");
    };
    let hint = db.hint().map(|h| format!(" ({h})")).unwrap_or_default();
    if db.code() == &SqlState::INSUFFICIENT_PRIVILEGE
        || db.code() == &SqlState::READ_ONLY_SQL_TRANSACTION
    {
        format!(
            "not allowed in a read-only tool ({}): only reading the directory tables is allowed; no writes, no SELECT … FOR UPDATE, no audit_log, tool_catalog* or mcp_* tables",
            db.message()
        )
    } else {
        format!(
            "does not prepare on the target database: {}{hint}",
            db.message()
        )
    }
}

/// The first plan step that writes or locks rows, if any.
fn writing_node(plan: &Value) -> Option<String> {
    match plan {
        Value::Object(map) => {
            if let Some(Value::String(t)) = map.get("Node Type")
                && matches!(t.as_str(), "ModifyTable" | "LockRows")
            {
                return Some(t.clone());
            }
            map.values().find_map(writing_node)
        }
        Value::Array(items) => items.iter().find_map(writing_node),
        _ => None,
    }
}

/// Runs custom statements on their own small pool.
pub struct Executor {
    pool: Pool,
    role: String,
    limits: Limits,
}

impl Executor {
    /// An executor on `pool` (its size bounds the queries running at
    /// once), running statements as `role` within `limits`.
    pub fn new(pool: Pool, role: String, limits: Limits) -> Self {
        Self { pool, role, limits }
    }

    /// The bounds every statement runs within.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Runs `query` (in [`capped`] form): `(rows, truncated)`. If this
    /// future is dropped (the call timed out or was cancelled), PostgreSQL
    /// is asked to cancel the statement rather than run it to its
    /// `statement_timeout`.
    pub async fn run(
        &self,
        spec_types: &[Type],
        names: &[String],
        query: Query,
    ) -> Result<(Vec<Value>, bool), RunError> {
        let timeout_ms = u64::try_from(query.timeout.as_millis()).unwrap_or(u64::MAX);
        let client = self.pool.get().await.map_err(|e| match e {
            deadpool_postgres::PoolError::Timeout(_) => RunError::Busy,
            e => RunError::Database(e.to_string()),
        })?;
        let mut running = Running(Some(client));
        let call = Call {
            role: &self.role,
            types: spec_types,
            names,
            query: &query,
            timeout_ms,
            max_bytes: self.limits.max_result_bytes,
        };
        let result = call.fetch(running.client()).await;
        running.finish();
        result.map_err(|e| match e {
            Fetch::TooLarge => RunError::TooLarge(self.limits.max_result_bytes),
            Fetch::Postgres(e) => classify(&e, timeout_ms),
        })
    }
}

fn classify(e: &tokio_postgres::Error, timeout_ms: u64) -> RunError {
    match e.as_db_error().map(|d| d.code()) {
        Some(c) if c == &SqlState::QUERY_CANCELED => RunError::Timeout(timeout_ms),
        // Bad argument values (e.g. an invalid date): the caller's to fix.
        Some(c) if c.code().starts_with("22") => RunError::Argument(
            e.as_db_error()
                .map(|d| d.message().to_owned())
                .unwrap_or_default(),
        ),
        _ => RunError::Database(pg_error(e)),
    }
}

/// Why a fetch stopped.
enum Fetch {
    /// A row, or the rows so far, passed the byte budget.
    TooLarge,
    /// PostgreSQL failed (or cancelled the statement).
    Postgres(tokio_postgres::Error),
}

impl From<tokio_postgres::Error> for Fetch {
    fn from(e: tokio_postgres::Error) -> Self {
        Fetch::Postgres(e)
    }
}

/// One call's statement and its bounds.
struct Call<'a> {
    role: &'a str,
    types: &'a [Type],
    names: &'a [String],
    query: &'a Query,
    timeout_ms: u64,
    max_bytes: usize,
}

/// A pooled connection running a custom statement. Dropped before
/// [`Running::finish`] (the call timed out or was cancelled), it cancels the
/// statement and leaves the pool: returned at once, the backend would be
/// handed to the next call while the cancel request is still on its way,
/// and the cancel would stop that other caller's statement.
struct Running(Option<deadpool_postgres::Object>);

impl Running {
    fn client(&mut self) -> &mut deadpool_postgres::Object {
        // Only `finish` and `drop` empty it, and both consume `self`.
        self.0
            .as_mut()
            .expect("the connection is held until the call ends")
    }

    /// The statement ended: the connection goes back to the pool.
    fn finish(mut self) {
        drop(self.0.take());
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(client) = self.0.take() else {
            return;
        };
        let token = client.cancel_token();
        let detached = deadpool_postgres::Object::take(client);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = token.cancel_query(tokio_postgres::NoTls).await;
                drop(detached);
            });
        }
    }
}

impl Call<'_> {
    async fn fetch(
        &self,
        client: &mut deadpool_postgres::Object,
    ) -> Result<(Vec<Value>, bool), Fetch> {
        let query = self.query;
        let tx = read_only_tx(client, self.role, self.timeout_ms).await?;
        let stmt = tx.prepare_typed_cached(&query.sql, self.types).await?;
        let values: Vec<Box<dyn ToSql + Sync + Send>> = self
            .names
            .iter()
            .zip(self.types)
            .map(|(n, t)| bind(query.arguments.get(n).unwrap_or(&Value::Null), t))
            .collect();
        let params: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v.as_ref() as _).collect();
        let portal = tx.bind(&stmt, &params).await?;
        let limit = query.row_limit as usize;
        let (mut out, mut bytes, mut truncated) = (Vec::new(), 0usize, false);
        // Batches until the portal is done, one row past the limit (the
        // result was cut), or the byte budget is spent.
        'batches: loop {
            let rows = tx.query_portal_raw(&portal, BATCH_ROWS).await?;
            let mut rows = std::pin::pin!(rows);
            let mut got = 0;
            while let Some(row) = rows.next().await {
                let row = row?;
                got += 1;
                if out.len() == limit {
                    truncated = true;
                    break 'batches;
                }
                let size: i64 = row.try_get(query.columns.len())?;
                bytes = bytes.saturating_add(usize::try_from(size).unwrap_or(usize::MAX));
                if bytes > self.max_bytes {
                    return Err(Fetch::TooLarge);
                }
                let mut object = Map::new();
                for (i, column) in query.columns.iter().enumerate() {
                    object.insert(column.name.clone(), super::pg_value::decode(&row, i));
                }
                out.push(Value::Object(object));
            }
            if got < BATCH_ROWS {
                break;
            }
        }
        // Nothing to keep: end the transaction (and the portal) now.
        tx.rollback().await?;
        Ok((out, truncated))
    }
}

/// A validated argument as the value of a parameter of type `ty`.
fn bind(value: &Value, ty: &Type) -> Box<dyn ToSql + Sync + Send> {
    match (value, ty) {
        (Value::Null, _) => Box::new(Null),
        (Value::Bool(b), _) => Box::new(*b),
        (Value::Number(n), t) if *t == Type::INT8 => Box::new(n.as_i64()),
        (Value::Number(n), _) => Box::new(n.as_f64()),
        (Value::String(s), _) => Box::new(s.clone()),
        (other, _) => Box::new(other.to_string()),
    }
}

/// SQL NULL as a value of any type (absent optional arguments, and the
/// generic parameters `EXPLAIN` plans with).
#[derive(Debug)]
struct Null;

impl ToSql for Null {
    fn to_sql(
        &self,
        _: &Type,
        _: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        Ok(IsNull::Yes)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_tables_match_the_migrations() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../employee-directory/migrations/postgres"
        );
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).expect("migrations") {
            let text = std::fs::read_to_string(entry.expect("entry").path()).expect("read");
            for line in text.lines() {
                if let Some(rest) = line.trim().strip_prefix("CREATE TABLE ") {
                    let name = rest.trim_start_matches("IF NOT EXISTS ");
                    found.push(name.split([' ', '(']).next().unwrap_or("").to_owned());
                }
            }
        }
        found.sort();
        let mut ours: Vec<String> = DIRECTORY_TABLES.iter().map(|s| s.to_string()).collect();
        ours.sort();
        assert_eq!(found, ours);
    }

    #[test]
    fn denies_session_and_write_functions() {
        assert!(denied("set_config"));
        assert!(denied("pg_advisory_xact_lock"));
        assert!(denied("query_to_xml"));
        assert!(!denied("pg_sleep"));
        assert!(!denied("lower"));
    }
}
