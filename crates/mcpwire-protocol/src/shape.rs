//! Shaping results for the revision a request speaks.
//!
//! The engine builds every result once, in the newest revision's shape;
//! these functions down-convert it so that each message validates against
//! the schema of the request's revision: fields an older revision does not
//! know are left out, content types it lacks are converted to text.

use serde_json::{Map, Value, json};

use crate::meta;
use crate::model::ToolDefinition;
use crate::version::ProtocolVersion;

/// The tool definition as a client of revision `v` expects it.
pub fn tool_for(def: &ToolDefinition, v: ProtocolVersion) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), Value::from(def.name.clone()));
    if v.has_structured_output()
        && let Some(t) = &def.title
    {
        out.insert("title".into(), Value::from(t.clone()));
    }
    if let Some(d) = &def.description {
        out.insert("description".into(), Value::from(d.clone()));
    }
    out.insert(
        "inputSchema".into(),
        Value::Object(def.input_schema.clone()),
    );
    if v.has_structured_output()
        && let Some(schema) = &def.output_schema
        && (v.is_modern() || has_object_root(schema))
    {
        out.insert("outputSchema".into(), Value::Object(schema.clone()));
    }
    if v.has_tool_annotations()
        && let Some(a) = &def.annotations
        && let Ok(a) = serde_json::to_value(a)
    {
        out.insert("annotations".into(), a);
    }
    if v.has_icons()
        && let Some(icons) = &def.icons
        && let Ok(icons) = serde_json::to_value(icons)
    {
        out.insert("icons".into(), icons);
    }
    if v.has_structured_output()
        && let Some(m) = &def.meta
    {
        out.insert("_meta".into(), Value::Object(m.clone()));
    }
    Value::Object(out)
}

/// Whether an output schema has an object root (all that 2025 revisions allow).
pub fn has_object_root(schema: &Map<String, Value>) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// One content block as revision `v` knows it: audio becomes text before
/// 2025-03-26, resource links become text before 2025-06-18, and content
/// `_meta` is dropped before 2025-06-18.
pub fn content_for(block: Value, v: ProtocolVersion) -> Value {
    let Value::Object(mut b) = block else {
        return block;
    };
    let kind = b
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if !v.has_structured_output() {
        b.remove("_meta");
        if let Some(Value::Object(a)) = b.get_mut("annotations") {
            a.remove("lastModified");
        }
    }
    match kind.as_str() {
        "audio" if !v.has_tool_annotations() => {
            let mime = b.get("mimeType").and_then(Value::as_str).unwrap_or("audio");
            json!({ "type": "text", "text": format!("[{mime} audio omitted: this client's protocol revision cannot carry audio]") })
        }
        "resource_link" if !v.has_structured_output() => {
            let uri = b.get("uri").and_then(Value::as_str).unwrap_or("");
            let name = b.get("name").and_then(Value::as_str).unwrap_or(uri);
            json!({ "type": "text", "text": format!("Resource: {name} <{uri}>") })
        }
        _ => Value::Object(b),
    }
}

/// A `tools/call` result for revision `v`. `object_output` says whether the
/// tool's output schema has an object root; without one, 2025 revisions get
/// no `structuredContent` (the JSON text block carries the data).
pub fn call_result_for(mut result: Map<String, Value>, v: ProtocolVersion) -> Map<String, Value> {
    if let Some(Value::Array(blocks)) = result.remove("content") {
        let blocks = blocks.into_iter().map(|b| content_for(b, v)).collect();
        result.insert("content".into(), Value::Array(blocks));
    }
    let keep_structured = match result.get("structuredContent") {
        None => true,
        Some(s) => v.is_modern() || (v.has_structured_output() && s.is_object()),
    };
    if !keep_structured {
        result.remove("structuredContent");
    }
    result
}

/// Finishes any result for revision `v`: the modern wire gets `resultType`
/// (default `"complete"`) and `serverInfo` in `_meta`; legacy revisions lose
/// the fields they do not know.
pub fn finish_result(
    mut result: Map<String, Value>,
    v: ProtocolVersion,
    server_info: Option<&Value>,
) -> Map<String, Value> {
    if v.is_modern() {
        result
            .entry("resultType")
            .or_insert_with(|| Value::from("complete"));
        if let Some(info) = server_info {
            let meta = result
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = meta {
                m.entry(meta::SERVER_INFO).or_insert_with(|| info.clone());
            }
        }
    } else {
        result.remove("resultType");
        result.remove("ttlMs");
        result.remove("cacheScope");
    }
    result
}

/// The `Implementation` object for revision `v` (`title` from 2025-06-18,
/// `description`/`websiteUrl`/`icons` from 2025-11-25).
pub fn implementation_for(info: &Value, v: ProtocolVersion) -> Value {
    let Value::Object(m) = info else {
        return info.clone();
    };
    let mut m = m.clone();
    if !v.has_structured_output() {
        m.remove("title");
    }
    if !v.has_icons() {
        m.remove("description");
        m.remove("websiteUrl");
        m.remove("icons");
    }
    Value::Object(m)
}

