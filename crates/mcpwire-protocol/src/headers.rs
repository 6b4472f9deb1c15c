//! The HTTP header rules of the 2026-07-28 Streamable HTTP transport.
//!
//! A modern request mirrors parts of its body into headers so that
//! intermediaries can route without parsing JSON: `MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`, and `Mcp-Param-{Name}` for tool arguments
//! annotated with `x-mcp-header`. A server that reads the body must reject
//! any header that is missing, malformed or different from the body with
//! HTTP 400 and -32020. Header names are case-insensitive; values are
//! compared exactly after trimming surrounding whitespace.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::HeaderMap;
use serde_json::{Map, Value};

use crate::error::ProtocolError;

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`.
pub const METHOD: &str = "mcp-method";
/// `Mcp-Name`.
pub const NAME: &str = "mcp-name";
/// `Mcp-Session-Id` (legacy sessions).
pub const SESSION_ID: &str = "mcp-session-id";
/// Prefix of headers mirrored from tool arguments.
pub const PARAM_PREFIX: &str = "mcp-param-";

/// The JSON type of a mirrored argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// Compared as-is.
    String,
    /// Compared numerically (`42.0` equals `42`).
    Integer,
    /// `true` or `false`.
    Boolean,
}

/// A tool argument mirrored into an `Mcp-Param-{header}` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderParam {
    /// The `{Name}` part, as declared.
    pub header: String,
    /// The chain of `properties` keys from the root to the argument.
    pub path: Vec<String>,
    /// Its JSON type.
    pub kind: ParamKind,
}

impl HeaderParam {
    /// What a client sends in this header for `arguments` (before
    /// [`encode_value`]): a string argument as is, any other value as its
    /// JSON; `None` when the argument is absent or null (no header).
    pub fn text_in(&self, arguments: &Map<String, Value>) -> Option<String> {
        match (self.kind, lookup(arguments, &self.path)?) {
            (_, Value::Null) => None,
            (ParamKind::String, Value::String(s)) => Some(s.clone()),
            (_, v) => Some(v.to_string()),
        }
    }
}

/// A header value as a client writes it: literal when it is plain visible
/// ASCII without surrounding spaces, otherwise the `=?base64?…?=` form
/// (the inverse of [`decode_value`]).
pub fn encode_value(text: &str) -> String {
    let plain = text.bytes().all(|b| (0x20..0x7f).contains(&b)) && text.trim() == text;
    if plain {
        text.to_owned()
    } else {
        format!("=?base64?{}?=", STANDARD.encode(text))
    }
}

/// Collects and checks the `x-mcp-header` annotations of an input schema.
/// A misplaced or malformed annotation makes the whole tool invalid, so the
/// error is reported at registration, never on the wire.
pub fn header_params(input_schema: &Map<String, Value>) -> Result<Vec<HeaderParam>, String> {
    let mut found = Vec::new();
    walk(input_schema, &mut Vec::new(), true, &mut found)?;
    let mut seen = std::collections::HashSet::new();
    for p in &found {
        if !seen.insert(p.header.to_ascii_lowercase()) {
            return Err(format!(
                "x-mcp-header \"{}\" is declared twice (names are case-insensitive)",
                p.header
            ));
        }
    }
    Ok(found)
}

fn walk(
    schema: &Map<String, Value>,
    path: &mut Vec<String>,
    reachable: bool,
    out: &mut Vec<HeaderParam>,
) -> Result<(), String> {
    if let Some(h) = schema.get("x-mcp-header") {
        if !reachable || path.is_empty() {
            return Err(format!(
                "x-mcp-header at \"{}\" is not on a property reachable through \"properties\" alone",
                path.join("/")
            ));
        }
        let header = h.as_str().unwrap_or("");
        if header.is_empty() || !header.bytes().all(is_tchar) {
            return Err(format!(
                "x-mcp-header {h} at \"{}\" must be a non-empty HTTP token",
                path.join("/")
            ));
        }
        let kind = match schema.get("type").and_then(Value::as_str) {
            Some("string") => ParamKind::String,
            Some("integer") => ParamKind::Integer,
            Some("boolean") => ParamKind::Boolean,
            _ => {
                return Err(format!(
                    "x-mcp-header \"{header}\" must be on a string, integer or boolean property"
                ));
            }
        };
        out.push(HeaderParam {
            header: header.to_owned(),
            path: path.clone(),
            kind,
        });
    }
    for (key, value) in schema {
        match (key.as_str(), value) {
            ("properties", Value::Object(props)) => {
                for (name, sub) in props {
                    if let Value::Object(sub) = sub {
                        path.push(name.clone());
                        walk(sub, path, reachable, out)?;
                        path.pop();
                    }
                }
            }
            (_, Value::Object(sub)) => {
                path.push(key.clone());
                walk(sub, path, false, out)?;
                path.pop();
            }
            (_, Value::Array(items)) => {
                for item in items.iter().filter_map(Value::as_object) {
                    path.push(key.clone());
                    walk(item, path, false, out)?;
                    path.pop();
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Reads one header: `None` if absent; -32020 if repeated or if it holds
/// characters a header value must not hold. Surrounding whitespace is trimmed.
pub fn single(headers: &HeaderMap, name: &str) -> Result<Option<String>, ProtocolError> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(ProtocolError::header_mismatch(format!(
            "Header mismatch: {name} is sent more than once."
        )));
    }
    let text = first
        .to_str()
        .ok()
        .filter(|s| !s.bytes().any(|b| b.is_ascii_control() && b != b'\t'))
        .ok_or_else(|| {
            ProtocolError::header_mismatch(format!(
                "Header mismatch: {name} contains characters that are not allowed in a header value."
            ))
        })?;
    Ok(Some(text.trim_matches([' ', '\t']).to_owned()))
}

/// Decodes the `=?base64?…?=` form; anything else is the literal value.
pub fn decode_value(name: &str, raw: &str) -> Result<String, ProtocolError> {
    let Some(inner) = raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    else {
        return Ok(raw.to_owned());
    };
    STANDARD
        .decode(inner)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            ProtocolError::header_mismatch(format!(
                "Header mismatch: {name} holds invalid Base64 inside =?base64?…?=."
            ))
        })
}

/// The params field a method's `Mcp-Name` header mirrors, if it has one:
/// `name` for `tools/call` and `prompts/get`, `uri` for `resources/read`,
/// `taskId` for the tasks extension's methods (SEP-2663).
pub fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// Checks `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` against the
/// body. `meta_version` is the body's `_meta` protocol version, if present
/// (its absence is reported later as -32602).
pub fn check_standard(
    headers: &HeaderMap,
    method: &str,
    params: &Map<String, Value>,
    meta_version: Option<&str>,
) -> Result<(), ProtocolError> {
    let Some(version) = single(headers, PROTOCOL_VERSION)? else {
        return Err(ProtocolError::header_mismatch(
            "Header mismatch: MCP-Protocol-Version is required on every request.",
        ));
    };
    if let Some(body) = meta_version
        && body != version
    {
        return Err(ProtocolError::header_mismatch(format!(
            "Header mismatch: MCP-Protocol-Version is \"{version}\" but _meta says \"{body}\"."
        )));
    }
    match single(headers, METHOD)? {
        None => {
            return Err(ProtocolError::header_mismatch(
                "Header mismatch: Mcp-Method is required on every request.",
            ));
        }
        Some(m) if m != method => {
            return Err(ProtocolError::header_mismatch(format!(
                "Header mismatch: Mcp-Method is \"{m}\" but the body's method is \"{method}\"."
            )));
        }
        Some(_) => {}
    }
    let Some(name_field) = name_field(method) else {
        return Ok(());
    };
    let body_name = params.get(name_field).and_then(Value::as_str);
    match single(headers, NAME)? {
        None => Err(ProtocolError::header_mismatch(format!(
            "Header mismatch: Mcp-Name is required on {method} and must equal params.{name_field}."
        ))),
        Some(raw) => {
            let name = decode_value("Mcp-Name", &raw)?;
            if Some(name.as_str()) == body_name {
                Ok(())
            } else {
                Err(ProtocolError::header_mismatch(format!(
                    "Header mismatch: Mcp-Name is \"{name}\" but params.{name_field} is {}.",
                    body_name.map_or("missing".to_owned(), |n| format!("\"{n}\""))
                )))
            }
        }
    }
}

/// Checks every `Mcp-Param-{Name}` a tool declares against its arguments.
pub fn check_params(
    headers: &HeaderMap,
    params: &[HeaderParam],
    arguments: &Map<String, Value>,
) -> Result<(), ProtocolError> {
    for p in params {
        let name = format!("{PARAM_PREFIX}{}", p.header.to_ascii_lowercase());
        let display = format!("Mcp-Param-{}", p.header);
        let value = lookup(arguments, &p.path);
        let header = single(headers, &name)?;
        let (Some(value), header) = (value.filter(|v| !v.is_null()), header) else {
            continue;
        };
        let Some(raw) = header else {
            return Err(ProtocolError::header_mismatch(format!(
                "Header mismatch: {display} is required because arguments.{} is set.",
                p.path.join(".")
            )));
        };
        let text = decode_value(&display, &raw)?;
        let same = match p.kind {
            ParamKind::String => value.as_str() == Some(text.as_str()),
            ParamKind::Boolean => value.as_bool().map(|b| b.to_string()) == Some(text.clone()),
            ParamKind::Integer => match (value.as_f64(), text.parse::<f64>()) {
                (Some(a), Ok(b)) => a == b,
                _ => false,
            },
        };
        if !same {
            return Err(ProtocolError::header_mismatch(format!(
                "Header mismatch: {display} is \"{text}\" but arguments.{} is {value}.",
                p.path.join(".")
            )));
        }
    }
    Ok(())
}

fn lookup<'a>(arguments: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut v = arguments.get(first)?;
    for key in rest {
        v = v.as_object()?.get(key)?;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn finds_header_params_only_through_properties() {
        let ok = obj(json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "nested":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}}
        }}));
        let params = header_params(&ok).unwrap_or_default();
        assert_eq!(params.len(), 2);
        let bad = obj(json!({"type":"object","properties":{
            "list":{"type":"array","items":{"type":"string","x-mcp-header":"X"}}}}));
        assert!(header_params(&bad).is_err());
        let number =
            obj(json!({"type":"object","properties":{"x":{"type":"number","x-mcp-header":"X"}}}));
        assert!(header_params(&number).is_err());
        let dup = obj(json!({"type":"object","properties":{
            "a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}));
        assert!(header_params(&dup).is_err());
    }

    #[test]
    fn standard_headers_must_match_the_body() {
        let params = obj(json!({"name":"echo"}));
        let good = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", " echo "),
        ]);
        assert!(check_standard(&good, "tools/call", &params, Some("2026-07-28")).is_ok());
        let upper = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "TOOLS/CALL"),
            ("mcp-name", "echo"),
        ]);
        assert!(check_standard(&upper, "tools/call", &params, None).is_err());
        let missing_name = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
        ]);
        assert!(check_standard(&missing_name, "tools/call", &params, None).is_err());
        let version = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ]);
        let e = check_standard(&version, "tools/list", &Map::new(), Some("v999"));
        assert_eq!(e.err().map(|e| e.code), Some(-32020));
    }

    #[test]
    fn what_a_client_sends_decodes_to_the_argument() {
        let param = |path: &[&str], kind| HeaderParam {
            header: "X".to_owned(),
            path: path.iter().map(|s| (*s).to_owned()).collect(),
            kind,
        };
        let args = obj(json!({"name": " Zoë ", "n": 3, "deep": {"flag": true}, "none": null}));
        let name = param(&["name"], ParamKind::String).text_in(&args);
        assert_eq!(name.as_deref(), Some(" Zoë "));
        let sent = encode_value(name.as_deref().unwrap_or_default());
        assert!(sent.starts_with("=?base64?"), "{sent}");
        assert_eq!(decode_value("X", &sent).ok().as_deref(), Some(" Zoë "));
        assert_eq!(encode_value("plain"), "plain");
        let n = param(&["n"], ParamKind::Integer).text_in(&args);
        assert_eq!(n.as_deref(), Some("3"));
        let flag = param(&["deep", "flag"], ParamKind::Boolean).text_in(&args);
        assert_eq!(flag.as_deref(), Some("true"));
        assert_eq!(param(&["none"], ParamKind::String).text_in(&args), None);
        assert_eq!(param(&["missing"], ParamKind::String).text_in(&args), None);
    }

    #[test]
    fn decodes_base64_sentinels_strictly() {
        assert_eq!(
            decode_value("h", "=?base64?SGVsbG8=?=").ok().as_deref(),
            Some("Hello")
        );
        assert!(decode_value("h", "=?base64?SGVsbG8?=").is_err());
        assert!(decode_value("h", "=?base64?SGVs!!!bG8=?=").is_err());
        assert_eq!(
            decode_value("h", "=?base64?abc").ok().as_deref(),
            Some("=?base64?abc")
        );
    }

    #[test]
    fn param_headers_are_required_when_the_argument_is_set() {
        let p = vec![HeaderParam {
            header: "Value".into(),
            path: vec!["value".into()],
            kind: ParamKind::String,
        }];
        let args = obj(json!({"value":"Hello"}));
        assert!(
            check_params(
                &headers(&[("mcp-param-value", "=?base64?SGVsbG8=?=")]),
                &p,
                &args
            )
            .is_ok()
        );
        assert!(check_params(&headers(&[]), &p, &args).is_err());
        assert!(check_params(&headers(&[]), &p, &obj(json!({"value": null}))).is_ok());
        assert!(check_params(&headers(&[("mcp-param-value", "Bye")]), &p, &args).is_err());
        let n = vec![HeaderParam {
            header: "N".into(),
            path: vec!["n".into()],
            kind: ParamKind::Integer,
        }];
        assert!(
            check_params(
                &headers(&[("mcp-param-n", "42.0")]),
                &n,
                &obj(json!({"n":42}))
            )
            .is_ok()
        );
    }
}
