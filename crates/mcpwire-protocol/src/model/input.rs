use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// One thing the server needs from the client before it can finish a
/// request (multi round-trip requests): an elicitation, a sampling call
/// or the client's roots. A bare `{method, params}`, no JSON-RPC id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// The request params.
    pub params: Map<String, Value>,
}

/// Input requests keyed by a name the server chooses.
pub type InputRequests = Map<String, Value>;

impl InputRequest {
    /// A form-mode elicitation.
    pub fn elicit(message: impl Into<String>, requested_schema: Value) -> Self {
        Self::with_params(
            "elicitation/create",
            json!({ "message": message.into(), "requestedSchema": requested_schema }),
        )
    }

    /// A sampling request with one user text message.
    pub fn sample(prompt: impl Into<String>, max_tokens: u32) -> Self {
        Self::with_params(
            "sampling/createMessage",
            json!({
                "messages": [{ "role": "user", "content": { "type": "text", "text": prompt.into() } }],
                "maxTokens": max_tokens
            }),
        )
    }

    /// A request for the client's roots.
    pub fn list_roots() -> Self {
        Self::with_params("roots/list", json!({}))
    }

    fn with_params(method: &str, params: Value) -> Self {
        Self {
            method: method.to_owned(),
            params: params.as_object().cloned().unwrap_or_default(),
        }
    }

    /// The client capability this request needs, as a capabilities object
    /// (for -32021 `requiredCapabilities`), and its top-level key.
    pub fn required_capability(&self) -> (&'static str, Value) {
        match self.method.as_str() {
            "sampling/createMessage" => ("sampling", json!({ "sampling": {} })),
            "roots/list" => ("roots", json!({ "roots": {} })),
            _ => {
                if self.params.get("mode").and_then(Value::as_str) == Some("url") {
                    ("elicitation", json!({ "elicitation": { "url": {} } }))
                } else {
                    ("elicitation", json!({ "elicitation": {} }))
                }
            }
        }
    }
}
