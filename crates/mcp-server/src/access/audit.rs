//! The audit trail: one record per `tools/call`, written before the
//! response leaves the server.

use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::{Map, Value};

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// The tool returned a result.
    Success,
    /// The tool returned `isError: true` (including invalid arguments).
    ToolError,
    /// The caller lacked the scope for the tool.
    Denied,
    /// The caller exceeded a rate or concurrency limit.
    RateLimited,
    /// A protocol error (unknown tool, bad params, internal error).
    ProtocolError,
    /// The client cancelled the call.
    Cancelled,
}

impl CallOutcome {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::ToolError => "tool_error",
            Self::Denied => "denied",
            Self::RateLimited => "rate_limited",
            Self::ProtocolError => "protocol_error",
            Self::Cancelled => "cancelled",
        }
    }
}

/// One audited call.
#[derive(Clone, Debug, Serialize)]
pub struct AuditRecord {
    /// When the call arrived.
    pub at: SystemTime,
    /// The token subject, if authenticated.
    pub subject: Option<String>,
    /// The OAuth client id, if known.
    pub client_id: Option<String>,
    /// The client's self-reported name (informational).
    pub client_name: Option<String>,
    /// The peer address, if known.
    pub remote_addr: Option<String>,
    /// The tool.
    pub tool: String,
    /// Arguments with secrets and personal values redacted.
    pub arguments: Value,
    /// How it ended.
    pub outcome: CallOutcome,
    /// The error message, for failures.
    pub detail: Option<String>,
    /// Time spent, in milliseconds.
    pub latency_ms: u64,
    /// The protocol revision of the request.
    pub protocol_version: String,
}

/// The future an audit sink returns.
pub type AuditFuture<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// Where audit records go. The engine awaits [`record`](Self::record)
/// before sending the response; an error withholds the response (an
/// unaudited answer must not leave the server).
pub trait AuditSink: Send + Sync + 'static {
    /// Stores one record durably.
    fn record(&self, record: AuditRecord) -> AuditFuture<'_>;
}

/// Argument names whose values are always withheld from the audit trail.
const SECRET_NAMES: [&str; 8] = [
    "password",
    "secret",
    "token",
    "apikey",
    "api_key",
    "authorization",
    "credential",
    "ssn",
];

/// Longest string value kept verbatim in the trail.
const MAX_KEPT: usize = 256;

/// A copy of the arguments safe to store: declared and secret-looking
/// fields replaced, long strings truncated.
pub(crate) fn redact_arguments(arguments: &Map<String, Value>, declared: &[String]) -> Value {
    let mut out = Map::new();
    for (k, v) in arguments {
        let lower = k.to_ascii_lowercase();
        let secret =
            declared.iter().any(|d| d == k) || SECRET_NAMES.iter().any(|s| lower.contains(s));
        let value = if secret {
            Value::from("[redacted]")
        } else {
            match v {
                Value::String(s) if s.len() > MAX_KEPT => {
                    let cut: String = s.chars().take(MAX_KEPT).collect();
                    Value::from(format!("{cut}… [truncated]"))
                }
                Value::Object(m) => redact_arguments(m, declared),
                other => other.clone(),
            }
        };
        out.insert(k.clone(), value);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redacts_declared_and_secret_fields() {
        let args = json!({ "employeeId": "X", "apiToken": "t", "note": "n" });
        let r = redact_arguments(
            args.as_object().unwrap_or(&Map::new()),
            &["note".to_owned()],
        );
        assert_eq!(
            r,
            json!({ "employeeId": "X", "apiToken": "[redacted]", "note": "[redacted]" })
        );
    }
}
