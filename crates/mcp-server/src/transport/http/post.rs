//! `POST /mcp`: one JSON-RPC message in, one JSON reply or SSE stream out.
//!
//! The order of checks follows the spec digest: Origin/Host (middleware),
//! authentication (when configured), body size, JSON parse and nesting,
//! then which wire the request is on, then (modern) headers against the
//! body, then the engine's `_meta`, version and method checks.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream, StreamExt};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use mcp_protocol::error::ErrorStatus;
use mcp_protocol::headers::{self, SESSION_ID, single};
use mcp_protocol::jsonrpc::Message;
use mcp_protocol::{ProtocolError, ProtocolVersion, Request, depth, meta};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::AppState;
use super::reply::{error_response, json_response, rpc_response, status_for};
use super::resume::{self, StreamRecord};
use crate::access::{ClientAddress, Principal};
use crate::context::SseStreamCloser;
use crate::dispatch::{Inbound, Listener, Reply, Wire};
use crate::session::Session;

/// Handles one POST.
pub(crate) async fn handle(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Response {
    let (mut parts, body) = request.into_parts();
    if let Some(r) = check_content_type(&parts.headers) {
        return r;
    }
    let bytes = match read_body(&state, &parts.headers, body).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    if depth::nesting_depth(&bytes, state.config.max_json_depth) > state.config.max_json_depth {
        let e = ProtocolError::invalid_request(format!(
            "Invalid request: JSON nesting deeper than {} levels.",
            state.config.max_json_depth
        ));
        return error_response(StatusCode::BAD_REQUEST, None, e);
    }
    let value: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return error_response(StatusCode::BAD_REQUEST, None, ProtocolError::parse_error(e));
        }
    };
    if let Some(ConnectInfo(addr)) = parts.extensions.get::<ConnectInfo<SocketAddr>>().copied() {
        parts.extensions.insert(ClientAddress(addr.ip()));
    }
    if let Value::Array(items) = value {
        return batch(state, parts, items).await;
    }
    let message = match Message::from_value(value) {
        Ok(m) => m,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, e.id, e.error),
    };
    match message {
        Message::Request(request) => handle_request(state, parts, request).await,
        Message::Notification(n) => {
            let session = match session_of(&state, &parts) {
                Ok(s) => s,
                Err((status, e)) => return error_response(status, None, e),
            };
            state.server.handle_notification(&n, session.as_deref());
            StatusCode::ACCEPTED.into_response()
        }
        Message::Response(r) => {
            let session = match session_of(&state, &parts) {
                Ok(s) => s,
                Err((status, e)) => return error_response(status, None, e),
            };
            if state.server.handle_peer_response(r, session.as_deref()) {
                StatusCode::ACCEPTED.into_response()
            } else {
                let e = ProtocolError::invalid_request(
                    "Invalid request: this response answers no pending server request.",
                );
                error_response(StatusCode::BAD_REQUEST, None, e)
            }
        }
    }
}

fn check_content_type(headers: &HeaderMap) -> Option<Response> {
    let ct = headers.get(header::CONTENT_TYPE)?.to_str().unwrap_or("");
    if ct.to_ascii_lowercase().starts_with("application/json") {
        return None;
    }
    let e = ProtocolError::invalid_request(
        "Unsupported media type: send the JSON-RPC message as application/json.",
    );
    Some(error_response(StatusCode::UNSUPPORTED_MEDIA_TYPE, None, e))
}

