//! The JSON-RPC 2.0 envelope: ids, requests, notifications, responses.

use std::fmt;
use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::{ErrorObject, ProtocolError};

/// A request id: a string or an integer (never `null`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl RequestId {
    /// Reads an id from JSON; `None` for null, floats, objects…
    pub fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::String(s) => Some(Self::String(s.clone())),
            Value::Number(n) => n.as_i64().map(Self::Number),
            _ => None,
        }
    }

    /// The id as JSON.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Number(n) => Value::from(*n),
            Self::String(s) => Value::from(s.clone()),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// A client request.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// Correlates the response.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The params object (`{}` when absent).
    pub params: Map<String, Value>,
}

/// A notification (no id, no response).
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The params object (`{}` when absent).
    pub params: Map<String, Value>,
}

/// A response the peer sent us (legacy server→client requests only).
#[derive(Clone, Debug, PartialEq)]
pub struct PeerResponse {
    /// The id of our request.
    pub id: RequestId,
    /// The result, or the error the peer answered with.
    pub outcome: Result<Value, ErrorObject>,
}

/// One incoming JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request that needs a response.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response to a request we sent.
    Response(PeerResponse),
}

/// Why a message could not be read, with the id when it could be read.
#[derive(Clone, Debug, PartialEq)]
pub struct EnvelopeError {
    /// The request id, if one could be read.
    pub id: Option<RequestId>,
    /// The error to answer with.
    pub error: ProtocolError,
}

impl Message {
    /// Parses one message from bytes: -32700 if not JSON, -32600 if not a
    /// single JSON-RPC message (batch arrays included).
    pub fn from_slice(bytes: &[u8]) -> Result<Self, EnvelopeError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| EnvelopeError {
            id: None,
            error: ProtocolError::parse_error(e),
        })?;
        Self::from_value(value)
    }

    /// Classifies a parsed JSON value.
    pub fn from_value(value: Value) -> Result<Self, EnvelopeError> {
        let invalid = |id: Option<RequestId>, msg: &str| EnvelopeError {
            id,
            error: ProtocolError::invalid_request(msg.to_owned()),
        };
        let mut obj = match value {
            Value::Object(o) => o,
            Value::Array(_) => {
                return Err(invalid(
                    None,
                    "Invalid request: batch arrays are not supported; send one JSON-RPC message per request.",
                ));
            }
            _ => {
                return Err(invalid(
                    None,
                    "Invalid request: a JSON-RPC message must be a JSON object.",
                ));
            }
        };
        let raw_id = obj.remove("id");
        let id = raw_id.as_ref().and_then(RequestId::from_value);
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(invalid(id, "Invalid request: \"jsonrpc\" must be \"2.0\"."));
        }
        if let Some(method) = obj.remove("method") {
            let Value::String(method) = method else {
                return Err(invalid(id, "Invalid request: \"method\" must be a string."));
            };
            let params = match obj.remove("params") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(p)) => p,
                Some(_) => {
                    return Err(invalid(
                        id,
                        "Invalid request: \"params\" must be an object.",
                    ));
                }
            };
            return match (raw_id, id) {
                (None, _) => Ok(Message::Notification(Notification { method, params })),
                (Some(_), Some(id)) => Ok(Message::Request(Request { id, method, params })),
                (Some(_), None) => Err(invalid(
                    None,
                    "Invalid request: \"id\" must be a string or an integer that fits in 64 bits.",
                )),
            };
        }
        let Some(id) = id else {
            return Err(invalid(
                None,
                "Invalid request: a message needs \"method\", or \"id\" with \"result\" or \"error\".",
            ));
        };
        if let Some(result) = obj.remove("result") {
            return Ok(Message::Response(PeerResponse {
                id,
                outcome: Ok(result),
            }));
        }
        if let Some(error) = obj.remove("error") {
            let error = serde_json::from_value::<ErrorObject>(error).map_err(|_| {
                invalid(
                    Some(id.clone()),
                    "Invalid request: \"error\" must have an integer code and a message.",
                )
            })?;
            return Ok(Message::Response(PeerResponse {
                id,
                outcome: Err(error),
            }));
        }
        Err(invalid(
            Some(id),
            "Invalid request: a message needs \"method\", or \"result\" or \"error\".",
        ))
    }
}

/// A result body: either built per request, or serialized once and shared
/// (the cached `tools/list` pages).
#[derive(Clone, Debug)]
pub enum ResultPayload {
    /// A JSON value built for this request.
    Json(Value),
    /// A result serialized ahead of time.
    Raw(Arc<RawValue>),
}

impl Serialize for ResultPayload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Json(v) => v.serialize(s),
            Self::Raw(r) => r.serialize(s),
        }
    }
}

