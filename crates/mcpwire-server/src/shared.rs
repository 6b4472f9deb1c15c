//! State shared between replicas of one server behind a load balancer
//! without stickiness: legacy session records ([`SessionBackend`]) and
//! messages between replicas ([`EventBus`]).
//!
//! Without [`crate::ServerBuilder::shared`] a server keeps everything in
//! its own memory, as before. With it, a replica that does not hold a
//! session loads its record and serves it; ending a session ends it on
//! every replica; [`crate::Server::notify`] reaches every replica's
//! clients; a client's answer to a server→client request reaches the
//! replica that waits for it. The engine owns all of this: transports
//! only see sessions.
//!
//! [`MemorySessions`] and [`MemoryBus`] implement the traits in memory,
//! for several servers in one process (tests); databases implement them
//! outside this crate.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::broadcast;

use crate::events::ServerEvent;
use crate::sync::lock;

/// A boxed future, as the traits return (object-safe async).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A failure of the shared store or bus.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SharedError {
    /// The store cannot be reached now (outage, timeout); retry later.
    #[error("the shared session store is unavailable: {0}")]
    Unavailable(String),
    /// A record or message could not be read.
    #[error("a shared record is malformed: {0}")]
    Malformed(String),
}

/// What another replica needs to serve a legacy session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The negotiated revision, e.g. `2025-11-25`.
    pub version: String,
    /// Client capabilities kept at `initialize`.
    pub client_capabilities: Map<String, Value>,
    /// The client's `clientInfo` as kept.
    pub client_info: Option<Value>,
    /// The subject of the principal that opened the session.
    pub owner: Option<String>,
    /// The level set by `logging/setLevel`, if any.
    pub log_level: Option<String>,
    /// Resource URIs the client subscribed to.
    pub subscriptions: Vec<String>,
    /// The client sent `notifications/initialized`.
    pub initialized: bool,
    /// Changes of the mutable fields, so that a late write of an older
    /// state cannot replace a newer one.
    pub revision: u64,
}

/// The cluster-wide bounds a new session must fit in.
#[derive(Clone, Copy, Debug)]
pub struct SessionBounds {
    /// Most sessions across all replicas.
    pub max_sessions: usize,
    /// Sessions unused this long are expired (and pruned).
    pub idle_timeout: Duration,
    /// At capacity, a used session idle this long may be evicted.
    pub evictable_idle: Duration,
}

/// The outcome of storing a new session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Stored; these sessions were expired or evicted to make room (the
    /// engine ends them on every replica).
    Admitted {
        /// Ids of the sessions removed.
        removed: Vec<String>,
    },
    /// Every slot holds a session in use: refused.
    Full,
}

/// Shared legacy session records.
pub trait SessionBackend: Send + Sync + 'static {
    /// Stores a new record within `bounds`: expired records are removed
    /// first; at capacity the longest-idle record never used since its
    /// `initialize` makes room, else one idle for `evictable_idle`, else
    /// [`Admission::Full`]. Must be atomic with respect to other replicas.
    fn create<'a>(
        &'a self,
        record: &'a SessionRecord,
        bounds: SessionBounds,
    ) -> BoxFuture<'a, Result<Admission, SharedError>>;

    /// Marks a session used now and returns its record; `None` if there
    /// is none, or it was idle for `idle_timeout` (it is then removed).
    fn touch<'a>(
        &'a self,
        id: &'a str,
        idle_timeout: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SharedError>>;

    /// Replaces the mutable fields of a record, unless the stored
    /// revision is already newer. A missing record stays missing.
    fn save<'a>(&'a self, record: &'a SessionRecord) -> BoxFuture<'a, Result<(), SharedError>>;

    /// Removes a record; `false` if there was none.
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, SharedError>>;
}

/// What replicas tell each other.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum BusMessage {
    /// A server event for every replica's clients.
    Event {
        /// The event.
        event: ServerEvent,
    },
    /// A session ended (DELETE, expiry, eviction): drop local copies.
    SessionEnded {
        /// The session id.
        id: String,
    },
    /// A session's record changed: refresh local copies.
    SessionChanged {
        /// The session id.
        id: String,
    },
    /// A client's answer to a server→client request, posted to another
    /// replica than the one waiting for it.
    PeerResponse {
        /// The session id.
        session: String,
        /// The JSON-RPC response as the client sent it.
        response: Value,
    },
}

/// A message with the replica that sent it (replicas skip their own).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The sending replica's random id.
    pub origin: String,
    /// The message.
    pub message: BusMessage,
}

/// What a bus subscriber receives.
#[derive(Clone, Debug, PartialEq)]
pub enum Delivery {
    /// A message from some replica (possibly this one).
    Message(Envelope),
    /// The bus was disconnected and is back: messages may have been
    /// missed, so listeners re-read what they cache.
    Resync,
}

