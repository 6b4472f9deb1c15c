//! Why a client call failed.

use serde_json::Value;

/// Why a [`Client`](super::Client) call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    #[error("JSON-RPC error {code}: {message}")]
    Rpc {
        /// The JSON-RPC error code.
        code: i64,
        /// The server's message.
        message: String,
        /// Structured details, if any.
        data: Option<Value>,
    },
    /// The connection to the server ended before the answer came.
    #[error("the server connection is closed")]
    Closed,
    /// The answer does not have the shape the method promises.
    #[error("unexpected answer: {0}")]
    Malformed(String),
    /// The server kept asking for input past the client's round limit.
    #[error("the server asked for input more than {0} times")]
    TooManyRounds(usize),
    /// HTTP mode: the server answered with a status and a body that is not
    /// a JSON-RPC response (e.g. 401 from an authorization layer).
    #[error("HTTP {status}: {body}")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// The response body, as text.
        body: String,
    },
    /// HTTP mode: the request could not be sent or its answer not read.
    #[error("transport error: {0}")]
    Transport(String),
    /// The operation does not exist on this client's transport or wire
    /// (e.g. a GET stream on the in-memory client).
    #[error("not supported here: {0}")]
    Unsupported(&'static str),
}

impl ClientError {
    /// The JSON-RPC error code, when the server answered with an error.
    pub fn code(&self) -> Option<i64> {
        match self {
            Self::Rpc { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// A response's `error` object as a [`ClientError::Rpc`].
    pub(crate) fn from_error_object(error: &Value) -> Self {
        Self::Rpc {
            code: error["code"].as_i64().unwrap_or(0),
            message: error["message"].as_str().unwrap_or_default().to_owned(),
            data: error.get("data").cloned(),
        }
    }
}
