//! Shared harness for the integration tests: a purpose-made server, raw
//! HTTP helpers that speak both wires byte for byte (JSON bodies and SSE
//! streams, for tests of the transport itself and of hostile input), a
//! stdio client over in-memory pipes, and [`oauth`] (an authorization server
//! and a protected MCP server). Tests that only need a well-behaved client
//! use the library's own (`mcpwire_server::client`, in memory or over HTTP).

/// An in-process authorization server and an MCP server it protects.
pub mod oauth;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use mcpwire_server::protocol::model::{InputRequest, LogLevel, ToolAnnotations};
use mcpwire_server::transport::http::{self, HttpConfig};
use mcpwire_server::transport::stdio::{self, StdioConfig};
use mcpwire_server::{
    CallToolResult, InputRequired, RequestContext, Server, ServerBuilder, ServerOptions, Tool,
    ToolError, ToolOutcome,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The modern revision.
pub const V: &str = "2026-07-28";
pub const META_VERSION: &str = mcpwire_server::protocol::meta::PROTOCOL_VERSION;
pub const META_CAPS: &str = mcpwire_server::protocol::meta::CLIENT_CAPABILITIES;
pub const META_LOG: &str = mcpwire_server::protocol::meta::LOG_LEVEL;
pub const META_SERVER_INFO: &str = mcpwire_server::protocol::meta::SERVER_INFO;
pub const META_SUB: &str = mcpwire_server::protocol::meta::SUBSCRIPTION_ID;

/// How long any single wait in a test may take before it fails.
pub const WAIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------- tools

#[derive(Deserialize, JsonSchema)]
pub struct EchoIn {
    /// The text to echo.
    pub text: String,
}

#[derive(Serialize, JsonSchema)]
pub struct EchoOut {
    pub text: String,
    pub length: usize,
}

#[derive(Deserialize, JsonSchema)]
pub struct AddIn {
    pub a: i64,
    pub b: i64,
}

#[derive(Serialize, JsonSchema)]
pub struct AddOut {
    pub sum: i64,
}

/// Typed: echoes its text (with a title and annotations, for per-revision shapes).
pub fn echo_tool() -> Tool {
    Tool::builder("echo")
        .title("Echo")
        .description("Echoes the text back.")
        .annotations(ToolAnnotations::read_only())
        .handler(|input: EchoIn| async move {
            Ok(EchoOut {
                length: input.text.len(),
                text: input.text,
            })
        })
}

/// Typed: adds two integers (both required).
pub fn add_tool() -> Tool {
    Tool::builder("add")
        .description("Adds a and b.")
        .handler(|input: AddIn| async move {
            Ok(AddOut {
                sum: input.a + input.b,
            })
        })
}

/// Typed: always fails with an execution error.
pub fn fail_tool() -> Tool {
    Tool::builder("fail").description("Always fails.").handler(
        |_input: Map<String, Value>| async move {
            Err::<AddOut, _>(ToolError::execution(
                "The widget is broken; try again tomorrow.",
            ))
        },
    )
}

/// Raw: declares an outputSchema and then breaks it.
pub fn bad_output_tool() -> Tool {
    Tool::builder("bad_output")
        .output_schema(json!({
            "type": "object",
            "properties": { "n": { "type": "integer" } },
            "required": ["n"]
        }))
        .raw_handler(|_ctx, _args| async move {
            Ok(ToolOutcome::Complete(CallToolResult::structured(
                json!({ "n": "not a number" }),
            )))
        })
}

/// Raw: sleeps `ms` milliseconds (default 10 s), then answers "slept".
pub fn slow_tool() -> Tool {
    Tool::builder("slow")
        .input_schema(json!({
            "type": "object",
            "properties": { "ms": { "type": "integer", "minimum": 0 } }
        }))
        .raw_handler(|_ctx, args| async move {
            let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(10_000);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(CallToolResult::text("slept").into())
        })
}

/// Raw: reports progress 1, 2, 3 (of 3), then answers "done".
pub fn progress_tool() -> Tool {
    Tool::builder("progress").raw_handler(|ctx: RequestContext, _args| async move {
        for i in 1..=3 {
            ctx.progress(f64::from(i), Some(3.0), Some("working")).await;
            // A non-increasing value must be dropped by the engine.
            ctx.progress(0.5, Some(3.0), None).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(CallToolResult::text("done").into())
    })
}

/// Raw: logs one line per level from debug to error, then answers "logged".
pub fn log_tool() -> Tool {
    Tool::builder("log").raw_handler(|ctx: RequestContext, _args| async move {
        for level in [
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Warning,
            LogLevel::Error,
        ] {
            ctx.log(level, Some("test"), json!(format!("at {}", level.as_str())))
                .await;
        }
        Ok(CallToolResult::text("logged").into())
    })
}

/// Raw, multi round-trip: asks the client to confirm (elicitation), then
/// answers with what it got back and the state it saw.
pub fn ask_tool() -> Tool {
    Tool::builder("ask")
        .input_schema(json!({
            "type": "object",
            "properties": { "topic": { "type": "string" } }
        }))
        .raw_handler(|ctx: RequestContext, args| async move {
            match ctx.input_response("confirm") {
                Some(answer) => {
                    let text = json!({
                        "answer": answer,
                        "state": ctx.request_state(),
                        "topic": args.get("topic"),
                    });
                    Ok(CallToolResult::text(text.to_string()).into())
                }
                None => Ok(InputRequired::new()
                    .request(
                        "confirm",
                        InputRequest::elicit(
                            "Proceed?",
                            json!({
                                "type": "object",
                                "properties": { "ok": { "type": "boolean" } },
                                "required": ["ok"]
                            }),
                        ),
                    )
                    .state(json!({ "step": 1 }))
                    .into()),
            }
        })
}

/// Raw, multi round-trip: needs a sampling call.
pub fn sample_tool() -> Tool {
    Tool::builder("sample").raw_handler(|ctx: RequestContext, _args| async move {
        match ctx.input_response("draft") {
            Some(v) => Ok(CallToolResult::text(v.to_string()).into()),
            None => Ok(InputRequired::new()
                .request("draft", InputRequest::sample("Write a haiku.", 50))
                .into()),
        }
    })
}

/// Raw: mirrors `region` (string) and `count` (integer) into headers.
pub fn region_tool() -> Tool {
    Tool::builder("region")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" },
                "count": { "type": "integer", "x-mcp-header": "Count" }
            }
        }))
        .raw_handler(|_ctx, args| async move {
            Ok(CallToolResult::text(Value::Object(args).to_string()).into())
        })
}

