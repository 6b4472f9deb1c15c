//! A request's handler, run by the connection's own task.
//!
//! Most requests answer with one JSON body, so spawning a task per request
//! only bought a second task to schedule, a join handle to wake and the
//! handler's future moved twice. The connection's task polls the handler
//! itself; the handler moves to a task of its own only when it must outlive
//! the connection's wait: when the connection goes away before the answer
//! (the handler runs on, so a cancelled call still finishes its audit
//! record and whatever else it does on the way out). Panics are the
//! engine's business: [`crate::engine::Pending::serve`] lets none out.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::dispatch::Reply;

type Handler = Pin<Box<dyn Future<Output = Reply> + Send>>;

/// The handler of one request, polled in place until it answers.
pub(super) struct Call {
    /// `None` once it has answered.
    handler: Option<Handler>,
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
    type Output = Reply;

    /// Polled again after it answered, it stays pending (as a fused
    /// future would); its callers stop polling at the answer.
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reply> {
        let Some(handler) = self.handler.as_mut() else {
            return Poll::Pending;
        };
        let reply = ready!(handler.as_mut().poll(cx));
        self.handler = None;
        Poll::Ready(reply)
    }
}

impl Drop for Call {
    /// The connection stopped waiting before the answer: the handler goes
    /// on in a task of its own (cancelled on the modern wire by its drop
    /// guard, not on the legacy one), as a spawned handler would have.
    /// Outside a runtime (it is shutting down) there is nowhere to run it,
    /// and it is dropped.
    fn drop(&mut self) {
        if let Some(handler) = self.handler.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(handler);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn answers_in_place() {
        let reply = Call::new(async { Reply::Cancelled }).await;
        assert!(matches!(reply, Reply::Cancelled));
    }

    #[tokio::test]
    async fn a_dropped_call_runs_to_its_end() {
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let (finished_tx, finished_rx) = tokio::sync::oneshot::channel();
        let mut call = Call::new(async move {
            let _ = started_tx.send(());
            tokio::time::sleep(Duration::from_millis(20)).await;
            let _ = finished_tx.send(());
            Reply::Cancelled
        });
        // Poll it once (it starts and waits), then let the caller go away.
        tokio::select! {
            _ = &mut call => panic!("answered too early"),
            _ = started_rx => {}
        }
        drop(call);
        // Dropping the handler instead would close the channel unsent.
        let finished = tokio::time::timeout(Duration::from_secs(10), finished_rx).await;
        assert!(matches!(finished, Ok(Ok(()))), "{finished:?}");
    }
}
