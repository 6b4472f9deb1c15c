//! The engine's front door: every transport hands it the bytes of one
//! message plus what the transport knows ([`Origin`]), and gets back what
//! to send ([`Accepted`]).
//!
//! Everything about the message envelope lives here, identical for every
//! transport: size and depth limits, parsing, the wire and version
//! decision (one `_meta` read), batch rules, `initialize` and lifecycle
//! ordering, and panic isolation of every request. Transports only move
//! bytes and map [`ErrorStatus`] hints to their own status codes.
//!
//! - `wire` decides which wire a request is on and checks its version
//!   and headers;
//! - `connection` is the per-connection state of stream transports
//!   (stdio, the 2024-11-05 HTTP+SSE transport);
//! - `pending` is a request accepted and ready to run.

mod connection;
mod pending;
mod replicas;
mod wire;

use std::sync::Arc;

use http::HeaderMap;
use mcpwire_protocol::error::ErrorStatus;
use mcpwire_protocol::headers::{SESSION_ID, single};
use mcpwire_protocol::jsonrpc::Message;
use mcpwire_protocol::{ProtocolError, ProtocolVersion, RequestId, Response, depth};
use serde_json::Value;

pub use connection::{Connection, MAX_IN_FLIGHT};
pub use pending::Pending;
pub(crate) use wire::VersionHeader;
#[cfg(feature = "http")]
pub(crate) use wire::check_session_version;

use self::replicas::Replicas;
use crate::access::Principal;
use crate::dispatch::Dispatcher;
use crate::events::ServerEvent;
use crate::registry::RegistrationError;
use crate::session::Session;
use crate::shared::Shared;
use crate::state::State;

/// The engine: the core state, request dispatch over it, and (when
/// replicated) the parts shared with other replicas, which only the engine
/// touches. Applications and transports reach it through the
/// [`Server`](crate::Server) facade.
pub(crate) struct Engine {
    pub(crate) state: Arc<State>,
    pub(crate) dispatch: Dispatcher,
    /// Sessions and events shared with other replicas, if any.
    replicas: Option<Arc<Replicas>>,
}

impl Engine {
    /// An engine over `state`, replicated through `shared` if given; starts
    /// the task that hears the other replicas.
    pub(crate) fn start(
        state: Arc<State>,
        shared: Option<Shared>,
    ) -> Result<Arc<Self>, RegistrationError> {
        let engine = Arc::new(Self {
            dispatch: Dispatcher {
                state: Arc::clone(&state),
            },
            state,
            replicas: shared.map(Replicas::new).transpose()?,
        });
        engine.listen_to_replicas();
        Ok(engine)
    }

    /// Publishes an event to every open subscription, on every replica
    /// when replicated.
    pub(crate) fn notify(&self, event: ServerEvent) {
        if let Some(r) = &self.replicas {
            r.publish_event(event.clone());
        }
        self.state.notify_local(event);
    }
}

/// Size and nesting bounds of one message, set by the transport's config.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct MessageLimits {
    /// Largest message in bytes.
    pub max_bytes: usize,
    /// Deepest JSON nesting.
    pub max_depth: usize,
}

impl MessageLimits {
    /// Messages of at most `max_bytes`, nested at most `max_depth` deep.
    pub const fn new(max_bytes: usize, max_depth: usize) -> Self {
        Self {
            max_bytes,
            max_depth,
        }
    }
}

/// What the transport knows about a message.
pub struct Origin<'a> {
    /// The HTTP request's headers (Streamable HTTP); `None` on stream
    /// transports, whose messages carry no headers.
    pub headers: Option<&'a HeaderMap>,
    /// The connection of a stream transport: it holds the legacy session
    /// that `initialize` opened on it.
    pub connection: Option<&'a Arc<Connection>>,
    /// Values for handlers: the authenticated [`Principal`], the client
    /// address.
    pub extensions: Arc<http::Extensions>,
    /// Bounds of this message.
    pub limits: MessageLimits,
}

impl Origin<'_> {
    fn principal(&self) -> Option<&Principal> {
        self.extensions.get::<Principal>()
    }
}

