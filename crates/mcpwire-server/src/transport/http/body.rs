//! A JSON-RPC response body sent as its parts: the envelope around a
//! result serialised ahead of time is written next to the shared result
//! (hyper writes the parts with one `writev`), so a large cached result
//! is not copied into a new buffer for every call that returns it.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use http_body::{Body as HttpBody, Frame, SizeHint};
use mcpwire_protocol::Response;
use mcpwire_protocol::jsonrpc::ResultPayload;
use serde_json::value::RawValue;

/// Results smaller than this are copied into one buffer: for them the
/// copy costs less than handing hyper more parts.
const SPLIT_FROM: usize = 32 * 1024;

/// The body of `response`, its exact bytes being `response.to_json()`.
pub(super) fn response_body(response: &Response) -> Body {
    // Checked before `split_raw`, which formats the head: small results
    // (most answers) skip that work.
    let large =
        matches!(&response.body, Ok(ResultPayload::Raw(raw)) if raw.get().len() >= SPLIT_FROM);
    match large.then(|| response.split_raw()).flatten() {
        Some((head, raw)) => {
            let parts = [
                Bytes::from(head),
                Bytes::from_owner(SharedResult(Arc::clone(raw))),
                Bytes::from_static(b"}"),
            ];
            Body::new(Parts::new(parts))
        }
        _ => Body::from(response.to_json()),
    }
}

/// A cached result as bytes, kept alive by its reference count.
struct SharedResult(Arc<RawValue>);

impl AsRef<[u8]> for SharedResult {
    fn as_ref(&self) -> &[u8] {
        self.0.get().as_bytes()
    }
}

/// Parts sent one frame each, with their total length announced (so the
/// response has a `Content-Length`, as a single buffer would).
struct Parts {
    parts: VecDeque<Bytes>,
    remaining: u64,
}

impl Parts {
    fn new(parts: impl IntoIterator<Item = Bytes>) -> Parts {
        let parts: VecDeque<Bytes> = parts.into_iter().filter(|p| !p.is_empty()).collect();
        let remaining = parts.iter().map(|p| p.len() as u64).sum();
        Parts { parts, remaining }
    }
}

impl HttpBody for Parts {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = self.parts.pop_front();
        if let Some(part) = &next {
            self.remaining -= part.len() as u64;
        }
        Poll::Ready(next.map(|part| Ok(Frame::data(part))))
    }

    fn is_end_stream(&self) -> bool {
        self.parts.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpwire_protocol::RequestId;

    async fn sent(response: &Response) -> (Option<u64>, Vec<u8>) {
        let body = response_body(response);
        let exact = body.size_hint().exact();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        (exact, bytes.to_vec())
    }

    #[tokio::test]
    async fn the_parts_are_the_whole_response_with_its_length() {
        for len in [10, SPLIT_FROM, SPLIT_FROM * 3] {
            let text = format!(r#"{{"text":"{}"}}"#, "x".repeat(len));
            let raw: Arc<RawValue> = Arc::from(RawValue::from_string(text).unwrap());
            let response = Response::result(RequestId::Number(42), ResultPayload::Raw(raw));
            let json = response.to_json();
            let (exact, bytes) = sent(&response).await;
            assert_eq!(bytes, json.as_bytes(), "{len}");
            assert_eq!(exact, Some(json.len() as u64), "{len}");
        }
    }
}