/// A trivial raw tool with a given name.
pub fn plain_tool(name: &str) -> Tool {
    let n = name.to_owned();
    Tool::builder(name).raw_handler(move |_ctx, _args| {
        let n = n.clone();
        async move { Ok(CallToolResult::text(n).into()) }
    })
}

/// Signals (once) when the handler's request is cancelled; the handler
/// itself never finishes. With `chatty`, it reports progress first so the
/// HTTP response turns into an SSE stream.
pub fn cancel_probe(name: &str, chatty: bool) -> (Tool, oneshot::Receiver<()>, Arc<AtomicBool>) {
    let (tx, rx) = oneshot::channel::<()>();
    let tx = Arc::new(Mutex::new(Some(tx)));
    let flag = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&flag);
    let tool = Tool::builder(name).raw_handler(move |ctx: RequestContext, _args| {
        let tx = Arc::clone(&tx);
        let flag = Arc::clone(&f);
        async move {
            // Watch from a detached task: the engine drops this handler's
            // future when the request is cancelled.
            let watcher = ctx.clone();
            tokio::spawn(async move {
                watcher.cancelled().await;
                flag.store(true, Ordering::SeqCst);
                if let Some(tx) = tx.lock().unwrap().take() {
                    let _ = tx.send(());
                }
            });
            if chatty {
                ctx.progress(1.0, None, Some("started")).await;
            }
            std::future::pending::<()>().await;
            Ok(CallToolResult::text("unreachable").into())
        }
    });
    (tool, rx, flag)
}

/// The standard test server: every tool above, logging declared.
pub fn builder() -> ServerBuilder {
    Server::builder("test-server", "1.2.3")
        .logging(true)
        .tool(echo_tool())
        .tool(add_tool())
        .tool(fail_tool())
        .tool(bad_output_tool())
        .tool(slow_tool())
        .tool(progress_tool())
        .tool(log_tool())
        .tool(ask_tool())
        .tool(sample_tool())
        .tool(region_tool())
}

pub fn server() -> Server {
    builder().build().expect("server builds")
}

