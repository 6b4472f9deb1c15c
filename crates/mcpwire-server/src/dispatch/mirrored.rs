//! The wire form of a structured result whose only text block mirrors its
//! `structuredContent` (every typed handler's result), written from the
//! mirror text alone: the structured JSON is serialised once, not once per
//! copy, and the result map is not cloned on the way out.
//!
//! The bytes are exactly those of the generic path (`CallToolResult::to_map`
//! → `shape::call_result_for` → `shape::finish_result` → serde), which the
//! tests below check.

use std::sync::Arc;

use mcpwire_protocol::jsonrpc::ResultPayload;
use mcpwire_protocol::{ProtocolVersion, shape};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Length of `CallToolResult::to_map()` serialised, for a mirrored result
/// with this text: `{"content":[{"text":…,"type":"text"}],"isError":true,"structuredContent":…}`.
pub(super) fn result_size(text: &str, is_error: bool) -> usize {
    const HEAD: &str = r#"{"content":[{"text":"#;
    const MID: &str = r#","type":"text"}],"structuredContent":"#;
    const ERROR: &str = r#""isError":true,"#;
    let error = if is_error { ERROR.len() } else { 0 };
    HEAD.len() + escaped_len(text) + MID.len() + error + text.len() + 1
}

/// Length of `text` as a JSON string, quotes included, as serde_json
/// writes it (short escapes for `\b \t \n \f \r " \\`, `\u00XX` for the
/// other control characters, everything else verbatim).
fn escaped_len(text: &str) -> usize {
    let extra: usize = text
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 1,
            0x00..=0x1f => 5,
            _ => 0,
        })
        .sum();
    text.len() + extra + 2
}

/// Which of the `SHAPES` finished forms revision `v` gets: modern; legacy
/// with `structuredContent`; legacy without it (older revisions and
/// non-object outputs), as in [`payload`].
pub(crate) fn shape(v: ProtocolVersion, structured_is_object: bool) -> usize {
    if v.is_modern() {
        0
    } else if v.has_structured_output() && structured_is_object {
        1
    } else {
        2
    }
}

/// The finished `tools/call` result for revision `v`, or `None` when the
/// mirror is not valid JSON (then the caller takes the generic path).
pub(super) fn payload(
    text: &str,
    structured_is_object: bool,
    is_error: bool,
    v: ProtocolVersion,
    server_info: Option<&Value>,
) -> Option<ResultPayload> {
    let structured: &RawValue = serde_json::from_str(text).ok()?;
    // As `shape::call_result_for`: older revisions drop structured output.
    let keep = v.is_modern() || (v.has_structured_output() && structured_is_object);
    let mut base = Map::new();
    if is_error {
        base.insert("isError".into(), Value::Bool(true));
    }
    let rest = shape::finish_result(base, v, server_info);
    let result = Mirrored {
        text,
        structured: keep.then_some(structured),
        rest: &rest,
    };
    let raw = serde_json::value::to_raw_value(&result).ok()?;
    Some(ResultPayload::Raw(Arc::from(raw)))
}

/// The result object: `content` and `structuredContent` written from the
/// mirror, merged in key order with the other members (as a `Map` would be).
struct Mirrored<'a> {
    text: &'a str,
    structured: Option<&'a RawValue>,
    rest: &'a Map<String, Value>,
}

/// The mirror as a text content block (fields in `Map` order).
#[derive(Serialize)]
struct TextBlock<'a> {
    text: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl Serialize for Mirrored<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        let content = [TextBlock {
            text: self.text,
            kind: "text",
        }];
        let mut content = Some(content);
        let mut structured = self.structured;
        for (key, value) in self.rest {
            if key.as_str() > "content"
                && let Some(c) = content.take()
            {
                map.serialize_entry("content", &c)?;
            }
            if key.as_str() > "structuredContent"
                && let Some(raw) = structured.take()
            {
                map.serialize_entry("structuredContent", raw)?;
            }
            map.serialize_entry(key, value)?;
        }
        if let Some(c) = content {
            map.serialize_entry("content", &c)?;
        }
        if let Some(raw) = structured {
            map.serialize_entry("structuredContent", raw)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::CallToolResult;
    use serde_json::json;

    fn generic(result: &CallToolResult, v: ProtocolVersion, info: Option<&Value>) -> String {
        let shaped = shape::call_result_for(result.to_map(), v);
        Value::Object(shape::finish_result(shaped, v, info)).to_string()
    }

    fn samples() -> Vec<Value> {
        let controls: String = (0u8..0x20).map(char::from).collect();
        vec![
            json!({"name": "Ada", "n": 3, "list": [1, 2.5, null, true], "nested": {"z": "é\"\\/"}}),
            json!({"controls": controls, "unicode": "\u{202e}x\u{7f}€😀"}),
            json!(["not", "an", "object"]),
            json!("scalar"),
        ]
    }

    #[test]
    fn same_bytes_and_size_as_the_generic_path() {
        let info = json!({"name": "srv", "version": "1"});
        for value in samples() {
            for is_error in [false, true] {
                let mut result = CallToolResult::structured(value.clone());
                result.is_error = is_error;
                let text = result.mirror_text().expect("mirrored");
                assert_eq!(
                    result_size(text, is_error),
                    Value::Object(result.to_map()).to_string().len()
                );
                for v in ProtocolVersion::ALL {
                    for info in [None, Some(&info)] {
                        let fast = payload(text, value.is_object(), is_error, v, info)
                            .expect("valid mirror");
                        let ResultPayload::Raw(raw) = fast else {
                            panic!("raw payload expected");
                        };
                        assert_eq!(raw.get(), generic(&result, v, info), "{v:?} {value}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_result_known_only_as_text_reads_as_the_parsed_one() {
        for value in samples() {
            let parsed = CallToolResult::structured(value.clone());
            let mut text_only = CallToolResult::structured_json(value.to_string());
            assert_eq!(text_only.mirror_text(), parsed.mirror_text());
            assert_eq!(text_only.to_map(), parsed.to_map());
            assert_eq!(text_only.structured_is_object(), value.is_object());
            assert!(text_only.has_structured() && text_only.structured.is_none());
            text_only.parse_mirror().expect("valid JSON");
            assert_eq!(text_only.structured.as_ref(), Some(&value));
            assert_eq!(text_only.to_map(), parsed.to_map());
        }
    }

    #[test]
    fn escaped_len_matches_serde_json() {
        let all: String = (0u32..0x800).filter_map(char::from_u32).collect();
        for s in ["", "plain", "\"q\"\\", all.as_str()] {
            assert_eq!(escaped_len(s), serde_json::to_string(s).unwrap().len());
        }
    }
}
