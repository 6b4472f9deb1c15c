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
//! use mcpwire_server::client::Client;
//! use mcpwire_server::{Server, Tool, ToolResult};
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
//!
//! # HTTP mode
//!
//! With the feature `client-http`, [`Client::http`] builds the same client
//! for a Streamable HTTP endpoint (`http://` only): each request is a POST
//! whose JSON or SSE answer is parsed, the modern wire's `MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` headers are derived from the
//! body (the tools' `Mcp-Param-*` mirrors from `tools/list`: the last
//! listing, or one fetched when the server first refuses a call for a
//! missing mirror), a legacy session carries its `Mcp-Session-Id`,
//! [`ClientBuilder::bearer`] adds a token, [`Client::listen`] keeps the
//! subscription's stream open and [`Client::open_stream`] opens a legacy
//! session's GET stream. Closing a legacy client deletes its session.
//!
//! ```no_run
//! # #[cfg(feature = "client-http")]
//! # async fn demo() -> Result<(), mcpwire_server::client::ClientError> {
//! use mcpwire_server::client::Client;
//! let client = Client::http("http://127.0.0.1:8080/mcp")
//!     .bearer("eyJhbGciOi…")
//!     .connect()
//!     .await?;
//! let tools = client.list_tools().await?;
//! # Ok(()) }
//! ```
//!
//! # Child-process mode
//!
//! With the feature `client-stdio`, [`Client::child`] spawns a server
//! process and speaks the stdio transport on its pipes: one JSON-RPC
//! message per line on its stdin, its stdout read line by line and routed
//! as in memory (responses by id, subscription events to their
//! [`Subscription`], the rest to [`Client::next_notification`],
//! server→client requests to the input handler, answered on stdin). Its
//! stderr is left as the command sets it. [`Client::close`] closes stdin
//! and waits for the exit ([`Client::close_child`] returns the status);
//! dropping the client kills the process.
//!
//! ```no_run
//! # #[cfg(feature = "client-stdio")]
//! # async fn demo() -> Result<(), mcpwire_server::client::ClientError> {
//! use mcpwire_server::client::Client;
//! let mut command = tokio::process::Command::new("my-mcp-server");
//! command.arg("--stdio");
//! let client = Client::child(command).connect().await?;
//! let tools = client.list_tools().await?;
//! client.close().await;
//! # Ok(()) }
//! ```

#[cfg(feature = "client-stdio")]
mod child;
mod error;
mod link;
#[cfg(feature = "client-http")]
mod remote;
#[cfg(feature = "client-http")]
mod sse;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use mcpwire_protocol::ProtocolVersion;
use mcpwire_protocol::meta;
use mcpwire_protocol::model::{InputRequest, ToolDefinition};
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

/// Where a client sends its messages.
enum Target {
    /// A server in this process, through a [`Connection`].
    Memory(Server),
    /// A Streamable HTTP endpoint, with headers for every request.
    #[cfg(feature = "client-http")]
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
    /// A process to spawn, speaking the stdio transport on its pipes.
    #[cfg(feature = "client-stdio")]
    Child(tokio::process::Command),
}

/// How a connected client reaches its server.
enum Transport {
    Memory {
        connection: Arc<Connection>,
        routes: Arc<Routes>,
    },
    #[cfg(feature = "client-http")]
    Http(Arc<remote::HttpLink>),
    #[cfg(feature = "client-stdio")]
    Child(Box<child::ChildLink>),
}

/// Configures a [`Client`]; start with [`Client::builder`] (or
/// [`Client::http`], [`Client::child`]).
pub struct ClientBuilder {
    target: Target,
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
    /// In-memory only: over HTTP or a child's stdio the server's transport
    /// decides.
    pub fn extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// HTTP mode: sends `Authorization: Bearer <token>` on every request.
    #[cfg(feature = "client-http")]
    pub fn bearer(self, token: &str) -> Self {
        self.header("authorization", &format!("Bearer {token}"))
    }

