//! `POST /mcp`: one JSON-RPC message in, one JSON reply or SSE stream out.
//!
//! The order of checks follows the spec digest: Origin/Host (middleware),
//! body size, JSON parse and nesting, then which wire the request is on,
//! then (modern) headers against the body, then the engine's `_meta`,
//! version and method checks.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
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

use std::net::SocketAddr;

use axum::extract::ConnectInfo;

use super::AppState;
use super::reply::{error_response, json_response, rpc_response, status_for};
use crate::access::ClientAddress;
use crate::dispatch::{Inbound, Listener, Reply, Wire};

/// Handles one POST.
pub(crate) async fn handle(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
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
    let message = match Message::from_slice(&bytes) {
        Ok(m) => m,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, e.id, e.error),
    };
    let session = match session_of(&state, &parts.headers) {
        Ok(s) => s,
        Err((status, e)) => return error_response(status, None, e),
    };
    match message {
        Message::Request(request) => handle_request(state, parts, request, session).await,
        Message::Notification(n) => {
            state.server.handle_notification(&n, session.as_deref());
            StatusCode::ACCEPTED.into_response()
        }
        Message::Response(r) => {
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
        Box::new(error_response(StatusCode::PAYLOAD_TOO_LARGE, None, e))
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| too_large())
}

/// The legacy session named by `Mcp-Session-Id`, if any; 404 for an
/// unknown one (it expired or was deleted).
fn session_of(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<Arc<crate::Session>>, (StatusCode, ProtocolError)> {
    let id = match single(headers, SESSION_ID) {
        Ok(Some(id)) => id,
        Ok(None) => return Ok(None),
        Err(e) => return Err((StatusCode::BAD_REQUEST, e)),
    };
    match state.server.session(&id) {
        Some(s) => Ok(Some(s)),
        None => Err((
            StatusCode::NOT_FOUND,
            ProtocolError::invalid_request(
                "Session not found or expired; send initialize to start a new session.",
            ),
        )),
    }
}

/// Decides the wire: a request that claims 2026 (in `_meta` or in
/// `MCP-Protocol-Version`) gets the strict modern rules; anything else is
/// a legacy client, inside its session or (header-less curl) without one.
fn classify(
    headers: &HeaderMap,
    request: &Request,
) -> Result<Option<ProtocolVersion>, ProtocolError> {
    let claimed = meta::claimed_version(&request.params);
    let header = single(headers, headers::PROTOCOL_VERSION)?;
    let header_legacy = header
        .as_deref()
        .and_then(ProtocolVersion::parse)
        .filter(|v| !v.is_modern());
    if claimed.is_some() || (header.is_some() && header_legacy.is_none()) {
        return Ok(None);
    }
    Ok(Some(header_legacy.unwrap_or(ProtocolVersion::V2025_03_26)))
}

async fn handle_request(
    state: AppState,
    parts: Parts,
    request: Request,
    session: Option<Arc<crate::Session>>,
) -> Response {
    let legacy_version = match classify(&parts.headers, &request) {
        Ok(v) => v,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, Some(request.id), e),
    };
    let wire = match legacy_version {
        None => {
            if let Err(e) = check_modern_headers(&state, &parts.headers, &request) {
                return error_response(status_for(&e, true), Some(request.id), e);
            }
            Wire::Modern
        }
        Some(_) if request.method == "initialize" => {
            let (session, response) = state.server.initialize(&request, true);
            let mut r = rpc_response(response, false, &state.config);
            if let Some(s) = session
                && let Ok(v) = HeaderValue::from_str(s.id())
            {
                r.headers_mut().insert(SESSION_ID, v);
            }
            return r;
        }
        Some(v) => Wire::Legacy {
            version: session.as_ref().map_or(v, |s| s.version()),
            session: session.clone(),
        },
    };
    let modern = matches!(wire, Wire::Modern);
    let accepts_sse = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_none_or(|a| a.contains("text/event-stream") || a.contains("*/*"));
    let (tx, rx) = mpsc::channel::<String>(64);
    let cancel = CancellationToken::new();
    let id = request.id.clone();
    let mut extensions = parts.extensions;
    if let Some(ConnectInfo(addr)) = extensions.get::<ConnectInfo<SocketAddr>>().copied() {
        extensions.insert(ClientAddress(addr.ip()));
    }
    if let Some(s) = &session {
        s.track(id.clone(), cancel.clone());
    }
    let inbound = Inbound {
        request,
        wire,
        outbound: accepts_sse.then_some(tx),
        cancel: cancel.clone(),
        extensions: Arc::new(extensions),
    };
    let server = state.server.clone();
    let task: JoinHandle<Reply> = tokio::spawn(async move { server.handle(inbound).await });
    // On the modern wire a closed connection cancels the request; legacy
    // clients may disconnect without meaning to cancel.
    let guard = modern.then(|| cancel.clone().drop_guard());
    let response = respond(state.clone(), task, rx, modern, guard).await;
    if let Some(s) = &session {
        s.untrack(&id);
    }
    response
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

/// Waits for the first thing the handler produces: its reply (→ JSON) or
/// a message before it (→ SSE carrying the messages, then the reply).
async fn respond(
    state: AppState,
    mut task: JoinHandle<Reply>,
    mut rx: mpsc::Receiver<String>,
    modern: bool,
    guard: Option<tokio_util::sync::DropGuard>,
) -> Response {
    let first = tokio::select! {
        biased;
        Some(m) = rx.recv() => Err(m),
        reply = &mut task => Ok(reply),
    };
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
        Err(first_message) => request_stream(first_message, task, rx, guard),
    }
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
