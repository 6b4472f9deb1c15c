//! What a typed handler may return ([`ToolOutput`]): any
//! `Serialize + JsonSchema` value, serialised per call, or a
//! [`SharedOutput`], serialised once and reused by every call that returns
//! it.
//!
//! A server that caches its answers (a directory, a catalogue) returns the
//! same value to many calls; a `SharedOutput` kept next to the cached value
//! turns each of those calls into a copy of finished bytes: no
//! serialisation, no output scan, no escaping of the text mirror.

use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use mcpwire_protocol::jsonrpc::ResultPayload;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{CallToolResult, ToolError};
use crate::access::json_is_clean;

/// The output of a typed handler: what its `outputSchema` is derived from
/// and how it becomes a result. Implemented for every
/// `Serialize + JsonSchema` type and for [`SharedOutput`]; sealed.
pub trait ToolOutput: sealed::Sealed + 'static {
    /// The JSON Schema of the output.
    #[doc(hidden)]
    fn output_schema() -> Value;
    /// The structured result of one call.
    #[doc(hidden)]
    fn into_result(self) -> Result<CallToolResult, ToolError>;
}

mod sealed {
    pub trait Sealed {}
    impl<T: serde::Serialize + schemars::JsonSchema + 'static> Sealed for T {}
    impl<T: 'static> Sealed for super::SharedOutput<T> {}
}

impl<T: Serialize + JsonSchema + 'static> ToolOutput for T {
    fn output_schema() -> Value {
        schemars::schema_for!(T).to_value()
    }

    fn into_result(self) -> Result<CallToolResult, ToolError> {
        // Serialised once, straight to text; the engine parses it only when
        // it must redact, sanitise or validate it.
        let text = serde_json::to_string(&self).map_err(ToolError::internal)?;
        Ok(CallToolResult::structured_json(text))
    }
}

/// A typed output serialised once, to be returned by many calls: keep it
/// beside the value it was made from (in a cache, with the same lifetime)
/// and return a clone of it from the handler. Cloning is a reference count.
///
/// The wire bytes are exactly those of returning the value itself. The
/// engine still strips fields the caller may not see and sanitises text
/// that needs it (then this call's result is rebuilt from the JSON, as for
/// any typed output); otherwise the finished result is reused, per wire
/// revision.
///
/// ```
/// use mcpwire_server::tool::SharedOutput;
/// # #[derive(serde::Serialize, schemars::JsonSchema)] struct Profile { name: String }
/// let profile = Profile { name: "Ada".into() };
/// let shared = SharedOutput::new(&profile).unwrap();
/// assert_eq!(shared.json(), r#"{"name":"Ada"}"#);
/// ```
pub struct SharedOutput<T> {
    prepared: Arc<Prepared>,
    /// The schema comes from `T`; the value itself is not kept.
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for SharedOutput<T> {
    fn clone(&self) -> Self {
        SharedOutput {
            prepared: Arc::clone(&self.prepared),
            _type: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for SharedOutput<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SharedOutput").field(&self.json()).finish()
    }
}

impl<T: Serialize> SharedOutput<T> {
    /// Serialises `value` (fails only where `serde_json` would).
    pub fn new(value: &T) -> Result<Self, serde_json::Error> {
        let text = serde_json::to_string(value)?;
        Ok(SharedOutput {
            prepared: Arc::new(Prepared::new(text)),
            _type: PhantomData,
        })
    }
}

impl<T> SharedOutput<T> {
    /// The output's JSON.
    pub fn json(&self) -> &str {
        &self.prepared.text
    }
}

impl<T: JsonSchema + 'static> ToolOutput for SharedOutput<T> {
    fn output_schema() -> Value {
        schemars::schema_for!(T).to_value()
    }

    fn into_result(self) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult::shared(self.prepared))
    }
}

/// The serialised output and what every call would otherwise recompute.
/// What the wire looks like is the dispatcher's business (`dispatch::
/// mirrored`): it fills these slots, this type only keeps them.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) text: String,
    /// `json_is_clean(text)`: nothing to sanitise.
    pub(crate) clean: bool,
    /// Length of the result on the wire (for the size limit).
    size: OnceLock<usize>,
    /// Finished results, one per wire shape, each for the server that
    /// made it first.
    payloads: [OnceLock<(u64, Arc<RawValue>)>; SHAPES],
}

/// How many wire shapes a finished result can take.
pub(crate) const SHAPES: usize = 3;

impl Prepared {
    fn new(text: String) -> Prepared {
        Prepared {
            clean: json_is_clean(&text),
            text,
            size: OnceLock::new(),
            payloads: Default::default(),
        }
    }

    /// The result's size on the wire, measured once.
    pub(crate) fn size(&self, measure: impl FnOnce(&str) -> usize) -> usize {
        *self.size.get_or_init(|| measure(&self.text))
    }

    /// The finished result of wire shape `shape` (below [`SHAPES`]) for
    /// the server numbered `server` (a value shared by two servers is
    /// finished anew for the second); `finish` makes it the first time.
    pub(crate) fn payload(
        &self,
        shape: usize,
        server: u64,
        finish: impl FnOnce(&str) -> Option<ResultPayload>,
    ) -> Option<ResultPayload> {
        let slot = self.payloads.get(shape)?;
        if let Some((owner, raw)) = slot.get()
            && *owner == server
        {
            return Some(ResultPayload::Raw(Arc::clone(raw)));
        }
        let payload = finish(&self.text)?;
        if let ResultPayload::Raw(raw) = &payload {
            let _ = slot.set((server, Arc::clone(raw)));
        }
        Some(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, JsonSchema)]
    struct Profile {
        name: String,
    }

    #[test]
    fn schema_and_json_are_those_of_the_value() {
        let shared = SharedOutput::new(&Profile {
            name: "Ada\u{202e}".into(),
        })
        .unwrap();
        assert_eq!(shared.json(), "{\"name\":\"Ada\u{202e}\"}");
        assert!(!shared.prepared.clean, "a bidi override needs sanitising");
        assert_eq!(
            <SharedOutput<Profile> as ToolOutput>::output_schema(),
            <Profile as ToolOutput>::output_schema()
        );
    }

    #[test]
    fn a_payload_is_finished_once_per_shape_and_server() {
        let shared = SharedOutput::new(&Profile { name: "Ada".into() }).unwrap();
        let (one, two) = (
            serde_json::json!({"name": "a"}),
            serde_json::json!({"name": "b"}),
        );
        let finish = |info: &Value| {
            let info = info.clone();
            move |text: &str| {
                let raw = RawValue::from_string(format!("[{text},{info}]")).ok()?;
                Some(ResultPayload::Raw(Arc::from(raw)))
            }
        };
        let raw = |p: Option<ResultPayload>| match p {
            Some(ResultPayload::Raw(r)) => r,
            other => panic!("not raw: {other:?}"),
        };
        let first = raw(shared.prepared.payload(0, 1, finish(&one)));
        let again = raw(shared.prepared.payload(0, 1, |_| None));
        assert!(Arc::ptr_eq(&first, &again), "reused");
        let other = raw(shared.prepared.payload(0, 2, finish(&two)));
        assert!(
            other.get().contains(r#""name":"b""#),
            "another server's info"
        );
        assert!(shared.prepared.payload(SHAPES, 1, finish(&one)).is_none());
    }
}
