//! A request accepted by the engine and ready to run. The transport picks
//! where it runs (awaited inline, or polled beside the request's stream)
//! and where its request-scoped messages go; no panic escapes it.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt;
use mcpwire_protocol::jsonrpc::Message;
use mcpwire_protocol::{ProtocolError, Request, RequestId, Response};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Engine;
use super::{Connection, Origin};
use crate::dispatch::{Inbound, Reply, Wire};
use crate::registry::RegisteredTool;
use crate::session::Session;

/// What runs.
enum Work {
    /// One request on its wire.
    One {
        request: Request,
        wire: Wire,
        /// The tool of a `tools/call`, when the engine already looked it up.
        tool: Option<Arc<RegisteredTool>>,
    },
    /// A 2025-03-26 batch inside its session.
    Batch {
        items: Vec<Value>,
        session: Arc<Session>,
    },
}

/// A request (or batch) ready to run; see [`Pending::serve`].
pub struct Pending {
    server: Arc<Engine>,
    work: Work,
    /// Values for handlers; the transport may add its own before serving.
    extensions: Arc<http::Extensions>,
    /// The stream connection, for `notifications/cancelled` by id.
    connection: Option<Arc<Connection>>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("id", &self.id())
            .finish_non_exhaustive()
    }
}

impl Pending {
    pub(super) fn one(
        server: Arc<Engine>,
        request: Request,
        (wire, tool): (Wire, Option<Arc<RegisteredTool>>),
        origin: &Origin<'_>,
    ) -> Self {
        Self {
            server,
            work: Work::One {
                request,
                wire,
                tool,
            },
            extensions: Arc::clone(&origin.extensions),
            connection: origin.connection.cloned(),
        }
    }

    pub(super) fn batch(
        server: Arc<Engine>,
        items: Vec<Value>,
        session: Arc<Session>,
        origin: &Origin<'_>,
    ) -> Self {
        Self {
            server,
            work: Work::Batch { items, session },
            extensions: Arc::clone(&origin.extensions),
            connection: origin.connection.cloned(),
        }
    }

    /// The request id (`None` for a batch).
    pub fn id(&self) -> Option<&RequestId> {
        match &self.work {
            Work::One { request, .. } => Some(&request.id),
            Work::Batch { .. } => None,
        }
    }

    /// Whether the request is on the stateless 2026-07-28 wire.
    pub fn is_modern(&self) -> bool {
        matches!(
            &self.work,
            Work::One {
                wire: Wire::Modern,
                ..
            }
        )
    }

    /// The legacy session the request belongs to.
    pub fn session(&self) -> Option<&Arc<Session>> {
        match &self.work {
            Work::One {
                wire: Wire::Legacy { session, .. },
                ..
            } => session.as_ref(),
            Work::One { .. } => None,
            Work::Batch { session, .. } => Some(session),
        }
    }

    /// Whether this is a batch (answered with one JSON array).
    pub fn is_batch(&self) -> bool {
        matches!(self.work, Work::Batch { .. })
    }

    /// Attaches a value for handlers (e.g. a transport's stream hook).
    pub fn insert_extension<T: Clone + Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.extensions).insert(value);
    }

    /// Runs the request. `outbound` receives request-scoped messages
    /// (progress, logs, server→client requests) when the transport can
    /// carry them; `cancel` fires when the client cancels or goes away. A
    /// panicking handler becomes a logged -32603; the server keeps serving.
    pub async fn serve(
        self,
        outbound: Option<mpsc::Sender<String>>,
        cancel: CancellationToken,
    ) -> Reply {
        let id = self.id().cloned();
        let batch = self.is_batch();
        // The whole run is isolated, so no panic reaches the transport's
        // task; a batch's requests are also isolated one by one, so that
        // one panic does not cost the others their answers.
        match AssertUnwindSafe(self.run(outbound, cancel))
            .catch_unwind()
            .await
        {
            Ok(reply) => reply,
            Err(panic) if batch => Reply::Batch(vec![panicked(id, panic.as_ref())]),
            Err(panic) => Reply::Response(panicked(id, panic.as_ref())),
        }
    }

    async fn run(self, outbound: Option<mpsc::Sender<String>>, cancel: CancellationToken) -> Reply {
        let Pending {
            server,
            work,
            extensions,
            connection,
        } = self;
        let (request, wire, tool) = match work {
            Work::One {
                request,
                wire,
                tool,
            } => (request, wire, tool),
            Work::Batch { items, session } => {
                let batch = Batch {
                    session,
                    outbound,
                    extensions,
                    connection,
                    cancel,
                };
                return Reply::Batch(serve_batch(&server, items, batch).await);
            }
        };
        let tracker = Tracker::new(&request.id, &wire, connection, &cancel);
        let inbound = Inbound {
            request,
            wire,
            outbound,
            cancel,
            extensions,
        };
        let reply = server.dispatch.handle(inbound, tool).await;
        drop(tracker);
        reply
    }
}

