//! The tool definition file: TOML, one `[[tool]]` table per tool.
//!
//! Parsing checks the shape of every field (types, bounds, names); what
//! needs a database (the statement prepares, is read-only, uses exactly
//! the declared parameters) is checked by [`super::sqlite`].

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use mcpwire_server::access::Approval;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::scopes;

/// Largest accepted definition file, in bytes.
pub const MAX_FILE_BYTES: usize = 256 * 1024;
/// Most tools in one file.
pub const MAX_TOOLS_PER_FILE: usize = 100;
/// Largest row limit a tool may declare.
pub const MAX_ROW_LIMIT: u32 = 10_000;
/// Longest timeout a tool may declare, in milliseconds.
pub const MAX_TIMEOUT_MS: u64 = 60_000;
/// Longest SQL statement, in bytes.
pub const MAX_SQL_BYTES: usize = 16 * 1024;

/// A definition file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFile {
    /// The tools it defines.
    #[serde(default)]
    pub tool: Vec<ToolSpec>,
}

/// One custom tool, as written by the operator (and stored as JSON in the
/// catalogue, so every replica loads the same definition).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// Tool name: 1-128 of `[A-Za-z0-9_.-]`, unique among all tools.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does and when to use it, for the model.
    pub description: String,
    /// JSON Schema of the arguments (root `type = "object"`); every
    /// property is a SQL parameter `:name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Map<String, Value>>,
    /// The statement, with named parameters `:name`.
    pub sql: String,
    /// Per-backend variants of `sql` (`sqlite`, `postgres`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sql_variants: BTreeMap<String, String>,
    /// Scopes that grant the tool (any one of them).
    pub scopes: Vec<String>,
    /// Result columns that need an extra scope: column = "scope".
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub field_scopes: BTreeMap<String, String>,
    /// Most rows returned; more are cut and `truncated` is set.
    #[serde(default = "default_row_limit")]
    pub row_limit: u32,
    /// Longest the statement may run, in milliseconds.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Behaviour hints; `readOnlyHint` is forced to true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Who must agree before a call runs: `none` (the default), `confirm`
    /// (the user, in their client) or `operator`; see [`Self::approval`].
    /// Absent from definitions stored before it existed, and left out of
    /// the stored JSON when not given (so their definitions compare equal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
}

/// The spellings `approval` accepts.
pub const APPROVALS: [&str; 3] = ["none", "confirm", "operator"];

/// The hints an operator may set (read-only and non-destructive are forced).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Annotations {
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Same arguments give the same result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Talks to an open world (false for the directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

fn default_row_limit() -> u32 {
    100
}

fn default_timeout_ms() -> u64 {
    5_000
}

/// Why a definition was refused: the tool, the field and the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("tool {tool:?}, field `{field}`: {reason}")]
pub struct DefinitionError {
    /// The tool's name (or its position in the file).
    pub tool: String,
    /// The offending field.
    pub field: String,
    /// What is wrong and how to fix it.
    pub reason: String,
}

impl DefinitionError {
    /// An error about `field` of `tool`.
    pub fn new(tool: &str, field: &str, reason: impl Into<String>) -> Self {
        Self {
            tool: tool.to_owned(),
            field: field.to_owned(),
            reason: reason.into(),
        }
    }
}

/// Reads a definition file: at most [`MAX_FILE_BYTES`] are read whatever
/// the file is (a device such as `/dev/zero` or a pipe has no size to
/// check first), and one byte more means the file is refused.
pub fn read_file(path: &Path) -> Result<String, super::Error> {
    let cannot = |source: std::io::Error| super::Error::ReadFile {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(super::Error::FileTooLarge {
            path: path.to_owned(),
        });
    }
    String::from_utf8(bytes).map_err(|_| super::Error::NotUtf8 {
        path: path.to_owned(),
    })
}

/// Parses a definition file and checks every field that needs no database.
pub fn parse_file(text: &str) -> Result<Vec<ToolSpec>, DefinitionError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(DefinitionError::new(
            "(file)",
            "(file)",
            format!(
                "the file is {} bytes, over the limit of {MAX_FILE_BYTES}",
                text.len()
            ),
        ));
    }
    let file: ToolFile = toml::from_str(text).map_err(|e| {
        DefinitionError::new("(file)", "(toml)", e.to_string().trim_end().to_owned())
    })?;
    if file.tool.is_empty() {
        return Err(DefinitionError::new(
            "(file)",
            "tool",
            "no [[tool]] table; define at least one tool",
        ));
    }
    if file.tool.len() > MAX_TOOLS_PER_FILE {
        return Err(DefinitionError::new(
            "(file)",
            "tool",
            format!(
                "{} tools, over the limit of {MAX_TOOLS_PER_FILE} per file",
                file.tool.len()
            ),
        ));
    }
    for (i, spec) in file.tool.iter().enumerate() {
        if file.tool[..i].iter().any(|t| t.name == spec.name) {
            return Err(DefinitionError::new(
                &spec.name,
                "name",
                "defined twice in this file",
            ));
        }
        spec.check_fields()?;
    }
    Ok(file.tool)
}

