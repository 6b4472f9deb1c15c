//! JSON Schema handling for tools: compile once at registration, validate
//! on every call, name every violation.

use jsonschema::{Draft, Validator};
use serde_json::{Map, Value};

/// A compiled schema.
pub(crate) struct CompiledSchema {
    validator: Validator,
}

/// The dialects a tool schema may declare in `$schema`. Without `$schema`
/// a schema is JSON Schema 2020-12.
pub const SUPPORTED_DIALECTS: [&str; 3] = [
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema",
];

impl CompiledSchema {
    /// Compiles a schema, refusing unsupported dialects and references the
    /// server cannot resolve locally (no network fetching).
    pub(crate) fn compile(schema: &Map<String, Value>) -> Result<Self, String> {
        if let Some(dialect) = schema.get("$schema") {
            let d = dialect.as_str().unwrap_or("").trim_end_matches('#');
            if !SUPPORTED_DIALECTS.contains(&d) {
                return Err(format!(
                    "unsupported JSON Schema dialect {dialect}; supported: {}",
                    SUPPORTED_DIALECTS.join(", ")
                ));
            }
        }
        let value = Value::Object(schema.clone());
        let validator = jsonschema::options()
            .with_draft(Draft::Draft202012)
            .build(&value)
            .map_err(|e| format!("invalid JSON Schema: {e}"))?;
        Ok(Self { validator })
    }

    /// Every violation as "`/path`: message", empty when valid.
    pub(crate) fn violations(&self, instance: &Value) -> Vec<String> {
        if self.validator.is_valid(instance) {
            return Vec::new();
        }
        self.validator
            .iter_errors(instance)
            .take(20)
            .map(|e| {
                let path = e.instance_path().to_string();
                let at = if path.is_empty() {
                    "(root)".to_owned()
                } else {
                    path
                };
                // The validator abbreviates long enums; a model needs every
                // allowed value to correct itself.
                if let jsonschema::error::ValidationErrorKind::Enum { options } = e.kind()
                    && let Some(values) = options.as_array()
                {
                    let list: Vec<String> = values.iter().map(Value::to_string).collect();
                    return format!("{at}: {} is not one of {}", e.instance(), list.join(", "));
                }
                format!("{at}: {e}")
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn names_every_violation() {
        let s = CompiledSchema::compile(&obj(json!({
            "type":"object",
            "properties":{"a":{"type":"string"},"b":{"type":"integer"}},
            "required":["a","b"]
        })));
        let Ok(s) = s else {
            panic!("schema should compile")
        };
        assert!(s.violations(&json!({"a":"x","b":1})).is_empty());
        let v = s.violations(&json!({"a": 1}));
        assert_eq!(v.len(), 2, "{v:?}");
    }

    #[test]
    fn enum_violations_list_every_value() {
        let s = CompiledSchema::compile(&obj(json!({
            "type":"object",
            "properties":{"k":{"type":"string","enum":["a","b","c","d","e"]}}
        })));
        let Ok(s) = s else {
            panic!("schema should compile")
        };
        let v = s.violations(&json!({"k":"z"}));
        assert!(v[0].contains("\"e\""), "{v:?}");
    }

    #[test]
    fn refuses_unknown_dialects_and_remote_refs() {
        assert!(
            CompiledSchema::compile(&obj(
                json!({"$schema":"https://example.com/s","type":"object"})
            ))
            .is_err()
        );
        assert!(
            CompiledSchema::compile(&obj(
                json!({"type":"object","properties":{"a":{"$ref":"https://example.com/x.json"}}})
            ))
            .is_err()
        );
    }

    #[test]
    fn draft_07_is_honoured() {
        let s = CompiledSchema::compile(&obj(json!({
            "$schema":"http://json-schema.org/draft-07/schema#",
            "type":"object","properties":{"a":{"type":"string"}}
        })));
        assert!(s.is_ok());
    }
}
