//! Serving one accepted connection: HTTP/1 through hyper, with the client
//! address in every request, the header-read and idle timers, the two
//! shutdown signals (finish up; drop now), the listener's call to close
//! idle connections at the cap, and the probe-only mode of a connection
//! accepted beyond the cap.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::Service;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use mcpwire_protocol::ProtocolError;
use tokio::net::TcpStream;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::activity::{Activity, Expiry, InFlight, TrackedIo};
use super::config::ConnectionLimits;
use super::drain;
use super::probes::PROBE_PATHS;
use super::reply::error_response;
use crate::observe::ConnectionStats;
use crate::sync::lock;

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
    /// The `max_connections` slots (a reserve connection moves to one as
    /// soon as one is free).
    pub(super) slots: Arc<Semaphore>,
    /// Woken by the listener at the cap: idle connections may close...
    pub(super) reclaim: Notify,
    /// ...as many as this (taken one by one).
    pub(super) reclaim_credits: AtomicUsize,
}

impl Shared {
    /// At the cap: asks up to `n` idle keep-alive connections to close.
    pub(super) fn reclaim_idle(&self, n: usize) {
        self.reclaim_credits.store(n, Ordering::Release);
        self.reclaim.notify_waiters();
    }

    fn take_reclaim_credit(&self) -> bool {
        self.reclaim_credits
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// The listener slot a connection holds until it ends.
pub(super) enum Slot {
    /// One of `max_connections`.
    Regular(OwnedSemaphorePermit),
    /// One of the probe reserve beyond them: only probes are served.
    Reserve { _held: OwnedSemaphorePermit },
}

/// The per-connection service: the router, plus the client address and
/// in-flight tracking.
#[derive(Clone)]
struct ConnService {
    router: TowerToHyperService<Router>,
    addr: SocketAddr,
    activity: Arc<Activity>,
    shared: Arc<Shared>,
    /// The slot of a connection accepted beyond the cap.
    reserve: Option<Arc<Mutex<Slot>>>,
}

impl ConnService {
    /// Whether this connection serves every request: a reserve connection
    /// takes a regular slot as soon as one is free, else serves probes only.
    fn serves_all(&self) -> bool {
        let Some(reserve) = &self.reserve else {
            return true;
        };
        let mut slot = lock(reserve);
        if matches!(*slot, Slot::Regular(_)) {
            return true;
        }
        match Arc::clone(&self.shared.slots).try_acquire_owned() {
            Ok(permit) => {
                // The reserve permit is released here.
                *slot = Slot::Regular(permit);
                true
            }
            Err(_) => false,
        }
    }
}

/// A response that keeps its request in flight until its body is done.
fn tracked(response: Response, in_flight: InFlight) -> Response {
    super::held_body::hold(response, in_flight)
}

/// The answer to anything but a probe on a connection beyond the cap.
fn at_capacity() -> Response {
    let e = ProtocolError::rate_limited(
        "Service unavailable: the server is at its connection limit; retry in a second.",
        1,
    );
    let mut r = error_response(StatusCode::SERVICE_UNAVAILABLE, None, e);
    let h = r.headers_mut();
    h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    h.insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

impl Service<http::Request<Incoming>> for ConnService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, mut request: http::Request<Incoming>) -> Self::Future {
        request.extensions_mut().insert(ConnectInfo(self.addr));
        let in_flight = self.activity.request_started();
        let serves_all = self.serves_all();
        if !serves_all && !PROBE_PATHS.contains(&request.uri().path()) {
            let stats = &self.shared.stats;
            stats.refused_at_limit.fetch_add(1, Ordering::Relaxed);
            let response = tracked(at_capacity(), in_flight);
            return Box::pin(std::future::ready(Ok(response)));
        }
        let (request, leftover) = drain::split(request);
        let response = self.router.call(request);
        let limits = &self.shared.limits;
        let (max_drain, drain_time) = (limits.drain_body_bytes, limits.header_read_timeout);
        Box::pin(async move {
            let mut response = response.await?;
            leftover.settle(&mut response, max_drain, drain_time).await;
            if !serves_all {
                // A probe beyond the cap: free the reserve slot after it.
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok(tracked(response, in_flight))
        })
    }
}

/// Serves `stream` until it closes, a timer fires or shutdown ends it.
pub(super) async fn serve(stream: TcpStream, addr: SocketAddr, shared: Arc<Shared>, slot: Slot) {
    let activity = Arc::new(Activity::new());
    let io = TrackedIo {
        inner: stream,
        activity: Arc::clone(&activity),
    };
    // A regular slot is held here until the connection ends; a reserve
    // one by the service, which may trade it for a regular one.
    let (_regular, reserve) = match slot {
        Slot::Regular(p) => (Some(p), None),
        reserve @ Slot::Reserve { .. } => (None, Some(Arc::new(Mutex::new(reserve)))),
    };
    let service = ConnService {
        router: TowerToHyperService::new(shared.router.clone()),
        addr,
        activity: Arc::clone(&activity),
        shared: Arc::clone(&shared),
        reserve,
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
            () = shared.reclaim.notified(), if !asked_to_close => {
                if activity.is_idle() && shared.take_reclaim_credit() {
                    stats.idle_reclaimed.fetch_add(1, Ordering::Relaxed);
                    asked_to_close = true;
                    conn.as_mut().graceful_shutdown();
                    give_up = Some(Instant::now() + IDLE_CLOSE_GRACE);
                }
            }
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