impl ToolSpec {
    /// The statement for `backend` (`sqlite` or `postgres`).
    pub fn sql_for(&self, backend: &str) -> &str {
        self.sql_variants
            .get(backend)
            .map_or(self.sql.as_str(), String::as_str)
    }

    /// The argument schema with the forced parts: object root, no
    /// undeclared arguments.
    pub fn input_schema(&self) -> Map<String, Value> {
        let mut schema = self.parameters.clone().unwrap_or_default();
        schema.insert("type".into(), Value::from("object"));
        schema
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        schema.insert("additionalProperties".into(), Value::Bool(false));
        schema
    }

    /// The declared approval: `none` when not given. Parsing refuses any
    /// other spelling; one found in a stored definition anyway is taken as
    /// the strictest (`operator`), so a damaged row fails closed.
    pub fn approval(&self) -> Approval {
        match self.approval.as_deref() {
            None => Approval::None,
            Some(text) => Approval::parse(text).unwrap_or(Approval::Operator),
        }
    }

    /// Declared parameter names.
    pub fn parameter_names(&self) -> Vec<String> {
        match self.input_schema().get("properties") {
            Some(Value::Object(p)) => p.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    fn check_fields(&self) -> Result<(), DefinitionError> {
        let err = |field: &str, reason: String| DefinitionError::new(&self.name, field, reason);
        let valid_name = !self.name.is_empty()
            && self.name.len() <= 128
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        if !valid_name {
            return Err(err(
                "name",
                "must be 1-128 characters of A-Z, a-z, 0-9, '_', '-', '.'".into(),
            ));
        }
        if self.description.trim().is_empty() {
            return Err(err("description", "must not be empty".into()));
        }
        self.check_scopes()?;
        if let Some(approval) = &self.approval
            && Approval::parse(approval).is_none()
        {
            return Err(err(
                "approval",
                format!(
                    "unknown approval {approval:?}; use one of {} (none: no one is asked; confirm: the user confirms each call in their client; operator: an operator approves each call)",
                    APPROVALS.join(", ")
                ),
            ));
        }
        if self.row_limit == 0 || self.row_limit > MAX_ROW_LIMIT {
            return Err(err(
                "row_limit",
                format!("must be between 1 and {MAX_ROW_LIMIT}"),
            ));
        }
        if self.timeout_ms == 0 || self.timeout_ms > MAX_TIMEOUT_MS {
            return Err(err(
                "timeout_ms",
                format!("must be between 1 and {MAX_TIMEOUT_MS}"),
            ));
        }
        for (backend, sql) in std::iter::once(("sql", &self.sql))
            .chain(self.sql_variants.iter().map(|(k, v)| (k.as_str(), v)))
        {
            if backend != "sql" && !["sqlite", "postgres"].contains(&backend) {
                return Err(err(
                    "sql_variants",
                    format!("unknown backend {backend:?}; use sqlite or postgres"),
                ));
            }
            if sql.trim().is_empty() || sql.len() > MAX_SQL_BYTES {
                return Err(err(
                    "sql",
                    format!("must be a non-empty statement of at most {MAX_SQL_BYTES} bytes"),
                ));
            }
        }
        self.check_parameters()
    }

    fn check_scopes(&self) -> Result<(), DefinitionError> {
        let err = |field: &str, reason: String| DefinitionError::new(&self.name, field, reason);
        if self.scopes.is_empty() {
            return Err(err(
                "scopes",
                format!("name at least one scope; known: {}", scopes::ALL.join(", ")),
            ));
        }
        let known = |s: &String| scopes::ALL.contains(&s.as_str());
        if let Some(bad) = self.scopes.iter().find(|s| !known(s)) {
            return Err(err(
                "scopes",
                format!("unknown scope {bad:?}; known: {}", scopes::ALL.join(", ")),
            ));
        }
        for (column, scope) in &self.field_scopes {
            if !known(scope) {
                return Err(err(
                    "field_scopes",
                    format!("column {column:?}: unknown scope {scope:?}"),
                ));
            }
        }
        Ok(())
    }

    /// Every parameter is a bindable scalar with an SQL-friendly name.
    fn check_parameters(&self) -> Result<(), DefinitionError> {
        let err = |reason: String| DefinitionError::new(&self.name, "parameters", reason);
        let schema = self.input_schema();
        if let Some(t) = self.parameters.as_ref().and_then(|p| p.get("type"))
            && t != "object"
        {
            return Err(err("the root type must be \"object\"".into()));
        }
        let Some(Value::Object(props)) = schema.get("properties") else {
            return Err(err("`properties` must be a table of parameters".into()));
        };
        for (name, prop) in props {
            let ok_name = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && name.len() <= 64;
            if !ok_name {
                return Err(err(format!(
                    "parameter {name:?}: names are letters, digits and '_' (at most 64), as in :{name} in the SQL"
                )));
            }
            let ty = prop.get("type").and_then(Value::as_str);
            if !matches!(ty, Some("string" | "integer" | "number" | "boolean")) {
                return Err(err(format!(
                    "parameter {name:?}: `type` must be string, integer, number or boolean (values are bound to SQL parameters)"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[[tool]]
name = "t"
description = "d"
scopes = ["hr:directory"]
sql = "SELECT 1 AS one WHERE :x = :x"
[tool.parameters]
required = ["x"]
properties.x = { type = "string", maxLength = 10 }
"#;

    #[test]
    fn parses_and_forces_the_schema_shape() {
        let tools = parse_file(GOOD).unwrap();
        let schema = tools[0].input_schema();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(tools[0].row_limit, 100);
        assert_eq!(tools[0].parameter_names(), vec!["x".to_owned()]);
    }

    #[test]
    fn refusals_name_the_field() {
        let bad = GOOD.replace("hr:directory", "hr:everything");
        assert_eq!(parse_file(&bad).unwrap_err().field, "scopes");
        let bad = GOOD.replace("type = \"string\"", "type = \"array\"");
        assert_eq!(parse_file(&bad).unwrap_err().field, "parameters");
        let bad = GOOD.replace("name = \"t\"", "name = \"t t\"");
        assert_eq!(parse_file(&bad).unwrap_err().field, "name");
        let bad = GOOD.replace("scopes", "scopez");
        assert_eq!(parse_file(&bad).unwrap_err().field, "(toml)");
    }

    #[test]
    fn approval_is_none_unless_given_and_only_three_spellings_are_accepted() {
        let tools = parse_file(GOOD).unwrap();
        assert_eq!(tools[0].approval(), Approval::None);
        let json = serde_json::to_string(&tools[0]).unwrap();
        assert!(
            !json.contains("approval"),
            "left out when not given: {json}"
        );
        for level in APPROVALS {
            let text = GOOD.replace("sql =", &format!("approval = \"{level}\"\nsql ="));
            let tools = parse_file(&text).unwrap();
            assert_eq!(tools[0].approval().as_str(), level);
        }
        let bad = GOOD.replace("sql =", "approval = \"manager\"\nsql =");
        let err = parse_file(&bad).unwrap_err();
        assert_eq!((err.tool.as_str(), err.field.as_str()), ("t", "approval"));
        let message = err.to_string();
        assert!(
            message.contains("\"manager\"") && message.contains("none, confirm, operator"),
            "{message}"
        );
        let bad = GOOD.replace("sql =", "approval = true\nsql =");
        assert_eq!(parse_file(&bad).unwrap_err().field, "(toml)");
        // A stored definition of an older version (no field) still reads;
        // a damaged one fails closed.
        let mut stored: ToolSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(stored.approval(), Approval::None);
        stored.approval = Some("nobody".into());
        assert_eq!(stored.approval(), Approval::Operator);
    }
}
