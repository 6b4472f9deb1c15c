//! An in-memory client (feature `client`): drives a [`Server`] without
//! sockets, for tests and for tools composed of other servers.
//!
//! It speaks either wire through the same [`Connection`] the
//! stdio transport uses: stateless 2026-07-28 requests carrying their
//! `_meta` (the default), or a legacy session opened with `initialize`
//! ([`ClientBuilder::legacy`]). Requests for input from the server
//! (elicitation, sampling, roots) go to the handler given with
//! [`ClientBuilder::on_input`], whichever wire asks: an `input_required`
//! result is answered and retried automatically, and a legacy
//! server→client request is answered on the session.
//!
//! ```
//! use mcp_server::client::Client;
//! use mcp_server::{Server, Tool, ToolResult};
//! # #[derive(serde::Deserialize, schemars::JsonSchema)] struct Greet { name: String }
//! # #[derive(serde::Serialize, schemars::JsonSchema)] struct Greeting { text: String }
//!
//! async fn greet(input: Greet) -> ToolResult<Greeting> {
//!     Ok(Greeting { text: format!("Hello, {}!", input.name) })
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder("greeter", "1.0.0")
//!     .tool(Tool::builder("greet").handler(greet))
//!     .build()?;
//! let client = Client::connect(server).await?;
//! let reply = client.call_tool("greet", serde_json::json!({ "name": "Ada" })).await?;
//! assert_eq!(reply.structured.unwrap()["text"], "Hello, Ada!");
//! # Ok(()) }
//! ```

mod error;
mod link;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use mcp_protocol::ProtocolVersion;
use mcp_protocol::meta;
use mcp_protocol::model::{InputRequest, ToolDefinition};
use serde_json::{Map, Value, json};
use tokio::sync::{Mutex, mpsc};

pub use error::ClientError;

use crate::engine::{Connection, MessageLimits};
use crate::server::Server;
use link::Routes;

/// Answers one request for input from the server with its result object
/// (e.g. `{"action":"accept","content":{…}}` for an elicitation).
pub type InputHandler =
    Arc<dyn Fn(InputRequest) -> Pin<Box<dyn Future<Output = Value> + Send>> + Send + Sync>;

/// Most `input_required` rounds one call may take before the client gives up.
const MAX_INPUT_ROUNDS: usize = 16;

/// Which wire the client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientWire {
    /// Stateless requests with per-request `_meta`.
    Modern,
    /// An `initialize` session at this revision.
    Legacy(ProtocolVersion),
}

/// Configures a [`Client`]; start with [`Client::builder`].
pub struct ClientBuilder {
    server: Server,
    wire: ClientWire,
    capabilities: Option<Map<String, Value>>,
    handler: Option<InputHandler>,
    extensions: http::Extensions,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("wire", &self.wire)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// Opens a legacy session at `version` (`initialize`, then
    /// `notifications/initialized`) instead of sending stateless requests.
    pub fn legacy(mut self, version: ProtocolVersion) -> Self {
        self.wire = ClientWire::Legacy(version);
        self
    }

    /// The client capabilities to declare. Default: `elicitation`,
    /// `sampling` and `roots` when an input handler is set, none otherwise.
    pub fn capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = Some(capabilities.as_object().cloned().unwrap_or_default());
        self
    }

    /// Answers the server's requests for input (elicitation, sampling,
    /// roots) on either wire.
    pub fn on_input<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(InputRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Value> + Send + 'static,
    {
        self.handler = Some(Arc::new(move |r| Box::pin(handler(r))));
        self
    }

    /// Attaches a value to every request, as a transport would: e.g. the
    /// [`Principal`](crate::Principal) whose scopes the engine checks.
    pub fn extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// Connects; on the legacy wire, also runs the `initialize` handshake.
    pub async fn connect(self) -> Result<Client, ClientError> {
        let capabilities = self.capabilities.unwrap_or_else(|| match &self.handler {
            Some(_) => json!({ "elicitation": {}, "sampling": {}, "roots": {} })
                .as_object()
                .cloned()
                .unwrap_or_default(),
            None => Map::new(),
        });
        let (out_tx, out_rx) = mpsc::channel(1024);
        let limits = MessageLimits {
            max_bytes: 16 * 1024 * 1024,
            max_depth: 64,
        };
        let connection = Connection::new(self.server, out_tx, Arc::new(self.extensions), limits);
        let routes = Arc::new(Routes::default());
        let (note_tx, note_rx) = mpsc::unbounded_channel();
        tokio::spawn(link::route(
            out_rx,
            Arc::clone(&routes),
            note_tx,
            Arc::clone(&connection),
            self.handler.clone(),
        ));
        let client = Client {
            connection,
            routes,
            notifications: Mutex::new(note_rx),
            wire: self.wire,
            capabilities,
            handler: self.handler,
            next_id: AtomicI64::new(1),
        };
        if let ClientWire::Legacy(version) = client.wire {
            client.initialize(version).await?;
        }
        Ok(client)
    }
}

