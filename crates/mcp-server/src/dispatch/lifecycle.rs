//! `initialize` (legacy handshake), `server/discover` (modern), and
//! `logging/setLevel` (legacy).

use std::sync::Arc;

use mcp_protocol::jsonrpc::ResultPayload;
use mcp_protocol::model::LogLevel;
use mcp_protocol::{ProtocolError, ProtocolVersion, Request, Response, shape};
use serde_json::{Map, Value, json};

use super::Call;
use crate::server::Server;
use crate::session::Session;

impl Server {
    /// Answers a legacy `initialize`: negotiates the revision and creates
    /// a session. `store` keeps it in the server's session table (HTTP);
    /// stdio keeps its one session itself.
    pub fn initialize(&self, request: &Request, store: bool) -> (Option<Arc<Session>>, Response) {
        let params = &request.params;
        // Clients that send no version (like the classic curl examples) get
        // the oldest revision; unknown or modern versions get the newest
        // legacy one, and the client decides whether it can speak it.
        let version = match params.get("protocolVersion") {
            None | Some(Value::Null) => ProtocolVersion::V2024_11_05,
            Some(Value::String(s)) => ProtocolVersion::parse(s)
                .filter(|v| !v.is_modern())
                .unwrap_or(ProtocolVersion::LATEST_LEGACY),
            Some(_) => {
                let e = ProtocolError::invalid_params(
                    "Invalid params: protocolVersion must be a string such as \"2025-11-25\".",
                );
                return (None, Response::error(Some(request.id.clone()), e));
            }
        };
        let capabilities = params
            .get("capabilities")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let session = Arc::new(Session::new(
            version,
            capabilities,
            params.get("clientInfo").cloned(),
        ));
        if store {
            self.inner.sessions.insert(Arc::clone(&session));
        }
        let mut result = Map::new();
        result.insert("protocolVersion".into(), json!(version.as_str()));
        result.insert(
            "capabilities".into(),
            shape::capabilities_for(&self.inner.capabilities, version),
        );
        result.insert(
            "serverInfo".into(),
            shape::implementation_for(&self.inner.info_json, version),
        );
        if let Some(i) = &self.inner.instructions {
            result.insert("instructions".into(), json!(i));
        }
        tracing::info!(version = %version, client = ?params.get("clientInfo"), "legacy session initialized");
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
            shape::capabilities_for(&self.inner.capabilities, call.version),
        );
        if let Some(i) = &self.inner.instructions {
            result.insert("instructions".into(), json!(i));
        }
        result.insert("ttlMs".into(), json!(self.inner.options.list_ttl_ms));
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
