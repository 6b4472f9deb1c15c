//! `resources/list`, `resources/templates/list`, `resources/read`,
//! and the legacy `resources/subscribe` / `resources/unsubscribe`.

use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::jsonrpc::ResultPayload;
use serde_json::{Map, Value, json};

use super::Call;
use super::Dispatcher;
use super::prompts::{list_result, page};
use super::tools::cursor_param;
use crate::resource::Resource;

fn uri_param(call: &Call) -> Result<&str, ProtocolError> {
    call.params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| ProtocolError::invalid_params("Invalid params: \"uri\" must be a string."))
}

impl Dispatcher {
    pub(super) fn list_resources(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let resources = self.state.resources();
        let (range, next) = page(
            &resources,
            cursor_param(call)?,
            self.state.options.page_size,
            "resources/list",
        )?;
        let items = resources[range].iter().map(Resource::listing).collect();
        Ok(call.finish(self, list_result(self, "resources", items, next)))
    }

    pub(super) fn list_templates(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let templates = self.state.templates();
        let (range, next) = page(
            &templates,
            cursor_param(call)?,
            self.state.options.page_size,
            "resources/templates/list",
        )?;
        let items = templates[range]
            .iter()
            .map(|t| serde_json::to_value(&t.definition).unwrap_or(Value::Null))
            .collect();
        Ok(call.finish(self, list_result(self, "resourceTemplates", items, next)))
    }

    pub(super) async fn read_resource(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let uri = uri_param(call)?;
        let ctx = call.ctx.clone();
        let mut resource = None;
        let contents = if let Some(r) = self
            .state
            .resources()
            .iter()
            .find(|r| r.definition.uri == uri)
            .cloned()
        {
            let read = (r.read)(ctx, uri.to_owned(), Vec::new()).await?;
            resource = Some(r);
            read
        } else if let Some((t, vars)) = self
            .state
            .templates()
            .iter()
            .find_map(|t| t.matches(uri).map(|v| (t.clone(), v)))
        {
            (t.read)(ctx, uri.to_owned(), vars).await?
        } else {
            return Err(not_found(uri));
        };
        if contents.is_empty() {
            return Err(not_found(uri));
        }
        let mut result = Map::new();
        let contents = serde_json::to_value(contents).unwrap_or(json!([]));
        let contents = match &resource {
            Some(r) => r.with_contents_meta(contents),
            None => contents,
        };
        result.insert("contents".into(), contents);
        result.insert("ttlMs".into(), json!(self.state.options.list_ttl_ms));
        result.insert("cacheScope".into(), json!("public"));
        Ok(call.finish(self, result))
    }

    pub(super) fn subscribe_resource(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let uri = uri_param(call)?;
        if let Some(s) = &call.session {
            if call.method == "resources/subscribe" {
                // Only what could ever be updated: an arbitrary URI would be
                // held for the session's life and never fire.
                if !self.resource_exists(uri) {
                    return Err(not_found(uri));
                }
                let max = self.state.options.max_subscriptions_per_session;
                if !s.subscribe(uri.to_owned(), max) {
                    return Err(too_many_subscriptions(max));
                }
            } else {
                s.unsubscribe(uri);
            }
        }
        Ok(call.finish(self, Map::new()))
    }

    /// Whether a resource or a template answers to `uri`.
    fn resource_exists(&self, uri: &str) -> bool {
        self.state
            .resources()
            .iter()
            .any(|r| r.definition.uri == uri)
            || self
                .state
                .templates()
                .iter()
                .any(|t| t.matches(uri).is_some())
    }
}

/// -32602 when a session or listen stream would watch more than `max` URIs.
pub(crate) fn too_many_subscriptions(max: usize) -> ProtocolError {
    ProtocolError::invalid_params(format!(
        "Invalid params: at most {max} resource subscriptions per session (the server's limit); unsubscribe from some first."
    ))
    .with_data(json!({ "limit": max }))
}

/// -32602 with `data.uri`: the modern code for an unknown resource.
pub(crate) fn not_found(uri: &str) -> ProtocolError {
    ProtocolError::invalid_params(format!(
        "Invalid params: resource not found: {uri}; call resources/list or resources/templates/list to see what exists."
    ))
    .with_data(json!({ "uri": uri }))
}
