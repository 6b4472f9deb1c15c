//! Turning replies into HTTP responses: JSON bodies, SSE streams, status codes.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use mcpwire_protocol::error::ErrorStatus;
use mcpwire_protocol::{ProtocolError, RequestId};

use super::config::HttpConfig;

/// A JSON-RPC error response with an explicit status.
pub(crate) fn error_response(
    status: StatusCode,
    id: Option<RequestId>,
    e: ProtocolError,
) -> Response {
    json_response(status, mcpwire_protocol::Response::error(id, e).to_json())
}

/// A JSON body with a status.
pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    json_body(status, Body::from(body))
}

fn json_body(status: StatusCode, body: Body) -> Response {
    let mut r = (status, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// The HTTP status for the engine's status hint.
pub(crate) fn http_status(status: ErrorStatus) -> StatusCode {
    match status {
        ErrorStatus::Answered => StatusCode::OK,
        ErrorStatus::BadRequest => StatusCode::BAD_REQUEST,
        ErrorStatus::NotFound => StatusCode::NOT_FOUND,
        ErrorStatus::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorStatus::Forbidden => StatusCode::FORBIDDEN,
        ErrorStatus::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
    }
}

/// A full JSON-RPC response as an HTTP response.
pub(crate) fn rpc_response(
    response: mcpwire_protocol::Response,
    modern: bool,
    config: &HttpConfig,
) -> Response {
    let status = http_status(crate::engine::response_status(&response, modern));
    let mut r = json_body(status, super::body::response_body(&response));
    if let Err(e) = &response.body {
        add_error_headers(&mut r, e, config);
    }
    r
}

/// `WWW-Authenticate` for a missing scope (step-up), `Retry-After` for limits.
pub(crate) fn add_error_headers(r: &mut Response, e: &ProtocolError, config: &HttpConfig) {
    let data = e.data.as_ref();
    match e.status {
        ErrorStatus::Forbidden => {
            let scopes: Vec<&str> = data
                .and_then(|d| d.get("requiredScopes"))
                .and_then(|s| s.as_array())
                .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
                .unwrap_or_default();
            let mut challenge = format!(
                "Bearer error=\"insufficient_scope\", scope=\"{}\"",
                scopes.join(" ")
            );
            if let Some(url) = &config.resource_metadata_url {
                challenge.push_str(&format!(", resource_metadata=\"{url}\""));
            }
            if let Ok(v) = HeaderValue::from_str(&challenge) {
                r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
            }
        }
        ErrorStatus::TooManyRequests => {
            let secs = data
                .and_then(|d| d.get("retryAfterSeconds"))
                .and_then(|s| s.as_u64())
                .unwrap_or(1);
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        _ => {}
    }
}

/// Whether the client takes an SSE answer (no `Accept` counts as yes).
pub(crate) fn accepts_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_none_or(|a| a.contains("text/event-stream") || a.contains("*/*"))
}

/// One JSON-RPC message as an SSE `message` event.
pub(crate) fn message_event(data: String) -> Result<Event, Infallible> {
    Ok(Event::default().event("message").data(data))
}

/// An SSE response, with keep-alive comments on long-lived streams and
/// proxy buffering turned off (nginx would hold events back otherwise).
pub(crate) fn sse_response<S>(body: S, keep_alive: Option<Duration>) -> Response
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