/// What to do with one message.
#[non_exhaustive]
pub enum Accepted {
    /// Send this answer now (errors, `initialize`, a pre-init `ping`).
    Answer(Answer),
    /// A notification or a response to our request was taken: nothing to
    /// send (HTTP 202).
    Taken,
    /// A request (or a 2025-03-26 batch) to run; see [`Pending::serve`].
    Request(Pending),
}

/// An answer ready to send.
#[derive(Debug)]
pub struct Answer {
    /// The JSON-RPC response.
    pub response: Response,
    /// The status an HTTP transport answers with.
    pub status: ErrorStatus,
    /// The legacy session `initialize` just opened.
    pub session: Option<Arc<Session>>,
}

impl Answer {
    fn error(id: Option<RequestId>, error: ProtocolError, status: ErrorStatus) -> Self {
        Self {
            response: Response::error(id, error),
            status,
            session: None,
        }
    }

    /// An error answer whose status is the error's own hint.
    pub(crate) fn from_error(id: Option<RequestId>, error: ProtocolError, modern: bool) -> Self {
        let status = status_hint(&error, modern);
        Self::error(id, error, status)
    }
}

/// The HTTP status hint of an error. The modern wire maps errors to the
/// statuses the spec names; legacy clients expect 200 for any JSON-RPC
/// error except a malformed message.
pub(crate) fn status_hint(e: &ProtocolError, modern: bool) -> ErrorStatus {
    match (e.status, modern) {
        (
            s @ (ErrorStatus::TooLarge | ErrorStatus::Forbidden | ErrorStatus::TooManyRequests),
            _,
        ) => s,
        (s @ (ErrorStatus::BadRequest | ErrorStatus::NotFound), true) => s,
        (ErrorStatus::BadRequest, false) if e.code == -32700 || e.code == -32600 => {
            ErrorStatus::BadRequest
        }
        _ => ErrorStatus::Answered,
    }
}

/// The status hint of a whole response (200 for results).
pub(crate) fn response_status(response: &Response, modern: bool) -> ErrorStatus {
    match &response.body {
        Ok(_) => ErrorStatus::Answered,
        Err(e) => status_hint(e, modern),
    }
}

/// The error for a message over the size limit.
pub fn too_large(limit: usize) -> ProtocolError {
    ProtocolError::invalid_request(format!(
        "Invalid request: the message is larger than this server's limit of {limit} bytes."
    ))
    .with_status(ErrorStatus::TooLarge)
}

fn session_not_found() -> ProtocolError {
    ProtocolError::invalid_request(
        "Session not found or expired; send initialize to start a new session.",
    )
    .with_status(ErrorStatus::NotFound)
}

impl Engine {
    /// Takes one message from a transport: checks its size and nesting,
    /// parses it, decides its wire and version, applies notifications,
    /// responses and `initialize` at once (so a later message always sees
    /// their effect), and returns requests ready to run. Never fails: bad
    /// input becomes an error [`Answer`].
    pub(crate) async fn accept(self: &Arc<Self>, bytes: &[u8], origin: Origin<'_>) -> Accepted {
        match self.accept_inner(bytes, &origin).await {
            Ok(a) => a,
            Err(answer) => Accepted::Answer(*answer),
        }
    }

