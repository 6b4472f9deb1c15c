//! Serving one accepted connection: HTTP/1 through hyper, with the client
//! address in every request, the header-read and idle timers, and the two
//! shutdown signals (finish up; drop now).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::Response;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::Service;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::activity::{Activity, Expiry, TrackedBody, TrackedIo};
use super::config::ConnectionLimits;
use crate::observe::ConnectionStats;

/// How long a connection asked to close when idle may take to do so.
const IDLE_CLOSE_GRACE: Duration = Duration::from_secs(1);

/// What a connection task shares with the accept loop.
pub(super) struct Shared {
    pub(super) router: Router,
    pub(super) limits: ConnectionLimits,
    pub(super) stats: Arc<ConnectionStats>,
    /// Cancelled when shutdown begins: finish the request in flight, close.
    pub(super) finish: CancellationToken,
    /// Cancelled at the shutdown deadline: drop the connection.
    pub(super) drop_now: CancellationToken,
}

/// The per-connection service: the router, plus the client address and
/// in-flight tracking.
#[derive(Clone)]
struct ConnService {
    router: TowerToHyperService<Router>,
    addr: SocketAddr,
    activity: Arc<Activity>,
}

impl Service<http::Request<Incoming>> for ConnService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, mut request: http::Request<Incoming>) -> Self::Future {
        request.extensions_mut().insert(ConnectInfo(self.addr));
        let in_flight = self.activity.request_started();
        let response = self.router.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|inner| {
                Body::new(TrackedBody {
                    inner,
                    _in_flight: in_flight,
                })
            }))
        })
    }
}

/// Serves `stream` until it closes, a timer fires or shutdown ends it.
pub(super) async fn serve(stream: TcpStream, addr: SocketAddr, shared: Arc<Shared>) {
    let activity = Arc::new(Activity::new());
    let io = TrackedIo {
        inner: stream,
        activity: Arc::clone(&activity),
    };
    let service = ConnService {
        router: TowerToHyperService::new(shared.router.clone()),
        addr,
        activity: Arc::clone(&activity),
    };
    // Timeouts are ours (see `activity`); hyper's default one needs a timer.
    let mut builder = http1::Builder::new();
    builder.header_read_timeout(None);
    let mut conn = pin!(builder.serve_connection(TokioIo::new(io), service));
    let stats = &shared.stats;
    let mut asked_to_close = false;
    let mut give_up: Option<Instant> = None;
    loop {
        tokio::select! {
            biased;
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%addr, error = %e, "connection ended with an error");
                }
                return;
            }
            () = shared.drop_now.cancelled() => {
                stats.dropped_at_shutdown.fetch_add(1, Ordering::Relaxed);
                return;
            }
            () = sleep_until(give_up) => return,
            () = shared.finish.cancelled(), if !asked_to_close => {
                asked_to_close = true;
                conn.as_mut().graceful_shutdown();
            }
            expiry = activity.expired(&shared.limits), if give_up.is_none() => match expiry {
                Expiry::Head => {
                    stats.header_timeouts.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%addr, "request head too slow: closing the connection");
                    return;
                }
                Expiry::Idle => {
                    stats.idle_closed.fetch_add(1, Ordering::Relaxed);
                    asked_to_close = true;
                    conn.as_mut().graceful_shutdown();
                    give_up = Some(Instant::now() + IDLE_CLOSE_GRACE);
                }
            },
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
