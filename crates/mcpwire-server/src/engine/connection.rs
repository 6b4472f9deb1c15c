//! One connection of a stream transport (stdio, the 2024-11-05 HTTP+SSE
//! transport): the legacy session `initialize` opened on it, the requests
//! running on it, and the one queue of lines going back to the client.
//!
//! Messages are taken in the order they arrive: [`Connection::receive`]
//! applies `initialize`, notifications and responses before it returns,
//! so the next message always sees the session; only requests run
//! concurrently, at most [`MAX_IN_FLIGHT`] at once: a client that sends
//! requests without reading the answers cannot make the server hold an
//! unbounded number of them. Past the bound a request is answered at once
//! with a rate-limit error instead of waiting, so the reader never blocks
//! on it (it may be the client's answer to one of our requests that frees
//! a slot).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcpwire_protocol::jsonrpc::{Notification, batch_json, notification_json};
use mcpwire_protocol::{ProtocolError, RequestId, Response};
use serde_json::json;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Engine;
use super::{Accepted, MessageLimits, Origin, Pending, too_large};
use crate::dispatch::{Listener, Reply};
use crate::session::Session;
use crate::sync::lock;

/// Requests one connection may have running at once.
pub const MAX_IN_FLIGHT: usize = 64;

/// A stream transport's connection; create one per client stream.
pub struct Connection {
    server: Arc<Engine>,
    /// The legacy session, once the client sent `initialize`.
    session: Mutex<Option<Arc<Session>>>,
    /// Requests being served, for `notifications/cancelled` (both wires).
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Every line bound for the client; the transport writes them out.
    out: mpsc::Sender<String>,
    /// Fires when the client stops sending: subscriptions end.
    closing: CancellationToken,
    /// The requests running, so the transport can wait for them.
    tasks: TaskTracker,
    /// Free request slots (see [`MAX_IN_FLIGHT`]).
    slots: Arc<Semaphore>,
    /// Attached to every request (e.g. the stdio principal).
    extensions: Arc<http::Extensions>,
    limits: MessageLimits,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

impl Connection {
    /// A connection whose outgoing lines go to `out`.
    pub(crate) fn new(
        server: Arc<Engine>,
        out: mpsc::Sender<String>,
        extensions: Arc<http::Extensions>,
        limits: MessageLimits,
    ) -> Arc<Self> {
        Arc::new(Self {
            server,
            session: Mutex::new(None),
            in_flight: Mutex::new(HashMap::new()),
            out,
            closing: CancellationToken::new(),
            tasks: TaskTracker::new(),
            slots: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            extensions,
            limits,
        })
    }

    /// Takes one message. Lifecycle messages take effect before this
    /// returns; a request is started and runs concurrently.
    pub async fn receive(self: &Arc<Self>, bytes: &[u8]) {
        let origin = Origin {
            headers: None,
            connection: Some(self),
            extensions: Arc::clone(&self.extensions),
            limits: self.limits,
        };
        match self.server.accept(bytes, origin).await {
            Accepted::Answer(a) => self.send(a.response.to_json()).await,
            Accepted::Taken => {}
            Accepted::Request(p) => match Arc::clone(&self.slots).try_acquire_owned() {
                Ok(slot) => {
                    let me = Arc::clone(self);
                    self.tasks.spawn(async move {
                        me.run(p).await;
                        drop(slot);
                    });
                }
                Err(_) => {
                    let e = ProtocolError::rate_limited(
                        format!(
                            "Too many requests in flight on this connection (limit {MAX_IN_FLIGHT}); read the answers before sending more."
                        ),
                        1,
                    );
                    self.send(Response::error(p.id().cloned(), e).to_json())
                        .await;
                }
            },
        }
    }

    /// Answers a message the transport could not read whole (over the
    /// size limit); the connection keeps going.
    pub async fn reject_too_large(&self) {
        let e = too_large(self.limits.max_bytes);
        self.send(Response::error(None, e).to_json()).await;
    }

    /// The client stopped sending (EOF, or the server is shutting down):
    /// subscriptions end with their final response, and this waits until
    /// every running request has answered.
    pub async fn finish(&self) {
        self.closing.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }

    /// The client is gone (its stream broke): running requests are
    /// cancelled and the session ends.
    pub fn abort(&self) {
        self.closing.cancel();
        for (_, t) in lock(&self.in_flight).drain() {
            t.cancel();
        }
        if let Some(s) = lock(&self.session).take() {
            s.close();
        }
    }

    pub(crate) fn session(&self) -> Option<Arc<Session>> {
        lock(&self.session).clone()
    }

    /// Keeps the session `initialize` opened; legacy sessions get list
    /// changes unsolicited (no subscription step).
    pub(crate) fn open_session(&self, session: Arc<Session>) {
        *lock(&self.session) = Some(Arc::clone(&session));
        self.server
            .dispatch
            .forward_to_session(session, self.out.clone(), self.closing.clone());
    }

    pub(crate) fn track(&self, id: RequestId, token: CancellationToken) {
        lock(&self.in_flight).insert(id, token);
    }

    pub(crate) fn untrack(&self, id: &RequestId) {
        lock(&self.in_flight).remove(id);
    }

    /// Applies `notifications/cancelled` to a request on this connection
    /// (either wire); other notifications are the server's.
    pub(crate) fn notification(&self, n: &Notification) {
        if n.method == "notifications/cancelled"
            && let Some(id) = n.params.get("requestId").and_then(RequestId::from_value)
            && let Some(token) = lock(&self.in_flight).remove(&id)
        {
            tracing::debug!(request = %id, "request cancelled by client");
            token.cancel();
        }
    }

    async fn send(&self, line: String) {
        // A closed queue means the client is gone; nothing to tell it.
        let _ = self.out.send(line).await;
    }

    async fn run(self: Arc<Self>, pending: Pending) {
        let id = pending.id().cloned();
        let cancel = CancellationToken::new();
        match pending.serve(Some(self.out.clone()), cancel.clone()).await {
            Reply::Response(r) => self.send(r.to_json()).await,
            Reply::Batch(responses) if !responses.is_empty() => {
                self.send(batch_json(&responses)).await;
            }
            Reply::Batch(_) | Reply::Cancelled => {}
            Reply::Listen(listener) => {
                if let Some(id) = id {
                    self.track(id.clone(), cancel.clone());
                    self.stream_listener(listener, &cancel).await;
                    self.untrack(&id);
                }
            }
        }
    }

    /// A `subscriptions/listen` on a stream: its acknowledgement, its
    /// notifications, and when the server ends it, the final result and
    /// the cancellation that tears it down.
    async fn stream_listener(&self, mut listener: Listener, cancel: &CancellationToken) {
        self.send(listener.acknowledgement()).await;
        loop {
            tokio::select! {
                m = listener.next() => match m {
                    Some(m) => self.send(m).await,
                    None => break,
                },
                _ = cancel.cancelled() => break,
                _ = self.closing.cancelled() => break,
            }
        }
        if !cancel.is_cancelled() {
            self.send(listener.final_response().to_json()).await;
            let params = json!({ "requestId": listener.id(), "reason": "server shutting down" });
            self.send(notification_json("notifications/cancelled", params))
                .await;
        }
    }
}