/// A client connected to a [`Server`] in memory. Cheap calls, no sockets;
/// drop it (or call [`close`](Self::close)) to end the connection.
pub struct Client {
    connection: Arc<Connection>,
    routes: Arc<Routes>,
    notifications: Mutex<mpsc::UnboundedReceiver<Value>>,
    wire: ClientWire,
    capabilities: Map<String, Value>,
    handler: Option<InputHandler>,
    next_id: AtomicI64,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("wire", &self.wire)
            .finish_non_exhaustive()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

/// A `tools/call` result.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolReply {
    /// The content blocks, as sent.
    pub content: Vec<Value>,
    /// `structuredContent`, if any.
    pub structured: Option<Value>,
    /// Whether the tool reported an execution error.
    pub is_error: bool,
    /// The whole result object.
    pub raw: Map<String, Value>,
}

impl ToolReply {
    /// The text blocks, joined with newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect();
        texts.join("\n")
    }

    fn from_result(raw: Map<String, Value>) -> Self {
        Self {
            content: raw
                .get("content")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            structured: raw.get("structuredContent").cloned(),
            is_error: raw.get("isError") == Some(&Value::Bool(true)),
            raw,
        }
    }
}

/// A `completion/complete` result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Suggested values, best first.
    pub values: Vec<String>,
    /// How many values exist in all, if the server said.
    pub total: Option<u64>,
    /// Whether there are more than those returned.
    pub has_more: bool,
}

/// An open `subscriptions/listen` stream; see [`Client::listen`].
#[derive(Debug)]
pub struct Subscription {
    id: Value,
    events: mpsc::UnboundedReceiver<Value>,
    acknowledgement: Value,
    ended: bool,
}

impl Subscription {
    /// The `notifications/subscriptions/acknowledged` the server sent first.
    pub fn acknowledgement(&self) -> &Value {
        &self.acknowledgement
    }

    /// The next notification; `None` once the server ended the
    /// subscription (its final response) or the connection closed.
    pub async fn next(&mut self) -> Option<Value> {
        if self.ended {
            return None;
        }
        let event = self.events.recv().await?;
        if event.get("method").is_none() {
            self.ended = true;
            return None;
        }
        Some(event)
    }

    /// The subscription's request id.
    pub fn id(&self) -> &Value {
        &self.id
    }
}

impl Client {
    /// A modern (2026-07-28) client without an input handler.
    pub async fn connect(server: Server) -> Result<Self, ClientError> {
        Self::builder(server).connect().await
    }

    /// Configures a client for `server`.
    pub fn builder(server: Server) -> ClientBuilder {
        ClientBuilder {
            server,
            wire: ClientWire::Modern,
            capabilities: None,
            handler: None,
            extensions: http::Extensions::new(),
        }
    }

    /// Every tool, following `nextCursor` to the end.
    pub async fn list_tools(&self) -> Result<Vec<ToolDefinition>, ClientError> {
        let mut tools = Vec::new();
        let mut cursor: Option<Value> = None;
        loop {
            let mut params = Map::new();
            if let Some(c) = cursor.take() {
                params.insert("cursor".into(), c);
            }
            let mut result = self.request("tools/list", params).await?;
            let page = result.remove("tools").unwrap_or(Value::Array(Vec::new()));
            let page: Vec<ToolDefinition> = serde_json::from_value(page)
                .map_err(|e| ClientError::Malformed(format!("tools/list: {e}")))?;
            tools.extend(page);
            match result.remove("nextCursor") {
                Some(c) if !c.is_null() => cursor = Some(c),
                _ => return Ok(tools),
            }
        }
    }

