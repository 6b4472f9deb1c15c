//! What Streamable HTTP keeps per legacy session on top of the engine's
//! [`Session`]: the recorded resumable streams and the standalone GET
//! stream. Keyed by session id; an entry goes when its session ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::resume::EventStore;
use crate::session::Session;
use crate::sync::lock;

/// HTTP state of one session.
#[derive(Default)]
pub(crate) struct HttpSession {
    /// Resumable request streams (2025-11-25 sessions).
    pub(crate) streams: EventStore,
    /// The standalone GET stream, if open.
    standalone: Mutex<Option<mpsc::Sender<String>>>,
}

impl HttpSession {
    /// Opens the standalone stream; `false` if one is already open (the
    /// spec allows one per session so that no message is sent twice).
    pub(crate) fn open_standalone(&self, tx: mpsc::Sender<String>) -> bool {
        let mut s = lock(&self.standalone);
        if s.as_ref().is_some_and(|t| !t.is_closed()) {
            return false;
        }
        *s = Some(tx);
        true
    }
}

/// Every session's HTTP state.
#[derive(Default)]
pub(crate) struct HttpSessions {
    map: Arc<Mutex<HashMap<String, Arc<HttpSession>>>>,
}

impl HttpSessions {
    /// The HTTP state of a live session, created on first use; dropped
    /// when the session ends (DELETE, expiry, eviction, shutdown).
    pub(crate) fn of(&self, session: &Session) -> Arc<HttpSession> {
        let mut map = lock(&self.map);
        if let Some(s) = map.get(session.id()) {
            return Arc::clone(s);
        }
        let state = Arc::new(HttpSession::default());
        map.insert(session.id().to_owned(), Arc::clone(&state));
        let (all, id, closed) = (
            Arc::clone(&self.map),
            session.id().to_owned(),
            session.closed_token(),
        );
        tokio::spawn(async move {
            closed.cancelled().await;
            lock(&all).remove(&id);
        });
        state
    }
}