    async fn accept_inner(
        self: &Arc<Self>,
        bytes: &[u8],
        origin: &Origin<'_>,
    ) -> Result<Accepted, Box<Answer>> {
        let limits = origin.limits;
        if bytes.len() > limits.max_bytes {
            let e = too_large(limits.max_bytes);
            return Err(Box::new(Answer::error(None, e, ErrorStatus::TooLarge)));
        }
        if depth::nesting_depth(bytes, limits.max_depth) > limits.max_depth {
            let e = ProtocolError::invalid_request(format!(
                "Invalid request: JSON nesting deeper than {} levels.",
                limits.max_depth
            ));
            return Err(Box::new(Answer::error(None, e, ErrorStatus::BadRequest)));
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            Box::new(Answer::error(
                None,
                ProtocolError::parse_error(e),
                ErrorStatus::BadRequest,
            ))
        })?;
        // Read once, up front, like the session (which may wait on the
        // shared store); an error only counts where each is needed.
        let version = origin
            .headers
            .map(VersionHeader::read)
            .transpose()
            .map(Option::flatten);
        let looked = self.session_for(origin, &version).await;
        if let Value::Array(items) = value {
            return self.accept_batch(items, origin, looked);
        }
        let message = Message::from_value(value)
            .map_err(|e| Box::new(Answer::error(e.id, e.error, ErrorStatus::BadRequest)))?;
        let request = match message {
            Message::Request(r) => r,
            Message::Notification(n) => {
                let session = looked.map_err(|e| bad(None, e))?;
                if let Some(c) = origin.connection {
                    c.notification(&n);
                }
                self.dispatch.handle_notification(&n, session.as_deref());
                return Ok(Accepted::Taken);
            }
            Message::Response(r) => {
                let session = looked.map_err(|e| bad(None, e))?;
                if self
                    .dispatch
                    .handle_peer_response(r.clone(), session.as_deref())
                    || origin.headers.is_none()
                {
                    return Ok(Accepted::Taken);
                }
                // Another replica may be the one waiting for it.
                if let Some(s) = &session
                    && self.relay_peer_response(s, &r).await
                {
                    return Ok(Accepted::Taken);
                }
                let e = ProtocolError::invalid_request(
                    "Invalid request: this response answers no pending server request.",
                );
                return Err(bad(None, e));
            }
        };
        self.accept_request(request, origin, looked, version).await
    }

    /// A JSON-RPC batch: legal only inside a 2025-03-26 session (the one
    /// revision that had them).
    fn accept_batch(
        self: &Arc<Self>,
        items: Vec<Value>,
        origin: &Origin<'_>,
        looked: Looked,
    ) -> Result<Accepted, Box<Answer>> {
        let session = looked.map_err(|e| bad(None, e))?;
        let Some(session) = session.filter(|s| s.version() == ProtocolVersion::V2025_03_26) else {
            let e = ProtocolError::invalid_request(
                "Invalid request: batch arrays are only accepted in a 2025-03-26 session; send one JSON-RPC message per request.",
            );
            return Err(bad(None, e));
        };
        if items.is_empty() {
            let e = ProtocolError::invalid_request("Invalid request: the batch is empty.");
            return Err(bad(None, e));
        }
        let max = self.state.options.max_batch_items;
        if items.len() > max {
            let e = ProtocolError::invalid_request(format!(
                "Invalid request: a batch may hold at most {max} messages; this one has {}. Send the rest in another batch.",
                items.len()
            ));
            return Err(bad(None, e));
        }
        Ok(Accepted::Request(Pending::batch(
            Arc::clone(self),
            items,
            session,
            origin,
        )))
    }

    /// The legacy session a message belongs to: the connection's, or the
    /// one `Mcp-Session-Id` names (404 for an unknown one, and for one
    /// opened by another principal: a session id is not a credential).
    pub(crate) async fn session_for(
        &self,
        origin: &Origin<'_>,
        version: &Result<Option<VersionHeader>, ProtocolError>,
    ) -> Looked {
        if let Some(c) = origin.connection {
            return Ok(c.session());
        }
        let Some(headers) = origin.headers else {
            return Ok(None);
        };
        let Some(id) = single(headers, SESSION_ID)? else {
            return Ok(None);
        };
        let subject = origin.principal().map(|p| p.subject.as_str());
        match self.find_session(&id).await? {
            Some(s) if s.owner() == subject => {
                let version = version.as_ref().map_err(Clone::clone)?;
                wire::check_session_version(version.as_ref(), &s)?;
                Ok(Some(s))
            }
            _ => Err(session_not_found()),
        }
    }
}

/// The legacy session a message names, looked up before it is needed.
pub(crate) type Looked = Result<Option<Arc<Session>>, ProtocolError>;

/// An envelope error: 400, or the error's own stronger hint (404, 413).
fn bad(id: Option<RequestId>, e: ProtocolError) -> Box<Answer> {
    let status = match e.status {
        // The server's own failure (e.g. the shared session store is
        // down), not a bad message: answered like any -32603.
        ErrorStatus::Answered if e.code == -32603 => ErrorStatus::Answered,
        ErrorStatus::Answered => ErrorStatus::BadRequest,
        s => s,
    };
    Box::new(Answer::error(id, e, status))
}
