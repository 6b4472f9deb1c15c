//! Streamable HTTP: both wires on one endpoint.
//!
//! `POST /mcp` carries one JSON-RPC message. The answer is
//! `application/json`, unless the handler emits something before its
//! result (progress, a log line, a legacy server→client request), in which
//! case the response switches to a request-scoped SSE stream.
//! `subscriptions/listen` always streams. `GET` opens a legacy session's
//! standalone stream; `DELETE` ends a legacy session.
//!
//! Beside it, `GET /sse` + `POST /messages` serve the 2024-11-05 HTTP+SSE
//! transport (see `legacy_sse`).

mod activity;
#[cfg(feature = "auth")]
pub mod auth;
mod body;
mod call;
mod config;
mod connection;
mod drain;
mod held_body;
mod legacy_sse;
mod listener;
mod post;
mod probes;
mod reply;
pub(crate) mod resume;
mod security;
mod sessions;
mod stream;
mod stream_slots;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::response::Response;
use axum::routing::{get, post as route_post};
use tokio::net::TcpListener;

pub use config::{ConnectionLimits, HttpConfig};
pub use listener::serve_with;
pub use probes::{metrics_router, probe_router};

use crate::access::{ClientAddress, Principal, caller_key};
use crate::engine::MessageLimits;
pub use crate::observe::ConnectionStats;
use crate::server::Server;

/// Shared by every request handler.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) server: Server,
    pub(crate) config: Arc<HttpConfig>,
    /// HTTP-only state of legacy sessions (resumable and GET streams).
    pub(crate) sessions: Arc<sessions::HttpSessions>,
    /// Open streams of the 2024-11-05 HTTP+SSE transport.
    pub(crate) sse: Arc<legacy_sse::SseConnections>,
    /// Long-lived streams open, per caller and in total.
    pub(crate) streams: Arc<stream_slots::StreamSlots>,
}

impl AppState {
    /// A slot for one more long-lived stream of the request's caller (the
    /// rate limiter's key), or the 429 to send instead (boxed: a refusal is
    /// the rare path and should not widen every `Result`).
    pub(crate) fn stream_slot(
        &self,
        extensions: &http::Extensions,
        id: Option<mcpwire_protocol::RequestId>,
    ) -> Result<stream_slots::StreamSlot, Box<Response>> {
        let caller = caller_key(
            extensions.get::<Principal>(),
            extensions.get::<ClientAddress>(),
        );
        self.streams.acquire(caller).map_err(|refused| {
            tracing::debug!(?refused, "long-lived stream refused");
            Box::new(refused.response(&self.config, id))
        })
    }

    /// The engine's per-message bounds, from this transport's config.
    pub(crate) fn limits(&self) -> MessageLimits {
        MessageLimits {
            max_bytes: self.config.max_body_bytes,
            max_depth: self.config.max_json_depth,
        }
    }
}

/// The axum router for the MCP endpoint. Add layers (auth, tracing) or
/// merge other routes as needed.
pub fn router(server: Server, config: HttpConfig) -> Router {
    let path = config.path.clone();
    let state = AppState {
        server,
        streams: stream_slots::StreamSlots::new(&config),
        config: Arc::new(config),
        sessions: Arc::default(),
        sse: Arc::default(),
    };
    Router::new()
        .route(
            &path,
            route_post(post::handle)
                .get(stream::get)
                .delete(stream::delete),
        )
        .route(legacy_sse::SSE_PATH, get(legacy_sse::open))
        .route(legacy_sse::MESSAGES_PATH, route_post(legacy_sse::message))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            security::guard,
        ))
        .with_state(state)
}

/// Serves until `shutdown` resolves, then lets in-flight requests finish
/// while long-lived streams end with their final response; connections
/// are bounded by the default [`ConnectionLimits`] (see [`serve_with`]).
pub async fn serve<F>(
    listener: TcpListener,
    router: Router,
    server: Server,
    shutdown: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    let limits = ConnectionLimits::default();
    serve_with(listener, router, server, shutdown, &limits, Arc::default()).await
}
