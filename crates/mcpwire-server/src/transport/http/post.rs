//! `POST /mcp`: one JSON-RPC message in, one JSON reply or SSE stream out.
//!
//! The transport checks what only HTTP has (Origin/Host in middleware,
//! authentication when configured, the media type, the body size while
//! reading) and hands the bytes to the engine ([`crate::Server::accept`]), which
//! does everything else. What comes back is mapped to a status and a body,
//! or, for a request, raced against the request's stream.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, StreamExt};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::ProtocolVersion;
use mcpwire_protocol::headers::SESSION_ID;
use mcpwire_protocol::jsonrpc::batch_json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::AppState;
use super::call::Call;
use super::reply::{
    accepts_event_stream, add_error_headers, error_response, http_status, json_response,
    message_event, rpc_response, sse_response,
};
use super::resume::{self, StreamRecord};
use super::sessions::HttpSession;
use super::stream_slots;
use crate::access::ClientAddress;
use crate::context::SseStreamCloser;
use crate::dispatch::{Listener, Reply};
use crate::engine::{Accepted, Answer, Origin, Pending, too_large};
use crate::observe::HttpTraceHeaders;

/// Handles one POST.
pub(crate) async fn handle(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let (headers, mut extensions) = (parts.headers, parts.extensions);
    if let Some(r) = check_content_type(&headers) {
        return r;
    }
    let bytes = match read_body(&state, &headers, body).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    add_client_address(&state, &mut extensions, &headers);
    if let Some(t) = HttpTraceHeaders::from_headers(&headers) {
        extensions.insert(t);
    }
    let extensions = Arc::new(extensions);
    let origin = Origin {
        headers: Some(&headers),
        connection: None,
        extensions: Arc::clone(&extensions),
        limits: state.limits(),
    };
    match state.server.accept(&bytes, origin).await {
        Accepted::Answer(a) => answer(&state, a),
        Accepted::Taken => StatusCode::ACCEPTED.into_response(),
        Accepted::Request(p) if p.is_batch() => batch(p).await,
        Accepted::Request(p) => run(state, &headers, &extensions, p).await,
    }
}

/// Records where a request comes from, for rate limits and the audit.
pub(super) fn add_client_address(
    state: &AppState,
    extensions: &mut http::Extensions,
    headers: &HeaderMap,
) {
    if let Some(ConnectInfo(addr)) = extensions.get::<ConnectInfo<SocketAddr>>().copied() {
        let ip = client_ip(state, addr.ip(), headers);
        extensions.insert(ClientAddress(ip));
    }
}

/// The address a request comes from: the peer, or, when the peer is a
/// proxy the operator trusts, the nearest untrusted `X-Forwarded-For`
/// hop (so clients behind one proxy are not lumped together).
fn client_ip(state: &AppState, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
    let trusted = &state.config.trusted_proxies;
    if !trusted.contains(&peer) {
        return peer;
    }
    headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|a| a.trim().parse::<IpAddr>().ok())
        .rev()
        .find(|ip| !trusted.contains(ip))
        .unwrap_or(peer)
}

/// An answer the engine gave at once.
fn answer(state: &AppState, a: Answer) -> Response {
    let mut r = json_response(http_status(a.status), a.response.to_json());
    if let Err(e) = &a.response.body {
        add_error_headers(&mut r, e, &state.config);
    }
    if let Some(s) = a.session
        && let Ok(v) = HeaderValue::from_str(s.id())
    {
        r.headers_mut().insert(SESSION_ID, v);
    }
    r
}

/// A 2025-03-26 batch, answered with one JSON array.
async fn batch(pending: Pending) -> Response {
    match pending.serve(None, CancellationToken::new()).await {
        Reply::Batch(responses) if !responses.is_empty() => {
            json_response(StatusCode::OK, batch_json(&responses))
        }
        _ => StatusCode::ACCEPTED.into_response(),
    }
}

/// Runs a request: JSON if it only answers, SSE if it sends something first.
async fn run(
    state: AppState,
    headers: &HeaderMap,
    extensions: &http::Extensions,
    mut pending: Pending,
) -> Response {
    let accepts_sse = accepts_event_stream(headers);
    let modern = pending.is_modern();
    // 2025-11-25 sessions get resumable streams (priming event, ids, the
    // server may close the connection, the client resumes with GET).
    let resumable = match pending.session() {
        Some(s) if accepts_sse && s.version() == ProtocolVersion::V2025_11_25 => {
            let http = state.sessions.of(s);
            // A new request acknowledges the responses delivered before it.
            http.streams.prune();
            let closed = s.closed_token();
            let hook = Arc::new(CloseHook::default());
            let h = Arc::clone(&hook);
            pending.insert_extension(SseStreamCloser(Arc::new(move || h.close())));
            Some(Resumable { http, closed, hook })
        }
        _ => None,
    };
    let (tx, rx) = mpsc::channel::<String>(64);
    let cancel = CancellationToken::new();
    let task = Call::new(pending.serve(accepts_sse.then_some(tx), cancel.clone()));
    // On the modern wire a closed connection cancels the request; legacy
    // clients may disconnect without meaning to cancel.
    let guard = modern.then(|| cancel.clone().drop_guard());
    let response = respond(&state, task, rx, modern, guard, resumable).await;
    match response {
        Responded::Listen(listener, guard) => {
            match state.stream_slot(extensions, Some(listener.id().clone())) {
                Ok(slot) => stream_slots::hold(listen_stream(&state, listener, guard), slot),
                // Dropping the listener ends its subscription.
                Err(refused) => *refused,
            }
        }
        Responded::Other(r) => r,
    }
}

