//! Server-wide events that open subscriptions fan out to clients.

use crate::observe::metrics::StreamKind;

/// Something changed that clients may want to know about.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum ServerEvent {
    /// The tool set changed.
    ToolsChanged,
    /// The prompt set changed.
    PromptsChanged,
    /// The resource set changed.
    ResourcesChanged,
    /// One resource's contents changed.
    ResourceUpdated(String),
}

impl ServerEvent {
    /// The notification method that announces this event.
    pub fn method(&self) -> &'static str {
        match self {
            Self::ToolsChanged => "notifications/tools/list_changed",
            Self::PromptsChanged => "notifications/prompts/list_changed",
            Self::ResourcesChanged => "notifications/resources/list_changed",
            Self::ResourceUpdated(_) => "notifications/resources/updated",
        }
    }
}

impl crate::Server {
    /// Forwards server events to a legacy session as unsolicited
    /// notifications (legacy revisions have no subscription step): list
    /// changes always, resource updates only for URIs the session
    /// subscribed to. Runs until the session ends, `stop` fires or `out`
    /// closes. Both transports use it: HTTP for the session's GET stream,
    /// stdio for the process's session.
    pub fn forward_to_session(
        &self,
        session: std::sync::Arc<crate::Session>,
        out: tokio::sync::mpsc::Sender<String>,
        stop: tokio_util::sync::CancellationToken,
    ) {
        use tokio::sync::broadcast::error::RecvError;
        let mut events = self.events();
        let closed = session.closed_token();
        let metrics = std::sync::Arc::clone(&self.inner.metrics);
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
