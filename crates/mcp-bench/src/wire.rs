//! MCP client for the Streamable HTTP transport: one JSON-RPC request per
//! POST, in either the modern (2026-07-28, sessionless, `_meta` carries the
//! protocol version) or the legacy (2025-11-25, `initialize` + session id)
//! wire format.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::ValueEnum;
use futures_util::StreamExt;
use mcpwire_protocol::{headers, meta};
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use reqwest::{StatusCode, Url};
use serde_json::{Value, json};

use mcpwire_protocol::sse::SseParser;

/// Protocol revision sent on the modern wire.
pub const MODERN_VERSION: &str = "2026-07-28";
/// Protocol revision negotiated on the legacy wire.
pub const LEGACY_VERSION: &str = "2025-11-25";

const HDR_PROTOCOL_VERSION: &str = headers::PROTOCOL_VERSION;
const HDR_METHOD: &str = headers::METHOD;
const HDR_NAME: &str = headers::NAME;
const HDR_SESSION: &str = headers::SESSION_ID;
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// Which MCP wire format to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// Protocol 2026-07-28: no session, routing headers, `_meta` in params.
    Modern,
    /// Protocol 2025-11-25: `initialize` handshake and `Mcp-Session-Id`.
    Legacy,
}

impl Wire {
    /// Lower-case name, as given on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Wire::Modern => "modern",
            Wire::Legacy => "legacy",
        }
    }
}

/// One benchmarked MCP operation: `tools/list` or one HR tool called with
/// its default arguments (the ones the performance issue was measured with),
/// or one tool of the stub server (`--handlers`, see `stubs.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `tools/list`.
    ListTools,
    /// `get-employee-details {"employeeId":"AliceJohnson"}` (about 3.9 KB).
    GetEmployee,
    /// `list-department-employees {"departmentId":"engineering"}`.
    Department,
    /// `calculate-employee-tenure {"employeeId":"AliceJohnson"}`.
    Tenure,
    /// `get-team-members {"teamId":"backend"}`.
    Team,
    /// `search-employees-by-skill {"skill":"Go"}` (about 39 KB).
    SearchBySkill,
    /// `search-employees-by-skill {"skill":"o"}`: a one-letter substring
    /// that matches much of the skill catalogue.
    SearchLetter,
    /// `get-compensation-info {"role":"Software Engineer","level":"senior"}`.
    Compensation,
    /// `check-leave-balance {"employeeId":"AliceJohnson","leaveType":"annual"}`.
    Leave,
    /// `generate-employee-report {"reportType":"headcount"}`.
    Report,
    /// `generate-employee-report {"reportType":"turnover"}`.
    ReportTurnover,
    /// `generate-employee-report {"reportType":"compensation"}` (needs
    /// `hr:reports` and `hr:compensation` when scopes are enforced; a
    /// server without authentication grants every scope).
    ReportCompensation,
    /// `stub-typed {"employeeId":"AliceJohnson"}` (stub server only).
    StubTyped,
    /// `stub-raw {"employeeId":"AliceJohnson"}` (stub server only).
    StubRaw,
}

impl Op {
    /// JSON-RPC method name.
    pub fn method(self) -> &'static str {
        match self {
            Op::ListTools => "tools/list",
            _ => "tools/call",
        }
    }

    /// Tool name for `tools/call`, `None` otherwise.
    pub fn tool(self) -> Option<&'static str> {
        Some(match self {
            Op::ListTools => return None,
            Op::GetEmployee => "get-employee-details",
            Op::Department => "list-department-employees",
            Op::Tenure => "calculate-employee-tenure",
            Op::Team => "get-team-members",
            Op::SearchBySkill | Op::SearchLetter => "search-employees-by-skill",
            Op::Compensation => "get-compensation-info",
            Op::Leave => "check-leave-balance",
            Op::Report | Op::ReportTurnover | Op::ReportCompensation => "generate-employee-report",
            Op::StubTyped => crate::stubs::TYPED,
            Op::StubRaw => crate::stubs::RAW,
        })
    }

    /// Human-readable label, e.g. `tools/call get-employee-details`.
    pub fn label(self) -> String {
        match self.tool() {
            Some(tool) => format!("{} {tool}", self.method()),
            None => self.method().to_owned(),
        }
    }

    fn arguments(self) -> Value {
        match self {
            Op::ListTools => Value::Null,
            Op::GetEmployee | Op::Tenure | Op::StubTyped | Op::StubRaw => {
                json!({ "employeeId": "AliceJohnson" })
            }
            Op::Department => json!({ "departmentId": "engineering" }),
            Op::Team => json!({ "teamId": "backend" }),
            Op::SearchBySkill => json!({ "skill": "Go" }),
            Op::SearchLetter => json!({ "skill": "o" }),
            Op::Compensation => json!({ "role": "Software Engineer", "level": "senior" }),
            Op::Leave => json!({ "employeeId": "AliceJohnson", "leaveType": "annual" }),
            Op::Report => json!({ "reportType": "headcount" }),
            Op::ReportTurnover => json!({ "reportType": "turnover" }),
            Op::ReportCompensation => json!({ "reportType": "compensation" }),
        }
    }
}

