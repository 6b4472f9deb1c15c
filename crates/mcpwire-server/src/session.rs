//! Legacy sessions: what an `initialize` handshake establishes for clients
//! of the 2024-11-05 … 2025-11-25 revisions (per HTTP session id, or per
//! stdio process). The modern wire has none of this.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcpwire_protocol::error::ErrorObject;
use mcpwire_protocol::jsonrpc::{PeerResponse, request_json};
use mcpwire_protocol::model::LogLevel;
use mcpwire_protocol::{ProtocolVersion, RequestId};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::shared::{SessionRecord, SharedError};

use crate::sync::lock;

/// One legacy session, opened by `initialize` and kept by the engine.
///
/// Transports see it in [`Answer::session`](crate::engine::Answer) (to
/// send its `Mcp-Session-Id`), [`Wire::Legacy`](crate::Wire) and
/// [`Server::find_session`](crate::Server::find_session); they read its id,
/// revision and owner and watch [`closed`](Self::closed). Its bookkeeping
/// (requests in flight, pending server→client requests, subscriptions)
/// belongs to the engine.
pub struct Session {
    /// The `Mcp-Session-Id` (random, visible ASCII).
    id: String,
    /// The negotiated revision.
    version: ProtocolVersion,
    /// Capabilities the client declared at `initialize` (session-wide in legacy).
    client_capabilities: Arc<Map<String, Value>>,
    /// The client's `clientInfo`.
    client_info: Option<Value>,
    /// Set by `logging/setLevel`; no log messages until then.
    log_level: Mutex<Option<LogLevel>>,
    /// Our requests to the client awaiting its response.
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, ErrorObject>>>>,
    /// Requests being served, for `notifications/cancelled`.
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Resource URIs the client subscribed to.
    subscriptions: Mutex<HashSet<String>>,
    /// Ids for our requests to the client.
    next_request: AtomicU64,
    /// The client sent `notifications/initialized`.
    initialized: AtomicBool,
    /// Fires when the session ends (DELETE, expiry, shutdown).
    closed: CancellationToken,
    /// For idle expiry.
    last_used: Mutex<Instant>,
    /// The principal that opened the session; only it may use the id.
    owner: std::sync::OnceLock<String>,
    /// The client came back after `initialize`: a session in use is
    /// evicted last, so a flood of fresh sessions cannot push it out.
    used: AtomicBool,
    /// Changes of the shared fields (see [`SessionRecord::revision`]).
    revision: AtomicU64,
    /// When a replica last checked the shared record; `None` forces a
    /// check on next use (a local copy may be stale after a bus outage).
    checked: Mutex<Option<Instant>>,
    /// Called after a change of the shared fields (replicated servers).
    on_change: std::sync::OnceLock<ChangeHook>,
}

