//! How the engine serves legacy sessions and events across replicas (see
//! [`crate::shared`]): lookups that fall back to the shared record,
//! cluster-wide admission and ending, and the task that applies the other
//! replicas' messages.

use std::sync::{Arc, Weak};
use std::time::Duration;

use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::jsonrpc::{Message, PeerResponse};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::Engine;
use crate::events::ServerEvent;
use crate::registry::RegistrationError;
use crate::session::Session;
use crate::shared::{Admission, BoxFuture, BusMessage, Delivery, Envelope, SessionBounds, Shared};

/// A local copy is trusted this long before its record is checked (and
/// its last use written) again: at most one store round trip per session
/// per interval on the request path.
const CHECK_INTERVAL: Duration = Duration::from_secs(30);

/// At capacity, a used session idle this long may be evicted.
const EVICTABLE_IDLE: Duration = Duration::from_secs(300);

/// The shared parts and this replica's identity.
pub(crate) struct Replicas {
    shared: Shared,
    /// Random id of this replica: it skips its own messages on the bus.
    me: String,
}

impl Replicas {
    pub(crate) fn new(shared: Shared) -> Result<Arc<Self>, RegistrationError> {
        let mut raw = [0u8; 12];
        getrandom::fill(&mut raw).map_err(|e| RegistrationError::Randomness(e.to_string()))?;
        let me = raw.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Arc::new(Self { shared, me }))
    }

    /// Awaits a store call within the timeout; failures become -32603
    /// with a message a client can act on (the server keeps serving).
    async fn call<T>(
        &self,
        what: &str,
        fut: BoxFuture<'_, Result<T, crate::shared::SharedError>>,
    ) -> Result<T, ProtocolError> {
        let outcome = tokio::time::timeout(self.shared.timeout, fut).await;
        let why = match outcome {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {} s", self.shared.timeout.as_secs_f64()),
        };
        tracing::warn!(operation = what, error = %why, "shared session store failed");
        Err(store_unavailable())
    }

    /// Sends a message to the other replicas; a failure is logged (they
    /// catch up through the record checks).
    async fn publish(&self, message: BusMessage) {
        let envelope = Envelope {
            origin: self.me.clone(),
            message,
        };
        let sent = tokio::time::timeout(self.shared.timeout, self.shared.bus.publish(&envelope));
        match sent.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "bus publish failed"),
            Err(_) => tracing::warn!("bus publish timed out"),
        }
    }

    /// Publishes without waiting (from synchronous code).
    fn spawn_publish(self: &Arc<Self>, message: BusMessage) {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let me = Arc::clone(self);
            rt.spawn(async move { me.publish(message).await });
        }
    }

    pub(crate) fn publish_event(self: &Arc<Self>, event: ServerEvent) {
        self.spawn_publish(BusMessage::Event { event });
    }

    /// Writes a session's record after a local change, then tells the
    /// other replicas to refresh their copies.
    fn watch(self: &Arc<Self>, session: &Session) {
        let me = Arc::downgrade(self);
        session.on_change(Arc::new(move |record| {
            let (Some(me), Ok(rt)) = (me.upgrade(), tokio::runtime::Handle::try_current()) else {
                return;
            };
            rt.spawn(async move {
                if me
                    .call("save", me.shared.sessions.save(&record))
                    .await
                    .is_ok()
                {
                    me.publish(BusMessage::SessionChanged { id: record.id })
                        .await;
                }
            });
        }));
    }
}

/// -32603 for a store outage.
fn store_unavailable() -> ProtocolError {
    ProtocolError::internal(
        "Internal error: the shared session store is unavailable; retry in a few seconds.",
    )
}

fn too_many_sessions() -> ProtocolError {
    ProtocolError::rate_limited(
        "Too many open sessions, all in use; retry later or use the stateless 2026-07-28 wire.",
        30,
    )
}

impl Engine {
    /// Spawns the task that applies other replicas' messages.
    pub(super) fn listen_to_replicas(self: &Arc<Self>) {
        if let (Some(r), Ok(rt)) = (&self.replicas, tokio::runtime::Handle::try_current()) {
            let rx = r.shared.bus.subscribe();
            rt.spawn(pump(Arc::downgrade(self), rx));
        } else if self.replicas.is_some() {
            tracing::error!(
                "a replicated server was built outside a Tokio runtime: it will not hear other replicas"
            );
        }
    }

    /// Looks up a legacy session: this replica's copy, or (replicated)
    /// the shared record, loaded into a local copy. `Ok(None)` for an
    /// unknown or expired id; an error if the shared store fails.
    pub async fn find_session(&self, id: &str) -> Result<Option<Arc<Session>>, ProtocolError> {
        let Some(r) = &self.replicas else {
            return Ok(self.state.sessions.get(id));
        };
        let local = self.state.sessions.peek(id);
        if let Some(s) = &local
            && !s.needs_check(CHECK_INTERVAL)
        {
            s.touch();
            return Ok(local);
        }
        let idle = self.state.options.session_idle_timeout;
        let record = r.call("touch", r.shared.sessions.touch(id, idle)).await?;
        let Some(record) = record else {
            if self.state.sessions.remove(id) {
                r.publish(BusMessage::SessionEnded { id: id.to_owned() })
                    .await;
            }
            return Ok(None);
        };
        let session = match local {
            Some(s) => {
                s.apply(&record);
                s
            }
            None => {
                let s = Session::from_record(&record).map_err(|e| {
                    tracing::error!(error = %e, "unreadable session record");
                    store_unavailable()
                })?;
                r.watch(&s);
                self.state.sessions.cache(Arc::new(s))
            }
        };
        session.set_checked(true);
        session.touch();
        Ok(Some(session))
    }

