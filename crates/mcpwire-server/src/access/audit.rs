//! The audit trail: one record per `tools/call`, written before the
//! response leaves the server.

use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

use mcpwire_protocol::ErrorCode;
use serde::Serialize;
use serde_json::{Map, Value};

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
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
    /// The call waits for a human yes: the user was asked to confirm, or
    /// an operator's approval is pending.
    ApprovalPending,
    /// The user declined the call in their client.
    ApprovalDeclined,
    /// An operator approved a pending call (recorded by whoever decides).
    ApprovalGranted,
    /// An operator denied the call, or it could not be confirmed.
    ApprovalDenied,
    /// A pending approval was not decided in time.
    ApprovalExpired,
}

impl CallOutcome {
    /// Every outcome, in declaration order (the index of each is its
    /// discriminant).
    pub const ALL: [CallOutcome; 11] = [
        Self::Success,
        Self::ToolError,
        Self::Denied,
        Self::RateLimited,
        Self::ProtocolError,
        Self::Cancelled,
        Self::ApprovalPending,
        Self::ApprovalDeclined,
        Self::ApprovalGranted,
        Self::ApprovalDenied,
        Self::ApprovalExpired,
    ];

    /// The outcome a JSON-RPC error code stands for.
    pub fn of_error(code: i64) -> CallOutcome {
        if code == ErrorCode::AccessDenied.code() {
            Self::Denied
        } else if code == ErrorCode::RateLimited.code() {
            Self::RateLimited
        } else {
            Self::ProtocolError
        }
    }

    /// The stored spelling (also the `outcome` metric label).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::ToolError => "tool_error",
            Self::Denied => "denied",
            Self::RateLimited => "rate_limited",
            Self::ProtocolError => "protocol_error",
            Self::Cancelled => "cancelled",
            Self::ApprovalPending => "approval_pending",
            Self::ApprovalDeclined => "approval_declined",
            Self::ApprovalGranted => "approval_granted",
            Self::ApprovalDenied => "approval_denied",
            Self::ApprovalExpired => "approval_expired",
        }
    }
}

/// One audited call, made by the engine (read-only for sinks: more
/// fields may come).
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
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
    /// Arguments with secrets and personal values redacted, cut to
    /// [`RedactionLimits`].
    pub arguments: Value,
    /// How it ended.
    pub outcome: CallOutcome,
    /// The error message, for failures.
    pub detail: Option<String>,
    /// Time spent, in milliseconds.
    pub latency_ms: u64,
    /// The protocol revision of the request.
    pub protocol_version: String,
    /// The view (`ui://` URI of one this server serves) that made the call
    /// through its host, from the call's `_meta["dev.mcpwire/view"]`;
    /// `None` for a call from the model or the client itself.
    pub via: Option<String>,
}

/// The future an audit sink returns.
pub type AuditFuture<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// Where audit records go. The engine awaits [`record`](Self::record)
/// before sending the response; an error withholds the response (an
/// unaudited answer must not leave the server), so a sink should fail
/// within a bounded time rather than stall calls.
pub trait AuditSink: Send + Sync + 'static {
    /// Stores one record durably. A sink may fold
    /// [`CallOutcome::RateLimited`] and [`CallOutcome::ProtocolError`]
    /// records (a client can send those as fast as it likes, e.g. calls to
    /// made-up tool names) into a counted aggregate and acknowledge them
    /// before they reach the disk.
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

/// Marker stored in place of withheld values.
const REDACTED: &str = "[redacted]";
/// Marker stored in place of values nested deeper than the walk goes.
const TOO_DEEP: &str = "[truncated]";

/// How much of a call's arguments the audit trail keeps.
///
/// The limits bound both the stored bytes per call and the work done to
/// redact (only the kept part of an argument is walked), so a caller
/// cannot grow the trail or burn CPU with one huge or deeply nested call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedactionLimits {
    /// Longest string (value or key), in characters, kept verbatim.
    pub max_string_chars: usize,
    /// Deepest nesting walked; containers below it become `"[truncated]"`.
    pub max_depth: usize,
    /// Array items kept; the rest are replaced by one `"… N more"` item.
    pub max_array_items: usize,
    /// Object members kept; the rest are counted in a `"…"` member.
    pub max_object_entries: usize,
    /// Largest serialized argument object; over it, a marker object
    /// (`"_truncated": true`, `"_bytes"`) holding the members that fit.
    pub max_bytes: usize,
}

impl RedactionLimits {
    /// The defaults: 256 characters, depth 8, 16 items, 64 members, 4 KiB.
    pub const DEFAULT: RedactionLimits = RedactionLimits {
        max_string_chars: 256,
        max_depth: 8,
        max_array_items: 16,
        max_object_entries: 64,
        max_bytes: 4096,
    };
}

