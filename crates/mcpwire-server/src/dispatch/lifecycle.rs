//! `initialize` (legacy handshake), `server/discover` (modern), and
//! `logging/setLevel` (legacy).

use std::sync::Arc;

use mcpwire_protocol::jsonrpc::ResultPayload;
use mcpwire_protocol::model::LogLevel;
use mcpwire_protocol::{ProtocolError, ProtocolVersion, Request, Response, shape};
use serde_json::{Map, Value, json};

use super::Call;
use super::Dispatcher;
use crate::session::Session;

impl Dispatcher {
    /// Answers a legacy `initialize`: negotiates the revision and creates
    /// a session bound to `owner` (the authenticated subject). The engine
    /// keeps it (in the session table, or on a stream's connection).
    pub(crate) fn initialize(
        &self,
        request: &Request,
        owner: Option<&str>,
    ) -> (Option<Arc<Session>>, Response) {
        let params = &request.params;
        let fail = |e| (None, Response::error(Some(request.id.clone()), e));
        // Clients that send no version (like the classic curl examples) get
        // the oldest revision; unknown or modern versions get the newest
        // legacy one, and the client decides whether it can speak it.
        let version = match params.get("protocolVersion") {
            None | Some(Value::Null) => ProtocolVersion::V2024_11_05,
            Some(Value::String(s)) => ProtocolVersion::parse(s)
                .filter(|v| !v.is_modern())
                .unwrap_or(ProtocolVersion::LATEST_LEGACY),
            Some(_) => {
                return fail(ProtocolError::invalid_params(
                    "Invalid params: protocolVersion must be a string such as \"2025-11-25\".",
                ));
            }
        };
        let session = match Session::new(
            version,
            kept_capabilities(params.get("capabilities")),
            kept_client_info(params.get("clientInfo")),
        ) {
            Ok(s) => {
                // Bound before it is findable: no other principal may use it.
                if let Some(owner) = owner {
                    s.bind_owner(owner);
                }
                Arc::new(s)
            }
            Err(e) => {
                tracing::error!(error = %e, "no OS randomness for a session id");
                return fail(ProtocolError::internal(
                    "Internal error: the server cannot create a session id right now; retry later.",
                ));
            }
        };
        let mut result = Map::new();
        result.insert("protocolVersion".into(), json!(version.as_str()));
        result.insert(
            "capabilities".into(),
            shape::capabilities_for(&self.state.capabilities, version),
        );
        result.insert(
            "serverInfo".into(),
            shape::implementation_for(&self.state.info_json, version),
        );
        if let Some(i) = &self.state.instructions {
            result.insert("instructions".into(), json!(i));
        }
        tracing::debug!(version = %version, "legacy session initialized");
        let response = Response::result(
            request.id.clone(),
            ResultPayload::Json(Value::Object(result)),
        );
        (Some(session), response)
    }

    pub(super) fn discover(&self, call: &Call) -> ResultPayload {
        let mut result = Map::new();
        result.insert(
            "supportedVersions".into(),
            json!(ProtocolVersion::supported_strings()),
        );
        result.insert(
            "capabilities".into(),
            shape::capabilities_for(&self.state.capabilities, call.version),
        );
        if let Some(i) = &self.state.instructions {
            result.insert("instructions".into(), json!(i));
        }
        result.insert("ttlMs".into(), json!(self.state.options.list_ttl_ms));
        result.insert("cacheScope".into(), json!("public"));
        call.finish(self, result)
    }

    pub(super) fn set_level(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let level = call
            .params
            .get("level")
            .and_then(Value::as_str)
            .and_then(LogLevel::parse)
            .ok_or_else(|| {
                ProtocolError::invalid_params(format!(
                    "Invalid params: level must be one of {}.",
                    LogLevel::ALL.map(LogLevel::as_str).join(", ")
                ))
            })?;
        if let Some(s) = &call.session {
            s.set_log_level(level);
        }
        Ok(call.finish(self, Map::new()))
    }
}

/// Client capabilities a session keeps: the ones the engine reads, and
/// only up to [`MAX_CAPABILITY_BYTES`] of their details (past that, each
/// is kept as declared with its details dropped).
fn kept_capabilities(value: Option<&Value>) -> Map<String, Value> {
    const KNOWN: [&str; 6] = [
        "roots",
        "sampling",
        "elicitation",
        "tasks",
        "extensions",
        "experimental",
    ];
    let Some(caps) = value.and_then(Value::as_object) else {
        return Map::new();
    };
    let mut kept: Map<String, Value> = caps
        .iter()
        .filter(|(k, _)| KNOWN.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if Value::Object(kept.clone()).to_string().len() > MAX_CAPABILITY_BYTES {
        for v in kept.values_mut() {
            *v = json!({});
        }
    }
    kept
}

/// `clientInfo` reduced to short name, version and title strings (it is
/// informational and self-reported).
fn kept_client_info(value: Option<&Value>) -> Option<Value> {
    let info = value?.as_object()?;
    let mut kept = Map::new();
    for key in ["name", "version", "title"] {
        if let Some(s) = info.get(key).and_then(Value::as_str) {
            kept.insert(
                key.into(),
                json!(s.chars().take(MAX_INFO_CHARS).collect::<String>()),
            );
        }
    }
    Some(Value::Object(kept))
}

/// Most bytes of client capabilities a session keeps.
const MAX_CAPABILITY_BYTES: usize = 4096;
/// Longest `clientInfo` string a session keeps.
const MAX_INFO_CHARS: usize = 128;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_state_is_bounded() {
        let big = "x".repeat(1 << 20);
        let caps =
            json!({ "roots": { "listChanged": true }, "sampling": { "blob": big }, "junk": big });
        let kept = kept_capabilities(Some(&caps));
        assert_eq!(kept.len(), 2);
        assert!(Value::Object(kept).to_string().len() < 100);
        let info = json!({ "name": big, "version": "1", "extra": big });
        let kept = kept_client_info(Some(&info)).unwrap_or_default();
        assert!(kept.to_string().len() < 300);
    }
}
