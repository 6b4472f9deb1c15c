//! A request body left unread by an early answer (415, 413, 403, 404 …).
//!
//! hyper closes a connection whose request body was not read to its end,
//! after sending the response, which then carries no `Connection: close`:
//! a client that sent its whole body and reuses the connection finds it
//! reset. So the body is handed to the router through a shared handle;
//! once the response is ready, whatever is left is read and discarded
//! (bounded in bytes and time) so the connection stays usable, and when
//! that is not possible the response says `Connection: close`.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use http::{HeaderValue, header};
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;

use crate::sync::lock;

type Slot = Arc<Mutex<Option<Incoming>>>;

/// The router's view of the request body.
struct Shared(Slot);

impl HttpBody for Shared {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match lock(&self.0).as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        lock(&self.0).as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        lock(&self.0)
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), HttpBody::size_hint)
    }
}

/// What is left of a request body once the router has answered.
pub(super) struct Leftover {
    body: Option<Slot>,
    /// The client waits for `100 Continue` before sending the body: it
    /// has sent nothing to drain.
    expects_continue: bool,
}

/// Splits `request` into the request the router gets and its leftover.
/// A request without a body costs nothing.
pub(super) fn split(request: http::Request<Incoming>) -> (http::Request<Body>, Leftover) {
    let expects_continue = request
        .headers()
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if request.body().is_end_stream() {
        let leftover = Leftover {
            body: None,
            expects_continue,
        };
        return (request.map(Body::new), leftover);
    }
    let slot: Slot = Arc::new(Mutex::new(None));
    let request = request.map(|b| {
        *lock(&slot) = Some(b);
        Body::new(Shared(Arc::clone(&slot)))
    });
    let leftover = Leftover {
        body: Some(slot),
        expects_continue,
    };
    (request, leftover)
}

impl Leftover {
    /// Reads and discards the rest of the body (at most `max_bytes`,
    /// within `deadline`); if it cannot, marks `response` to close the
    /// connection.
    pub(super) async fn settle(
        self,
        response: &mut Response,
        max_bytes: usize,
        deadline: Duration,
    ) {
        let Some(slot) = self.body else { return };
        let Some(mut body) = lock(&slot).take() else {
            return;
        };
        if body.is_end_stream() || closes(response) {
            return;
        }
        let drained = !self.expects_continue
            && body
                .size_hint()
                .upper()
                .is_none_or(|n| n <= max_bytes as u64)
            && tokio::time::timeout(deadline, discard(&mut body, max_bytes))
                .await
                .unwrap_or(false);
        if !drained {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
    }
}

/// Whether the response already closes the connection.
fn closes(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONNECTION)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"))
}

/// Reads `body` to its end; false past `max_bytes` or on an error.
async fn discard(body: &mut Incoming, max_bytes: usize) -> bool {
    let mut seen = 0usize;
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await {
        let Ok(frame) = frame else { return false };
        if let Some(data) = frame.data_ref() {
            seen = seen.saturating_add(data.len());
            if seen > max_bytes {
                return false;
            }
        }
    }
    true
}