async fn read_body(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, Box<Response>> {
    let limit = state.config.max_body_bytes;
    let too_large = || {
        let e = ProtocolError::invalid_request(format!(
            "Request body too large: the limit is {limit} bytes."
        ))
        .with_status(ErrorStatus::TooLarge);
        let mut r = error_response(StatusCode::PAYLOAD_TOO_LARGE, None, e);
        // The rest of the body is not read, so this connection cannot carry
        // another request; say so instead of resetting it silently.
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        Box::new(r)
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    // A body trickling in must not hold the connection open indefinitely.
    let timeout = state.config.body_read_timeout;
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await {
        Ok(read) => read.map_err(|_| too_large()),
        Err(_) => {
            let e = ProtocolError::invalid_request(format!(
                "Request body not received within {} s.",
                timeout.as_secs_f64()
            ));
            let mut r = error_response(StatusCode::REQUEST_TIMEOUT, None, e);
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            Err(Box::new(r))
        }
    }
}

/// The legacy session named by `Mcp-Session-Id`, if any: 404 for an
/// unknown one (it expired or was deleted) and for one opened by another
/// principal (a session id is not a credential).
fn session_of(
    state: &AppState,
    parts: &Parts,
) -> Result<Option<Arc<Session>>, (StatusCode, ProtocolError)> {
    let id = match single(&parts.headers, SESSION_ID) {
        Ok(Some(id)) => id,
        Ok(None) => return Ok(None),
        Err(e) => return Err((StatusCode::BAD_REQUEST, e)),
    };
    let subject = parts
        .extensions
        .get::<Principal>()
        .map(|p| p.subject.as_str());
    match state.server.session(&id) {
        Some(s) if s.owner() == subject => Ok(Some(s)),
        _ => Err((
            StatusCode::NOT_FOUND,
            ProtocolError::invalid_request(
                "Session not found or expired; send initialize to start a new session.",
            ),
        )),
    }
}

/// Whether a request claims the 2026 wire: `_meta` carries a version, or
/// `MCP-Protocol-Version` names a modern (or unknown) version outside a
/// legacy session. Modern requests ignore `Mcp-Session-Id`.
fn claims_modern(headers: &HeaderMap, request: &Request) -> bool {
    if meta::claimed_version(&request.params).is_some() {
        return true;
    }
    let Ok(Some(header)) = single(headers, headers::PROTOCOL_VERSION) else {
        return false;
    };
    match ProtocolVersion::parse(&header) {
        Some(v) => v.is_modern(),
        None => !headers.contains_key(SESSION_ID),
    }
}

/// The revision of a legacy request: its session's, else the header's,
/// else 2025-03-26 (what the spec says to assume without a header).
fn legacy_version(
    headers: &HeaderMap,
    session: Option<&Session>,
) -> Result<ProtocolVersion, ProtocolError> {
    let header = single(headers, headers::PROTOCOL_VERSION)?;
    let parsed = match header.as_deref() {
        None => None,
        Some(h) => Some(
            ProtocolVersion::parse(h)
                .filter(|v| !v.is_modern())
                .ok_or_else(|| {
                    ProtocolError::invalid_request(format!(
                        "Bad request: unsupported MCP-Protocol-Version \"{h}\" for this session."
                    ))
                })?,
        ),
    };
    Ok(session
        .map(Session::version)
        .or(parsed)
        .unwrap_or(ProtocolVersion::V2025_03_26))
}

async fn handle_request(state: AppState, mut parts: Parts, request: Request) -> Response {
    let modern = claims_modern(&parts.headers, &request);
    let (wire, session) = if modern {
        if let Err(e) = check_modern_headers(&state, &parts.headers, &request) {
            return error_response(status_for(&e, true), Some(request.id), e);
        }
        (Wire::Modern, None)
    } else {
        let session = match session_of(&state, &parts) {
            Ok(s) => s,
            Err((status, e)) => return error_response(status, Some(request.id), e),
        };
        let version = match legacy_version(&parts.headers, session.as_deref()) {
            Ok(v) => v,
            Err(e) => return error_response(StatusCode::BAD_REQUEST, Some(request.id), e),
        };
        if request.method == "initialize" {
            return initialize(&state, &parts, &request);
        }
        (
            Wire::Legacy {
                version,
                session: session.clone(),
            },
            session,
        )
    };
    let accepts_sse = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_none_or(|a| a.contains("text/event-stream") || a.contains("*/*"));
    // 2025-11-25 sessions get resumable streams (priming event, ids, the
    // server may close the connection, the client resumes with GET).
    let resumable = match &session {
        Some(s) if accepts_sse && s.version() == ProtocolVersion::V2025_11_25 => {
            // A new request acknowledges the responses delivered before it.
            s.event_store().prune();
            let hook = Arc::new(CloseHook::default());
            let h = Arc::clone(&hook);
            parts
                .extensions
                .insert(SseStreamCloser(Arc::new(move || h.close())));
            Some(Resumable {
                session: Arc::clone(s),
                hook,
            })
        }
        _ => None,
    };
    let (tx, rx) = mpsc::channel::<String>(64);
    let cancel = CancellationToken::new();
    let id = request.id.clone();
    if let Some(s) = &session {
        s.track(id.clone(), cancel.clone());
    }
    let inbound = Inbound {
        request,
        wire,
        outbound: accepts_sse.then_some(tx),
        cancel: cancel.clone(),
        extensions: Arc::new(parts.extensions),
    };
    let server = state.server.clone();
    let task: JoinHandle<Reply> = tokio::spawn(async move { server.handle(inbound).await });
    // On the modern wire a closed connection cancels the request; legacy
    // clients may disconnect without meaning to cancel.
    let guard = modern.then(|| cancel.clone().drop_guard());
    let response = respond(state.clone(), task, rx, modern, guard, resumable).await;
    if let Some(s) = &session {
        s.untrack(&id);
    }
    response
}

/// A legacy `initialize`: a new session, its id in `Mcp-Session-Id`, bound
/// to the authenticated principal (if any).
fn initialize(state: &AppState, parts: &Parts, request: &Request) -> Response {
    let (session, response) = state.server.initialize(request, true);
    let mut r = rpc_response(response, false, &state.config);
    if let Some(s) = session {
        if let Some(p) = parts.extensions.get::<Principal>() {
            s.bind_owner(&p.subject);
        }
        if let Ok(v) = HeaderValue::from_str(s.id()) {
            r.headers_mut().insert(SESSION_ID, v);
        }
    }
    r
}

/// A JSON-RPC batch: legal only inside a 2025-03-26 session (the one
/// revision that had them). Answered with one JSON array.
async fn batch(state: AppState, parts: Parts, items: Vec<Value>) -> Response {
    let session = match session_of(&state, &parts) {
        Ok(Some(s)) if s.version() == ProtocolVersion::V2025_03_26 => s,
        Ok(_) => {
            let e = ProtocolError::invalid_request(
                "Invalid request: batch arrays are not supported; send one JSON-RPC message per request.",
            );
            return error_response(StatusCode::BAD_REQUEST, None, e);
        }
        Err((status, e)) => return error_response(status, None, e),
    };
    if items.is_empty() {
        let e = ProtocolError::invalid_request("Invalid request: the batch is empty.");
        return error_response(StatusCode::BAD_REQUEST, None, e);
    }
    let responses = state
        .server
        .handle_batch(items, session, None, Arc::new(parts.extensions))
        .await;
    if responses.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    let body: Vec<String> = responses
        .iter()
        .map(mcp_protocol::Response::to_json)
        .collect();
    json_response(StatusCode::OK, format!("[{}]", body.join(",")))
}

fn check_modern_headers(
    state: &AppState,
    headers: &HeaderMap,
    request: &Request,
) -> Result<(), ProtocolError> {
    headers::check_standard(
        headers,
        &request.method,
        &request.params,
        meta::claimed_version(&request.params),
    )?;
    if request.method == "tools/call"
        && let Some(name) = request.params.get("name").and_then(Value::as_str)
        && let Some(params) = state.server.tool_header_params(name)
        && !params.is_empty()
    {
        let empty = serde_json::Map::new();
        let args = request
            .params
            .get("arguments")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        headers::check_params(headers, &params, args)?;
    }
    Ok(())
}

/// What a resumable request (2025-11-25 session) needs to stream.
struct Resumable {
    session: Arc<Session>,
    hook: Arc<CloseHook>,
}

/// Behind `RequestContext::close_sse_stream`: before the stream exists,
/// remembers the wish (and wakes `respond`); after, closes its connection.
#[derive(Default)]
struct CloseHook {
    early: CancellationToken,
    record: std::sync::Mutex<Option<Arc<StreamRecord>>>,
}

impl CloseHook {
    fn close(&self) {
        let record = crate::session::lock(&self.record);
        match record.as_ref() {
            Some(r) => r.close_connection(),
            None => self.early.cancel(),
        }
    }

    fn set(&self, r: &Arc<StreamRecord>) {
        let mut record = crate::session::lock(&self.record);
        *record = Some(Arc::clone(r));
        if self.early.is_cancelled() {
            r.close_connection();
        }
    }
}

/// Waits for the first thing the handler produces: its reply (→ JSON) or
/// a message before it (→ SSE carrying the messages, then the reply). A
/// resumable request also switches to SSE when the handler closes its
/// stream before sending anything.
async fn respond(
    state: AppState,
    mut task: JoinHandle<Reply>,
    mut rx: mpsc::Receiver<String>,
    modern: bool,
    guard: Option<tokio_util::sync::DropGuard>,
    resumable: Option<Resumable>,
) -> Response {
    let early = resumable.as_ref().map(|r| r.hook.early.clone());
    let closed_early = async move {
        match early {
            Some(t) => t.cancelled_owned().await,
            None => std::future::pending().await,
        }
    };
    let first = tokio::select! {
        biased;
        Some(m) = rx.recv() => Err(Some(m)),
        reply = &mut task => Ok(reply),
        () = closed_early => Err(None),
    };
    if let (Err(first_message), Some(r)) = (&first, resumable) {
        return resumable_stream(r, first_message.clone(), task, rx);
    }
    match first {
        Ok(Ok(Reply::Response(r))) => rpc_response(r, modern, &state.config),
        Ok(Ok(Reply::Cancelled)) => StatusCode::NO_CONTENT.into_response(),
        Ok(Ok(Reply::Listen(l))) => listen_stream(&state, l, guard),
        Ok(Err(join)) => {
            tracing::error!(error = %join, "request handler panicked");
            let e = ProtocolError::internal(
                "Internal error: the request handler failed; the failure was logged.",
            );
            json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                mcp_protocol::Response::error(None, e).to_json(),
            )
        }
        Err(Some(first_message)) => request_stream(first_message, task, rx, guard),
        // Only a resumable request is woken by an early close.
        Err(None) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// A resumable request stream: every message is recorded under an event id
/// and delivered from the record, so that the connection may close (and be
/// resumed by GET + `Last-Event-ID`) while the request goes on.
fn resumable_stream(
    r: Resumable,
    first: Option<String>,
    mut task: JoinHandle<Reply>,
    mut rx: mpsc::Receiver<String>,
) -> Response {
    let record = r.session.event_store().open();
    if let Some(m) = first {
        record.push(m);
    }
    let connection = record.attach();
    r.hook.set(&record);
    let pump = Arc::clone(&record);
    tokio::spawn(async move {
        loop {
            tokio::select! {
                biased;
                Some(m) = rx.recv() => pump.push(m),
                reply = &mut task => {
                    while let Ok(m) = rx.try_recv() {
                        pump.push(m);
                    }
                    match reply {
                        Ok(Reply::Response(resp)) => pump.finish(Some(resp.to_json())),
                        Ok(Reply::Listen(_)) | Ok(Reply::Cancelled) => pump.finish(None),
                        Err(e) => {
                            tracing::error!(error = %e, "request handler panicked");
                            pump.finish(None);
                        }
                    }
                    break;
                }
            }
        }
    });
    resume::response(record, 0, connection, r.session.closed(), true)
}

fn sse<S>(body: S, keep_alive: Option<std::time::Duration>) -> Response
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    let sse = Sse::new(body);
    let mut r = match keep_alive {
        Some(k) => sse.keep_alive(KeepAlive::new().interval(k)).into_response(),
        None => sse.into_response(),
    };
    r.headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

fn event(data: String) -> Result<Event, Infallible> {
    Ok(Event::default().event("message").data(data))
}

/// A request-scoped stream: messages the handler sent, then its response.
fn request_stream(
    first: String,
    task: JoinHandle<Reply>,
    rx: mpsc::Receiver<String>,
    guard: Option<tokio_util::sync::DropGuard>,
) -> Response {
    struct St {
        task: Option<JoinHandle<Reply>>,
        rx: mpsc::Receiver<String>,
        /// Messages left to send after the handler finished.
        tail: VecDeque<String>,
        /// Dropped with the stream: a client that goes away cancels the request.
        _guard: Option<tokio_util::sync::DropGuard>,
    }
    let st = St {
        task: Some(task),
        rx,
        tail: VecDeque::new(),
        _guard: guard,
    };
    let rest = stream::unfold(st, |mut st| async move {
        let Some(task) = st.task.as_mut() else {
            let m = st.tail.pop_front()?;
            return Some((event(m), st));
        };
        tokio::select! {
            biased;
            Some(m) = st.rx.recv() => Some((event(m), st)),
            reply = task => {
                st.task = None;
                // Flush what was queued before the reply, then the reply.
                while let Ok(m) = st.rx.try_recv() {
                    st.tail.push_back(m);
                }
                match reply {
                    Ok(Reply::Response(r)) => st.tail.push_back(r.to_json()),
                    Ok(Reply::Listen(_)) | Ok(Reply::Cancelled) => {}
                    Err(e) => tracing::error!(error = %e, "request handler panicked"),
                }
                let m = st.tail.pop_front()?;
                Some((event(m), st))
            }
        }
    });
    let body = stream::once(async move { event(first) }).chain(rest);
    sse(body, None)
}

/// The long-lived stream of `subscriptions/listen`.
fn listen_stream(
    state: &AppState,
    listener: Listener,
    guard: Option<tokio_util::sync::DropGuard>,
) -> Response {
    let ack = listener.acknowledgement();
    let rest = stream::unfold(Some((listener, guard)), |st| async move {
        let (mut l, guard) = st?;
        match l.next().await {
            Some(m) => Some((event(m), Some((l, guard)))),
            None => Some((event(l.final_response().to_json()), None)),
        }
    });
    let body = stream::once(async move { event(ack) }).chain(rest);
    sse(body, Some(state.config.keep_alive))
}