pub fn server_with(options: ServerOptions) -> Server {
    builder().options(options).build().expect("server builds")
}

// ---------------------------------------------------------------- messages

/// `_meta` of a modern request with these client capabilities.
pub fn meta_with(caps: Value) -> Value {
    json!({ META_VERSION: V, META_CAPS: caps })
}

/// A modern request: default `_meta` keys are filled in unless present.
pub fn req(id: impl Into<Value>, method: &str, params: Value) -> Value {
    let mut params = params.as_object().cloned().unwrap_or_default();
    let meta = params
        .entry("_meta")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .expect("_meta is an object");
    meta.entry(META_VERSION).or_insert_with(|| json!(V));
    meta.entry(META_CAPS).or_insert_with(|| json!({}));
    json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params })
}

/// A request exactly as given (no `_meta` added).
pub fn raw_req(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params })
}

/// A modern `tools/call`.
pub fn call(id: impl Into<Value>, name: &str, arguments: Value) -> Value {
    req(
        id,
        "tools/call",
        json!({ "name": name, "arguments": arguments }),
    )
}

pub fn error_code(response: &Value) -> Option<i64> {
    response["error"]["code"].as_i64()
}

/// The concatenated text blocks of a tools/call result.
pub fn text_of(response: &Value) -> String {
    response["result"]["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

pub fn is_error_result(response: &Value) -> bool {
    response["result"]["isError"] == json!(true)
}

// ---------------------------------------------------------------- HTTP

/// A server on a real socket and a client for it.
pub struct Http {
    pub server: Server,
    pub url: String,
    pub addr: std::net::SocketAddr,
    pub client: reqwest::Client,
    task: JoinHandle<()>,
}

impl Drop for Http {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn spawn_http(server: Server) -> Http {
    spawn_http_with(server, HttpConfig::default()).await
}

pub async fn spawn_http_with(server: Server, config: HttpConfig) -> Http {
    let path = config.path.clone();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = http::router(server.clone(), config);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Http {
        server,
        url: format!("http://{addr}{path}"),
        addr,
        client: http_client(),
        task,
    }
}

/// A plain-HTTP client. reqwest is built with `rustls-no-provider` (for the
/// library's JWKS fetching), so a crypto provider must be installed first.
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("client")
}

/// The standard headers of a modern request, derived from its body.
pub fn modern_headers(body: &Value) -> Vec<(String, String)> {
    let mut h = vec![(
        "MCP-Protocol-Version".to_owned(),
        body["params"]["_meta"][META_VERSION]
            .as_str()
            .unwrap_or(V)
            .to_owned(),
    )];
    if let Some(m) = body["method"].as_str() {
        h.push(("Mcp-Method".to_owned(), m.to_owned()));
        let name = match m {
            "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
            "resources/read" => body["params"]["uri"].as_str(),
            _ => None,
        };
        if let Some(n) = name {
            h.push(("Mcp-Name".to_owned(), n.to_owned()));
        }
    }
    h
}

/// What came back from one POST, with SSE data events already parsed.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub session_id: Option<String>,
    pub headers: reqwest::header::HeaderMap,
    /// The JSON body, or every SSE `data:` event in order.
    pub messages: Vec<Value>,
    pub raw: String,
}

impl Reply {
    /// The JSON-RPC response (the last message).
    pub fn response(&self) -> &Value {
        self.messages.last().expect("a message in the reply")
    }

    pub fn is_sse(&self) -> bool {
        self.content_type.starts_with("text/event-stream")
    }

    /// Notifications (and requests) that came before the response.
    pub fn before_response(&self) -> &[Value] {
        &self.messages[..self.messages.len().saturating_sub(1)]
    }
}

impl Http {
    /// POSTs a body with exactly these headers (plus Content-Type and Accept).
    pub fn post_builder(
        &self,
        body: &Value,
        headers: &[(String, String)],
    ) -> reqwest::RequestBuilder {
        let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
        let mut rb = self.client.post(&self.url).body(body.to_string());
        if !has("content-type") {
            rb = rb.header("content-type", "application/json");
        }
        if !has("accept") {
            rb = rb.header("accept", "application/json, text/event-stream");
        }
        for (k, v) in headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        rb
    }

    /// POSTs and reads the whole reply.
    pub async fn post_with(&self, body: &Value, headers: &[(String, String)]) -> Reply {
        let resp = tokio::time::timeout(WAIT, self.post_builder(body, headers).send())
            .await
            .expect("reply in time")
            .expect("request sent");
        read_reply(resp).await
    }

    /// POSTs a modern request with the headers its body implies.
    pub async fn modern(&self, body: &Value) -> Reply {
        self.post_with(body, &modern_headers(body)).await
    }

    /// POSTs a modern request with the implied headers plus/overridden by `extra`.
    pub async fn modern_plus(&self, body: &Value, extra: &[(&str, &str)]) -> Reply {
        let mut h = modern_headers(body);
        for (k, v) in extra {
            h.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
            h.push(((*k).to_owned(), (*v).to_owned()));
        }
        self.post_with(body, &h).await
    }

    /// POSTs a legacy message inside a session (no modern headers).
    pub async fn legacy(
        &self,
        body: &Value,
        session: Option<&str>,
        version: Option<&str>,
    ) -> Reply {
        let mut h = Vec::new();
        if let Some(s) = session {
            h.push(("Mcp-Session-Id".to_owned(), s.to_owned()));
        }
        if let Some(v) = version {
            h.push(("MCP-Protocol-Version".to_owned(), v.to_owned()));
        }
        self.post_with(body, &h).await
    }

    /// Opens a streaming POST and returns the live SSE reader.
    pub async fn open_stream(&self, body: &Value, headers: &[(String, String)]) -> SseStream {
        let resp = tokio::time::timeout(WAIT, self.post_builder(body, headers).send())
            .await
            .expect("reply in time")
            .expect("request sent");
        SseStream::new(resp)
    }

    /// Legacy `initialize` (+ `notifications/initialized`); returns the
    /// session id and the initialize response.
    pub async fn initialize(&self, version: Option<&str>, capabilities: Value) -> (String, Value) {
        let mut params = json!({
            "capabilities": capabilities,
            "clientInfo": { "name": "legacy-test", "version": "0.1" }
        });
        if let Some(v) = version {
            params["protocolVersion"] = json!(v);
        }
        let r = self.post_with(&raw_req(0, "initialize", params), &[]).await;
        assert_eq!(r.status, 200, "initialize: {}", r.raw);
        let sid = r.session_id.clone().expect("Mcp-Session-Id on initialize");
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let n = self.legacy(&initialized, Some(&sid), version).await;
        assert_eq!(n.status, 202, "notifications/initialized: {}", n.raw);
        (sid, r.response().clone())
    }

    /// A quick health check: a modern tools/list still works (through the
    /// library's client, as any client would see it).
    pub async fn assert_alive(&self) {
        let client = mcpwire_server::client::Client::http(&self.url)
            .connect()
            .await;
        let tools = tokio::time::timeout(WAIT, client.expect("client").list_tools()).await;
        let tools = tools.expect("tools/list in time");
        assert!(!tools.expect("server still serves").is_empty());
    }
}

pub async fn read_reply(resp: reqwest::Response) -> Reply {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let session_id = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let raw = tokio::time::timeout(WAIT, resp.text())
        .await
        .expect("body in time")
        .expect("body read");
    let messages = if content_type.starts_with("text/event-stream") {
        sse_data(&raw)
            .into_iter()
            .map(|d| serde_json::from_str(&d).expect("SSE data is JSON"))
            .collect()
    } else if raw.trim().is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_str(&raw).unwrap_or_else(|e| panic!("JSON body ({e}): {raw}"))]
    };
    Reply {
        status,
        content_type,
        session_id,
        headers,
        messages,
        raw,
    }
}

