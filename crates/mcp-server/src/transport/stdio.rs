//! The stdio transport: one JSON-RPC message per line on stdin, responses
//! and notifications as lines on stdout, nothing else on stdout.
//!
//! Requests are served concurrently; a single writer task owns stdout so
//! lines never interleave. The process may serve a legacy session (after
//! `initialize`) and modern stateless requests side by side. On EOF the
//! reader stops, open subscriptions end, in-flight requests finish, and
//! the function returns.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use mcp_protocol::jsonrpc::{Message, notification_json};
use mcp_protocol::{ProtocolError, ProtocolVersion, Request, RequestId, Response, depth, meta};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;

use crate::dispatch::{Inbound, Reply, Wire};
use crate::server::Server;
use crate::session::{Session, lock};

/// Limits of the stdio transport.
#[derive(Clone, Debug)]
pub struct StdioConfig {
    /// Longest accepted line (one message), in bytes.
    pub max_message_bytes: usize,
    /// Deepest JSON nesting accepted.
    pub max_json_depth: usize,
    /// Values attached to every request, e.g. the
    /// [`Principal`](crate::Principal) built from environment credentials
    /// (stdio has no per-request authentication).
    pub extensions: Arc<http::Extensions>,
}

impl Default for StdioConfig {
    fn default() -> Self {
        Self {
            max_message_bytes: 4 * 1024 * 1024,
            max_json_depth: 64,
            extensions: Arc::new(http::Extensions::new()),
        }
    }
}