impl ResultPayload {
    /// The payload as a JSON value (parses raw payloads; for tests and shaping).
    pub fn to_value(&self) -> Value {
        match self {
            Self::Json(v) => v.clone(),
            Self::Raw(r) => serde_json::from_str(r.get()).unwrap_or(Value::Null),
        }
    }
}

/// A response we send.
#[derive(Clone, Debug)]
pub struct Response {
    /// The request id; `None` only when it could not be read.
    pub id: Option<RequestId>,
    /// The result or the error.
    pub body: Result<ResultPayload, ProtocolError>,
}

impl Response {
    /// A success response.
    pub fn result(id: RequestId, result: ResultPayload) -> Self {
        Self {
            id: Some(id),
            body: Ok(result),
        }
    }

    /// An error response.
    pub fn error(id: Option<RequestId>, error: ProtocolError) -> Self {
        Self {
            id,
            body: Err(error),
        }
    }

    /// A success response around a result serialised ahead of time, as
    /// the text before the result and the result itself: the whole
    /// response is `head`, the result, then `}` (exactly [`Self::to_json`]).
    /// A transport sends the three without copying a large result into
    /// one buffer. `None` for errors and results built per request.
    pub fn split_raw(&self) -> Option<(String, &Arc<RawValue>)> {
        let (Some(id), Ok(ResultPayload::Raw(raw))) = (&self.id, &self.body) else {
            return None;
        };
        // A request id is a string or a number: serialising it cannot fail.
        let id = serde_json::to_string(id).ok()?;
        Some((format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#), raw))
    }

    /// Serializes to compact JSON (no embedded newlines: safe for stdio).
    pub fn to_json(&self) -> String {
        // Serializing maps of JSON values cannot fail.
        serde_json::to_string(self).unwrap_or_else(|_| {
            r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error: response serialization failed."}}"#.to_owned()
        })
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("jsonrpc", "2.0")?;
        if let Some(id) = &self.id {
            m.serialize_entry("id", id)?;
        }
        match &self.body {
            Ok(r) => m.serialize_entry("result", r)?,
            Err(e) => m.serialize_entry("error", &e.to_object())?,
        }
        m.end()
    }
}

/// The answer to a JSON-RPC batch: its responses as one JSON array.
pub fn batch_json(responses: &[Response]) -> String {
    let body: Vec<String> = responses.iter().map(Response::to_json).collect();
    format!("[{}]", body.join(","))
}

/// Builds a notification message as JSON text.
pub fn notification_json(method: &str, params: Value) -> String {
    serde_json::json!({ "jsonrpc": "2.0", "method": method, "params": params }).to_string()
}

/// Builds a request message (server→client, legacy wire only) as JSON text.
pub fn request_json(id: &RequestId, method: &str, params: Value) -> String {
    serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn classifies_requests_notifications_and_responses() {
        let m = Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert!(matches!(m, Ok(Message::Request(r)) if r.id == RequestId::Number(1)));
        let m = Message::from_slice(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(matches!(m, Ok(Message::Notification(_))));
        let m = Message::from_slice(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#);
        assert!(matches!(m, Ok(Message::Response(_))));
    }

    #[test]
    fn rejects_bad_envelopes_with_the_right_codes() {
        let code = |b: &[u8]| Message::from_slice(b).err().map(|e| e.error.code);
        assert_eq!(code(b"{not json"), Some(ErrorCode::ParseError.code()));
        assert_eq!(code(b"[]"), Some(ErrorCode::InvalidRequest.code()));
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#),
            Some(ErrorCode::InvalidRequest.code())
        );
        assert_eq!(
            code(br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#),
            Some(ErrorCode::InvalidRequest.code())
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#),
            Some(ErrorCode::InvalidRequest.code())
        );
    }

    #[test]
    fn keeps_the_id_when_it_can() {
        let e = Message::from_slice(br#"{"jsonrpc":"2.0","id":7,"method":3}"#).err();
        assert_eq!(e.and_then(|e| e.id), Some(RequestId::Number(7)));
    }

    #[test]
    fn serializes_responses_compactly() {
        let r = Response::result(
            RequestId::Number(1),
            ResultPayload::Json(serde_json::json!({})),
        );
        assert_eq!(r.to_json(), r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert!(r.split_raw().is_none(), "built per request");
        let raw: Arc<RawValue> = Arc::from(RawValue::from_string(r#"{"a":[1]}"#.into()).unwrap());
        for id in [RequestId::Number(7), RequestId::String("q\"1".into())] {
            let r = Response::result(id, ResultPayload::Raw(Arc::clone(&raw)));
            let (head, result) = r.split_raw().unwrap();
            assert_eq!(format!("{head}{}}}", result.get()), r.to_json());
        }
        let r = Response::error(None, ProtocolError::parse_error("x"));
        assert!(r.split_raw().is_none(), "an error");
        assert!(
            r.to_json()
                .starts_with(r#"{"jsonrpc":"2.0","error":{"code":-32700"#)
        );
    }
}