/// Why one request did not succeed. Each one counts as one error.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// Connection, timeout or body-read failure.
    #[error("transport: {}", with_sources(.0))]
    Transport(#[from] reqwest::Error),
    /// The server answered with a non-2xx status.
    #[error("HTTP {status}: {body}")]
    Status {
        /// Response status.
        status: StatusCode,
        /// Start of the response body, for diagnosis.
        body: String,
    },
    /// The JSON-RPC response carried an `error` member.
    #[error("JSON-RPC error {code}: {message}")]
    JsonRpc {
        /// JSON-RPC error code.
        code: i64,
        /// JSON-RPC error message.
        message: String,
    },
    /// `tools/call` returned a result with `isError: true`.
    #[error("tool error: {0}")]
    Tool(String),
    /// The response did not look like a JSON-RPC response to our request.
    #[error("protocol: {0}")]
    Protocol(String),
}

/// Per-worker connection state: the session id on the legacy wire.
#[derive(Debug, Default)]
pub struct Session {
    id: Option<String>,
}

/// Shared MCP-over-HTTP client. Cheap to share behind an `Arc`: the inner
/// `reqwest::Client` pools keep-alive connections for all workers.
#[derive(Debug)]
pub struct McpClient {
    http: reqwest::Client,
    url: Url,
    wire: Wire,
    next_id: AtomicU64,
}

impl McpClient {
    /// Builds a client for `url` (the MCP endpoint, e.g. `http://host/mcp`).
    pub fn new(url: Url, wire: Wire, timeout: Duration) -> Result<Arc<Self>, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            // Small request/response pairs: don't let Nagle add latency.
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(90))
            .build()?;
        Ok(Arc::new(Self {
            http,
            url,
            wire,
            next_id: AtomicU64::new(1),
        }))
    }

    /// Wire format this client speaks.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// Opens a session: on the legacy wire this performs `initialize` and
    /// `notifications/initialized`; on the modern wire there is nothing to do.
    pub async fn open(&self) -> Result<Session, CallError> {
        if self.wire == Wire::Modern {
            return Ok(Session::default());
        }
        let id = self.fresh_id();
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY_VERSION,
                "capabilities": {},
                "clientInfo": { "name": "mcp-bench", "version": env!("CARGO_PKG_VERSION") },
            },
        });
        let resp = self.post(&body).send().await?;
        let session = Session {
            id: resp
                .headers()
                .get(HDR_SESSION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        };
        read_response(resp, id, Instant::now()).await?;

        let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let resp = self.with_session(self.post(&note), &session).send().await?;
        // The spec says 202 Accepted; accept any 2xx to be lenient.
        if !resp.status().is_success() {
            return Err(status_error(resp).await);
        }
        Ok(session)
    }

    /// Ends a legacy session with `DELETE`; errors are ignored because a
    /// server may legitimately refuse (405) or have dropped it already.
    pub async fn close(&self, session: &Session) {
        if let Some(id) = &session.id {
            let _ = self
                .http
                .delete(self.url.clone())
                .header(HDR_SESSION, id)
                .header(HDR_PROTOCOL_VERSION, LEGACY_VERSION)
                .send()
                .await;
        }
    }

    /// Sends one request for `op` and waits for its JSON-RPC response.
    /// Returns the latency (from just before building the request to the
    /// moment the response was parsed) and the answer's size only for a
    /// successful, non-`isError` result.
    pub async fn call(&self, session: &Session, op: Op) -> Result<Reply, CallError> {
        let start = Instant::now();
        let id = self.fresh_id();
        let mut params = serde_json::Map::new();
        if let Some(tool) = op.tool() {
            params.insert("name".into(), tool.into());
            params.insert("arguments".into(), op.arguments());
        }
        if self.wire == Wire::Modern {
            params.insert(
                "_meta".into(),
                json!({
                    meta::PROTOCOL_VERSION: MODERN_VERSION,
                    meta::CLIENT_CAPABILITIES: {},
                }),
            );
        }
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": op.method(),
            "params": params,
        });
        let mut req = self.post(&body);
        match self.wire {
            Wire::Modern => {
                req = req
                    .header(HDR_PROTOCOL_VERSION, MODERN_VERSION)
                    .header(HDR_METHOD, op.method());
                if let Some(tool) = op.tool() {
                    req = req.header(HDR_NAME, tool);
                }
            }
            Wire::Legacy => req = self.with_session(req, session),
        }
        read_response(req.send().await?, id, start).await
    }

    fn fresh_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        self.http
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, ACCEPT_BOTH)
            .body(body.to_string())
    }

    fn with_session(&self, req: reqwest::RequestBuilder, s: &Session) -> reqwest::RequestBuilder {
        let req = req.header(HDR_PROTOCOL_VERSION, LEGACY_VERSION);
        match &s.id {
            Some(id) => req.header(HDR_SESSION, id),
            None => req,
        }
    }
}