/// Serves on the process's stdin and stdout until stdin closes.
pub async fn serve_stdio(server: Server, config: StdioConfig) -> std::io::Result<()> {
    serve(server, config, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Per-process state of the connection.
struct Connection {
    server: Server,
    /// The legacy session, once the client sent `initialize`.
    session: Mutex<Option<Arc<Session>>>,
    /// Requests being served, for `notifications/cancelled` (both wires).
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Everything bound for stdout.
    out: mpsc::Sender<String>,
    /// Fires at EOF: subscriptions end.
    closing: CancellationToken,
    /// Attached to every request.
    extensions: Arc<http::Extensions>,
}

/// Serves on any byte streams (stdin/stdout, a socket, a test pipe).
pub async fn serve<R, W>(
    server: Server,
    config: StdioConfig,
    reader: R,
    mut writer: W,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, mut out_rx) = mpsc::channel::<String>(256);
    let writer_task = tokio::spawn(async move {
        while let Some(line) = out_rx.recv().await {
            writer.write_all(line.as_bytes()).await?;
            writer.write_all(b"\n").await?;
            writer.flush().await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let conn = Arc::new(Connection {
        server,
        session: Mutex::new(None),
        in_flight: Mutex::new(HashMap::new()),
        out,
        closing: CancellationToken::new(),
        extensions: Arc::clone(&config.extensions),
    });
    let mut lines = FramedRead::new(
        reader,
        LinesCodec::new_with_max_length(config.max_message_bytes),
    );
    let mut tasks = JoinSet::new();
    while let Some(line) = lines.next().await {
        let line = match line {
            Ok(l) => l,
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                let e = ProtocolError::invalid_request(format!(
                    "Invalid request: message longer than {} bytes.",
                    config.max_message_bytes
                ));
                conn.send(Response::error(None, e).to_json()).await;
                continue;
            }
            Err(LinesCodecError::Io(e)) => {
                tracing::warn!(error = %e, "stdin read failed; stopping");
                break;
            }
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if depth::nesting_depth(line.as_bytes(), config.max_json_depth) > config.max_json_depth {
            let e = ProtocolError::invalid_request(format!(
                "Invalid request: JSON nesting deeper than {} levels.",
                config.max_json_depth
            ));
            conn.send(Response::error(None, e).to_json()).await;
            continue;
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                let r = Response::error(None, ProtocolError::parse_error(e));
                conn.send(r.to_json()).await;
                continue;
            }
        };
        if let Value::Array(items) = value {
            let session = lock(&conn.session).clone();
            match session.filter(|s| s.version() == ProtocolVersion::V2025_03_26) {
                Some(s) if !items.is_empty() => {
                    let conn = Arc::clone(&conn);
                    tasks.spawn(async move { conn.batch(s, items).await });
                }
                _ => {
                    let e = ProtocolError::invalid_request(
                        "Invalid request: batch arrays are only accepted in a 2025-03-26 session; send one JSON-RPC message per line.",
                    );
                    conn.send(Response::error(None, e).to_json()).await;
                }
            }
            continue;
        }
        match Message::from_value(value) {
            Err(e) => conn.send(Response::error(e.id, e.error).to_json()).await,
            Ok(Message::Request(request)) => {
                let conn = Arc::clone(&conn);
                tasks.spawn(async move { conn.request(request).await });
            }
            Ok(Message::Notification(n)) => {
                if n.method == "notifications/cancelled"
                    && let Some(id) = n.params.get("requestId").and_then(RequestId::from_value)
                    && let Some(token) = lock(&conn.in_flight).remove(&id)
                {
                    tracing::debug!(request = %id, "request cancelled by client");
                    token.cancel();
                }
                let session = lock(&conn.session).clone();
                conn.server.handle_notification(&n, session.as_deref());
            }
            Ok(Message::Response(r)) => {
                let session = lock(&conn.session).clone();
                if !conn.server.handle_peer_response(r, session.as_deref()) {
                    tracing::debug!("ignoring a response that answers no pending request");
                }
            }
        }
        // Reap finished tasks so the set does not grow without bound.
        while tasks.try_join_next().is_some() {}
    }
    tracing::info!("stdin closed; finishing in-flight requests");
    conn.closing.cancel();
    while tasks.join_next().await.is_some() {}
    drop(conn);
    match writer_task.await {
        Ok(r) => r,
        Err(e) => Err(std::io::Error::other(e)),
    }
}

impl Connection {
    async fn send(&self, line: String) {
        let _ = self.out.send(line).await;
    }

    async fn request(self: Arc<Self>, request: Request) {
        let claims_modern = meta::claimed_version(&request.params).is_some();
        let session = lock(&self.session).clone();
        let wire = if claims_modern {
            Wire::Modern
        } else if request.method == "initialize" {
            let (session, response) = self.server.initialize(&request, false);
            if let Some(s) = session {
                *lock(&self.session) = Some(Arc::clone(&s));
                self.forward_events(s);
            }
            self.send(response.to_json()).await;
            return;
        } else if let Some(s) = session {
            Wire::Legacy {
                version: s.version(),
                session: Some(s),
            }
        } else if request.method == "ping" {
            // Legacy clients may ping before initializing.
            let r = Response::result(
                request.id,
                mcp_protocol::jsonrpc::ResultPayload::Json(json!({})),
            );
            self.send(r.to_json()).await;
            return;
        } else {
            // Neither modern `_meta` nor a session: the modern rules apply
            // and name what is missing.
            Wire::Modern
        };
        let id = request.id.clone();
        let cancel = CancellationToken::new();
        lock(&self.in_flight).insert(id.clone(), cancel.clone());
        let inbound = Inbound {
            request,
            wire,
            outbound: Some(self.out.clone()),
            cancel: cancel.clone(),
            extensions: Arc::clone(&self.extensions),
        };
        match self.server.handle(inbound).await {
            Reply::Response(r) => self.send(r.to_json()).await,
            Reply::Cancelled => {}
            Reply::Listen(mut listener) => {
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
                    // The server ends the subscription: the final result,
                    // then the cancellation that tears down a stdio listen.
                    self.send(listener.final_response().to_json()).await;
                    let params =
                        json!({ "requestId": listener.id(), "reason": "server shutting down" });
                    self.send(notification_json("notifications/cancelled", params))
                        .await;
                }
            }
        }
        lock(&self.in_flight).remove(&id);
    }

    /// A 2025-03-26 batch: every request served, the responses sent as one array.
    async fn batch(self: Arc<Self>, session: Arc<Session>, items: Vec<Value>) {
        let responses = self
            .server
            .handle_batch(
                items,
                session,
                Some(self.out.clone()),
                Arc::clone(&self.extensions),
            )
            .await;
        if !responses.is_empty() {
            let body: Vec<String> = responses.iter().map(Response::to_json).collect();
            self.send(format!("[{}]", body.join(","))).await;
        }
    }

    /// Legacy sessions get list changes unsolicited (no subscription step).
    fn forward_events(&self, session: Arc<Session>) {
        self.server
            .forward_to_session(session, self.out.clone(), self.closing.clone());
    }
}
