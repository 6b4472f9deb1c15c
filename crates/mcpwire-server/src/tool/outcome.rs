//! What a tool handler returns: a complete result, a request for more
//! input (multi round-trip), or an error.

use std::sync::Arc;

use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::model::{Content, InputRequest};
use serde_json::{Map, Value};

use super::output::Prepared;

/// A finished `tools/call` result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallToolResult {
    /// Unstructured content blocks (text, images, …).
    pub content: Vec<Content>,
    /// Structured output; must conform to the tool's output schema.
    pub structured: Option<Value>,
    /// The call failed in a way the model should see and recover from.
    pub is_error: bool,
    /// The only text block is the JSON of `structured` (set by
    /// [`structured`](Self::structured)); the engine keeps it in sync when it
    /// redacts or sanitizes the structured content.
    pub(crate) text_mirrors_structured: bool,
    /// The structured content exists only as that text block (typed
    /// handlers serialise their output once, straight to text); `structured`
    /// is `None` until the engine parses it, which it does only when it must
    /// change or check it (`Server::post_process`).
    pub(crate) structured_is_mirror: bool,
    /// The output was serialised once for many calls ([`SharedOutput`]):
    /// what it knows about its text, and its finished results. Valid while
    /// the structured content is still only the mirror.
    ///
    /// [`SharedOutput`]: super::SharedOutput
    pub(crate) shared: SharedHint,
}

/// A [`CallToolResult`]'s link to its shared form: a cache of work already
/// done, not part of the result's value (equal results compare equal with
/// or without it).
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedHint(pub(crate) Option<Arc<Prepared>>);

impl PartialEq for SharedHint {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl CallToolResult {
    /// A successful result with these content blocks.
    pub fn content(content: Vec<Content>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::content(vec![Content::text(text)])
    }

    /// A structured result, with the same JSON as a text block for clients
    /// that read only text.
    pub fn structured(value: Value) -> Self {
        Self {
            content: vec![Content::text(value.to_string())],
            structured: Some(value),
            is_error: false,
            text_mirrors_structured: true,
            structured_is_mirror: false,
            shared: SharedHint::default(),
        }
    }

    /// A structured result known only by its JSON `text` (a typed
    /// handler's output, serialised once): the text block is the mirror,
    /// and the engine parses it only to redact, sanitise or validate.
    pub(crate) fn structured_json(text: String) -> Self {
        Self {
            content: vec![Content::text(text)],
            structured: None,
            is_error: false,
            text_mirrors_structured: true,
            structured_is_mirror: true,
            shared: SharedHint::default(),
        }
    }

    /// A typed output serialised ahead of time (see `SharedOutput`).
    pub(crate) fn shared(prepared: Arc<Prepared>) -> Self {
        Self {
            shared: SharedHint(Some(Arc::clone(&prepared))),
            ..Self::structured_json(prepared.text.clone())
        }
    }

    /// The shared form of this result, while it still holds.
    pub(crate) fn prepared(&self) -> Option<&Prepared> {
        self.shared
            .0
            .as_deref()
            .filter(|_| self.structured_is_mirror)
    }

    /// Parses a structured content known only as text into `structured`.
    pub(crate) fn parse_mirror(&mut self) -> Result<(), serde_json::Error> {
        if self.structured_is_mirror {
            let text = self.mirror_text().unwrap_or("null");
            self.structured = Some(serde_json::from_str(text)?);
            self.structured_is_mirror = false;
            self.shared = SharedHint::default();
        }
        Ok(())
    }

    /// Whether there is structured content (parsed or as its mirror).
    pub(crate) fn has_structured(&self) -> bool {
        self.structured.is_some() || self.structured_is_mirror
    }

    /// Whether the structured content is a JSON object.
    pub(crate) fn structured_is_object(&self) -> bool {
        match &self.structured {
            Some(value) => value.is_object(),
            None => {
                self.structured_is_mirror && self.mirror_text().is_some_and(|t| t.starts_with('{'))
            }
        }
    }

    /// The JSON text of `structured`, when the only content block mirrors
    /// it (true after the engine's post-processing of a structured result).
    pub(crate) fn mirror_text(&self) -> Option<&str> {
        if !self.text_mirrors_structured || !self.has_structured() {
            return None;
        }
        match self.content.as_slice() {
            [
                Content::Text {
                    text,
                    annotations: None,
                },
            ] => Some(text),
            _ => None,
        }
    }

