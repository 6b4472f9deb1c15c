//! Turning replies into HTTP responses: JSON bodies, SSE streams, status codes.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use mcp_protocol::error::ErrorStatus;
use mcp_protocol::{ProtocolError, RequestId};

use super::config::HttpConfig;

/// A JSON-RPC error response with an explicit status.
pub(crate) fn error_response(
    status: StatusCode,
    id: Option<RequestId>,
    e: ProtocolError,
) -> Response {
    json_response(status, mcp_protocol::Response::error(id, e).to_json())
}

/// A JSON body with a status.
pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    let mut r = (status, Body::from(body)).into_response();
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
    response: mcp_protocol::Response,
    modern: bool,
    config: &HttpConfig,
) -> Response {
    let status = http_status(crate::engine::response_status(&response, modern));
    let mut r = json_response(status, response.to_json());
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
