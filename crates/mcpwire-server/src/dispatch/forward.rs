//! Server events forwarded to a legacy session's stream.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Dispatcher;
use crate::events::ServerEvent;
use crate::observe::metrics::StreamKind;
use crate::session::Session;

impl Dispatcher {
    /// Forwards server events to a legacy session as unsolicited
    /// notifications (legacy revisions have no subscription step): list
    /// changes always, resource updates only for URIs the session
    /// subscribed to. Runs until the session ends, `stop` fires or `out`
    /// closes. Both transports use it: HTTP for the session's GET stream,
    /// stdio for the process's session.
    pub(crate) fn forward_to_session(
        &self,
        session: Arc<Session>,
        out: mpsc::Sender<String>,
        stop: CancellationToken,
    ) {
        use tokio::sync::broadcast::error::RecvError;
        let mut events = self.state.events.subscribe();
        let closed = session.closed_token();
        let metrics = Arc::clone(&self.state.metrics);
        tokio::spawn(async move {
            let _open = metrics.stream_open(StreamKind::Session);
            loop {
                let event = tokio::select! {
                    e = events.recv() => e,
                    _ = closed.cancelled() => break,
                    _ = stop.cancelled() => break,
                    _ = out.closed() => break,
                };
                let event = match event {
                    Ok(e) => e,
                    // Missed events: a spurious refresh is harmless.
                    Err(RecvError::Lagged(_)) => ServerEvent::ToolsChanged,
                    Err(RecvError::Closed) => break,
                };
                let params = match &event {
                    ServerEvent::ResourceUpdated(uri) if session.is_subscribed(uri) => {
                        serde_json::json!({ "uri": uri })
                    }
                    ServerEvent::ResourceUpdated(_) => continue,
                    _ => serde_json::json!({}),
                };
                let message = mcpwire_protocol::jsonrpc::notification_json(event.method(), params);
                if out.send(message).await.is_err() {
                    break;
                }
                metrics.list_changed_sent(StreamKind::Session);
            }
        });
    }
}
