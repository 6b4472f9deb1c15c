//! Health probes and the metrics scrape as HTTP routes, to mount outside
//! any authentication: they reveal no directory data.
//!
//! - `GET /healthz` (liveness): `200 ok` whenever the process can answer
//!   HTTP at all.
//! - `GET /readyz` (readiness): `503` with a one-line reason once shutdown
//!   has begun, or while the application's [`ReadinessCheck`] fails; else
//!   `200 ready` (see [`Readiness`]: polling every second costs at most
//!   one check per second).
//! - `GET /metrics`: the Prometheus text format.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};

use crate::observe::prometheus::CONTENT_TYPE;
use crate::observe::{Readiness, ReadinessCheck};
use crate::server::Server;

/// The probe paths: served even beyond the connection cap (see
/// [`ConnectionLimits::probe_reserve`](super::ConnectionLimits::probe_reserve)).
pub(super) const PROBE_PATHS: [&str; 2] = ["/healthz", "/readyz"];

/// `/healthz` and `/readyz`.
pub fn probe_router(server: Server, check: Option<Arc<dyn ReadinessCheck>>) -> Router {
    Router::new()
        .route(PROBE_PATHS[0], get(healthz))
        .route(PROBE_PATHS[1], get(readyz))
        .with_state(Arc::new(Readiness::new(server.shutdown_token(), check)))
}

/// `/metrics`. Mount it where only the scraper can reach it.
pub fn metrics_router(server: Server) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .with_state(server)
}

fn text(status: StatusCode, body: String) -> Response {
    let mut r = (status, body).into_response();
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

async fn healthz() -> Response {
    text(StatusCode::OK, "ok\n".to_owned())
}

async fn readyz(State(p): State<Arc<Readiness>>) -> Response {
    match p.ready().await {
        Ok(()) => text(StatusCode::OK, "ready\n".to_owned()),
        Err(why) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        ),
    }
}

async fn metrics(State(server): State<Server>) -> Response {
    let mut r = text(StatusCode::OK, server.render_metrics());
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    r
}
