//! Protocol errors: JSON-RPC error objects with the codes the spec defines.
//!
//! A [`ProtocolError`] is a value the engine returns when a request cannot
//! be served; the transport turns it into a JSON-RPC error response (and,
//! on HTTP, a status code). Failures inside a tool are *not* protocol
//! errors: they become `isError: true` results.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The JSON-RPC error codes MCP uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    /// -32700: the body is not valid JSON.
    ParseError,
    /// -32600: valid JSON, but not a valid JSON-RPC request.
    InvalidRequest,
    /// -32601: unknown method, or a capability the server did not advertise.
    MethodNotFound,
    /// -32602: bad params: missing `_meta`, unknown tool, bad cursor…
    InvalidParams,
    /// -32603: a server bug or an unavailable dependency.
    InternalError,
    /// -32020: HTTP headers missing, malformed or different from the body.
    HeaderMismatch,
    /// -32021: the request needs a client capability it did not declare.
    MissingRequiredClientCapability,
    /// -32022: the requested protocol version is not supported.
    UnsupportedProtocolVersion,
    /// -31001 (application-defined, outside the reserved range): the
    /// caller's credentials do not grant this operation (HTTP 403).
    AccessDenied,
    /// -31002 (application-defined): the caller exceeded a rate or
    /// concurrency limit (HTTP 429); `data.retryAfterSeconds` says when to retry.
    RateLimited,
}

impl ErrorCode {
    /// The integer on the wire.
    pub fn code(self) -> i64 {
        match self {
            Self::ParseError => -32700,
            Self::InvalidRequest => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::InternalError => -32603,
            Self::HeaderMismatch => -32020,
            Self::MissingRequiredClientCapability => -32021,
            Self::UnsupportedProtocolVersion => -32022,
            Self::AccessDenied => -31001,
            Self::RateLimited => -31002,
        }
    }
}

/// How serious an error is for the HTTP layer; the transport maps it to a
/// status code. Kept here because the same code (-32602) maps to 400 for a
/// missing `_meta` but 200 for an unknown tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorStatus {
    /// The envelope was fine; the error is the answer (HTTP 200).
    Answered,
    /// The request itself is malformed (HTTP 400).
    BadRequest,
    /// Unknown method (HTTP 404 on the modern wire).
    NotFound,
    /// The body is larger than the server accepts (HTTP 413).
    TooLarge,
    /// The credentials lack a needed scope (HTTP 403).
    Forbidden,
    /// A rate or concurrency limit was hit (HTTP 429 with `Retry-After`).
    TooManyRequests,
}

/// A JSON-RPC error object with its HTTP status hint.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct ProtocolError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// One sentence a person or a model can act on.
    pub message: String,
    /// Structured details (`data.supported`, `data.uri`, …).
    pub data: Option<Value>,
    /// What the HTTP transport should answer with.
    pub status: ErrorStatus,
}

/// The JSON shape of an error object, as sent.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ErrorObject {
    /// The JSON-RPC error code.
    pub code: i64,
    /// The message.
    pub message: String,
    /// Optional details.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ProtocolError {
    /// An error with a code and message; the status follows from the code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let status = match code {
            ErrorCode::ParseError
            | ErrorCode::InvalidRequest
            | ErrorCode::HeaderMismatch
            | ErrorCode::MissingRequiredClientCapability
            | ErrorCode::UnsupportedProtocolVersion => ErrorStatus::BadRequest,
            ErrorCode::MethodNotFound => ErrorStatus::NotFound,
            ErrorCode::InvalidParams | ErrorCode::InternalError => ErrorStatus::Answered,
            ErrorCode::AccessDenied => ErrorStatus::Forbidden,
            ErrorCode::RateLimited => ErrorStatus::TooManyRequests,
        };
        Self {
            code: code.code(),
            message: message.into(),
            data: None,
            status,
        }
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// Overrides the HTTP status hint.
    pub fn with_status(mut self, status: ErrorStatus) -> Self {
        self.status = status;
        self
    }

    /// -32700 for a body that is not JSON.
    pub fn parse_error(detail: impl std::fmt::Display) -> Self {
        Self::new(ErrorCode::ParseError, format!("Parse error: {detail}."))
    }

    /// -32600 for JSON that is not a valid JSON-RPC message.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }

    /// -32601 for an unknown (or unadvertised) method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::MethodNotFound,
            format!("Method not found: {method}."),
        )
        .with_data(json!({ "method": method }))
    }

    /// -32602 for params that do not fit the method.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParams, message)
    }

    /// -32602 (HTTP 400) for a request without the required `_meta` fields.
    pub fn missing_meta(missing: &str) -> Self {
        Self::new(
            ErrorCode::InvalidParams,
            format!("Invalid params: params._meta must contain \"{missing}\" on every request."),
        )
        .with_data(json!({ "missing": missing }))
        .with_status(ErrorStatus::BadRequest)
    }

    /// -32603 for a server-side failure; the message must not leak internals.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InternalError, message)
    }

    /// -32020 for HTTP headers that are missing, malformed or differ from the body.
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::HeaderMismatch, message)
    }

    /// -32021 naming the client capabilities the request needs.
    pub fn missing_capability(required: Value, message: impl Into<String>) -> Self {
        Self::new(ErrorCode::MissingRequiredClientCapability, message)
            .with_data(json!({ "requiredCapabilities": required }))
    }

    /// -32022 listing the supported versions.
    pub fn unsupported_version(requested: &str, supported: Vec<String>) -> Self {
        Self::new(
            ErrorCode::UnsupportedProtocolVersion,
            format!(
                "Unsupported protocol version \"{requested}\"; supported: {}.",
                supported.join(", ")
            ),
        )
        .with_data(json!({ "supported": supported, "requested": requested }))
    }

    /// Access denied for lack of a scope; `data.requiredScopes` lists the
    /// scopes any one of which would grant it.
    pub fn access_denied(message: impl Into<String>, required_scopes: &[String]) -> Self {
        Self::new(ErrorCode::AccessDenied, message)
            .with_data(json!({ "requiredScopes": required_scopes }))
    }

    /// A limit was hit; retry after `seconds`.
    pub fn rate_limited(message: impl Into<String>, seconds: u64) -> Self {
        Self::new(ErrorCode::RateLimited, message)
            .with_data(json!({ "retryAfterSeconds": seconds }))
    }

    /// The object sent inside a JSON-RPC error response.
    pub fn to_object(&self) -> ErrorObject {
        ErrorObject {
            code: self.code,
            message: self.message.clone(),
            data: self.data.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_spec() {
        assert_eq!(ErrorCode::HeaderMismatch.code(), -32020);
        assert_eq!(ErrorCode::MissingRequiredClientCapability.code(), -32021);
        assert_eq!(ErrorCode::UnsupportedProtocolVersion.code(), -32022);
        assert_eq!(ErrorCode::InvalidParams.code(), -32602);
    }

    #[test]
    fn missing_meta_is_a_bad_request_but_unknown_tool_is_answered() {
        assert_eq!(
            ProtocolError::missing_meta("x").status,
            ErrorStatus::BadRequest
        );
        assert_eq!(
            ProtocolError::invalid_params("Unknown tool").status,
            ErrorStatus::Answered
        );
    }

    #[test]
    fn unsupported_version_carries_data() {
        let e = ProtocolError::unsupported_version("v9", vec!["2026-07-28".into()]);
        let data = e.data.unwrap_or_default();
        assert_eq!(data["requested"], "v9");
        assert_eq!(data["supported"][0], "2026-07-28");
    }
}
