//! Operator-defined read-only SQL tools.
//!
//! A definition ([`spec`]) is checked in full before anything changes:
//! its fields, its argument schema (compiled by the same code the server
//! uses), and its statement on the target database ([`sqlite::check`],
//! [`postgres::check`]; [`Checker`] picks the one of the database).
//! A checked definition becomes an ordinary [`Tool`]: calls go through the
//! engine like the built-ins (argument validation, scopes, rate limits,
//! timeout, redaction, sanitisation, audit).

mod error;
pub mod limits;
mod pg_value;
pub mod postgres;
pub mod spec;
pub mod sql;
pub mod sqlite;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{CallToolResult, RegistrationError, Server, Tool, ToolError, ToolOutcome};
use rusqlite::Connection;
use serde_json::{Map, Value, json};
use tokio_postgres::types::Type;

pub use error::Error;
use limits::Limits;
use spec::{DefinitionError, ToolSpec};
use sqlite::{OutColumn, Query, RunError};

/// Where definitions are checked: the database their statements run on.
#[derive(Clone)]
pub enum Checker {
    /// The directory's SQLite file.
    Sqlite(PathBuf),
    /// The directory's PostgreSQL database, and the reader role.
    Postgres {
        /// Connections for checking.
        pool: Pool,
        /// The role statements run as.
        role: String,
    },
}

impl Checker {
    /// Checks definitions; `taken` are names no definition may use.
    pub async fn check_all(
        &self,
        specs: Vec<ToolSpec>,
        taken: &[String],
    ) -> Result<Vec<Checked>, DefinitionError> {
        match self {
            Checker::Sqlite(path) => {
                let (path, taken) = (path.clone(), taken.to_vec());
                tokio::task::spawn_blocking(move || {
                    let conn = sqlite::open_read_only(&path, &Limits::default())
                        .map_err(|e| DefinitionError::new("(file)", "(database)", e.to_string()))?;
                    check_all(&conn, specs, &taken)
                })
                .await
                .map_err(|e| DefinitionError::new("(file)", "(database)", e.to_string()))?
            }
            Checker::Postgres { pool, role } => {
                let mut out = Vec::with_capacity(specs.len());
                for spec in specs {
                    check_name(&spec, taken)?;
                    let columns = postgres::check(pool, role, &spec).await?;
                    let checked = Checked { spec, columns };
                    check_schemas(&checked)?;
                    out.push(checked);
                }
                Ok(out)
            }
        }
    }
}

/// Runs custom statements on the directory's database.
pub enum Runner {
    /// Read-only SQLite connections.
    Sqlite(Arc<sqlite::Executor>),
    /// A PostgreSQL pool, under the reader role.
    Postgres(Arc<postgres::Executor>),
}

impl Runner {
    /// The bounds its statements run within.
    pub fn limits(&self) -> &Limits {
        match self {
            Runner::Sqlite(e) => e.limits(),
            Runner::Postgres(e) => e.limits(),
        }
    }
}

fn check_name(spec: &ToolSpec, taken: &[String]) -> Result<(), DefinitionError> {
    if taken.contains(&spec.name) {
        return Err(DefinitionError::new(
            &spec.name,
            "name",
            "a tool with this name already exists (remove it first, or pick another name)",
        ));
    }
    Ok(())
}

/// Checks on the statement's text common to both backends: one
/// statement, only named parameters, every one declared and every
/// declared one used.
pub fn check_parameters(spec: &ToolSpec, scan: &sql::Scan) -> Result<(), DefinitionError> {
    let err = |reason: String| DefinitionError::new(&spec.name, "sql", reason);
    if scan.several_statements {
        return Err(err(
            "exactly one statement is allowed; remove everything after the ';'".into(),
        ));
    }
    if scan.positional {
        return Err(err(
            "use named parameters (:name), not ?, ?1, @name or $1".into()
        ));
    }
    let declared = spec.parameter_names();
    if let Some((name, _)) = scan.parameters.iter().find(|(n, _)| !declared.contains(n)) {
        return Err(err(format!(
            "parameter :{name} is not declared in [tool.parameters] properties"
        )));
    }
    if let Some(name) = declared
        .iter()
        .find(|d| !scan.parameters.iter().any(|(n, _)| n == *d))
    {
        return Err(DefinitionError::new(
            &spec.name,
            "parameters",
            format!("parameter {name:?} is declared but the SQL never uses :{name}"),
        ));
    }
    Ok(())
}

