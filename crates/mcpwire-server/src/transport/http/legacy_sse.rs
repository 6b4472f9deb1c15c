//! The 2024-11-05 HTTP+SSE transport, for clients configured as "sse":
//! `GET /sse` opens an event stream whose first event, `endpoint`, names
//! where to POST (`/messages?sessionId=…`); every POST is answered 202 and
//! the replies travel on the stream. Each stream is one engine
//! [`Connection`], exactly like a stdio process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures_util::stream::{self, StreamExt};
use http::StatusCode;
use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::error::ErrorStatus;
use tokio::sync::mpsc;

use super::AppState;
use super::post::{add_client_address, check_content_type, read_body};
use super::reply::{add_error_headers, error_response, message_event, sse_response};
use super::stream_slots::hold;
use crate::access::Principal;
use crate::engine::Connection;
use crate::sync::lock;

/// Where the `endpoint` event sends clients.
pub(crate) const MESSAGES_PATH: &str = "/messages";
/// Where clients open the stream.
pub(crate) const SSE_PATH: &str = "/sse";
/// Longest a POST waits for room on its stream.
const STREAM_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// One open stream.
struct Entry {
    connection: Arc<Connection>,
    /// The principal that opened it; only it may post to it.
    owner: Option<String>,
}

/// Open streams by id, at most `ServerOptions::max_sessions`.
#[derive(Default)]
pub(crate) struct SseConnections {
    map: Arc<Mutex<HashMap<String, Entry>>>,
}

/// Removes its stream when the client goes away (the body is dropped).
struct Closer {
    map: Arc<Mutex<HashMap<String, Entry>>>,
    id: String,
}

impl Drop for Closer {
    fn drop(&mut self) {
        if let Some(e) = lock(&self.map).remove(&self.id) {
            e.connection.abort();
        }
    }
}

/// `GET /sse`: a new connection and its event stream.
pub(crate) async fn open(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Response {
    let (parts, _) = request.into_parts();
    let mut extensions = parts.extensions;
    add_client_address(&state, &mut extensions, &parts.headers);
    let mut raw = [0u8; 18];
    if getrandom::fill(&mut raw).is_err() {
        let e = ProtocolError::internal("Internal error: no randomness for a session id.");
        return error_response(StatusCode::INTERNAL_SERVER_ERROR, None, e);
    }
    let id = URL_SAFE_NO_PAD.encode(raw);
    let slot = match state.stream_slot(&extensions, None) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let owner = extensions.get::<Principal>().map(|p| p.subject.clone());
    let (tx, rx) = mpsc::channel::<String>(64);
    let connection = state
        .server
        .connection(tx, Arc::new(extensions), state.limits());
    {
        let mut map = lock(&state.sse.map);
        if map.len() >= state.server.options().max_sessions {
            let e = ProtocolError::rate_limited(
                "Too many open SSE sessions; retry later or use the Streamable HTTP endpoint.",
                30,
            );
            let mut r = error_response(StatusCode::TOO_MANY_REQUESTS, None, e.clone());
            add_error_headers(&mut r, &e, &state.config);
            return r;
        }
        map.insert(id.clone(), Entry { connection, owner });
    }
    let closer = Closer {
        map: Arc::clone(&state.sse.map),
        id: id.clone(),
    };
    let endpoint = format!("{MESSAGES_PATH}?sessionId={id}");
    let first = Ok(Event::default().event("endpoint").data(endpoint));
    let rest = stream::unfold((rx, closer), |(mut rx, closer)| async move {
        let m = rx.recv().await?;
        Some((message_event(m), (rx, closer)))
    });
    let body = stream::once(async move { first }).chain(rest);
    hold(sse_response(body, Some(state.config.keep_alive)), slot)
}

/// `POST /messages?sessionId=…`: one message for that stream's
/// connection; 202, the reply goes on the stream.
pub(crate) async fn message(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let id = parts
        .uri
        .query()
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|kv| kv.strip_prefix("sessionId="))
        .unwrap_or_default();
    let subject = parts
        .extensions
        .get::<Principal>()
        .map(|p| p.subject.clone());
    let connection = lock(&state.sse.map)
        .get(id)
        .filter(|e| e.owner == subject)
        .map(|e| Arc::clone(&e.connection));
    let Some(connection) = connection else {
        let e = ProtocolError::invalid_request(
            "Session not found: open a stream with GET /sse and post to the endpoint it names.",
        )
        .with_status(ErrorStatus::NotFound);
        return error_response(StatusCode::NOT_FOUND, None, e);
    };
    if let Some(r) = check_content_type(&parts.headers) {
        return r;
    }
    let bytes = match read_body(&state, &parts.headers, body).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    // Taking the message may wait for room on the stream; a client that
    // does not read its stream must not hold this request open forever.
    if tokio::time::timeout(STREAM_WAIT, connection.receive(&bytes))
        .await
        .is_err()
    {
        let e = ProtocolError::invalid_request(
            "The event stream of this session is not being read; read it (GET /sse) before posting more.",
        );
        return error_response(StatusCode::SERVICE_UNAVAILABLE, None, e);
    }
    StatusCode::ACCEPTED.into_response()
}