    /// Calls a tool; requests for input are answered by the input handler.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<ToolReply, ClientError> {
        let params = json!({ "name": name, "arguments": arguments });
        let result = self.request("tools/call", object(params)).await?;
        Ok(ToolReply::from_result(result))
    }

    /// Suggestions for an argument of a prompt (`{"type":"ref/prompt","name":…}`)
    /// or a resource template (`{"type":"ref/resource","uri":…}`).
    pub async fn complete(
        &self,
        reference: Value,
        argument: &str,
        value: &str,
    ) -> Result<Completion, ClientError> {
        let params = json!({ "ref": reference, "argument": { "name": argument, "value": value } });
        let result = self.request("completion/complete", object(params)).await?;
        let c = &result.get("completion").cloned().unwrap_or(Value::Null);
        let values = c["values"].as_array().ok_or_else(|| {
            ClientError::Malformed("completion/complete: no completion.values".to_owned())
        })?;
        Ok(Completion {
            values: values
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            total: c["total"].as_u64(),
            has_more: c["hasMore"].as_bool().unwrap_or(false),
        })
    }

    /// Opens a `subscriptions/listen` stream (modern wire) for the given
    /// `notifications` filter, e.g. `{"toolsListChanged": true}`; returns
    /// once the server acknowledged it.
    pub async fn listen(&self, notifications: Value) -> Result<Subscription, ClientError> {
        let id = self.fresh_id();
        let mut events = self.routes.subscribe(&id);
        let params = object(json!({ "notifications": notifications }));
        self.send(&id, "subscriptions/listen", params).await;
        let first = events.recv().await.ok_or(ClientError::Closed)?;
        if let Some(error) = first.get("error") {
            self.routes.unsubscribe(&id);
            return Err(ClientError::from_error_object(error));
        }
        Ok(Subscription {
            id,
            events,
            acknowledgement: first,
            ended: false,
        })
    }

    /// Ends a subscription (`notifications/cancelled`).
    pub async fn unsubscribe(&self, subscription: Subscription) {
        self.routes.unsubscribe(&subscription.id);
        let params = json!({ "requestId": subscription.id, "reason": "unsubscribed" });
        self.notify("notifications/cancelled", object(params)).await;
    }

    /// The next notification outside subscriptions (progress, log
    /// messages, list changes on a legacy session), waiting for one.
    pub async fn next_notification(&self) -> Option<Value> {
        self.notifications.lock().await.recv().await
    }

    /// The notifications received so far, without waiting.
    pub async fn take_notifications(&self) -> Vec<Value> {
        let mut rx = self.notifications.lock().await;
        let mut out = Vec::new();
        while let Ok(n) = rx.try_recv() {
            out.push(n);
        }
        out
    }

    /// Any request: `_meta` is added on the modern wire, `input_required`
    /// results are answered and retried. Returns the result object.
    pub async fn request(
        &self,
        method: &str,
        mut params: Map<String, Value>,
    ) -> Result<Map<String, Value>, ClientError> {
        for _ in 0..MAX_INPUT_ROUNDS {
            let mut result = self.round_trip(method, params.clone()).await?;
            if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                return Ok(result);
            }
            let answers = self.answer_inputs(result.remove("inputRequests")).await?;
            params.insert("inputResponses".into(), Value::Object(answers));
            match result.remove("requestState") {
                Some(state) => params.insert("requestState".into(), state),
                None => params.remove("requestState"),
            };
        }
        Err(ClientError::TooManyRounds(MAX_INPUT_ROUNDS))
    }

    /// Sends a notification (e.g. `notifications/cancelled`).
    pub async fn notify(&self, method: &str, params: Map<String, Value>) {
        let params = self.with_meta(params);
        let line = json!({ "jsonrpc": "2.0", "method": method, "params": params });
        self.connection.receive(line.to_string().as_bytes()).await;
    }

    /// Ends the connection: subscriptions end and running requests finish.
    pub async fn close(self) {
        self.connection.finish().await;
    }

    /// One request and its response, no retry.
    async fn round_trip(
        &self,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Map<String, Value>, ClientError> {
        let id = self.fresh_id();
        let response = self.routes.wait_for(&id);
        self.send(&id, method, params).await;
        let mut response = response.await.map_err(|_| ClientError::Closed)?;
        if let Some(error) = response.get("error") {
            return Err(ClientError::from_error_object(error));
        }
        match response.get_mut("result").map(Value::take) {
            Some(Value::Object(result)) => Ok(result),
            _ => Err(ClientError::Malformed(format!(
                "{method}: no result object"
            ))),
        }
    }

    /// Runs the input handler on each of an `input_required` result's requests.
    async fn answer_inputs(
        &self,
        requests: Option<Value>,
    ) -> Result<Map<String, Value>, ClientError> {
        let Some(Value::Object(requests)) = requests else {
            return Ok(Map::new());
        };
        let Some(handler) = &self.handler else {
            return Err(ClientError::Malformed(
                "the server asked for input and this client has no input handler".to_owned(),
            ));
        };
        let mut answers = Map::new();
        for (key, request) in requests {
            let request: InputRequest = serde_json::from_value(request)
                .map_err(|e| ClientError::Malformed(format!("inputRequests.{key}: {e}")))?;
            answers.insert(key, handler(request).await);
        }
        Ok(answers)
    }

    async fn send(&self, id: &Value, method: &str, params: Map<String, Value>) {
        let params = self.with_meta(params);
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.connection.receive(line.to_string().as_bytes()).await;
    }

    /// On the modern wire, the `_meta` every request carries (keys the
    /// caller set are kept).
    fn with_meta(&self, mut params: Map<String, Value>) -> Map<String, Value> {
        if self.wire != ClientWire::Modern {
            return params;
        }
        let entry = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = entry {
            m.entry(meta::PROTOCOL_VERSION)
                .or_insert_with(|| json!(ProtocolVersion::LATEST.as_str()));
            m.entry(meta::CLIENT_CAPABILITIES)
                .or_insert_with(|| Value::Object(self.capabilities.clone()));
        }
        params
    }

    /// `initialize` and `notifications/initialized`.
    async fn initialize(&self, version: ProtocolVersion) -> Result<(), ClientError> {
        let params = json!({
            "protocolVersion": version.as_str(),
            "capabilities": self.capabilities,
            "clientInfo": { "name": "mcp-server-client", "version": env!("CARGO_PKG_VERSION") },
        });
        self.round_trip("initialize", object(params)).await?;
        self.notify("notifications/initialized", Map::new()).await;
        Ok(())
    }

    fn fresh_id(&self) -> Value {
        json!(self.next_id.fetch_add(1, Ordering::Relaxed))
    }
}

/// A `json!` object literal as a map.
fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}
