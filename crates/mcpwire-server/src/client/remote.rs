//! The client's HTTP mode (feature `client-http`): each message is a
//! Streamable HTTP POST to the server's URL. A JSON body or an SSE stream
//! comes back; notifications on a stream go to the client's notification
//! queue, and a legacy server→client request is answered with a POST of
//! its response on the session.
//!
//! Plain `http://` only (hyper's client without TLS): the mode exists for
//! end-to-end tests and tools talking to servers on the same host.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, Uri, header};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcpwire_protocol::ProtocolVersion;
use mcpwire_protocol::headers::{self as names, HeaderParam};
use mcpwire_protocol::model::ToolDefinition;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::sse::SseReader;
use super::{ClientError, ClientWire, InputHandler};
use crate::sync::lock;

/// Largest JSON body the client reads whole.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// One client's connection settings and state over HTTP.
pub(super) struct HttpLink {
    client: HyperClient<HttpConnector, Body>,
    url: Uri,
    /// Sent on every request: the bearer token and the caller's extras.
    headers: HeaderMap,
    wire: ClientWire,
    /// The legacy session's `Mcp-Session-Id`, once `initialize` returned it.
    session: Mutex<Option<String>>,
    notifications: mpsc::UnboundedSender<Value>,
    handler: Option<InputHandler>,
    /// Each tool's `Mcp-Param-*` mirrors, learnt from `tools/list`.
    tool_params: Mutex<Option<HashMap<String, Vec<HeaderParam>>>>,
    /// Reader tasks of open GET streams, ended with the client.
    streams: Mutex<Vec<AbortHandle>>,
}

impl HttpLink {
    /// Checks the URL and the headers; nothing is sent yet.
    pub(super) fn new(
        url: &str,
        extra: &[(String, String)],
        wire: ClientWire,
        notifications: mpsc::UnboundedSender<Value>,
        handler: Option<InputHandler>,
    ) -> Result<Self, ClientError> {
        let url: Uri = url
            .parse()
            .map_err(|e| ClientError::Transport(format!("invalid URL {url:?}: {e}")))?;
        if url.scheme_str() != Some("http") {
            return Err(ClientError::Unsupported(
                "URLs other than http:// (the HTTP mode has no TLS)",
            ));
        }
        let mut headers = HeaderMap::new();
        for (name, value) in extra {
            let n = HeaderName::try_from(name.as_str());
            let v = HeaderValue::try_from(value.as_str());
            let (Ok(n), Ok(v)) = (n, v) else {
                return Err(ClientError::Transport(format!("invalid header {name:?}")));
            };
            headers.insert(n, v);
        }
        Ok(Self {
            client: HyperClient::builder(TokioExecutor::new()).build_http(),
            url,
            headers,
            wire,
            session: Mutex::new(None),
            notifications,
            handler,
            tool_params: Mutex::new(None),
            streams: Mutex::new(Vec::new()),
        })
    }

    /// The legacy session id, once the server gave one.
    pub(super) fn session_id(&self) -> Option<String> {
        lock(&self.session).clone()
    }

    /// Whether `tools/list` was seen (so `Mcp-Param-*` mirrors are known).
    pub(super) fn knows_tools(&self) -> bool {
        lock(&self.tool_params).is_some()
    }

    /// Records the `Mcp-Param-*` mirrors the listed tools declare.
    pub(super) fn learn_tools(&self, tools: &[ToolDefinition]) {
        let map = tools
            .iter()
            .map(|t| {
                let params = names::header_params(&t.input_schema).unwrap_or_default();
                (t.name.clone(), params)
            })
            .collect();
        *lock(&self.tool_params) = Some(map);
    }

    /// POSTs a request and returns its JSON-RPC response (result or
    /// error), routing whatever the server streams before it.
    pub(super) async fn exchange(self: &Arc<Self>, message: Value) -> Result<Value, ClientError> {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let resp = self.post(&message).await?;
        if is_event_stream(&resp) {
            let mut reader = SseReader::new(resp.into_body());
            while let Some(m) = reader.next().await? {
                if m.get("method").is_none() && m.get("id") == Some(&id) {
                    return Ok(m);
                }
                self.route(m);
            }
            return Err(ClientError::Malformed(
                "the SSE stream ended before the response".to_owned(),
            ));
        }
        let (status, text) = read_text(resp).await?;
        match serde_json::from_str::<Value>(&text) {
            Ok(v) if v.get("result").is_some() || v.get("error").is_some() => Ok(v),
            _ => Err(ClientError::Http { status, body: text }),
        }
    }