/// A successful answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// From just before the request was built until its response was parsed.
    pub latency: Duration,
    /// Bytes of the HTTP body read up to and including the response: the
    /// whole body of a JSON answer, the events up to ours on an SSE stream.
    pub body_bytes: u64,
}

/// How long to keep reading an SSE stream after our response arrived, so the
/// connection can go back to the keep-alive pool once the server ends it.
const SSE_DRAIN_LIMIT: Duration = Duration::from_millis(250);

/// Reads the JSON-RPC response to request `id` from a plain JSON or an SSE
/// body and classifies it; on success, the time from `start` until it was
/// parsed and the body's size. Non-2xx statuses become [`CallError::Status`].
async fn read_response(
    resp: reqwest::Response,
    id: u64,
    start: Instant,
) -> Result<Reply, CallError> {
    if !resp.status().is_success() {
        return Err(status_error(resp).await);
    }
    match media_type(resp.headers()).as_deref() {
        Some("application/json") => {
            let bytes = resp.bytes().await?;
            let outcome = outcome_of(&bytes, id).ok_or_else(|| {
                CallError::Protocol(format!(
                    "body is not the response to id {id}: {}",
                    snippet(&String::from_utf8_lossy(&bytes))
                ))
            })?;
            outcome.map(|()| Reply {
                latency: start.elapsed(),
                body_bytes: bytes.len() as u64,
            })
        }
        Some("text/event-stream") => read_sse(resp, id, start).await,
        other => Err(CallError::Protocol(format!(
            "unexpected Content-Type {:?}",
            other.unwrap_or("<none>")
        ))),
    }
}

/// The SSE half of [`read_response`]. The body is streamed: the latency
/// ends at our response even if the server sends more (or keeps the stream
/// open) after it.
async fn read_sse(resp: reqwest::Response, id: u64, start: Instant) -> Result<Reply, CallError> {
    let mut parser = SseParser::new();
    let mut stream = resp.bytes_stream();
    let mut body_bytes = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        body_bytes += chunk.len() as u64;
        if let Some(outcome) = find_response(parser.push(&chunk), id) {
            let latency = start.elapsed();
            // Read to the end (bounded) so hyper can reuse the
            // connection: dropping an unfinished body closes it.
            let _ = tokio::time::timeout(SSE_DRAIN_LIMIT, async {
                while let Some(Ok(_)) = stream.next().await {}
            })
            .await;
            return outcome.map(|()| Reply {
                latency,
                body_bytes,
            });
        }
    }
    let latency = start.elapsed();
    find_response(parser.finish(), id)
        .ok_or_else(|| {
            CallError::Protocol(format!("SSE stream ended without a response to id {id}"))
        })?
        .map(|()| Reply {
            latency,
            body_bytes,
        })
}

