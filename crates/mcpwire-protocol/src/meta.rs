//! The reserved `_meta` keys and the per-request metadata of the modern wire.

use serde_json::{Map, Value};

use crate::error::ProtocolError;
use crate::model::LogLevel;

/// `_meta` key: the protocol revision of this request (modern wire).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: optional client name and version.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: opt-in to `notifications/message` for this request.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key on results: the server's name and version.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key on listen-stream notifications: the listen request's id.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key: opt-in to progress notifications (both wires).
pub const PROGRESS_TOKEN: &str = "progressToken";

/// The `_meta` object of a request's params, if any.
pub fn meta_of(params: &Map<String, Value>) -> Option<&Map<String, Value>> {
    params.get("_meta").and_then(Value::as_object)
}

/// The protocol version a request claims in `_meta`, if it claims one: the
/// mark of a modern-wire request.
pub fn claimed_version(params: &Map<String, Value>) -> Option<&str> {
    meta_of(params)?.get(PROTOCOL_VERSION)?.as_str()
}

/// The progress token of a request, if it asked for progress.
pub fn progress_token(params: &Map<String, Value>) -> Option<Value> {
    progress_token_in(meta_of(params)?)
}

/// The progress token in a `_meta` object already looked up.
pub fn progress_token_in(meta: &Map<String, Value>) -> Option<Value> {
    meta.get(PROGRESS_TOKEN)
        .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
        .cloned()
}

/// The per-request metadata every modern request must carry.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestMeta {
    /// The revision the client speaks on this request.
    pub protocol_version: String,
    /// What the client can do on this request (only this request counts).
    pub client_capabilities: Map<String, Value>,
    /// Self-reported client identity; informational only.
    pub client_info: Option<Value>,
    /// The minimum log level the client wants on this request's stream.
    pub log_level: Option<LogLevel>,
}

impl RequestMeta {
    /// Reads and checks the required `_meta` fields (-32602 if missing or
    /// mistyped, -32602 for an unknown `logLevel`).
    pub fn from_params(params: &Map<String, Value>) -> Result<Self, ProtocolError> {
        Self::from_meta(meta_of(params))
    }

    /// [`RequestMeta::from_params`] for a `_meta` object already looked up
    /// (`None` when the request has none).
    pub fn from_meta(meta: Option<&Map<String, Value>>) -> Result<Self, ProtocolError> {
        let Some(meta) = meta else {
            return Err(ProtocolError::missing_meta(PROTOCOL_VERSION));
        };
        let Some(version) = meta.get(PROTOCOL_VERSION).and_then(Value::as_str) else {
            return Err(ProtocolError::missing_meta(PROTOCOL_VERSION));
        };
        let Some(caps) = meta.get(CLIENT_CAPABILITIES).and_then(Value::as_object) else {
            return Err(ProtocolError::missing_meta(CLIENT_CAPABILITIES));
        };
        let log_level = match meta.get(LOG_LEVEL) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_str().and_then(LogLevel::parse).ok_or_else(|| {
                ProtocolError::invalid_params(format!(
                    "Invalid params: unknown logLevel {v}; use one of {}.",
                    LogLevel::ALL.map(LogLevel::as_str).join(", ")
                ))
            })?),
        };
        Ok(Self {
            protocol_version: version.to_owned(),
            client_capabilities: caps.clone(),
            client_info: meta.get(CLIENT_INFO).cloned(),
            log_level,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn requires_version_and_capabilities() {
        let ok = RequestMeta::from_params(&params(json!({"_meta": {
            PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}
        }})));
        assert!(ok.is_ok());
        let missing_caps = RequestMeta::from_params(&params(json!({"_meta": {
            PROTOCOL_VERSION: "2026-07-28"
        }})));
        assert_eq!(missing_caps.err().map(|e| e.code), Some(-32602));
        assert!(RequestMeta::from_params(&params(json!({}))).is_err());
    }

    #[test]
    fn rejects_unknown_log_levels() {
        let r = RequestMeta::from_params(&params(json!({"_meta": {
            PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}, LOG_LEVEL: "loud"
        }})));
        assert!(r.is_err());
    }
}
