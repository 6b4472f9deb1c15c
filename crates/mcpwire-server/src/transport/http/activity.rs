//! What one connection is doing, for its timers: requests in flight, when
//! the current request head began, when it last went idle.
//!
//! hyper's own `header_read_timeout` also runs while a keep-alive
//! connection waits for its next request, so it cannot coexist with a
//! longer idle timeout; both clocks are kept here instead. Reads are
//! observed through [`TrackedIo`], requests through [`InFlight`] guards
//! that live until the response body is finished or dropped.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::config::ConnectionLimits;

/// `head_started` when no request head is being received.
const NONE: u64 = u64::MAX;

/// Why a connection's timer fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Expiry {
    /// A request head (or the first one) did not arrive in time.
    Head,
    /// No request came after the last response.
    Idle,
}

/// The shared state of one connection.
#[derive(Debug)]
pub(super) struct Activity {
    base: Instant,
    in_flight: AtomicUsize,
    /// Milliseconds since `base` when the connection last went idle.
    idle_since: AtomicU64,
    /// Milliseconds since `base` of the first byte of the pending request
    /// head, or `NONE`.
    head_started: AtomicU64,
    changed: Notify,
}

impl Activity {
    /// A fresh connection: its first request head is due within the
    /// header-read timeout, counted from now.
    pub(super) fn new() -> Self {
        Self {
            base: Instant::now(),
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            head_started: AtomicU64::new(0),
            changed: Notify::new(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_millis()).unwrap_or(NONE - 1)
    }

    /// Bytes arrived. Between requests they begin the next head.
    fn on_read(&self) {
        if self.in_flight.load(Ordering::Acquire) == 0
            && self
                .head_started
                .compare_exchange(NONE, self.now_ms(), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            self.changed.notify_one();
        }
    }

    /// A request head was parsed; the guard ends the request.
    pub(super) fn request_started(self: &std::sync::Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.head_started.store(NONE, Ordering::Release);
        self.changed.notify_one();
        InFlight(std::sync::Arc::clone(self))
    }

    /// Between two requests, with no new request head arriving: the
    /// connection can close without cutting anything off. A fresh
    /// connection (its first head still due) is not idle.
    pub(super) fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
            && self.head_started.load(Ordering::Acquire) == NONE
    }

    /// The verdict now: expired, or how long until it may be (`None`:
    /// not before something changes).
    fn check(&self, limits: &ConnectionLimits) -> Result<Option<Duration>, Expiry> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return Ok(None);
        }
        let head = self.head_started.load(Ordering::Acquire);
        let (since, limit, expiry) = if head == NONE {
            let idle = self.idle_since.load(Ordering::Acquire);
            (idle, limits.idle_timeout, Expiry::Idle)
        } else {
            (head, limits.header_read_timeout, Expiry::Head)
        };
        let elapsed = Duration::from_millis(self.now_ms().saturating_sub(since));
        match limit.checked_sub(elapsed) {
            Some(left) if !left.is_zero() => Ok(Some(left)),
            _ => Err(expiry),
        }
    }

    /// Resolves when the connection has waited too long for a request
    /// head or sat idle too long. Never while a request is in flight.
    pub(super) async fn expired(&self, limits: &ConnectionLimits) -> Expiry {
        loop {
            let changed = self.changed.notified();
            match self.check(limits) {
                Err(expiry) => return expiry,
                Ok(None) => changed.await,
                Ok(Some(wait)) => {
                    let _ = tokio::time::timeout(wait, changed).await;
                }
            }
        }
    }
}

/// Marks one request in flight until dropped (with its response body).
#[derive(Debug)]
pub(super) struct InFlight(std::sync::Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let a = &self.0;
        if a.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            a.idle_since.store(a.now_ms(), Ordering::Release);
            a.head_started.store(NONE, Ordering::Release);
            a.changed.notify_one();
        }
    }
}

/// A socket that reports reads to its connection's [`Activity`].
pub(super) struct TrackedIo<T> {
    pub(super) inner: T,
    pub(super) activity: std::sync::Arc<Activity>,
}

impl<T: AsyncRead + Unpin> AsyncRead for TrackedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(poll, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.on_read();
        }
        poll
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for TrackedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(2),
            idle_timeout: Duration::from_secs(5),
            ..ConnectionLimits::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn first_head_is_due_within_the_header_timeout() {
        let a = Activity::new();
        assert_eq!(a.expired(&limits()).await, Expiry::Head);
        assert!(a.base.elapsed() >= Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn in_flight_is_never_idle_and_idle_follows_the_response() {
        let a = Arc::new(Activity::new());
        let guard = a.request_started();
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(a.check(&limits()), Ok(None));
        // Bytes of a pipelined request do not start a head clock.
        a.on_read();
        drop(guard);
        let start = Instant::now();
        assert_eq!(a.expired(&limits()).await, Expiry::Idle);
        assert!(start.elapsed() >= Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_started_while_idle_uses_the_header_timeout() {
        let a = Arc::new(Activity::new());
        drop(a.request_started());
        tokio::time::advance(Duration::from_secs(1)).await;
        a.on_read();
        let start = Instant::now();
        assert_eq!(a.expired(&limits()).await, Expiry::Head);
        assert!(start.elapsed() < Duration::from_secs(3));
    }
}