    /// Keeps a session `initialize` just opened, within the (cluster-wide
    /// when replicated) bounds.
    pub(crate) async fn store_session(&self, session: &Arc<Session>) -> Result<(), ProtocolError> {
        let Some(r) = &self.replicas else {
            return self
                .state
                .sessions
                .insert(Arc::clone(session))
                .map_err(|()| too_many_sessions());
        };
        let bounds = SessionBounds {
            max_sessions: self.state.options.max_sessions,
            idle_timeout: self.state.options.session_idle_timeout,
            evictable_idle: EVICTABLE_IDLE,
        };
        let record = session.record();
        match r
            .call("create", r.shared.sessions.create(&record, bounds))
            .await?
        {
            Admission::Full => Err(too_many_sessions()),
            Admission::Admitted { removed } => {
                for id in removed {
                    self.state.sessions.remove(&id);
                    r.publish(BusMessage::SessionEnded { id }).await;
                }
                r.watch(session);
                self.state.sessions.cache(Arc::clone(session));
                Ok(())
            }
        }
    }

    /// Ends a legacy session (on every replica when replicated); `false`
    /// if it did not exist.
    pub async fn end_session(&self, id: &str) -> Result<bool, ProtocolError> {
        let local = self.state.sessions.remove(id);
        let Some(r) = &self.replicas else {
            return Ok(local);
        };
        let removed = r.call("remove", r.shared.sessions.remove(id)).await?;
        r.publish(BusMessage::SessionEnded { id: id.to_owned() })
            .await;
        Ok(removed || local)
    }

    /// A client's answer that no request of this replica waits for: on a
    /// replicated server, it goes to the replica that sent the request.
    /// `false` when not replicated.
    pub(crate) async fn relay_peer_response(&self, session: &Session, r: &PeerResponse) -> bool {
        let Some(replicas) = &self.replicas else {
            return false;
        };
        let mut response = json!({ "jsonrpc": "2.0", "id": r.id.to_value() });
        match &r.outcome {
            Ok(v) => response["result"] = v.clone(),
            Err(e) => response["error"] = serde_json::to_value(e).unwrap_or(Value::Null),
        }
        let message = BusMessage::PeerResponse {
            session: session.id().to_owned(),
            response,
        };
        replicas.publish(message).await;
        true
    }

    /// Applies one message from another replica.
    async fn apply_message(&self, message: BusMessage) {
        match message {
            BusMessage::Event { event } => self.state.notify_local(event),
            BusMessage::SessionEnded { id } => {
                self.state.sessions.remove(&id);
            }
            BusMessage::SessionChanged { id } => {
                if let Some(s) = self.state.sessions.peek(&id) {
                    s.set_checked(false);
                    // Refresh now: a GET stream filters by subscriptions.
                    if let Err(e) = self.find_session(&id).await {
                        tracing::debug!(error = %e, "session refresh failed");
                    }
                }
            }
            BusMessage::PeerResponse { session, response } => {
                let parsed = Message::from_value(response);
                if let (Some(s), Ok(Message::Response(r))) =
                    (self.state.sessions.peek(&session), parsed)
                {
                    s.resolve(r);
                }
            }
        }
    }

    /// After a bus outage: listeners re-read every list, and local
    /// session copies check their record on next use.
    fn resync(&self) {
        tracing::info!("bus reconnected; refreshing lists and sessions");
        self.state.sessions.mark_all_stale();
        for e in [
            ServerEvent::ToolsChanged,
            ServerEvent::PromptsChanged,
            ServerEvent::ResourcesChanged,
        ] {
            self.state.notify_local(e);
        }
    }
}

/// Receives the bus until the server is dropped or shuts down.
async fn pump(engine: Weak<Engine>, mut rx: tokio::sync::broadcast::Receiver<Delivery>) {
    let Some(shutdown) = engine.upgrade().map(|e| e.state.shutdown.clone()) else {
        return;
    };
    loop {
        let delivery = tokio::select! {
            d = rx.recv() => d,
            _ = shutdown.cancelled() => return,
        };
        let Some(server) = engine.upgrade() else {
            return;
        };
        let Some(r) = server.replicas.clone() else {
            return;
        };
        match delivery {
            Ok(Delivery::Message(m)) if m.origin != r.me => {
                server.apply_message(m.message).await;
            }
            Ok(Delivery::Message(_)) => {}
            Ok(Delivery::Resync) | Err(RecvError::Lagged(_)) => server.resync(),
            Err(RecvError::Closed) => return,
        }
    }
}
