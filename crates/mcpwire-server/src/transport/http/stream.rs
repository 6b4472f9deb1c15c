//! `GET` (a legacy session's standalone stream) and `DELETE` (end a legacy
//! session). The modern wire has neither: 405.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use http::{HeaderValue, StatusCode, header};
use mcpwire_protocol::headers::{SESSION_ID, single};
use mcpwire_protocol::{ProtocolError, ProtocolVersion};
use tokio::sync::mpsc;

use super::AppState;
use super::post::add_client_address;
use super::reply::{accepts_event_stream, error_response, message_event, sse_response};
use super::resume;
use super::stream_slots::hold;
use crate::access::Principal;
use crate::engine::{VersionHeader, check_session_version};

/// The request's session id: without one, GET and DELETE are not allowed
/// here (405); a repeated or malformed one is a bad request (400).
fn session_id(headers: &http::HeaderMap) -> Result<String, Box<Response>> {
    match single(headers, SESSION_ID) {
        Ok(Some(id)) => Ok(id),
        Ok(None) => Err(Box::new(method_not_allowed())),
        Err(e) => Err(Box::new(error_response(StatusCode::BAD_REQUEST, None, e))),
    }
}

fn method_not_allowed() -> Response {
    let mut r = error_response(
        StatusCode::METHOD_NOT_ALLOWED,
        None,
        ProtocolError::invalid_request(
            "Method not allowed: without a legacy session, only POST is served on this endpoint.",
        ),
    );
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    r
}

/// 503 while the shared session store is down (replicated servers).
fn store_unavailable(e: ProtocolError) -> Response {
    let mut r = error_response(StatusCode::SERVICE_UNAVAILABLE, None, e);
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    r
}

/// The caller's session by id: `Err` is the response to send (404 for an
/// unknown id or one opened by another principal).
async fn owned_session(
    state: &AppState,
    id: &str,
    subject: Option<&str>,
) -> Result<std::sync::Arc<crate::Session>, Response> {
    match state.server.find_session(id).await {
        Ok(Some(s)) if s.owner() == subject => Ok(s),
        Ok(_) => Err(session_not_found()),
        Err(e) => Err(store_unavailable(e)),
    }
}

fn session_not_found() -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        None,
        ProtocolError::invalid_request(
            "Session not found or expired; send initialize to start a new session.",
        ),
    )
}

/// Opens the standalone SSE stream of a legacy session: list changes and
/// updates of subscribed resources arrive here.
pub(crate) async fn get(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Response {
    let (parts, _) = request.into_parts();
    let headers = parts.headers;
    let id = match session_id(&headers) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    let mut extensions = parts.extensions;
    add_client_address(&state, &mut extensions, &headers);
    let subject = extensions.get::<Principal>().map(|p| p.subject.as_str());
    let session = match owned_session(&state, &id, subject).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let version = VersionHeader::read(&headers);
    if let Err(e) = version.and_then(|v| check_session_version(v.as_ref(), &session)) {
        return error_response(StatusCode::BAD_REQUEST, None, e);
    }
    if !accepts_event_stream(&headers) {
        return error_response(
            StatusCode::NOT_ACCEPTABLE,
            None,
            ProtocolError::invalid_request("Not acceptable: the stream is text/event-stream."),
        );
    }
    // Resuming a request stream of a 2025-11-25 session (the only streams
    // with event ids); other revisions keep the plain standalone stream.
    let http = state.sessions.of(&session);
    if session.version() == ProtocolVersion::V2025_11_25
        && let Some(last) = headers.get("last-event-id")
    {
        let found = last.to_str().ok().and_then(|id| http.streams.find(id));
        let Some((record, cursor)) = found else {
            return error_response(
                StatusCode::BAD_REQUEST,
                None,
                ProtocolError::invalid_request(
                    "Bad request: Last-Event-ID names no resumable stream of this session.",
                ),
            );
        };
        let slot = match state.stream_slot(&extensions, None) {
            Ok(s) => s,
            Err(r) => return *r,
        };
        let connection = record.attach();
        let r = resume::response(record, cursor, connection, session.closed_token(), false);
        return hold(r, slot);
    }
    let slot = match state.stream_slot(&extensions, None) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let (tx, rx) = mpsc::channel::<String>(64);
    if !http.open_standalone(tx.clone()) {
        return error_response(
            StatusCode::CONFLICT,
            None,
            ProtocolError::invalid_request("Conflict: this session already has an open stream."),
        );
    }
    // Forward server events to this session until either side goes away.
    state.server.forward_to_session(
        std::sync::Arc::clone(&session),
        tx,
        state.server.shutdown_token(),
    );
    let body = stream::unfold(rx, |mut rx| async move {
        let m = rx.recv().await?;
        Some((message_event(m), rx))
    });
    hold(sse_response(body, Some(state.config.keep_alive)), slot)
}

/// Ends a legacy session; later requests with its id get 404.
pub(crate) async fn delete(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Response {
    let (parts, _) = request.into_parts();
    let id = match session_id(&parts.headers) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    let subject = parts
        .extensions
        .get::<Principal>()
        .map(|p| p.subject.as_str());
    if let Err(r) = owned_session(&state, &id, subject).await {
        return r;
    }
    match state.server.end_session(&id).await {
        Ok(true) => {
            tracing::info!("legacy session ended by client");
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(false) => session_not_found(),
        Err(e) => store_unavailable(e),
    }
}
