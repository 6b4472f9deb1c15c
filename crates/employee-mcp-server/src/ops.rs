//! Operations wiring of the binary: what "ready" means for the HR
//! directory, the application's series in `/metrics`, and the separate
//! metrics listener (`--metrics-listen`).

use std::net::SocketAddr;
use std::sync::Arc;

use employee_directory::{Directory, UnavailableReason};
use mcpwire_server::Server;
use mcpwire_server::observe::{CheckFuture, Encoder, ReadinessCheck};
use mcpwire_server::transport::http::{ConnectionLimits, metrics_router, probe_router, serve_with};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::audit::Audit;

/// The `/readyz` reason once the database file was swapped.
const REPLACED: &str = "database file replaced; restart";

/// Ready when the database answers with the schema this build expects and
/// the audit writer is committing.
pub struct Readiness {
    /// The directory whose database is checked.
    pub directory: Directory,
    /// The audit sink whose writer is checked.
    pub audit: Audit,
}

impl ReadinessCheck for Readiness {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(async move {
            let health = self.directory.ping().await.map_err(|e| {
                // The reason shown is generic (probes are unauthenticated);
                // the detail goes to the log.
                tracing::debug!(error = %e, "readiness: database check failed");
                match e.unavailable_reason() {
                    // Only a restart helps: say so.
                    Some(UnavailableReason::Replaced) => REPLACED.to_owned(),
                    _ => "database unavailable".to_owned(),
                }
            })?;
            let expected = Directory::expected_schema_version();
            if health.schema_version < expected {
                return Err(format!(
                    "database schema version {} is older than {expected}",
                    health.schema_version
                ));
            }
            self.audit.health()
        })
    }
}

/// Adds the audit writer's and the database pool's series to scrapes.
pub fn register_collectors(server: &Server, directory: &Directory, audit: &Audit) {
    let stats = Arc::clone(audit.stats());
    let directory = directory.clone();
    server
        .metrics()
        .add_collector(Box::new(move |e: &mut Encoder| {
            stats.render(e);
            let pool = directory.pool_stats();
            e.single(
                "employee_directory_pool_waits_total",
                "counter",
                "Queries that found every database connection busy and waited for one.",
                pool.waits,
            );
            e.single(
                "employee_directory_pool_timeouts_total",
                "counter",
                "Queries that gave up waiting for a database connection.",
                pool.timeouts,
            );
        }));
}

/// Connections the metrics listener keeps open at once.
const MAX_CONNECTIONS: usize = 64;

/// The `--metrics-listen` server: `/metrics`, `/healthz`, `/readyz`.
/// It stops (gracefully) when dropped.
pub struct MetricsListener {
    _stop: oneshot::Sender<()>,
}

impl MetricsListener {
    /// Binds `addr` and serves until dropped.
    pub async fn start(
        addr: SocketAddr,
        server: &Server,
        readiness: Arc<dyn ReadinessCheck>,
    ) -> Result<MetricsListener, String> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen for metrics on {addr}: {e}"))?;
        let bound = listener.local_addr().map_err(|e| e.to_string())?;
        let router =
            metrics_router(server.clone()).merge(probe_router(server.clone(), Some(readiness)));
        let (stop, stopped) = oneshot::channel::<()>();
        // The same bounded accept loop as the MCP listener (slow or idle
        // scrapers cannot pile up), with room for a few scrapers and probes.
        let limits = ConnectionLimits {
            max_connections: MAX_CONNECTIONS,
            ..ConnectionLimits::default()
        };
        let server = server.clone();
        tokio::spawn(async move {
            // A dropped sender resolves `stopped` too; by then the MCP side
            // has stopped, so the shutdown `serve_with` signals is a no-op.
            let stopped = async {
                let _ = stopped.await;
            };
            let stats = Arc::default();
            if let Err(e) = serve_with(listener, router, server, stopped, &limits, stats).await {
                tracing::error!(error = %e, "metrics listener failed");
            }
        });
        tracing::info!("serving metrics on http://{bound}/metrics");
        Ok(MetricsListener { _stop: stop })
    }
}