    /// HTTP mode: sends this header on every request (e.g. `Origin`).
    /// Invalid names or values make [`connect`](Self::connect) fail.
    #[cfg(feature = "client-http")]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let Target::Http { headers, .. } = &mut self.target {
            headers.push((name.to_owned(), value.to_owned()));
        }
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
        let (note_tx, note_rx) = mpsc::unbounded_channel();
        let transport = match self.target {
            Target::Memory(server) => {
                memory(server, self.extensions, note_tx, self.handler.clone())
            }
            #[cfg(feature = "client-http")]
            Target::Http { url, headers } => Transport::Http(Arc::new(remote::HttpLink::new(
                &url,
                &headers,
                self.wire,
                note_tx,
                self.handler.clone(),
            )?)),
            #[cfg(feature = "client-stdio")]
            Target::Child(command) => {
                let link = child::ChildLink::spawn(command, note_tx, self.handler.clone())?;
                Transport::Child(Box::new(link))
            }
        };
        let client = Client {
            transport,
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

/// Connects the in-memory transport and starts routing what the server writes.
fn memory(
    server: Server,
    extensions: http::Extensions,
    notifications: mpsc::UnboundedSender<Value>,
    handler: Option<InputHandler>,
) -> Transport {
    let (out_tx, out_rx) = mpsc::channel(1024);
    let limits = MessageLimits {
        max_bytes: 16 * 1024 * 1024,
        max_depth: 64,
    };
    let connection = server.connection(out_tx, Arc::new(extensions), limits);
    let routes = Arc::new(Routes::default());
    tokio::spawn(link::route(
        out_rx,
        Arc::clone(&routes),
        notifications,
        Arc::clone(&connection),
        handler,
    ));
    Transport::Memory { connection, routes }
}

/// A client connected to a [`Server`] in memory (cheap calls, no sockets)
/// or, in HTTP mode, to a URL. Drop it (or call [`close`](Self::close)) to
/// end the connection.
pub struct Client {
    transport: Transport,
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
        match &self.transport {
            Transport::Memory { connection, .. } => connection.abort(),
            #[cfg(feature = "client-http")]
            Transport::Http(link) => link.abort_streams(),
            #[cfg(feature = "client-stdio")]
            Transport::Child(link) => link.abort(),
        }
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
    /// HTTP mode: the task reading the subscription's SSE stream.
    reader: Option<tokio::task::AbortHandle>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Over HTTP, closing the stream is what ends the subscription.
        if let Some(r) = &self.reader {
            r.abort();
        }
    }
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
        Self::builder_for(Target::Memory(server))
    }

    /// Configures a client for the Streamable HTTP endpoint at `url`
    /// (`http://host:port/path`); see [HTTP mode](self#http-mode).
    #[cfg(feature = "client-http")]
    pub fn http(url: &str) -> ClientBuilder {
        Self::builder_for(Target::Http {
            url: url.to_owned(),
            headers: Vec::new(),
        })
    }

    /// Configures a client that spawns `command` and speaks the stdio
    /// transport on its stdin and stdout (feature `client-stdio`); see
    /// [child-process mode](self#child-process-mode). The process is
    /// killed when the client is dropped; [`close`](Client::close) lets it
    /// finish first.
    #[cfg(feature = "client-stdio")]
    pub fn child(command: tokio::process::Command) -> ClientBuilder {
        Self::builder_for(Target::Child(command))
    }

    fn builder_for(target: Target) -> ClientBuilder {
        ClientBuilder {
            target,
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
                _ => break,
            }
        }
        #[cfg(feature = "client-http")]
        if let Transport::Http(link) = &self.transport {
            link.learn_tools(&tools);
        }
        Ok(tools)
    }

    /// HTTP mode on the modern wire: whether a refused call is worth
    /// retrying after `tools/list`, because the server wants `Mcp-Param-*`
    /// headers this client could not know yet (-32020, nothing ran).
    async fn learnt_tools_after(&self, error: &ClientError) -> bool {
        #[cfg(feature = "client-http")]
        if let Transport::Http(link) = &self.transport
            && self.wire == ClientWire::Modern
            && error.code() == Some(mcpwire_protocol::ErrorCode::HeaderMismatch.code())
            && !link.knows_tools()
        {
            return self.list_tools().await.is_ok();
        }
        let _ = error;
        false
    }

    /// Calls a tool; requests for input are answered by the input handler.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<ToolReply, ClientError> {
        let params = object(json!({ "name": name, "arguments": arguments }));
        let result = match self.request("tools/call", params.clone()).await {
            Err(e) if self.learnt_tools_after(&e).await => {
                self.request("tools/call", params).await?
            }
            other => other?,
        };
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
        let params = object(json!({ "notifications": notifications }));
        let message = self.message(Some(&id), "subscriptions/listen", params);
        let (mut events, reader) = match &self.transport {
            Transport::Memory { connection, routes } => {
                let events = routes.subscribe(&id);
                connection.receive(message.to_string().as_bytes()).await;
                (events, None)
            }
            #[cfg(feature = "client-http")]
            Transport::Http(link) => {
                let (events, reader) = link.listen(&message).await?;
                (events, Some(reader))
            }
            #[cfg(feature = "client-stdio")]
            Transport::Child(link) => {
                let events = link.routes().subscribe(&id);
                link.send(&message).await?;
                (events, None)
            }
        };
        let first = events.recv().await.ok_or(ClientError::Closed)?;
        if let Some(error) = first.get("error") {
            self.forget_subscription(&id);
            return Err(ClientError::from_error_object(error));
        }
        Ok(Subscription {
            id,
            events,
            acknowledgement: first,
            ended: false,
            reader,
        })
    }

    /// Ends a subscription: `notifications/cancelled` in memory; over HTTP,
    /// its stream is closed.
    pub async fn unsubscribe(&self, subscription: Subscription) {
        self.forget_subscription(&subscription.id);
        if subscription.reader.is_none() {
            let params = json!({ "requestId": subscription.id, "reason": "unsubscribed" });
            self.notify("notifications/cancelled", object(params)).await;
        }
    }

    fn forget_subscription(&self, id: &Value) {
        match &self.transport {
            Transport::Memory { routes, .. } => routes.unsubscribe(id),
            #[cfg(feature = "client-http")]
            Transport::Http(_) => {}
            #[cfg(feature = "client-stdio")]
            Transport::Child(link) => link.routes().unsubscribe(id),
        }
    }

    /// Opens the server's stream for messages outside requests: in HTTP
    /// mode on a legacy session, the GET stream (its notifications then
    /// arrive at [`next_notification`](Self::next_notification), its
    /// requests go to the input handler). In memory and on a child's
    /// stdio there is nothing to open: those messages always flow.
    pub async fn open_stream(&self) -> Result<(), ClientError> {
        match &self.transport {
            Transport::Memory { .. } => Ok(()),
            #[cfg(feature = "client-stdio")]
            Transport::Child(_) => Ok(()),
            #[cfg(feature = "client-http")]
            Transport::Http(link) => link.open_stream().await,
        }
    }

    /// HTTP mode: the legacy session's `Mcp-Session-Id`, once initialized.
    pub fn session_id(&self) -> Option<String> {
        match &self.transport {
            Transport::Memory { .. } => None,
            #[cfg(feature = "client-stdio")]
            Transport::Child(_) => None,
            #[cfg(feature = "client-http")]
            Transport::Http(link) => link.session_id(),
        }
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

    /// One request and its response, with `_meta` added as
    /// [`request`](Self::request) does but no input rounds: an
    /// `input_required` result comes back as it is, for callers that
    /// drive the multi round trip themselves (e.g. tests of it).
    pub async fn request_once(
        &self,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Map<String, Value>, ClientError> {
        self.round_trip(method, params).await
    }

    /// Sends a notification (e.g. `notifications/cancelled`). Over HTTP a
    /// refusal is logged: notifications have no answer to report it in.
    pub async fn notify(&self, method: &str, params: Map<String, Value>) {
        let message = self.message(None, method, params);
        match &self.transport {
            Transport::Memory { connection, .. } => {
                connection.receive(message.to_string().as_bytes()).await;
            }
            #[cfg(feature = "client-http")]
            Transport::Http(link) => {
                if let Err(e) = link.notify(&message).await {
                    tracing::warn!(%method, error = %e, "the server refused a notification");
                }
            }
            #[cfg(feature = "client-stdio")]
            Transport::Child(link) => {
                if link.send(&message).await.is_err() {
                    tracing::warn!(%method, "the server's stdin is closed");
                }
            }
        }
    }

    /// Ends the connection: subscriptions end and running requests finish;
    /// over HTTP a legacy session is deleted; a child process gets EOF on
    /// stdin and is waited for.
    pub async fn close(self) {
        match &self.transport {
            Transport::Memory { connection, .. } => connection.finish().await,
            #[cfg(feature = "client-http")]
            Transport::Http(link) => link.close().await,
            #[cfg(feature = "client-stdio")]
            Transport::Child(link) => {
                link.close().await;
            }
        }
    }

    /// Child-process mode: closes the child's stdin, waits for it to exit
    /// (killing it after 30 s) and returns its exit status; `None` on
    /// other transports or when it was already reaped.
    #[cfg(feature = "client-stdio")]
    pub async fn close_child(self) -> Option<std::process::ExitStatus> {
        match &self.transport {
            Transport::Child(link) => link.close().await,
            _ => None,
        }
    }

    /// Child-process mode: the process id of the server, while it runs.
    #[cfg(feature = "client-stdio")]
    pub fn child_id(&self) -> Option<u32> {
        match &self.transport {
            Transport::Child(link) => link.id(),
            _ => None,
        }
    }

    /// One request and its response, no retry.
    async fn round_trip(
        &self,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Map<String, Value>, ClientError> {
        let id = self.fresh_id();
        let message = self.message(Some(&id), method, params);
        let mut response = match &self.transport {
            Transport::Memory { connection, routes } => {
                let response = routes.wait_for(&id);
                connection.receive(message.to_string().as_bytes()).await;
                response.await.map_err(|_| ClientError::Closed)?
            }
            #[cfg(feature = "client-http")]
            Transport::Http(link) => link.exchange(message).await?,
            #[cfg(feature = "client-stdio")]
            Transport::Child(link) => link.exchange(&message).await?,
        };
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

    /// A request (with `id`) or a notification, `_meta` added as the wire wants.
    fn message(&self, id: Option<&Value>, method: &str, params: Map<String, Value>) -> Value {
        let params = self.with_meta(params);
        match id {
            Some(id) => json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
            None => json!({ "jsonrpc": "2.0", "method": method, "params": params }),
        }
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
