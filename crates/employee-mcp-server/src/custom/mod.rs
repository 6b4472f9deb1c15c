//! Operator-defined read-only SQL tools (issue 10).
//!
//! A definition ([`spec`]) is checked in full before anything changes:
//! its fields, its argument schema (compiled by the same code the server
//! uses), and its statement on the target database ([`sqlite::check`]).
//! A checked definition becomes an ordinary [`Tool`]: calls go through the
//! engine like the built-ins (argument validation, scopes, rate limits,
//! timeout, redaction, sanitisation, audit).

pub mod spec;
pub mod sql;
pub mod sqlite;

use std::sync::Arc;
use std::time::Duration;

use mcp_server::protocol::model::ToolAnnotations;
use mcp_server::{CallToolResult, RegistrationError, Server, Tool, ToolError, ToolOutcome};
use rusqlite::Connection;
use serde_json::{Map, Value, json};

use spec::{DefinitionError, ToolSpec};
use sqlite::{Executor, OutColumn, Query, RunError};

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
        if taken.contains(&spec.name) {
            return Err(DefinitionError::new(
                &spec.name,
                "name",
                "a tool with this name already exists (remove it first, or pick another name)",
            ));
        }
        let columns = sqlite::check(conn, &spec)?;
        let checked = Checked { spec, columns };
        check_schemas(&checked)?;
        out.push(checked);
    }
    Ok(out)
}

/// Compiles the tool's schemas the way the server will.
fn check_schemas(checked: &Checked) -> Result<(), DefinitionError> {
    // A placeholder executor: the tool is built, never called.
    let executor = Arc::new(Executor::new("/nonexistent".into(), 1));
    let tool = build(checked, executor);
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

/// The tool for a checked definition, running on `executor`.
pub fn build(checked: &Checked, executor: Arc<Executor>) -> Tool {
    let spec = &checked.spec;
    let user = spec.annotations.clone().unwrap_or_default();
    let annotations = ToolAnnotations {
        title: user.title,
        idempotent_hint: Some(user.idempotent.unwrap_or(true)),
        open_world_hint: Some(user.open_world.unwrap_or(false)),
        ..ToolAnnotations::read_only()
    };
    let mut builder = Tool::builder(spec.name.clone())
        .description(spec.description.clone() + crate::tools::DATA_NOT_INSTRUCTIONS)
        .annotations(annotations)
        .required_scopes(spec.scopes.clone())
        .input_schema(Value::Object(spec.input_schema()))
        .output_schema(output_schema(&checked.columns));
    if let Some(title) = &spec.title {
        builder = builder.title(title.clone());
    }
    for (column, scope) in &spec.field_scopes {
        builder = builder.field_scope(format!("/rows/*/{column}"), scope.clone());
    }
    let call = Arc::new(CallPlan {
        sql: spec.sql_for("sqlite").to_owned(),
        columns: checked.columns.clone(),
        row_limit: spec.row_limit,
        timeout: Duration::from_millis(spec.timeout_ms),
        name: spec.name.clone(),
    });
    builder.raw_handler(move |_ctx, arguments| {
        let call = Arc::clone(&call);
        let executor = Arc::clone(&executor);
        async move { call.run(&executor, arguments).await }
    })
}

/// What a call needs, shared by every call of one tool.
struct CallPlan {
    sql: String,
    columns: Vec<OutColumn>,
    row_limit: u32,
    timeout: Duration,
    name: String,
}

impl CallPlan {
    async fn run(
        &self,
        executor: &Arc<Executor>,
        arguments: Map<String, Value>,
    ) -> Result<ToolOutcome, ToolError> {
        let query = Query {
            sql: self.sql.clone(),
            arguments,
            columns: self.columns.clone(),
            row_limit: self.row_limit,
            timeout: self.timeout,
        };
        match executor.run(query).await {
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
            Err(RunError::Busy) => Err(ToolError::execution(
                "Too many custom queries are running on this server; retry in a few seconds.",
            )),
            Err(RunError::Database(detail)) => {
                tracing::error!(tool = %self.name, %detail, "custom tool query failed");
                Err(ToolError::execution(
                    "The HR directory is temporarily unavailable; retry in a few seconds. If it persists, tell the user the HR system is down.",
                ))
            }
        }
    }
}