    /// POSTs a notification (or a response); the server answers 202.
    pub(super) async fn notify(&self, message: &Value) -> Result<(), ClientError> {
        let resp = self.post(message).await?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let (status, body) = read_text(resp).await?;
        match serde_json::from_str::<Value>(&body) {
            Ok(v) if v.get("error").is_some() => Err(ClientError::from_error_object(&v["error"])),
            _ => Err(ClientError::Http { status, body }),
        }
    }

    /// POSTs `subscriptions/listen`: every message of the SSE stream that
    /// comes back goes to the returned receiver, read by a task the
    /// handle aborts. A JSON answer is the server refusing.
    pub(super) async fn listen(
        &self,
        message: &Value,
    ) -> Result<(mpsc::UnboundedReceiver<Value>, AbortHandle), ClientError> {
        let resp = self.post(message).await?;
        if !is_event_stream(&resp) {
            return Err(refusal(resp).await);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let mut reader = SseReader::new(resp.into_body());
        let task = tokio::spawn(async move {
            while let Ok(Some(m)) = reader.next().await {
                if tx.send(m).is_err() {
                    break;
                }
            }
        });
        Ok((rx, task.abort_handle()))
    }

    /// Opens the legacy session's GET stream; what it carries is routed
    /// like messages on a response stream until the client ends.
    pub(super) async fn open_stream(self: &Arc<Self>) -> Result<(), ClientError> {
        if self.session_id().is_none() {
            return Err(ClientError::Unsupported(
                "a GET stream without a legacy session",
            ));
        }
        let req = self.request(Method::GET, None)?;
        let resp = self.send(req).await?;
        if !resp.status().is_success() || !is_event_stream(&resp) {
            return Err(refusal(resp).await);
        }
        let mut reader = SseReader::new(resp.into_body());
        let link = Arc::clone(self);
        let task = tokio::spawn(async move {
            while let Ok(Some(m)) = reader.next().await {
                link.route(m);
            }
        });
        lock(&self.streams).push(task.abort_handle());
        Ok(())
    }

    /// Ends the legacy session (`DELETE`), if there is one.
    pub(super) async fn close(&self) {
        self.abort_streams();
        if self.session_id().is_some()
            && let Ok(req) = self.request(Method::DELETE, None)
        {
            let _ = self.send(req).await;
        }
    }

    pub(super) fn abort_streams(&self) {
        for task in lock(&self.streams).drain(..) {
            task.abort();
        }
    }

    /// A streamed message that is not the awaited response: a server→client
    /// request is answered on its own task, the rest is a notification.
    fn route(self: &Arc<Self>, message: Value) {
        match message.get("id").cloned() {
            Some(id) if message.get("method").is_some() => {
                let link = Arc::clone(self);
                tokio::spawn(async move {
                    let reply = super::link::answer(link.handler.as_ref(), &message, id).await;
                    let reply: Value = serde_json::from_str(&reply).unwrap_or_default();
                    if let Err(e) = link.notify(&reply).await {
                        tracing::warn!(error = %e, "the answer to a server request was refused");
                    }
                });
            }
            _ => {
                let _ = self.notifications.send(message);
            }
        }
    }

    async fn post(&self, message: &Value) -> Result<Response<Body>, ClientError> {
        let req = self.request(Method::POST, Some(message))?;
        let resp = self.send(req).await?;
        if let Some(sid) = resp.headers().get(names::SESSION_ID)
            && let Ok(sid) = sid.to_str()
        {
            *lock(&self.session) = Some(sid.to_owned());
        }
        Ok(resp)
    }

    async fn send(&self, req: Request<Body>) -> Result<Response<Body>, ClientError> {
        let resp = self
            .client
            .request(req)
            .await
            .map_err(|e| ClientError::Transport(format!("{}: {e}", self.url)))?;
        Ok(resp.map(Body::new))
    }

    /// A request with the headers the wire asks for.
    fn request(&self, method: Method, body: Option<&Value>) -> Result<Request<Body>, ClientError> {
        let mut req = Request::builder().method(method).uri(self.url.clone());
        let h = req.headers_mut().ok_or_else(|| {
            ClientError::Transport(format!("cannot build a request to {}", self.url))
        })?;
        let accept = match body {
            Some(_) => "application/json, text/event-stream",
            None => "text/event-stream",
        };
        h.insert(header::ACCEPT, HeaderValue::from_static(accept));
        if body.is_some() {
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        h.extend(self.headers.clone());
        let session = self.session_id();
        if let Some(sid) = session
            .as_deref()
            .and_then(|s| HeaderValue::from_str(s).ok())
        {
            h.insert(names::SESSION_ID, sid);
        }
        match self.wire {
            ClientWire::Modern => {
                let version = ProtocolVersion::LATEST.as_str();
                h.insert(names::PROTOCOL_VERSION, HeaderValue::from_static(version));
                if let Some(body) = body {
                    self.mirror(h, body);
                }
            }
            // The header exists since 2025-06-18, after initialize.
            ClientWire::Legacy(v) if v >= ProtocolVersion::V2025_06_18 && session.is_some() => {
                h.insert(
                    names::PROTOCOL_VERSION,
                    HeaderValue::from_static(v.as_str()),
                );
            }
            ClientWire::Legacy(_) => {}
        }
        let bytes = body.map(Value::to_string).unwrap_or_default();
        req.body(Body::from(bytes))
            .map_err(|e| ClientError::Transport(e.to_string()))
    }

    /// The modern wire's `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`
    /// headers, mirrored from the body.
    fn mirror(&self, h: &mut HeaderMap, body: &Value) {
        let Some(method) = body["method"].as_str() else {
            return;
        };
        if let Ok(v) = HeaderValue::from_str(method) {
            h.insert(names::METHOD, v);
        }
        let Some(params) = body["params"].as_object() else {
            return;
        };
        let Some(name_field) = names::name_field(method) else {
            return;
        };
        if let Some(name) = params.get(name_field).and_then(Value::as_str) {
            h.insert(names::NAME, encode(name));
        }
        if method != "tools/call" {
            return;
        }
        let (Some(tool), Some(arguments)) = (
            params.get("name").and_then(Value::as_str),
            params.get("arguments").and_then(Value::as_object),
        ) else {
            return;
        };
        let mirrors = lock(&self.tool_params)
            .as_ref()
            .and_then(|m| m.get(tool).cloned())
            .unwrap_or_default();
        for p in mirrors {
            let Some(text) = p.text_in(arguments) else {
                continue;
            };
            let name = format!("{}{}", names::PARAM_PREFIX, p.header.to_ascii_lowercase());
            if let Ok(n) = HeaderName::try_from(name) {
                h.insert(n, encode(&text));
            }
        }
    }
}

fn is_event_stream(resp: &Response<Body>) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/event-stream"))
}

/// The status and the whole body as text (bounded).
async fn read_text(resp: Response<Body>) -> Result<(u16, String), ClientError> {
    let status = resp.status().as_u16();
    let bytes = axum::body::to_bytes(resp.into_body(), MAX_BODY_BYTES)
        .await
        .map_err(|e| ClientError::Transport(e.to_string()))?;
    Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
}

/// The error a refused stream request carries.
async fn refusal(resp: Response<Body>) -> ClientError {
    match read_text(resp).await {
        Ok((status, body)) => match serde_json::from_str::<Value>(&body) {
            Ok(v) if v.get("error").is_some() => ClientError::from_error_object(&v["error"]),
            _ => ClientError::Http { status, body },
        },
        Err(e) => e,
    }
}

/// A header value in the form the spec defines (see
/// [`names::encode_value`]).
fn encode(text: &str) -> HeaderValue {
    HeaderValue::from_str(&names::encode_value(text))
        .unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_are_literal_or_base64() {
        assert_eq!(encode("echo"), "echo");
        assert_eq!(encode(" padded"), "=?base64?IHBhZGRlZA==?=");
        assert_eq!(encode("Zoë"), "=?base64?Wm/Dqw==?=");
    }
}
