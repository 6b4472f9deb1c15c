//! A request's handler, run by the connection's own task.
//!
//! Most requests answer with one JSON body, so spawning a task per request
//! only bought a second task to schedule, a join handle to wake and the
//! handler's future moved twice. The connection's task polls the handler
//! itself; the handler moves to a task of its own only when it must outlive
//! the connection's wait: when the connection goes away before the answer
//! (the handler runs on, so a cancelled call still finishes its audit
//! record and whatever else it does on the way out).

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_util::FutureExt;

use crate::dispatch::Reply;

type Handler = Pin<Box<dyn Future<Output = Reply> + Send>>;

/// The handler of one request, polled in place until it answers.
pub(super) struct Call {
    /// `None` once it has answered.
    handler: Option<Handler>,
}

/// The handler panicked outside the engine's own isolation: its message.
#[derive(Debug)]
pub(super) struct Stopped(String);

impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Call {
    pub(super) fn new(handler: impl Future<Output = Reply> + Send + 'static) -> Call {
        Call {
            handler: Some(Box::pin(handler)),
        }
    }

    /// A call whose handler already answered `reply`.
    pub(super) fn answered(reply: Reply) -> Call {
        Call::new(std::future::ready(reply))
    }
}

impl Future for Call {
    type Output = Result<Reply, Stopped>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(handler) = self.handler.as_mut() else {
            return Poll::Ready(Err(Stopped("polled after it answered".to_owned())));
        };
        // A panic must not take the connection's task (and the other
        // requests queued on it) down with it.
        let outcome = ready!(
            AssertUnwindSafe(handler.as_mut())
                .catch_unwind()
                .poll_unpin(cx)
        );
        self.handler = None;
        Poll::Ready(outcome.map_err(|p| Stopped(panic_message(p.as_ref()))))
    }
}

impl Drop for Call {
    /// The connection stopped waiting before the answer: the handler goes
    /// on in a task of its own (cancelled on the modern wire by its drop
    /// guard, not on the legacy one), as a spawned handler would have.
    fn drop(&mut self) {
        if let Some(handler) = self.handler.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(handler);
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn answers_in_place() {
        let reply = Call::new(async { Reply::Cancelled }).await;
        assert!(matches!(reply, Ok(Reply::Cancelled)));
    }

    #[tokio::test]
    async fn a_panic_becomes_an_error() {
        let reply = Call::new(async { panic!("boom") }).await;
        let e = reply.err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("boom"));
    }

    #[tokio::test]
    async fn a_dropped_call_runs_to_its_end() {
        let finished = Arc::new(AtomicBool::new(false));
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let f = Arc::clone(&finished);
        let mut call = Call::new(async move {
            let _ = started_tx.send(());
            tokio::time::sleep(Duration::from_millis(20)).await;
            f.store(true, Ordering::SeqCst);
            Reply::Cancelled
        });
        // Poll it once (it starts and waits), then let the caller go away.
        tokio::select! {
            _ = &mut call => panic!("answered too early"),
            _ = started_rx => {}
        }
        drop(call);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(finished.load(Ordering::SeqCst));
    }
}