/// The `data:` payloads of the SSE events in `text` (the library's parser).
pub fn sse_data(text: &str) -> Vec<String> {
    mcpwire_server::protocol::sse::events(text)
}

/// An SSE response read event by event.
pub struct SseStream {
    pub status: u16,
    pub content_type: String,
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: String,
    ended: bool,
}

impl SseStream {
    pub fn new(resp: reqwest::Response) -> Self {
        Self {
            status: resp.status().as_u16(),
            content_type: resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned(),
            body: resp.bytes_stream().boxed(),
            buf: String::new(),
            ended: false,
        }
    }

    /// The next JSON message; `None` when the stream ended.
    pub async fn next_within(&mut self, limit: Duration) -> Result<Option<Value>, &'static str> {
        tokio::time::timeout(limit, self.next_inner())
            .await
            .map_err(|_| "timed out")
    }

    /// The next JSON message within the standard wait; panics on timeout.
    pub async fn next(&mut self) -> Option<Value> {
        self.next_within(WAIT).await.expect("SSE event in time")
    }

    /// The next JSON message; panics if the stream ended.
    pub async fn expect_next(&mut self) -> Value {
        self.next().await.expect("the stream has another event")
    }

    async fn next_inner(&mut self) -> Option<Value> {
        loop {
            let normalized = self.buf.replace("\r\n", "\n");
            if normalized.len() != self.buf.len() {
                self.buf = normalized;
            }
            if let Some(pos) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..pos + 2).collect();
                if let Some(d) = sse_data(&block).into_iter().next() {
                    return Some(serde_json::from_str(&d).expect("SSE data is JSON"));
                }
                continue;
            }
            if self.ended {
                return None;
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.buf.push_str(&String::from_utf8_lossy(&chunk)),
                Some(Err(_)) | None => self.ended = true,
            }
        }
    }
}