/// The outcome of the first event payload that is the JSON-RPC response to
/// `id`. Payloads that are not JSON, or are requests/notifications, are
/// skipped.
pub fn find_response(payloads: Vec<String>, id: u64) -> Option<Result<(), CallError>> {
    payloads
        .iter()
        .find_map(|data| outcome_of(data.as_bytes(), id))
}

/// The parts of a JSON-RPC message the bench looks at. Everything else
/// (the tool's content) is skipped while parsing, not built into a
/// `Value`: the client shares the cores with the server, and building a
/// tree of a 100 KB result cost it as much CPU as the server spent.
#[derive(serde::Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    result: Option<ResultHead>,
    #[serde(default)]
    error: Option<ErrorBody>,
}

/// Of a result, whether the tool reported an error.
#[derive(serde::Deserialize)]
struct ResultHead {
    #[serde(default, rename = "isError")]
    is_error: bool,
}

#[derive(serde::Deserialize)]
struct ErrorBody {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
}

/// Success or the error `body` reports, when `body` is the response to
/// `id`; `None` when it is not (not JSON, another id, a request or a
/// notification).
pub fn outcome_of(body: &[u8], id: u64) -> Option<Result<(), CallError>> {
    let msg: Envelope = serde_json::from_slice(body).ok()?;
    if msg.id.as_ref().and_then(Value::as_u64) != Some(id) {
        return None;
    }
    if let Some(err) = msg.error {
        return Some(Err(CallError::JsonRpc {
            code: err.code,
            message: if err.message.is_empty() {
                "<no message>".to_owned()
            } else {
                err.message
            },
        }));
    }
    let result = msg.result?;
    if result.is_error {
        // Rare: only now is the whole message parsed, for its text.
        let full: Value = serde_json::from_slice(body).ok()?;
        let text = full
            .pointer("/result/content/0/text")
            .and_then(Value::as_str)
            .unwrap_or("<no text>");
        return Some(Err(CallError::Tool(snippet(text))));
    }
    Some(Ok(()))
}

async fn status_error(resp: reqwest::Response) -> CallError {
    let status = resp.status();
    let body = resp.text().await.unwrap_or_default();
    CallError::Status {
        status,
        body: snippet(&body),
    }
}

/// Lower-cased media type of the Content-Type header, without parameters.
fn media_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(CONTENT_TYPE)?.to_str().ok()?;
    let media = value.split(';').next().unwrap_or(value).trim();
    Some(media.to_ascii_lowercase())
}

/// `err` followed by its `source()` chain: reqwest's own message ("error
/// sending request") hides the useful part ("connection refused").
fn with_sources(err: &reqwest::Error) -> String {
    let mut msg = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    msg
}

/// Shortens a message so one bad response doesn't flood the terminal.
fn snippet(s: &str) -> String {
    const MAX: usize = 200;
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_matching_response_among_other_messages() {
        let payloads = vec![
            "not json".to_string(),
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":6,"result":{}}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}"#.to_string(),
        ];
        assert!(matches!(
            find_response(payloads, 7),
            Some(Err(CallError::JsonRpc { code: -32602, .. }))
        ));
        assert!(find_response(vec![], 7).is_none());
    }

    #[test]
    fn outcome_classification() {
        let of = |v: Value| outcome_of(v.to_string().as_bytes(), 1);
        assert!(matches!(
            of(json!({"id":1,"result":{"tools":[]}})),
            Some(Ok(()))
        ));
        assert!(matches!(
            of(json!({"id":1,"error":{"code":-32602,"message":"bad"}})),
            Some(Err(CallError::JsonRpc { code: -32602, .. }))
        ));
        assert!(matches!(
            of(json!({"id":1,"result":{"isError":true,"content":[{"type":"text","text":"nope"}]}})),
            Some(Err(CallError::Tool(t))) if t == "nope"
        ));
        assert!(matches!(
            of(json!({"id":1,"result":{"isError":false}})),
            Some(Ok(()))
        ));
        assert!(of(json!({"id":2,"result":{}})).is_none(), "another id");
        assert!(of(json!({"id":1,"method":"ping"})).is_none(), "a request");
    }

    #[test]
    fn media_type_ignores_parameters_and_case() {
        let mut h = HeaderMap::new();
        h.insert(
            CONTENT_TYPE,
            "Text/Event-Stream; charset=utf-8"
                .parse()
                .expect("valid header"),
        );
        assert_eq!(media_type(&h).as_deref(), Some("text/event-stream"));
    }
}