    /// A tool execution error (`isError: true`) whose text tells the model
    /// what went wrong and how to recover.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(message)],
            structured: None,
            is_error: true,
            text_mirrors_structured: false,
            structured_is_mirror: false,
            shared: SharedHint::default(),
        }
    }

    /// The result in the newest revision's shape (without `resultType`).
    pub fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(
            "content".into(),
            Value::Array(self.content.iter().map(Content::to_value).collect()),
        );
        if let Some(s) = &self.structured {
            m.insert("structuredContent".into(), s.clone());
        } else if self.structured_is_mirror
            && let Some(text) = self.mirror_text()
        {
            let parsed = serde_json::from_str(text).unwrap_or(Value::Null);
            m.insert("structuredContent".into(), parsed);
        }
        if self.is_error {
            m.insert("isError".into(), Value::Bool(true));
        }
        m
    }
}

/// The handler needs answers from the client before it can finish.
///
/// On the modern wire this becomes an `input_required` result; on legacy
/// sessions the engine sends each request to the client itself and calls
/// the handler again with the answers, so one handler serves both wires.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InputRequired {
    /// Named requests, in the order given.
    pub requests: Vec<(String, InputRequest)>,
    /// State the handler wants back on the retry. The engine signs it, binds
    /// it to the tool and its arguments, and gives it an expiry.
    pub state: Option<Value>,
}

impl InputRequired {
    /// An empty set of requests.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a named request.
    pub fn request(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.requests.push((key.into(), request));
        self
    }

    /// Sets the state to get back on the retry.
    pub fn state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }

    /// The first capability a request needs that the client lacks:
    /// `(name, the capabilities object to require)`.
    pub(crate) fn missing_capability(
        &self,
        ctx: &crate::RequestContext,
    ) -> Option<(&'static str, Value)> {
        self.requests
            .iter()
            .map(|(_, r)| r.required_capability())
            .find(|(cap, _)| !ctx.client_supports(cap))
    }

    /// The requests as the wire's `inputRequests` object.
    pub(crate) fn wire_requests(&self) -> Map<String, Value> {
        self.requests
            .iter()
            .map(|(key, r)| {
                let v = serde_json::json!({ "method": r.method, "params": r.params });
                (key.clone(), v)
            })
            .collect()
    }
}

/// What a raw tool handler produces.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolOutcome {
    /// The call finished (successfully or with `isError`).
    Complete(CallToolResult),
    /// The call needs client input first.
    InputRequired(InputRequired),
}

impl ToolOutcome {
    /// A handler's result as the engine sees it: execution errors become
    /// `isError` results, internal errors a logged -32603, a typed handler's
    /// request for input the same as a raw handler's.
    pub(crate) fn settle(
        name: &str,
        outcome: Result<ToolOutcome, ToolError>,
    ) -> Result<ToolOutcome, ProtocolError> {
        match outcome {
            Ok(o) => Ok(o),
            Err(ToolError::Execution(msg)) => Ok(Self::Complete(CallToolResult::error(msg))),
            Err(ToolError::Protocol(e)) => Err(e),
            Err(ToolError::InputRequired(ask)) => Ok(Self::InputRequired(ask)),
            Err(ToolError::Internal(detail)) => {
                tracing::error!(tool = %name, error = %detail, "tool failed");
                Err(ProtocolError::internal(format!(
                    "Internal error while running tool \"{name}\"; the failure was logged."
                )))
            }
        }
    }
}

impl From<CallToolResult> for ToolOutcome {
    fn from(r: CallToolResult) -> Self {
        Self::Complete(r)
    }
}

impl From<InputRequired> for ToolOutcome {
    fn from(r: InputRequired) -> Self {
        Self::InputRequired(r)
    }
}

/// Why a tool call did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// A failure the model should see (`isError: true`): not found, bad
    /// business input, a dependency that answered with an error. The
    /// message says how to recover.
    #[error("{0}")]
    Execution(String),
    /// The request itself is wrong at the protocol level (e.g. -32021).
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// A server-side failure: logged in full, answered as -32603 without
    /// internals.
    #[error("internal error: {0}")]
    Internal(String),
    /// Not a failure: the handler needs answers from the client before it
    /// can finish (multi round-trip). Lets typed handlers ask with `?` or
    /// `Err(ask.into())`; the engine treats it exactly like a raw handler's
    /// [`ToolOutcome::InputRequired`].
    #[error("input required from the client")]
    InputRequired(InputRequired),
}

impl From<InputRequired> for ToolError {
    fn from(ask: InputRequired) -> Self {
        Self::InputRequired(ask)
    }
}

impl ToolError {
    /// A tool execution error with an actionable message.
    pub fn execution(message: impl Into<String>) -> Self {
        Self::Execution(message.into())
    }

    /// A server-side failure; the detail is logged, not sent.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        Self::Internal(detail.to_string())
    }
}