/// Receives a session's record after each change of its shared fields.
pub(crate) type ChangeHook = Arc<dyn Fn(SessionRecord) + Send + Sync>;

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session with a fresh id from the OS random source (an error if
    /// there is none: a guessable id would let others take the session).
    pub(crate) fn new(
        version: ProtocolVersion,
        client_capabilities: Map<String, Value>,
        client_info: Option<Value>,
    ) -> Result<Self, getrandom::Error> {
        let mut raw = [0u8; 24];
        getrandom::fill(&mut raw)?;
        let id = URL_SAFE_NO_PAD.encode(raw);
        Ok(Self::with_id(id, version, client_capabilities, client_info))
    }

    fn with_id(
        id: String,
        version: ProtocolVersion,
        client_capabilities: Map<String, Value>,
        client_info: Option<Value>,
    ) -> Self {
        Self {
            id,
            version,
            client_capabilities: Arc::new(client_capabilities),
            client_info,
            log_level: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(HashMap::new()),
            subscriptions: Mutex::new(HashSet::new()),
            next_request: AtomicU64::new(1),
            initialized: AtomicBool::new(false),
            closed: CancellationToken::new(),
            last_used: Mutex::new(Instant::now()),
            owner: std::sync::OnceLock::new(),
            used: AtomicBool::new(false),
            revision: AtomicU64::new(0),
            checked: Mutex::new(Some(Instant::now())),
            on_change: std::sync::OnceLock::new(),
        }
    }

    /// A local copy of a session another replica opened.
    pub(crate) fn from_record(record: &SessionRecord) -> Result<Self, SharedError> {
        let version = ProtocolVersion::parse(&record.version)
            .filter(|v| !v.is_modern())
            .ok_or_else(|| {
                SharedError::Malformed(format!("unknown session version {}", record.version))
            })?;
        let s = Self::with_id(
            record.id.clone(),
            version,
            record.client_capabilities.clone(),
            record.client_info.clone(),
        );
        if let Some(owner) = &record.owner {
            s.bind_owner(owner);
        }
        s.apply(record);
        Ok(s)
    }

    /// What another replica needs to serve this session.
    pub(crate) fn record(&self) -> SessionRecord {
        let mut subscriptions: Vec<String> = lock(&self.subscriptions).iter().cloned().collect();
        subscriptions.sort();
        SessionRecord {
            id: self.id.clone(),
            version: self.version.as_str().to_owned(),
            client_capabilities: Map::clone(&self.client_capabilities),
            client_info: self.client_info.clone(),
            owner: self.owner().map(str::to_owned),
            log_level: self.log_level().map(|l| l.as_str().to_owned()),
            subscriptions,
            initialized: self.initialized.load(Ordering::Relaxed),
            revision: self.revision.load(Ordering::Relaxed),
        }
    }

    /// Takes the shared fields of a record written by another replica
    /// (without calling the change hook: this is not a local change).
    pub(crate) fn apply(&self, record: &SessionRecord) {
        *lock(&self.log_level) = record.log_level.as_deref().and_then(LogLevel::parse);
        *lock(&self.subscriptions) = record.subscriptions.iter().cloned().collect();
        self.initialized
            .store(record.initialized, Ordering::Relaxed);
        self.revision.fetch_max(record.revision, Ordering::Relaxed);
    }

    /// Replicated servers: `hook` receives the record after each change.
    pub(crate) fn on_change(&self, hook: ChangeHook) {
        let _ = self.on_change.set(hook);
    }

    fn changed(&self) {
        self.revision.fetch_add(1, Ordering::Relaxed);
        if let Some(hook) = self.on_change.get() {
            hook(self.record());
        }
    }

    /// Whether the shared record should be checked before use: not
    /// checked for `interval`, or marked stale.
    pub(crate) fn needs_check(&self, interval: Duration) -> bool {
        lock(&self.checked).is_none_or(|t| t.elapsed() >= interval)
    }

    pub(crate) fn set_checked(&self, fresh: bool) {
        *lock(&self.checked) = fresh.then(Instant::now);
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The negotiated revision.
    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    /// Binds the session to the principal that opened it.
    pub(crate) fn bind_owner(&self, subject: &str) {
        let _ = self.owner.set(subject.to_owned());
    }

    /// The subject of the principal that opened the session, if any.
    pub fn owner(&self) -> Option<&str> {
        self.owner.get().map(String::as_str)
    }

    pub(crate) fn client_capabilities(&self) -> Arc<Map<String, Value>> {
        Arc::clone(&self.client_capabilities)
    }

    pub(crate) fn client_info(&self) -> Option<Value> {
        self.client_info.clone()
    }

    pub(crate) fn log_level(&self) -> Option<LogLevel> {
        *lock(&self.log_level)
    }

    pub(crate) fn set_log_level(&self, level: LogLevel) {
        *lock(&self.log_level) = Some(level);
        self.changed();
    }

    pub(crate) fn mark_initialized(&self) {
        self.initialized.store(true, Ordering::Relaxed);
        self.changed();
    }

    /// Fires when the session ends (DELETE, expiry, eviction, shutdown).
    /// A child token: cancelling it does not end the session.
    pub fn closed(&self) -> CancellationToken {
        self.closed.child_token()
    }

    /// The session's own token, for the engine's streams.
    pub(crate) fn closed_token(&self) -> CancellationToken {
        self.closed.clone()
    }

    pub(crate) fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        lock(&self.last_used).elapsed()
    }

    /// Tracks a request so `notifications/cancelled` can reach it.
    pub(crate) fn track(&self, id: RequestId, token: CancellationToken) {
        lock(&self.in_flight).insert(id, token);
    }

    /// Stops tracking a finished request.
    pub(crate) fn untrack(&self, id: &RequestId) {
        lock(&self.in_flight).remove(id);
    }

    /// Cancels a request by id; unknown ids are ignored (it may have finished).
    pub(crate) fn cancel(&self, id: &RequestId) {
        if let Some(t) = lock(&self.in_flight).remove(id) {
            t.cancel();
        }
    }

    /// Adds a subscription; `false` (and nothing changes) when the session
    /// already holds `max` others.
    pub(crate) fn subscribe(&self, uri: String, max: usize) -> bool {
        let mut subscriptions = lock(&self.subscriptions);
        if subscriptions.contains(&uri) {
            return true;
        }
        if subscriptions.len() >= max {
            return false;
        }
        subscriptions.insert(uri);
        drop(subscriptions);
        self.changed();
        true
    }

    pub(crate) fn unsubscribe(&self, uri: &str) {
        if lock(&self.subscriptions).remove(uri) {
            self.changed();
        }
    }

    /// Whether the client subscribed to this resource.
    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.subscriptions).contains(uri)
    }

    /// Delivers a routed response from the client; `false` if nobody waits for it.
    pub(crate) fn resolve(&self, response: PeerResponse) -> bool {
        match lock(&self.pending).remove(&response.id) {
            Some(tx) => tx.send(response.outcome).is_ok(),
            None => false,
        }
    }

    /// Sends a request to the client over `outbound` (the related request's
    /// stream) and waits for the answer.
    pub(crate) async fn request(
        &self,
        outbound: &mpsc::Sender<String>,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, String> {
        let n = self.next_request.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("srv-{n}"));
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        let sent = outbound.send(request_json(&id, method, params)).await;
        let outcome = if sent.is_err() {
            Err("the client's stream closed".to_owned())
        } else {
            tokio::select! {
                r = tokio::time::timeout(timeout, rx) => match r {
                    Ok(Ok(Ok(v))) => Ok(v),
                    Ok(Ok(Err(e))) => Err(format!("the client answered {method} with error {}: {}", e.code, e.message)),
                    Ok(Err(_)) => Err("the session ended".to_owned()),
                    Err(_) => Err(format!("the client did not answer {method} within {}s", timeout.as_secs())),
                },
                _ = cancel.cancelled() => Err("the request was cancelled".to_owned()),
                _ = self.closed.cancelled() => Err("the session ended".to_owned()),
            }
        };
        lock(&self.pending).remove(&id);
        outcome
    }

    /// Ends the session: its requests are cancelled, its streams end.
    pub(crate) fn close(&self) {
        self.closed.cancel();
        for (_, t) in lock(&self.in_flight).drain() {
            t.cancel();
        }
        lock(&self.pending).clear();
    }
}