impl Default for RedactionLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A copy of the arguments safe to store, with the default limits: see
/// [`redact_arguments_with`].
pub(crate) fn redact_arguments(arguments: &Map<String, Value>, declared: &[String]) -> Value {
    redact_arguments_with(arguments, declared, &RedactionLimits::DEFAULT)
}

/// A copy of the arguments safe to store: at any depth (objects and
/// arrays alike), members named in `declared` or with secret-looking names
/// replaced by `"[redacted]"`; long strings, long arrays, large objects and
/// deep nesting cut with visible markers; and the whole serialized object
/// held to `limits.max_bytes`.
pub(crate) fn redact_arguments_with(
    arguments: &Map<String, Value>,
    declared: &[String],
    limits: &RedactionLimits,
) -> Value {
    let walker = Walker { declared, limits };
    let redacted = walker.object(arguments, 1);
    let size = serialized_len(&redacted);
    if size <= limits.max_bytes {
        return Value::Object(redacted);
    }
    fit_object(redacted, serialized_len(arguments), limits.max_bytes)
}

/// The recursive part of the redaction.
struct Walker<'a> {
    declared: &'a [String],
    limits: &'a RedactionLimits,
}

impl Walker<'_> {
    fn is_secret(&self, key: &str) -> bool {
        let lower = key.to_ascii_lowercase();
        self.declared.iter().any(|d| d == key) || SECRET_NAMES.iter().any(|s| lower.contains(s))
    }

    fn object(&self, object: &Map<String, Value>, depth: usize) -> Map<String, Value> {
        let mut out = Map::new();
        for (k, v) in object.iter().take(self.limits.max_object_entries) {
            let value = if self.is_secret(k) {
                Value::from(REDACTED)
            } else {
                self.value(v, depth)
            };
            // A cut key may collide with another; the first one wins.
            out.entry(self.string(k)).or_insert(value);
        }
        let skipped = object.len().saturating_sub(self.limits.max_object_entries);
        if skipped > 0 {
            out.insert("…".to_owned(), Value::from(format!("{skipped} more")));
        }
        out
    }

    fn value(&self, value: &Value, depth: usize) -> Value {
        match value {
            Value::String(s) => Value::from(self.string(s)),
            Value::Object(_) | Value::Array(_) if depth >= self.limits.max_depth => {
                Value::from(TOO_DEEP)
            }
            Value::Object(m) => Value::Object(self.object(m, depth + 1)),
            Value::Array(items) => Value::Array(self.array(items, depth + 1)),
            other => other.clone(),
        }
    }

    fn array(&self, items: &[Value], depth: usize) -> Vec<Value> {
        let kept = items.len().min(self.limits.max_array_items);
        let mut out: Vec<Value> = items[..kept].iter().map(|v| self.value(v, depth)).collect();
        if items.len() > kept {
            out.push(Value::from(format!("… {} more", items.len() - kept)));
        }
        out
    }

    fn string(&self, s: &str) -> String {
        match s.char_indices().nth(self.limits.max_string_chars) {
            None => s.to_owned(),
            Some((cut, _)) => format!("{}… [truncated]", &s[..cut]),
        }
    }
}

/// Room kept for the marker members of an over-size object.
const MARKER_RESERVE: usize = 64;

/// The marker object for arguments over `max_bytes`: `_truncated`, the
/// size of the arguments as received in `_bytes`, as many members as fit
/// (the smallest first: short ids and flags say most about a call), and
/// how many were left out in `_omitted`.
fn fit_object(redacted: Map<String, Value>, original: usize, max_bytes: usize) -> Value {
    let mut out = Map::new();
    out.insert("_truncated".to_owned(), Value::Bool(true));
    out.insert("_bytes".to_owned(), Value::from(original));
    let mut used = serialized_len(&out);
    let budget = max_bytes.saturating_sub(MARKER_RESERVE);
    let mut members: Vec<(usize, String, Value)> = redacted
        .into_iter()
        // Key, quotes, colon and comma.
        .map(|(k, v)| (serialized_len(&v) + serialized_len(k.as_str()) + 2, k, v))
        .collect();
    members.sort_by_key(|(cost, _, _)| *cost);
    let mut omitted = 0usize;
    for (cost, k, v) in members {
        if used + cost <= budget {
            used += cost;
            out.insert(k, v);
        } else {
            omitted += 1;
        }
    }
    out.insert("_omitted".to_owned(), Value::from(omitted));
    Value::Object(out)
}

