//! Health probes and the metrics scrape, as axum routes to mount outside
//! any authentication: they reveal no directory data.
//!
//! - `GET /healthz` (liveness): `200 ok` whenever the process can answer
//!   HTTP at all.
//! - `GET /readyz` (readiness): `503` with a one-line reason once shutdown
//!   has begun, or while the application's [`ReadinessCheck`] fails; else
//!   `200 ready`. Results are cached for [`READY_CACHE`] and concurrent
//!   probes share one check, so polling every second costs at most one
//!   check per second.
//! - `GET /metrics`: the Prometheus text format.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::prometheus::CONTENT_TYPE;
use crate::server::Server;

/// How long a readiness result is reused.
pub const READY_CACHE: Duration = Duration::from_secs(1);
/// A check slower than this counts as failed.
pub const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The future a [`ReadinessCheck`] returns: `Err` holds a short reason
/// that is safe to show unauthenticated callers (no paths, no data).
pub type CheckFuture<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// The application's readiness: its database, its audit writer…
pub trait ReadinessCheck: Send + Sync {
    /// Checks that requests can be served now.
    fn check(&self) -> CheckFuture<'_>;
}

struct Probes {
    server: Server,
    check: Option<Arc<dyn ReadinessCheck>>,
    /// The last result and when it was taken; also serialises checks.
    last: Mutex<Option<(Instant, Result<(), String>)>>,
}

/// `/healthz` and `/readyz`.
pub fn probe_router(server: Server, check: Option<Arc<dyn ReadinessCheck>>) -> Router {
    let state = Arc::new(Probes {
        server,
        check,
        last: Mutex::new(None),
    });
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(state)
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

async fn readyz(State(p): State<Arc<Probes>>) -> Response {
    match p.ready().await {
        Ok(()) => text(StatusCode::OK, "ready\n".to_owned()),
        Err(why) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        ),
    }
}

impl Probes {
    async fn ready(&self) -> Result<(), String> {
        // Not cached: the orchestrator must see this on its next probe.
        if self.server.shutdown_token().is_cancelled() {
            return Err("shutting down".to_owned());
        }
        let Some(check) = &self.check else {
            return Ok(());
        };
        let mut last = self.last.lock().await;
        if let Some((at, result)) = last.as_ref()
            && at.elapsed() < READY_CACHE
        {
            return result.clone();
        }
        let result = match tokio::time::timeout(READY_TIMEOUT, check.check()).await {
            Ok(r) => r,
            Err(_) => Err(format!("readiness check took over {READY_TIMEOUT:?}")),
        };
        // Log changes only (and a failure at the first check).
        let before = last.as_ref().map_or(Some(true), |(_, r)| Some(r.is_ok()));
        if before != Some(result.is_ok()) {
            match &result {
                Ok(()) => tracing::info!("ready"),
                Err(why) => tracing::warn!(reason = %why, "not ready"),
            }
        }
        *last = Some((Instant::now(), result.clone()));
        result
    }
}

async fn metrics(State(server): State<Server>) -> Response {
    let mut r = text(StatusCode::OK, server.render_metrics());
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    r
}
