//! Readiness: whether the application can serve requests now (its
//! database, its audit writer…), checked at most once per [`READY_CACHE`]
//! however often probes poll. The HTTP routes that expose it are in
//! `transport::http::probes`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

use tokio_util::sync::CancellationToken;

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

/// Why the server is not ready; its `Display` is the short reason a probe
/// shows (safe for unauthenticated callers).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotReady {
    /// The server is shutting down (never cached).
    #[error("shutting down")]
    ShuttingDown,
    /// The application's [`ReadinessCheck`] failed with this reason.
    #[error("{0}")]
    Check(String),
    /// The application's check took longer than [`READY_TIMEOUT`].
    #[error("readiness check took over {0:?}")]
    TimedOut(Duration),
}

/// The server's readiness: not while shutting down, else the
/// application's check, cached; concurrent callers share one check.
pub struct Readiness {
    shutdown: CancellationToken,
    check: Option<Arc<dyn ReadinessCheck>>,
    /// The last result and when it was taken; also serialises checks.
    last: Mutex<Option<(Instant, Result<(), NotReady>)>>,
}

impl Readiness {
    /// Readiness of the server whose [`shutdown_token`](crate::Server::shutdown_token)
    /// is `shutdown`, with the application's `check` if any.
    pub fn new(shutdown: CancellationToken, check: Option<Arc<dyn ReadinessCheck>>) -> Self {
        Self {
            shutdown,
            check,
            last: Mutex::new(None),
        }
    }

    /// `Err` with the reason when requests cannot be served now.
    pub async fn ready(&self) -> Result<(), NotReady> {
        // Not cached: the orchestrator must see this on its next probe.
        if self.shutdown.is_cancelled() {
            return Err(NotReady::ShuttingDown);
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
            Ok(r) => r.map_err(NotReady::Check),
            Err(_) => Err(NotReady::TimedOut(READY_TIMEOUT)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Server;

    struct Down;

    impl ReadinessCheck for Down {
        fn check(&self) -> CheckFuture<'_> {
            Box::pin(async { Err("database unreachable".to_owned()) })
        }
    }

    fn server() -> Server {
        Server::builder("t", "1").build().expect("builds")
    }

    #[tokio::test]
    async fn a_failed_check_is_reported_with_its_reason() {
        let r = Readiness::new(server().shutdown_token(), Some(Arc::new(Down)));
        let e = r.ready().await.expect_err("not ready");
        assert_eq!(e, NotReady::Check("database unreachable".to_owned()));
        assert_eq!(e.to_string(), "database unreachable");
    }

    #[tokio::test]
    async fn shutting_down_wins_over_the_check() {
        let s = server();
        let r = Readiness::new(s.shutdown_token(), None);
        assert_eq!(r.ready().await, Ok(()));
        s.shutdown();
        assert_eq!(r.ready().await, Err(NotReady::ShuttingDown));
        assert_eq!(NotReady::ShuttingDown.to_string(), "shutting down");
    }
}