/// Bytes of `value`'s compact JSON form, counted as it is written
/// (no string is built): for sizing results against a byte budget.
pub fn serialized_len<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing to a counter cannot fail; a map with non-string keys cannot
    // occur in a `Value`.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serialized_len_counts_what_serde_json_writes() {
        let value = serde_json::json!({"name": "Zoë \"Z\"", "n": [1, 2.5, null], "t": "\u{1}"});
        assert_eq!(serialized_len(&value), value.to_string().len());
    }

    fn redact(args: Value, declared: &[&str], limits: &RedactionLimits) -> Value {
        let declared: Vec<String> = declared.iter().map(|d| (*d).to_owned()).collect();
        let empty = Map::new();
        redact_arguments_with(args.as_object().unwrap_or(&empty), &declared, limits)
    }

    #[test]
    fn redacts_declared_and_secret_fields() {
        let args = json!({ "employeeId": "X", "apiToken": "t", "note": "n" });
        let r = redact(args, &["note"], &RedactionLimits::DEFAULT);
        assert_eq!(
            r,
            json!({ "employeeId": "X", "apiToken": "[redacted]", "note": "[redacted]" })
        );
    }

    #[test]
    fn redacts_inside_arrays_and_nested_objects() {
        let args = json!({
            "list": [{ "password": "x", "name": "a" }, [{ "note": "n" }]],
            "outer": { "inner": { "Authorization": "Bearer y", "ok": 1 } }
        });
        let r = redact(args, &["note"], &RedactionLimits::DEFAULT);
        assert_eq!(
            r,
            json!({
                "list": [{ "password": "[redacted]", "name": "a" }, [{ "note": "[redacted]" }]],
                "outer": { "inner": { "Authorization": "[redacted]", "ok": 1 } }
            })
        );
    }

    #[test]
    fn cuts_long_arrays_strings_and_objects() {
        let limits = RedactionLimits {
            max_string_chars: 3,
            max_array_items: 2,
            max_object_entries: 2,
            ..RedactionLimits::DEFAULT
        };
        let r = redact(json!({ "a": [1, 2, 3, 4, 5], "b": "abcdef" }), &[], &limits);
        assert_eq!(
            r,
            json!({ "a": [1, 2, "… 3 more"], "b": "abc… [truncated]" })
        );
        let r = redact(json!({ "a": 1, "b": 2, "c": 3, "d": 4 }), &[], &limits);
        assert_eq!(r, json!({ "a": 1, "b": 2, "…": "2 more" }));
        // Multi-byte characters are cut on a character boundary.
        let r = redact(json!({ "s": "ééééé" }), &[], &limits);
        assert_eq!(r, json!({ "s": "ééé… [truncated]" }));
    }

    #[test]
    fn stops_at_the_maximum_depth() {
        let limits = RedactionLimits {
            max_depth: 2,
            ..RedactionLimits::DEFAULT
        };
        let r = redact(
            json!({ "a": { "b": { "c": 1 } }, "l": [[1]] }),
            &[],
            &limits,
        );
        assert_eq!(
            r,
            json!({ "a": { "b": "[truncated]" }, "l": ["[truncated]"] })
        );
    }

    #[test]
    fn holds_the_stored_size_under_the_cap() {
        let long = "y".repeat(250);
        let mut args = Map::new();
        for i in 0..60 {
            args.insert(format!("field{i:02}"), Value::from(long.clone()));
        }
        let original = serialized_len(&args);
        let limits = RedactionLimits::DEFAULT;
        let r = redact(Value::Object(args), &[], &limits);
        let stored = serde_json::to_string(&r).unwrap_or_default();
        assert!(stored.len() <= limits.max_bytes, "{} bytes", stored.len());
        assert_eq!(r["_truncated"], true);
        assert_eq!(r["_bytes"], json!(original));
        assert_eq!(r["field00"], json!(long), "members kept");
        assert!(r["_omitted"].as_u64().is_some_and(|n| n > 0));
    }

    #[test]
    fn a_megabyte_argument_stays_small() {
        let big: Vec<Value> = (0..20_000)
            .map(|i| json!({ "password": "hunter2", "n": i, "pad": "z".repeat(40) }))
            .collect();
        let huge_key = "k".repeat(100_000);
        let r = redact(
            json!({ "list": big, huge_key: 1, "deep": [[[[[[[[[[[1]]]]]]]]]]] }),
            &[],
            &RedactionLimits::DEFAULT,
        );
        let stored = serde_json::to_string(&r).unwrap_or_default();
        assert!(
            stored.len() <= RedactionLimits::DEFAULT.max_bytes,
            "{stored}"
        );
        assert!(!stored.contains("hunter2"));
        assert!(stored.contains("19984 more"), "{stored}");
        assert!(stored.contains("[truncated]"));
    }
}
