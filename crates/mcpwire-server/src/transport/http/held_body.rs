//! A response body that holds a guard (a request kept in flight, a stream
//! slot) until the body is finished or dropped: whatever the guard counts
//! is released when the client has the whole answer or went away, not
//! when the handler returned.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::response::Response;
use http_body::{Body as HttpBody, Frame, SizeHint};

/// `response` with `guard` held until its body is done.
pub(super) fn hold<G: Send + Unpin + 'static>(response: Response, guard: G) -> Response {
    response.map(|inner| {
        Body::new(Held {
            inner,
            _guard: guard,
        })
    })
}

/// A body and the guard it holds.
struct Held<G> {
    inner: Body,
    _guard: G,
}

impl<G: Unpin> HttpBody for Held<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