/// All live HTTP sessions, bounded in number.
pub(crate) struct SessionStore {
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    max_sessions: usize,
    idle_timeout: Duration,
}

/// A session idle this long may be evicted to make room even if it was used.
const EVICTABLE_IDLE: Duration = Duration::from_secs(300);

impl SessionStore {
    pub(crate) fn new(max_sessions: usize, idle_timeout: Duration) -> Self {
        Self {
            sessions: Mutex::new(HashMap::new()),
            max_sessions,
            idle_timeout,
        }
    }

    /// Stores a session. Expired sessions go first; at capacity, the oldest
    /// session never used since its `initialize` makes room, else one idle
    /// for [`EVICTABLE_IDLE`]. A session in active use is never evicted:
    /// when every slot holds one, the new session is refused.
    pub(crate) fn insert(&self, session: Arc<Session>) -> Result<(), ()> {
        let mut map = lock(&self.sessions);
        if map.len() >= self.max_sessions {
            map.retain(|_, s| {
                let keep = s.idle_for() < self.idle_timeout;
                if !keep {
                    s.close();
                }
                keep
            });
        }
        if map.len() >= self.max_sessions {
            let victim = map
                .iter()
                .filter(|(_, s)| !s.used.load(Ordering::Relaxed))
                .max_by_key(|(_, s)| s.idle_for())
                .or_else(|| {
                    map.iter()
                        .filter(|(_, s)| s.idle_for() >= EVICTABLE_IDLE)
                        .max_by_key(|(_, s)| s.idle_for())
                })
                .map(|(k, _)| k.clone());
            match victim.and_then(|k| map.remove(&k)) {
                Some(s) => s.close(),
                None => return Err(()),
            }
        }
        map.insert(session.id.clone(), session);
        Ok(())
    }

    /// The session by id; one idle past the timeout is gone (expired
    /// sessions are otherwise only swept when the table is full).
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        let mut map = lock(&self.sessions);
        let s = map.get(id)?;
        if s.idle_for() >= self.idle_timeout {
            if let Some(s) = map.remove(id) {
                s.close();
            }
            return None;
        }
        s.touch();
        s.used.store(true, Ordering::Relaxed);
        Some(Arc::clone(s))
    }

    /// The local copy of a session, without expiry or use marks (a
    /// replicated server checks the shared record instead).
    pub(crate) fn peek(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.sessions).get(id).cloned()
    }

    /// Keeps a local copy of a shared session; if another request
    /// rehydrated it first, that copy wins (one copy per session). The
    /// local table is a cache here: at capacity the longest idle copy
    /// goes (its record stays; the next use reloads it).
    pub(crate) fn cache(&self, session: Arc<Session>) -> Arc<Session> {
        let mut map = lock(&self.sessions);
        if let Some(s) = map.get(session.id()) {
            return Arc::clone(s);
        }
        if map.len() >= self.max_sessions {
            let victim = map
                .iter()
                .max_by_key(|(_, s)| s.idle_for())
                .map(|(k, _)| k.clone());
            if let Some(s) = victim.and_then(|k| map.remove(&k)) {
                s.close();
            }
        }
        map.insert(session.id.clone(), Arc::clone(&session));
        session
    }

    /// Marks every local copy for a check of its shared record.
    pub(crate) fn mark_all_stale(&self) {
        for s in lock(&self.sessions).values() {
            s.set_checked(false);
        }
    }

    pub(crate) fn remove(&self, id: &str) -> bool {
        match lock(&self.sessions).remove(id) {
            Some(s) => {
                s.close();
                true
            }
            None => false,
        }
    }

    /// Sessions held now.
    pub(crate) fn len(&self) -> usize {
        lock(&self.sessions).len()
    }

    pub(crate) fn close_all(&self) {
        for (_, s) in lock(&self.sessions).drain() {
            s.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancelling_the_public_closed_token_does_not_end_the_session() {
        let s = Session::new(ProtocolVersion::V2025_03_26, Map::new(), None).expect("random");
        s.closed().cancel();
        assert!(!s.closed_token().is_cancelled());
        let watcher = s.closed();
        s.close();
        assert!(watcher.is_cancelled());
    }
}