/// Checks on the result columns common to both backends: at least one,
/// distinct names, every `field_scopes` key among them.
pub fn check_columns(spec: &ToolSpec, columns: &[OutColumn]) -> Result<(), DefinitionError> {
    let err = |reason: String| DefinitionError::new(&spec.name, "sql", reason);
    if columns.is_empty() {
        return Err(err("the statement returns no columns".into()));
    }
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].iter().any(|o| o.name == c.name) {
            return Err(err(format!(
                "column {:?} appears twice; give each column its own name with AS",
                c.name
            )));
        }
    }
    for column in spec.field_scopes.keys() {
        if !columns.iter().any(|c| &c.name == column) {
            return Err(DefinitionError::new(
                &spec.name,
                "field_scopes",
                format!("{column:?} is not a result column"),
            ));
        }
    }
    Ok(())
}

/// A definition that passed every check, with its result columns.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The definition.
    pub spec: ToolSpec,
    /// Result columns of its statement.
    pub columns: Vec<OutColumn>,
}

/// Checks definitions against the database behind `conn` (a read-only
/// connection from [`sqlite::open_read_only`]); `taken` are names no
/// definition may use (built-ins, other custom tools).
pub fn check_all(
    conn: &Connection,
    specs: Vec<ToolSpec>,
    taken: &[String],
) -> Result<Vec<Checked>, DefinitionError> {
    let mut out = Vec::with_capacity(specs.len());
    for spec in specs {
        check_name(&spec, taken)?;
        let columns = sqlite::check(conn, &spec)?;
        let checked = Checked { spec, columns };
        check_schemas(&checked)?;
        out.push(checked);
    }
    Ok(out)
}

/// Compiles the tool's schemas the way the server will.
fn check_schemas(checked: &Checked) -> Result<(), DefinitionError> {
    // A placeholder runner: the tool is built, never called.
    let runner = Arc::new(Runner::Sqlite(Arc::new(sqlite::Executor::new(
        "/nonexistent".into(),
        1,
        Limits::default(),
    ))));
    let tool = build(checked, runner);
    match Server::builder("check", "0").tool(tool).build() {
        Ok(_) => Ok(()),
        Err(RegistrationError::Schema { which, reason, .. }) => Err(DefinitionError::new(
            &checked.spec.name,
            if which == "input" {
                "parameters"
            } else {
                "sql"
            },
            reason,
        )),
        Err(e) => Err(DefinitionError::new(
            &checked.spec.name,
            "name",
            e.to_string(),
        )),
    }
}

/// The `outputSchema`: `rows` of typed objects, `truncated` when cut.
pub fn output_schema(columns: &[OutColumn]) -> Value {
    let mut props = Map::new();
    for c in columns {
        let schema = match c.json_type {
            Some(t) => json!({ "type": [t, "null"] }),
            None => json!({ "type": ["string", "number", "null"] }),
        };
        props.insert(c.name.clone(), schema);
    }
    let required: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    json!({
        "type": "object",
        "properties": {
            "rows": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": props,
                    "required": required,
                    "additionalProperties": false
                }
            },
            "truncated": {
                "type": "boolean",
                "description": "Present and true when more rows matched than the tool returns."
            }
        },
        "required": ["rows"]
    })
}

/// The annotations a custom tool is listed with: the definition's hints,
/// read-only and non-destructive forced.
pub fn annotations(spec: &ToolSpec) -> ToolAnnotations {
    let user = spec.annotations.clone().unwrap_or_default();
    ToolAnnotations {
        title: user.title,
        idempotent_hint: Some(user.idempotent.unwrap_or(true)),
        open_world_hint: Some(user.open_world.unwrap_or(false)),
        ..ToolAnnotations::read_only()
    }
}