/// What [`respond`] produced: a `subscriptions/listen` stream still to
/// admit (it holds a connection for as long as the client likes), or the
/// response.
enum Responded {
    Listen(Listener, Option<tokio_util::sync::DropGuard>),
    Other(Response),
}

pub(super) fn check_content_type(headers: &HeaderMap) -> Option<Response> {
    let ct = headers.get(header::CONTENT_TYPE)?.to_str().unwrap_or("");
    if ct.to_ascii_lowercase().starts_with("application/json") {
        return None;
    }
    let e = ProtocolError::invalid_request(
        "Unsupported media type: send the JSON-RPC message as application/json.",
    );
    Some(error_response(StatusCode::UNSUPPORTED_MEDIA_TYPE, None, e))
}

pub(super) async fn read_body(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, Box<Response>> {
    let limit = state.config.max_body_bytes;
    let too_large = || {
        let mut r = error_response(StatusCode::PAYLOAD_TOO_LARGE, None, too_large(limit));
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
        state.server.metrics().body_rejected(true);
        return Err(too_large());
    }
    // A body trickling in must not hold the connection open indefinitely.
    let timeout = state.config.body_read_timeout;
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await {
        Ok(read) => read.map_err(|_| {
            state.server.metrics().body_rejected(true);
            too_large()
        }),
        Err(_) => {
            state.server.metrics().body_rejected(false);
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

/// What a resumable request (2025-11-25 session) needs to stream.
struct Resumable {
    /// Where the session's streams are recorded.
    http: Arc<HttpSession>,
    /// Fires when the session ends.
    closed: CancellationToken,
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
        let record = crate::sync::lock(&self.record);
        match record.as_ref() {
            Some(r) => r.close_connection(),
            None => self.early.cancel(),
        }
    }

    fn set(&self, r: &Arc<StreamRecord>) {
        let mut record = crate::sync::lock(&self.record);
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
    state: &AppState,
    mut task: Call,
    mut rx: mpsc::Receiver<String>,
    modern: bool,
    guard: Option<tokio_util::sync::DropGuard>,
    resumable: Option<Resumable>,
) -> Responded {
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
    // A handler polled in place may send and answer in one poll: what it
    // sent still comes first, on a stream.
    let (first, task) = match first {
        Ok(reply) => match rx.try_recv() {
            Ok(m) => (Err(Some(m)), Call::answered(reply)),
            Err(_) => (Ok(reply), task),
        },
        other => (other, task),
    };
    if let (Err(first_message), Some(r)) = (&first, resumable) {
        return Responded::Other(resumable_stream(r, first_message.clone(), task, rx));
    }
    Responded::Other(match first {
        Ok(Reply::Response(r)) => rpc_response(r, modern, &state.config),
        Ok(Reply::Cancelled | Reply::Batch(_)) => StatusCode::NO_CONTENT.into_response(),
        Ok(Reply::Listen(l)) => return Responded::Listen(l, guard),
        Err(Some(first_message)) => request_stream(first_message, task, rx, guard),
        // Only a resumable request is woken by an early close.
        Err(None) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    })
}

/// A resumable request stream: every message is recorded under an event id
/// and delivered from the record, so that the connection may close (and be
/// resumed by GET + `Last-Event-ID`) while the request goes on.
fn resumable_stream(
    r: Resumable,
    first: Option<String>,
    mut task: Call,
    mut rx: mpsc::Receiver<String>,
) -> Response {
    let record = r.http.streams.open();
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
                        Reply::Response(resp) => pump.finish(Some(resp.to_json())),
                        _ => pump.finish(None),
                    }
                    break;
                }
            }
        }
    });
    resume::response(record, 0, connection, r.closed, true)
}

/// A request-scoped stream: messages the handler sent, then its response.
fn request_stream(
    first: String,
    task: Call,
    rx: mpsc::Receiver<String>,
    guard: Option<tokio_util::sync::DropGuard>,
) -> Response {
    struct St {
        task: Option<Call>,
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
            return Some((message_event(m), st));
        };
        tokio::select! {
            biased;
            Some(m) = st.rx.recv() => Some((message_event(m), st)),
            reply = task => {
                st.task = None;
                // Flush what was queued before the reply, then the reply.
                while let Ok(m) = st.rx.try_recv() {
                    st.tail.push_back(m);
                }
                if let Reply::Response(r) = reply {
                    st.tail.push_back(r.to_json());
                }
                let m = st.tail.pop_front()?;
                Some((message_event(m), st))
            }
        }
    });
    let body = stream::once(async move { message_event(first) }).chain(rest);
    sse_response(body, None)
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
            Some(m) => Some((message_event(m), Some((l, guard)))),
            None => Some((message_event(l.final_response().to_json()), None)),
        }
    });
    let body = stream::once(async move { message_event(ack) }).chain(rest);
    sse_response(body, Some(state.config.keep_alive))
}