/// Runs one request of a batch, turning a panic into a logged -32603
/// answer.
async fn isolate<F>(id: RequestId, fut: F) -> Reply
where
    F: std::future::Future<Output = Reply>,
{
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(reply) => reply,
        Err(panic) => Reply::Response(panicked(Some(id), panic.as_ref())),
    }
}

/// Logs a handler's panic and answers it with a -32603 that says no more.
fn panicked(id: Option<RequestId>, panic: &(dyn std::any::Any + Send)) -> Response {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    let request = id.as_ref().map(ToString::to_string).unwrap_or_default();
    tracing::error!(%request, panic = %what, "request handler panicked");
    Response::error(
        id,
        ProtocolError::internal(
            "Internal error: the request handler failed; the failure was logged.",
        ),
    )
}

/// Keeps a running request findable by `notifications/cancelled` until
/// dropped: in one map, its stream connection's (which sees every
/// notification on the stream, either wire), else its legacy session's
/// (HTTP, where the notification arrives in another POST).
struct Tracker {
    id: RequestId,
    session: Option<Arc<Session>>,
    connection: Option<Arc<Connection>>,
}

impl Tracker {
    fn new(
        id: &RequestId,
        wire: &Wire,
        connection: Option<Arc<Connection>>,
        cancel: &CancellationToken,
    ) -> Self {
        let session = match wire {
            Wire::Legacy { session, .. } if connection.is_none() => session.clone(),
            _ => None,
        };
        if let Some(s) = &session {
            s.track(id.clone(), cancel.clone());
        }
        if let Some(c) = &connection {
            c.track(id.clone(), cancel.clone());
        }
        Self {
            id: id.clone(),
            session,
            connection,
        }
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        if let Some(s) = &self.session {
            s.untrack(&self.id);
        }
        if let Some(c) = &self.connection {
            c.untrack(&self.id);
        }
    }
}

/// What every request of a batch shares.
struct Batch {
    session: Arc<Session>,
    outbound: Option<mpsc::Sender<String>>,
    extensions: Arc<http::Extensions>,
    connection: Option<Arc<Connection>>,
    /// The batch's token: each request runs under a child of it, tracked
    /// by its id, so `notifications/cancelled` stops that one request.
    cancel: CancellationToken,
}

/// Serves a JSON-RPC batch from a 2025-03-26 session (the one revision
/// with batches): requests run concurrently, each cancellable by its id
/// as a lone request is, notifications and routed responses are applied,
/// and the responses come back in one list (empty when the batch held no
/// requests).
async fn serve_batch(server: &Engine, items: Vec<Value>, batch: Batch) -> Vec<Response> {
    let mut responses = Vec::new();
    let mut running = Vec::new();
    for item in items {
        match Message::from_value(item) {
            Err(e) => responses.push(Response::error(e.id, e.error)),
            Ok(Message::Request(r)) if r.method == "initialize" => {
                let e = ProtocolError::invalid_request(
                    "Invalid request: initialize must not be part of a batch.",
                );
                responses.push(Response::error(Some(r.id), e));
            }
            Ok(Message::Request(request)) => {
                let id = request.id.clone();
                let wire = Wire::Legacy {
                    version: batch.session.version(),
                    session: Some(Arc::clone(&batch.session)),
                };
                let cancel = batch.cancel.child_token();
                let tracker = Tracker::new(&id, &wire, batch.connection.clone(), &cancel);
                let inbound = Inbound {
                    request,
                    wire,
                    outbound: batch.outbound.clone(),
                    cancel,
                    extensions: Arc::clone(&batch.extensions),
                };
                let dispatch = &server.dispatch;
                running.push(isolate(id, async move {
                    let reply = dispatch.handle(inbound, None).await;
                    drop(tracker);
                    reply
                }));
            }
            Ok(Message::Notification(n)) => {
                server
                    .dispatch
                    .handle_notification(&n, Some(&batch.session));
            }
            Ok(Message::Response(r)) => {
                server
                    .dispatch
                    .handle_peer_response(r, Some(&batch.session));
            }
        }
    }
    // Concurrently, on this task: a panic in one is isolated by `isolate`.
    for reply in futures_util::future::join_all(running).await {
        if let Reply::Response(r) = reply {
            responses.push(r);
        }
    }
    responses
}
