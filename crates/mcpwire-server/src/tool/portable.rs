//! Keeps published schemas inside the subset every client accepts.
//!
//! `schemars` writes an optional value as `"type": ["string", "null"]`.
//! That is valid JSON Schema, but clients that map tool schemas onto
//! OpenAPI's subset (Gemini's function declarations) reject or misread a
//! type array, and the Inspector's `--strict` mode warns about it. A type
//! array becomes an `anyOf` of single types, which accepts the same values.

use serde_json::{Map, Value};

/// Keywords whose values are data, not schemas: left alone.
const DATA_KEYWORDS: [&str; 5] = ["const", "enum", "default", "examples", "example"];

/// Rewrites every `"type": [..]` in the schema and its subschemas as an
/// `anyOf` of single types (one type: just that type).
pub(crate) fn single_types(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Array(types)) = m.get("type") {
                let types = types.clone();
                split_type_array(m, types);
            }
            for (k, child) in m.iter_mut() {
                if !DATA_KEYWORDS.contains(&k.as_str()) {
                    single_types(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(single_types),
        _ => {}
    }
}

fn split_type_array(m: &mut Map<String, Value>, types: Vec<Value>) {
    if let [only] = types.as_slice() {
        m.insert("type".into(), only.clone());
        return;
    }
    m.remove("type");
    let alternatives: Vec<Value> = types
        .into_iter()
        .map(|t| Value::Object(Map::from_iter([("type".to_owned(), t)])))
        .collect();
    // An `anyOf` already there must hold as well: both go under `allOf`.
    if let Some(existing) = m.remove("anyOf") {
        let both = vec![
            Value::Object(Map::from_iter([("anyOf".to_owned(), existing)])),
            Value::Object(Map::from_iter([(
                "anyOf".to_owned(),
                Value::Array(alternatives),
            )])),
        ];
        m.insert("allOf".into(), Value::Array(both));
    } else {
        m.insert("anyOf".into(), Value::Array(alternatives));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_arrays_become_any_of() {
        let mut s = json!({
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"], "maxLength": 3},
                "b": {"type": ["integer"]},
                "c": {"enum": [["x"]], "default": {"type": ["a"]}}
            }
        });
        single_types(&mut s);
        assert_eq!(
            s["properties"]["a"],
            json!({"anyOf": [{"type": "string"}, {"type": "null"}], "maxLength": 3})
        );
        assert_eq!(s["properties"]["b"], json!({"type": "integer"}));
        assert_eq!(s["properties"]["c"]["default"], json!({"type": ["a"]}));
    }

    #[test]
    fn an_existing_any_of_still_holds() {
        let mut s = json!({"type": ["string", "null"], "anyOf": [{"minLength": 1}]});
        single_types(&mut s);
        assert_eq!(s["allOf"][0], json!({"anyOf": [{"minLength": 1}]}));
        assert!(s.get("type").is_none());
    }
}
