//! Makes derived schemas easier for models and old clients to read.
//!
//! `schemars` puts every named type under `$defs` and describes documented
//! enums as `oneOf` of `const`s. Models read flat schemas best, 2024-era
//! clients may not follow `$ref`, and a validator reports a failed `oneOf`
//! without naming the allowed values. So local references are inlined
//! (non-recursive ones) and `oneOf` of constants becomes `enum`, with the
//! per-value docs folded into the description.
//!
//! `schemars` also writes OpenAPI-style `format`s (`uint32`, `int64`,
//! `double`…) that are not JSON Schema formats: Ajv, used by every
//! TypeScript client, logs "unknown format ignored" for each one on every
//! `tools/list`. Only standard formats are kept; the range a numeric format
//! implied is kept as `minimum`/`maximum`. Type arrays become `anyOf`
//! (see `portable`).

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
    standard_formats_only(&mut root);
    super::portable::single_types(&mut root);
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

/// The formats defined by JSON Schema 2020-12 (a superset of draft-07's):
/// the only ones published schemas carry (validators such as Ajv warn about
/// any other).
pub const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose values are data, not schemas: a `format` in them is left
/// alone.
const DATA_KEYWORDS: [&str; 5] = ["const", "enum", "default", "examples", "example"];

/// Removes every non-standard `format` in the schema and its subschemas
/// (`properties`, `items`, `$defs`, `anyOf`…), adding the bounds it implied.
pub(crate) fn standard_formats_only(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let format = m.get("format").and_then(Value::as_str).map(str::to_owned);
            if let Some(format) = format
                && !STANDARD_FORMATS.contains(&format.as_str())
            {
                m.remove("format");
                add_implied_bounds(m, &format);
            }
            for (k, child) in m.iter_mut() {
                if !DATA_KEYWORDS.contains(&k.as_str()) {
                    standard_formats_only(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(standard_formats_only),
        _ => {}
    }
}

/// The range of an integer format, when a JavaScript number holds both ends
/// exactly (64-bit and wider bounds would be rounded, so only the sign is
/// kept for them).
fn implied_range(format: &str) -> (Option<i64>, Option<i64>) {
    match format {
        "int8" => (Some(i8::MIN.into()), Some(i8::MAX.into())),
        "int16" => (Some(i16::MIN.into()), Some(i16::MAX.into())),
        "int32" => (Some(i32::MIN.into()), Some(i32::MAX.into())),
        "uint8" => (Some(0), Some(u8::MAX.into())),
        "uint16" => (Some(0), Some(u16::MAX.into())),
        "uint32" => (Some(0), Some(u32::MAX.into())),
        "uint64" | "uint128" | "uint" => (Some(0), None),
        _ => (None, None),
    }
}

/// Adds the bounds `format` implied unless the schema already has its own
/// (possibly tighter) ones.
fn add_implied_bounds(m: &mut Map<String, Value>, format: &str) {
    let (min, max) = implied_range(format);
    if let Some(min) = min
        && !m.contains_key("minimum")
        && !m.contains_key("exclusiveMinimum")
    {
        m.insert("minimum".into(), Value::from(min));
    }
    if let Some(max) = max
        && !m.contains_key("maximum")
        && !m.contains_key("exclusiveMaximum")
    {
        m.insert("maximum".into(), Value::from(max));
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

    /// Every `format` value anywhere in a schema, data keywords included.
    fn formats(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(f) = m.get("format").and_then(Value::as_str) {
                    out.push(f.to_owned());
                }
                m.values().for_each(|c| formats(c, out));
            }
            Value::Array(a) => a.iter().for_each(|c| formats(c, out)),
            _ => {}
        }
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        small: u8,
        medium: i16,
        count: Option<u32>,
        signed: i32,
        big: u64,
        huge: i64,
        index: usize,
        ratio: f64,
        score: f32,
        #[schemars(range(max = 10))]
        capped: u32,
        #[schemars(url)]
        link: String,
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    enum Choice {
        Number(u16),
        Pair { a: i8, b: Vec<u32> },
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Outer {
        nested: Nested,
        list: Vec<Nested>,
        choice: Choice,
        map: std::collections::BTreeMap<String, u32>,
    }

    #[test]
    fn derived_schemas_publish_only_standard_formats() {
        let derived = schemars::schema_for!(Outer).to_value();
        let mut before = Vec::new();
        formats(&derived, &mut before);
        assert!(before.iter().any(|f| f == "uint32"), "{before:?}");
        let out = Value::Object(simplify(derived.as_object().cloned().unwrap_or_default()));
        let mut after = Vec::new();
        formats(&out, &mut after);
        assert_eq!(after, vec!["uri"; 2], "{out}");
    }

    #[test]
    fn implied_bounds_are_kept_or_added() {
        let out = Value::Object(simplify(
            schemars::schema_for!(Nested)
                .to_value()
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ));
        let p = &out["properties"];
        let range = |name: &str| (p[name]["minimum"].clone(), p[name]["maximum"].clone());
        assert_eq!(range("small"), (json!(0), json!(255)));
        assert_eq!(range("medium"), (json!(-32768), json!(32767)));
        assert_eq!(range("count"), (json!(0), json!(4_294_967_295_u32)));
        assert_eq!(range("signed"), (json!(i32::MIN), json!(i32::MAX)));
        assert_eq!(range("big"), (json!(0), Value::Null));
        assert_eq!(range("index"), (json!(0), Value::Null));
        assert_eq!(range("huge"), (Value::Null, Value::Null));
        assert_eq!(range("ratio"), (Value::Null, Value::Null));
        // An explicit, tighter bound wins over the implied one.
        assert_eq!(range("capped"), (json!(0), json!(10)));
    }

    #[test]
    fn formats_in_data_and_property_names_are_untouched() {
        let mut s = json!({
            "type": "object",
            "properties": {
                "format": { "type": "string", "format": "date" },
                "when": { "type": "string", "format": "partial-date-time" },
                "n": { "type": "integer", "format": "int32", "minimum": 1,
                       "default": { "format": "int32" } }
            },
            "allOf": [ { "properties": { "x": { "format": "double" } } } ],
            "$defs": { "D": { "items": { "format": "uint8" } } }
        });
        standard_formats_only(&mut s);
        assert_eq!(s["properties"]["format"]["format"], "date");
        assert!(s["properties"]["when"].get("format").is_none());
        let n = &s["properties"]["n"];
        assert!(n.get("format").is_none());
        assert_eq!(
            (n["minimum"].clone(), n["maximum"].clone()),
            (json!(1), json!(i32::MAX))
        );
        assert_eq!(n["default"]["format"], "int32");
        assert!(s["allOf"][0]["properties"]["x"].get("format").is_none());
        assert_eq!(s["$defs"]["D"]["items"]["maximum"], 255);
    }
}
