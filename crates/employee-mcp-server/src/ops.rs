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
use crate::audit_stats::Unhealthy;

/// Why the metrics listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `--metrics-listen` could not be bound.
    #[error("cannot listen for metrics on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// The reason.
        source: std::io::Error,
    },
    /// The bound address could not be read back.
    #[error(transparent)]
    LocalAddr(std::io::Error),
}

/// Why this replica is not ready: the short reason `/readyz` shows (no
/// paths, no data; the detail goes to the log).
#[derive(Debug, thiserror::Error)]
enum NotReady {
    /// The database file was swapped under the server.
    #[error("{REPLACED}")]
    Replaced,
    /// The database does not answer.
    #[error("database unavailable")]
    Unavailable,
    /// The database's schema is older than this build's.
    #[error("database schema version {found} is older than {expected}")]
    OldSchema {
        /// The database's version.
        found: u32,
        /// This build's.
        expected: u32,
    },
    /// The audit writer is not committing.
    #[error(transparent)]
    Audit(#[from] Unhealthy),
}

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
        // The library's readiness check speaks `String`.
        Box::pin(async move { self.ready().await.map_err(|e| e.to_string()) })
    }
}

impl Readiness {
    async fn ready(&self) -> Result<(), NotReady> {
        let health = self.directory.ping().await.map_err(|e| {
            // The reason shown is generic (probes are unauthenticated);
            // the detail goes to the log.
            tracing::debug!(error = %e, "readiness: database check failed");
            match e.unavailable_reason() {
                // Only a restart helps: say so.
                Some(UnavailableReason::Replaced) => NotReady::Replaced,
                _ => NotReady::Unavailable,
            }
        })?;
        let expected = Directory::expected_schema_version();
        if health.schema_version < expected {
            return Err(NotReady::OldSchema {
                found: health.schema_version,
                expected,
            });
        }
        Ok(self.audit.health()?)
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
    ) -> Result<MetricsListener, Error> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Listen { addr, source })?;
        let bound = listener.local_addr().map_err(Error::LocalAddr)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_reasons_read_as_before() {
        assert_eq!(NotReady::Replaced.to_string(), REPLACED);
        assert_eq!(NotReady::Unavailable.to_string(), "database unavailable");
        let old = NotReady::OldSchema {
            found: 3,
            expected: 5,
        };
        assert_eq!(old.to_string(), "database schema version 3 is older than 5");
        assert_eq!(
            NotReady::from(Unhealthy::Stalled).to_string(),
            "audit commit stalled"
        );
    }
}