/// Extensions declared on legacy revisions too: MCP Apps is specified for
/// them (hosts read `capabilities.extensions`; others ignore it).
pub const LEGACY_EXTENSIONS: [&str; 1] = ["io.modelcontextprotocol/ui"];

/// Server capabilities for revision `v` (`completions` from 2025-03-26,
/// `extensions` on the modern wire, and on older ones only those of
/// [`LEGACY_EXTENSIONS`]).
pub fn capabilities_for(caps: &Map<String, Value>, v: ProtocolVersion) -> Value {
    let mut m = caps.clone();
    if !v.has_completions() {
        m.remove("completions");
    }
    if !v.is_modern() {
        let kept: Map<String, Value> = m
            .get("extensions")
            .and_then(Value::as_object)
            .map(|e| {
                e.iter()
                    .filter(|(k, _)| LEGACY_EXTENSIONS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        if kept.is_empty() {
            m.remove("extensions");
        } else {
            m.insert("extensions".into(), Value::Object(kept));
        }
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolAnnotations;

    fn def() -> ToolDefinition {
        ToolDefinition {
            name: "t".into(),
            title: Some("T".into()),
            description: Some("d".into()),
            input_schema: json!({"type": "object"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            output_schema: Some(
                json!({"type": "array"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
            annotations: Some(ToolAnnotations::read_only()),
            icons: None,
            meta: None,
        }
    }

    #[test]
    fn legacy_revisions_keep_only_the_mcp_apps_extension() {
        let caps = json!({ "tools": {}, "extensions": {
            "io.modelcontextprotocol/ui": {}, "io.modelcontextprotocol/tasks": {} } });
        let caps = caps.as_object().cloned().unwrap_or_default();
        let modern = capabilities_for(&caps, ProtocolVersion::V2026_07_28);
        assert_eq!(modern["extensions"].as_object().map(Map::len), Some(2));
        let legacy = capabilities_for(&caps, ProtocolVersion::V2025_11_25);
        assert_eq!(
            legacy["extensions"],
            json!({ "io.modelcontextprotocol/ui": {} })
        );
        let mut tasks_only = caps.clone();
        tasks_only.insert(
            "extensions".into(),
            json!({ "io.modelcontextprotocol/tasks": {} }),
        );
        let legacy = capabilities_for(&tasks_only, ProtocolVersion::V2024_11_05);
        assert!(legacy.get("extensions").is_none(), "{legacy}");
    }

    #[test]
    fn old_revisions_see_only_what_they_know() {
        let t = tool_for(&def(), ProtocolVersion::V2024_11_05);
        assert!(t.get("title").is_none() && t.get("annotations").is_none());
        let t = tool_for(&def(), ProtocolVersion::V2025_03_26);
        assert!(t.get("annotations").is_some() && t.get("title").is_none());
        // Non-object output schemas exist only on the modern wire.
        let t = tool_for(&def(), ProtocolVersion::V2025_11_25);
        assert!(t.get("outputSchema").is_none() && t.get("title").is_some());
        let t = tool_for(&def(), ProtocolVersion::V2026_07_28);
        assert!(t.get("outputSchema").is_some());
    }

    #[test]
    fn results_get_result_type_only_on_the_modern_wire() {
        let r = finish_result(
            Map::new(),
            ProtocolVersion::V2026_07_28,
            Some(&json!({"name":"s","version":"1"})),
        );
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["_meta"][meta::SERVER_INFO]["name"], "s");
        let mut legacy = Map::new();
        legacy.insert("resultType".into(), json!("complete"));
        legacy.insert("ttlMs".into(), json!(5));
        assert!(finish_result(legacy, ProtocolVersion::V2025_06_18, None).is_empty());
    }

    #[test]
    fn converts_content_older_revisions_lack() {
        let audio = json!({"type":"audio","data":"AA==","mimeType":"audio/wav"});
        assert_eq!(
            content_for(audio.clone(), ProtocolVersion::V2024_11_05)["type"],
            "text"
        );
        assert_eq!(
            content_for(audio, ProtocolVersion::V2025_03_26)["type"],
            "audio"
        );
        let link = json!({"type":"resource_link","uri":"x://a","name":"a"});
        assert_eq!(
            content_for(link, ProtocolVersion::V2025_03_26)["type"],
            "text"
        );
    }

    #[test]
    fn drops_non_object_structured_content_before_2026() {
        let mut r = Map::new();
        r.insert("content".into(), json!([]));
        r.insert("structuredContent".into(), json!([1, 2]));
        assert!(
            call_result_for(r.clone(), ProtocolVersion::V2025_11_25)
                .get("structuredContent")
                .is_none()
        );
        assert!(
            call_result_for(r.clone(), ProtocolVersion::V2026_07_28)
                .get("structuredContent")
                .is_some()
        );
        assert!(
            call_result_for(r, ProtocolVersion::V2025_03_26)
                .get("structuredContent")
                .is_none()
        );
    }
}
