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