/// Messages between replicas.
pub trait EventBus: Send + Sync + 'static {
    /// Sends a message to every replica (including, possibly, this one).
    fn publish<'a>(&'a self, envelope: &'a Envelope) -> BoxFuture<'a, Result<(), SharedError>>;

    /// Receives every message published from now on. A lagging receiver
    /// is treated like [`Delivery::Resync`].
    fn subscribe(&self) -> broadcast::Receiver<Delivery>;
}

/// The shared parts given to [`crate::ServerBuilder::shared`].
#[derive(Clone)]
#[non_exhaustive]
pub struct Shared {
    /// Session records.
    pub sessions: Arc<dyn SessionBackend>,
    /// Messages between replicas.
    pub bus: Arc<dyn EventBus>,
    /// Longest wait for the store on a request's path: past it the
    /// request fails with -32603 instead of hanging.
    pub timeout: Duration,
}

impl Shared {
    /// Shared parts with a 5 s store timeout.
    pub fn new(sessions: Arc<dyn SessionBackend>, bus: Arc<dyn EventBus>) -> Self {
        Self {
            sessions,
            bus,
            timeout: Duration::from_secs(5),
        }
    }
}

/// Session records in memory, shared by the servers given clones of it.
#[derive(Clone, Default)]
pub struct MemorySessions {
    records: Arc<Mutex<HashMap<String, Stored>>>,
}

struct Stored {
    record: SessionRecord,
    last_used: Instant,
    used: bool,
}

impl MemorySessions {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records held now.
    pub fn len(&self) -> usize {
        lock(&self.records).len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SessionBackend for MemorySessions {
    fn create<'a>(
        &'a self,
        record: &'a SessionRecord,
        bounds: SessionBounds,
    ) -> BoxFuture<'a, Result<Admission, SharedError>> {
        Box::pin(async move {
            let mut map = lock(&self.records);
            let mut removed = Vec::new();
            map.retain(|id, s| {
                let keep = s.last_used.elapsed() < bounds.idle_timeout;
                if !keep {
                    removed.push(id.clone());
                }
                keep
            });
            if map.len() >= bounds.max_sessions {
                let victim = map
                    .iter()
                    .filter(|(_, s)| !s.used)
                    .max_by_key(|(_, s)| s.last_used.elapsed())
                    .or_else(|| {
                        map.iter()
                            .filter(|(_, s)| s.last_used.elapsed() >= bounds.evictable_idle)
                            .max_by_key(|(_, s)| s.last_used.elapsed())
                    })
                    .map(|(k, _)| k.clone());
                match victim {
                    Some(k) => {
                        map.remove(&k);
                        removed.push(k);
                    }
                    None => return Ok(Admission::Full),
                }
            }
            let stored = Stored {
                record: record.clone(),
                last_used: Instant::now(),
                used: false,
            };
            map.insert(record.id.clone(), stored);
            Ok(Admission::Admitted { removed })
        })
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        idle_timeout: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SharedError>> {
        Box::pin(async move {
            let mut map = lock(&self.records);
            let Some(s) = map.get_mut(id) else {
                return Ok(None);
            };
            if s.last_used.elapsed() >= idle_timeout {
                map.remove(id);
                return Ok(None);
            }
            s.last_used = Instant::now();
            s.used = true;
            Ok(Some(s.record.clone()))
        })
    }

    fn save<'a>(&'a self, record: &'a SessionRecord) -> BoxFuture<'a, Result<(), SharedError>> {
        Box::pin(async move {
            if let Some(s) = lock(&self.records).get_mut(&record.id)
                && s.record.revision < record.revision
            {
                s.record = record.clone();
            }
            Ok(())
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, SharedError>> {
        Box::pin(async move { Ok(lock(&self.records).remove(id).is_some()) })
    }
}

/// A bus in memory: every server given a clone hears every message.
#[derive(Clone)]
pub struct MemoryBus {
    tx: broadcast::Sender<Delivery>,
}

impl Default for MemoryBus {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBus {
    /// A bus with room for 1024 undelivered messages per subscriber.
    pub fn new() -> Self {
        Self {
            tx: broadcast::channel(1024).0,
        }
    }

    /// Tells subscribers the bus reconnected (as after an outage).
    pub fn resync(&self) {
        let _ = self.tx.send(Delivery::Resync);
    }
}

impl EventBus for MemoryBus {
    fn publish<'a>(&'a self, envelope: &'a Envelope) -> BoxFuture<'a, Result<(), SharedError>> {
        Box::pin(async move {
            // No subscriber is not an error: no replica needs to know.
            let _ = self.tx.send(Delivery::Message(envelope.clone()));
            Ok(())
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<Delivery> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_as_json() {
        let m = Envelope {
            origin: "r1".into(),
            message: BusMessage::Event {
                event: ServerEvent::ResourceUpdated("file:///a".into()),
            },
        };
        let text = serde_json::to_string(&m).unwrap_or_default();
        let back: Envelope = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, m);
    }
}