/// The tool for a checked definition, running on `runner`.
pub fn build(checked: &Checked, runner: Arc<Runner>) -> Tool {
    let spec = &checked.spec;
    let annotations = annotations(spec);
    let mut builder = Tool::builder(spec.name.clone())
        .description(spec.description.clone() + crate::tools::DATA_NOT_INSTRUCTIONS)
        .annotations(annotations)
        .required_scopes(spec.scopes.clone())
        .input_schema(Value::Object(spec.input_schema()))
        .output_schema(output_schema(&checked.columns))
        // The definition's approval (`none` unless given); the catalogue
        // may override it (`tools approval`).
        .approval(spec.approval());
    if let Some(title) = &spec.title {
        builder = builder.title(title.clone());
    }
    for (column, scope) in &spec.field_scopes {
        builder = builder.field_scope(format!("/rows/*/{column}"), scope.clone());
    }
    let (sql, names, types) = match runner.as_ref() {
        Runner::Sqlite(_) => (spec.sql_for("sqlite").to_owned(), Vec::new(), Vec::new()),
        Runner::Postgres(executor) => {
            let p = postgres::prepared(spec);
            let sql = postgres::capped(&p.sql, &checked.columns, executor.limits());
            (sql, p.names, p.types)
        }
    };
    let call = Arc::new(CallPlan {
        sql,
        names,
        types,
        columns: checked.columns.clone(),
        row_limit: spec.row_limit,
        timeout: runner
            .limits()
            .effective_timeout(Duration::from_millis(spec.timeout_ms)),
        name: spec.name.clone(),
    });
    builder.raw_handler(move |ctx, arguments| {
        let call = Arc::clone(&call);
        let runner = Arc::clone(&runner);
        async move {
            // A cancelled call drops its query, which stops the statement.
            tokio::select! {
                outcome = call.run(&runner, arguments) => outcome,
                () = ctx.cancelled() => Err(ToolError::execution("The call was cancelled.")),
            }
        }
    })
}

/// What a call needs, shared by every call of one tool.
struct CallPlan {
    sql: String,
    /// PostgreSQL: parameter names in `$n` order, and their types.
    names: Vec<String>,
    types: Vec<Type>,
    columns: Vec<OutColumn>,
    row_limit: u32,
    /// The smaller of the tool's `timeout_ms` and the call timeout.
    timeout: Duration,
    name: String,
}

impl CallPlan {
    async fn run(
        &self,
        runner: &Runner,
        arguments: Map<String, Value>,
    ) -> Result<ToolOutcome, ToolError> {
        let query = Query {
            sql: self.sql.clone(),
            arguments,
            columns: self.columns.clone(),
            row_limit: self.row_limit,
            timeout: self.timeout,
        };
        let result = match runner {
            Runner::Sqlite(executor) => executor.run(query).await,
            Runner::Postgres(executor) => executor.run(&self.types, &self.names, query).await,
        };
        match result {
            Ok((rows, truncated)) => {
                let mut out = Map::new();
                out.insert("rows".into(), Value::Array(rows));
                if truncated {
                    out.insert("truncated".into(), Value::Bool(true));
                }
                Ok(CallToolResult::structured(Value::Object(out)).into())
            }
            Err(RunError::Timeout(ms)) => Err(ToolError::execution(format!(
                "The query of \"{}\" ran longer than its limit of {ms} ms and was stopped; narrow the arguments and retry.",
                self.name
            ))),
            Err(RunError::TooLarge(limit)) => Err(ToolError::execution(format!(
                "The result of \"{}\" is larger than this server's limit of {limit} bytes (one value or all rows together), so the query was stopped; narrow the arguments and retry.",
                self.name
            ))),
            Err(RunError::Memory(limit)) => Err(ToolError::execution(format!(
                "The query of \"{}\" needed more than this server's limit of {} MiB of memory and was stopped; narrow the arguments and retry.",
                self.name,
                limit / (1024 * 1024)
            ))),
            Err(RunError::Argument(reason)) => Err(ToolError::execution(format!(
                "The database refused an argument of \"{}\": {reason}. Correct the argument and retry.",
                self.name
            ))),
            Err(RunError::Busy) => Err(ToolError::execution(
                "Too many custom queries are running on this server; retry in a few seconds.",
            )),
            Err(RunError::FileChanged(detail)) => {
                tracing::error!(tool = %self.name, %detail, "custom tool refused");
                Err(ToolError::execution(crate::tools::REPLACED_MESSAGE))
            }
            Err(RunError::Database(detail)) => {
                tracing::error!(tool = %self.name, %detail, "custom tool query failed");
                Err(ToolError::execution(
                    "The HR directory is temporarily unavailable; retry in a few seconds. If it persists, tell the user the HR system is down.",
                ))
            }
        }
    }
}
