//! `subscriptions/listen`: a long-lived stream of list-change
//! notifications, each tagged with the listen request's id.

use mcpwire_protocol::jsonrpc::{ResultPayload, notification_json};
use mcpwire_protocol::{ProtocolError, RequestId, Response, meta};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use std::sync::Arc;

use super::Call;
use super::Dispatcher;
use crate::events::ServerEvent;
use crate::observe::Metrics;
use crate::observe::metrics::{GaugeGuard, StreamKind};

/// What a listener asked for, reduced to what the server supports.
#[derive(Clone, Debug, Default)]
struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    resource_uris: Vec<String>,
}

/// An open `subscriptions/listen` stream. The transport sends
/// [`acknowledgement`](Self::acknowledgement) first, then every message
/// from [`next`](Self::next), and [`final_response`](Self::final_response)
/// when `next` returns `None` (server shutdown).
pub struct Listener {
    id: RequestId,
    filter: Filter,
    events: broadcast::Receiver<ServerEvent>,
    shutdown: CancellationToken,
    server_info: Value,
    metrics: Arc<Metrics>,
    /// Keeps `mcp_server_streams_active{kind="listen"}` up while open.
    _open: GaugeGuard,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Listener {
    /// The listen request's id (the subscription id).
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    fn tagged(&self, method: &str, mut params: Map<String, Value>) -> String {
        params.insert("_meta".into(), json!({ meta::SUBSCRIPTION_ID: self.id }));
        notification_json(method, Value::Object(params))
    }

    /// `notifications/subscriptions/acknowledged`, echoing what will be honoured.
    pub fn acknowledgement(&self) -> String {
        let mut n = Map::new();
        if self.filter.tools {
            n.insert("toolsListChanged".into(), json!(true));
        }
        if self.filter.prompts {
            n.insert("promptsListChanged".into(), json!(true));
        }
        if self.filter.resources {
            n.insert("resourcesListChanged".into(), json!(true));
        }
        if !self.filter.resource_uris.is_empty() {
            n.insert(
                "resourceSubscriptions".into(),
                json!(self.filter.resource_uris),
            );
        }
        let mut params = Map::new();
        params.insert("notifications".into(), Value::Object(n));
        self.tagged("notifications/subscriptions/acknowledged", params)
    }

    /// The next notification; `None` when the server shuts down.
    pub async fn next(&mut self) -> Option<String> {
        loop {
            let event = tokio::select! {
                e = self.events.recv() => e,
                _ = self.shutdown.cancelled() => return None,
            };
            let event = match event {
                Ok(e) => e,
                // Missed events: tell the client everything it follows may
                // have changed; a spurious refresh is harmless.
                Err(RecvError::Lagged(_)) => {
                    if self.filter.tools {
                        return Some(self.tagged(ServerEvent::ToolsChanged.method(), Map::new()));
                    }
                    continue;
                }
                Err(RecvError::Closed) => return None,
            };
            let wanted = match &event {
                ServerEvent::ToolsChanged => self.filter.tools,
                ServerEvent::PromptsChanged => self.filter.prompts,
                ServerEvent::ResourcesChanged => self.filter.resources,
                ServerEvent::ResourceUpdated(uri) => self.filter.resource_uris.contains(uri),
            };
            if !wanted {
                continue;
            }
            let mut params = Map::new();
            if let ServerEvent::ResourceUpdated(uri) = &event {
                params.insert("uri".into(), json!(uri));
            }
            self.metrics.list_changed_sent(StreamKind::Listen);
            return Some(self.tagged(event.method(), params));
        }
    }

    /// The response that ends the subscription.
    pub fn final_response(&self) -> Response {
        let result = json!({
            "resultType": "complete",
            "_meta": { meta::SUBSCRIPTION_ID: self.id, meta::SERVER_INFO: self.server_info },
        });
        Response::result(self.id.clone(), ResultPayload::Json(result))
    }
}

impl Dispatcher {
    pub(super) fn listen(&self, call: &Call) -> Result<Listener, ProtocolError> {
        if !call.version.is_modern() {
            return Err(ProtocolError::method_not_found(&call.method));
        }
        let Some(requested) = call.params.get("notifications").and_then(Value::as_object) else {
            return Err(ProtocolError::invalid_params(
                "Invalid params: subscriptions/listen needs a \"notifications\" object.",
            ));
        };
        let flag = |k: &str| requested.get(k).and_then(Value::as_bool).unwrap_or(false);
        let caps = &self.state.capabilities;
        let list_changed = |cap: &str| {
            caps.get(cap)
                .and_then(|c| c.get("listChanged"))
                .and_then(Value::as_bool)
                == Some(true)
        };
        let subscribe = caps
            .get("resources")
            .and_then(|c| c.get("subscribe"))
            .and_then(Value::as_bool)
            == Some(true);
        let filter = Filter {
            tools: flag("toolsListChanged") && list_changed("tools"),
            prompts: flag("promptsListChanged") && list_changed("prompts"),
            resources: flag("resourcesListChanged") && list_changed("resources"),
            resource_uris: if subscribe {
                self.watched_uris(requested)?
            } else {
                Vec::new()
            },
        };
        Ok(Listener {
            id: call.id.clone(),
            filter,
            events: self.state.events.subscribe(),
            shutdown: self.state.shutdown.clone(),
            server_info: self.state.info_json.clone(),
            metrics: Arc::clone(&self.state.metrics),
            _open: self.state.metrics.stream_open(StreamKind::Listen),
        })
    }
}

impl Dispatcher {
    /// The `resourceSubscriptions` of a listen request, bounded like a
    /// legacy session's subscriptions.
    fn watched_uris(&self, requested: &Map<String, Value>) -> Result<Vec<String>, ProtocolError> {
        let mut uris: Vec<String> = requested
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|u| u.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        uris.sort();
        uris.dedup();
        let max = self.state.options.max_subscriptions_per_session;
        if uris.len() > max {
            return Err(super::resources::too_many_subscriptions(max));
        }
        Ok(uris)
    }
}
