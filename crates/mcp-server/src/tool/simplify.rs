//! Makes derived schemas easier for models and old clients to read.
//!
//! `schemars` puts every named type under `$defs` and describes documented
//! enums as `oneOf` of `const`s. Models read flat schemas best, 2024-era
//! clients may not follow `$ref`, and a validator reports a failed `oneOf`
//! without naming the allowed values. So local references are inlined
//! (non-recursive ones) and `oneOf` of constants becomes `enum`, with the
//! per-value docs folded into the description.

use serde_json::{Map, Value};

/// How deep references are inlined; deeper (recursive) ones stay as `$ref`.
const MAX_DEPTH: usize = 16;

/// Simplifies a schema generated from Rust types.
pub(crate) fn simplify(schema: Map<String, Value>) -> Map<String, Value> {
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut root = Value::Object(schema);
    let mut unresolved = false;
    inline(&mut root, &defs, 0, &mut unresolved);
    let Value::Object(mut out) = root else {
        return Map::new();
    };
    if !unresolved {
        out.remove("$defs");
    }
    out
}

fn inline(v: &mut Value, defs: &Map<String, Value>, depth: usize, unresolved: &mut bool) {
    match v {
        Value::Object(m) => {
            if let Some(target) = m
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .map(str::to_owned)
            {
                match defs.get(&target) {
                    Some(Value::Object(def)) if depth < MAX_DEPTH => {
                        m.remove("$ref");
                        for (k, val) in def {
                            // Keys written beside the `$ref` (a field's doc) win.
                            m.entry(k.clone()).or_insert_with(|| val.clone());
                        }
                        inline(v, defs, depth + 1, unresolved);
                        return;
                    }
                    _ => *unresolved = true,
                }
            }
            for (k, child) in m.iter_mut() {
                if k != "$defs" {
                    inline(child, defs, depth, unresolved);
                }
            }
            enum_from_consts(m);
        }
        Value::Array(items) => {
            for i in items {
                inline(i, defs, depth, unresolved);
            }
        }
        _ => {}
    }
}

/// `{"oneOf":[{"const":"a","description":"…"},…]}` → `{"enum":["a",…]}`.
fn enum_from_consts(m: &mut Map<String, Value>) {
    let Some(Value::Array(alternatives)) = m.get("oneOf") else {
        return;
    };
    let consts: Option<Vec<(Value, Option<String>)>> = alternatives
        .iter()
        .map(|a| {
            let a = a.as_object()?;
            let c = a.get("const")?.clone();
            let extra = a
                .keys()
                .any(|k| !matches!(k.as_str(), "const" | "description" | "type"));
            (!extra).then(|| {
                (
                    c,
                    a.get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                )
            })
        })
        .collect();
    let Some(consts) = consts else { return };
    if consts.is_empty() {
        return;
    }
    let all_strings = consts.iter().all(|(c, _)| c.is_string());
    let docs: Vec<String> = consts
        .iter()
        .filter_map(|(c, d)| {
            d.as_ref()
                .map(|d| format!("{}: {d}", c.as_str().unwrap_or_default()))
        })
        .collect();
    m.remove("oneOf");
    m.insert(
        "enum".into(),
        Value::Array(consts.into_iter().map(|(c, _)| c).collect()),
    );
    if all_strings {
        m.insert("type".into(), Value::from("string"));
    }
    if !docs.is_empty() {
        let base = m
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let joined = docs.join("; ");
        let text = if base.is_empty() {
            joined
        } else {
            format!("{base} ({joined})")
        };
        m.insert("description".into(), Value::from(text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inlines_refs_and_flattens_const_enums() {
        let s = json!({
            "type": "object",
            "properties": { "kind": { "$ref": "#/$defs/Kind", "description": "Which kind." } },
            "$defs": { "Kind": { "oneOf": [
                { "type": "string", "const": "a", "description": "First." },
                { "type": "string", "const": "b", "description": "Second." }
            ] } }
        });
        let out = simplify(s.as_object().cloned().unwrap_or_default());
        assert!(out.get("$defs").is_none());
        let kind = &out["properties"]["kind"];
        assert_eq!(kind["enum"], json!(["a", "b"]));
        assert_eq!(kind["type"], "string");
        assert_eq!(kind["description"], "Which kind. (a: First.; b: Second.)");
    }

    #[test]
    fn keeps_recursive_refs() {
        let s = json!({
            "type": "object",
            "properties": { "node": { "$ref": "#/$defs/Node" } },
            "$defs": { "Node": { "type": "object", "properties": { "next": { "$ref": "#/$defs/Node" } } } }
        });
        let out = simplify(s.as_object().cloned().unwrap_or_default());
        assert!(out.get("$defs").is_some());
    }
}