/// Sends raw HTTP/1.1 bytes (exact header spelling and whitespace) and
/// returns (status, body).
pub async fn raw_http(addr: std::net::SocketAddr, request: &str) -> (u16, String) {
    use tokio::io::AsyncReadExt;
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(request.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    tokio::time::timeout(WAIT, s.read_to_end(&mut out))
        .await
        .expect("raw reply in time")
        .expect("raw read");
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

// ---------------------------------------------------------------- stdio

/// A server on in-memory pipes and the client end of them.
pub struct Stdio {
    pub server: Server,
    writer: Option<DuplexStream>,
    lines: Lines<BufReader<DuplexStream>>,
    pub task: Option<JoinHandle<std::io::Result<()>>>,
}

pub fn spawn_stdio(server: Server) -> Stdio {
    let (client_w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    let s = server.clone();
    let task = tokio::spawn(stdio::serve(s, StdioConfig::default(), server_r, server_w));
    Stdio {
        server,
        writer: Some(client_w),
        lines: BufReader::new(client_r).lines(),
        task: Some(task),
    }
}

impl Stdio {
    pub async fn send_line(&mut self, line: &str) {
        let w = self.writer.as_mut().expect("stdin still open");
        w.write_all(line.as_bytes()).await.expect("write");
        w.write_all(b"\n").await.expect("write");
        w.flush().await.expect("flush");
    }

    pub async fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string()).await;
    }

    /// The next line of stdout, which must be one JSON-RPC object; `None` at EOF.
    pub async fn recv_within(&mut self, limit: Duration) -> Result<Option<Value>, &'static str> {
        let line = tokio::time::timeout(limit, self.lines.next_line())
            .await
            .map_err(|_| "timed out")?
            .expect("stdout read");
        Ok(line.map(|l| {
            let v: Value = serde_json::from_str(&l)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {l:?}"));
            assert!(v.is_object(), "stdout line is not a JSON object: {l}");
            assert_eq!(v["jsonrpc"], "2.0", "stdout line is not JSON-RPC 2.0: {l}");
            v
        }))
    }

    pub async fn recv(&mut self) -> Value {
        self.recv_within(WAIT)
            .await
            .expect("stdout line in time")
            .expect("stdout still open")
    }

    /// Reads lines until the response with this id; returns (others, response).
    pub async fn recv_response(&mut self, id: &Value) -> (Vec<Value>, Value) {
        let mut others = Vec::new();
        loop {
            let m = self.recv().await;
            if &m["id"] == id && m.get("method").is_none() {
                return (others, m);
            }
            others.push(m);
        }
    }

    /// A request/response round trip.
    pub async fn request(&mut self, message: &Value) -> Value {
        self.send(message).await;
        self.recv_response(&message["id"]).await.1
    }

    /// Closes stdin (EOF).
    pub fn close_stdin(&mut self) {
        self.writer.take();
    }

    /// Every line until stdout closes.
    pub async fn drain(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(m) = self.recv_within(WAIT).await.expect("stdout closes in time") {
            out.push(m);
        }
        out
    }

    /// Waits for `serve` to return.
    pub async fn join(&mut self) -> std::io::Result<()> {
        let task = self.task.take().expect("not joined yet");
        tokio::time::timeout(WAIT, task)
            .await
            .expect("serve returns in time")
            .expect("serve did not panic")
    }
}
