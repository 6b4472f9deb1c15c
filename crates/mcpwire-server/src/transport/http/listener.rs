//! The accept loop: at most `max_connections` open (plus a small reserve
//! that serves only the probes), idle keep-alive connections make room for
//! newcomers at the cap, accept errors survive, and shutdown is bounded by
//! a deadline.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::config::ConnectionLimits;
use super::connection::{self, Shared, Slot};
use crate::observe::{ConnectionStats, LOG_EVERY, LogThrottle};
use crate::server::Server;

/// Pause after an accept error that is not the peer's doing (e.g. out of
/// file descriptors), so the loop does not spin while it lasts.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);
/// Idle keep-alive connections asked to close each time a newcomer finds
/// the listener at the cap.
const RECLAIM_PER_NEWCOMER: usize = 4;

/// Serves `router` on `listener` within `limits` until `shutdown`
/// resolves; then stops accepting, ends long-lived streams
/// (`server.shutdown()`), lets requests in flight finish and, after
/// `limits.shutdown_grace`, drops the connections that remain.
pub async fn serve_with<F>(
    listener: TcpListener,
    router: Router,
    server: Server,
    shutdown: F,
    limits: &ConnectionLimits,
    stats: Arc<ConnectionStats>,
) -> io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    let shared = Arc::new(Shared {
        router,
        limits: limits.clone(),
        stats,
        finish: CancellationToken::new(),
        drop_now: CancellationToken::new(),
        slots: Arc::new(Semaphore::new(limits.max_connections.max(1))),
        reclaim: Notify::new(),
        reclaim_credits: AtomicUsize::new(0),
    });
    let reserve = Arc::new(Semaphore::new(limits.probe_reserve));
    let tracker = TaskTracker::new();
    let mut shutdown = pin!(shutdown);
    // A repeated condition is logged at most once per period.
    let throttle = (LogThrottle::new(LOG_EVERY), LogThrottle::new(LOG_EVERY));
    loop {
        let (slot, stream, addr) = tokio::select! {
            () = &mut shutdown => break,
            next = next_connection(&listener, &shared, &reserve, &throttle) => next,
        };
        tracker.spawn(run(slot, stream, addr, Arc::clone(&shared)));
    }
    drop(listener);
    tracing::info!(
        open = tracker.len(),
        "shutting down: finishing in-flight requests"
    );
    server.shutdown();
    shared.finish.cancel();
    tracker.close();
    if tokio::time::timeout(limits.shutdown_grace, tracker.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            open = tracker.len(),
            grace = ?limits.shutdown_grace,
            "shutdown deadline passed: dropping the remaining connections"
        );
        shared.drop_now.cancel();
        // Each task drops its connection at its next poll.
        let _ = tokio::time::timeout(Duration::from_secs(1), tracker.wait()).await;
    }
    shared.stats.log_summary();
    Ok(())
}

/// One connection task: holds its slot until the connection ends.
async fn run(slot: Slot, stream: TcpStream, addr: SocketAddr, shared: Arc<Shared>) {
    shared.stats.accepted.fetch_add(1, Ordering::Relaxed);
    shared.stats.open.fetch_add(1, Ordering::Relaxed);
    // Responses and SSE events are written whole; do not delay them.
    let _ = stream.set_nodelay(true);
    connection::serve(stream, addr, Arc::clone(&shared), slot).await;
    shared.stats.open.fetch_sub(1, Ordering::Relaxed);
}

/// A permit of `slots`, once one is free.
async fn acquire(slots: &Arc<Semaphore>) -> OwnedSemaphorePermit {
    match Arc::clone(slots).acquire_owned().await {
        Ok(p) => p,
        // The semaphores are never closed.
        Err(_) => std::future::pending().await,
    }
}

/// Waits for a free slot, then for a connection. At the cap, idle
/// keep-alive connections are asked to make room, and a reserve slot
/// (probes only) is taken when one is free. Accept errors are logged and
/// retried; they never end the loop.
async fn next_connection(
    listener: &TcpListener,
    shared: &Shared,
    reserve: &Arc<Semaphore>,
    (at_limit, failing): &(LogThrottle, LogThrottle),
) -> (Slot, TcpStream, SocketAddr) {
    let stats = &shared.stats;
    let slot = match Arc::clone(&shared.slots).try_acquire_owned() {
        Ok(p) => Slot::Regular(p),
        Err(_) => {
            stats.paused_at_limit.fetch_add(1, Ordering::Relaxed);
            if let Some(left_out) = at_limit.admit() {
                tracing::warn!(
                    left_out,
                    "connection limit reached: closing idle keep-alive connections; beyond the limit only /healthz and /readyz are served (others get 503) until one closes"
                );
            }
            shared.reclaim_idle(RECLAIM_PER_NEWCOMER);
            tokio::select! {
                biased;
                p = acquire(&shared.slots) => Slot::Regular(p),
                p = acquire(reserve) => Slot::Reserve { _held: p },
            }
        }
    };
    loop {
        match listener.accept().await {
            Ok((stream, addr)) => {
                if matches!(slot, Slot::Reserve { .. }) {
                    stats.reserve_accepted.fetch_add(1, Ordering::Relaxed);
                }
                return (slot, stream, addr);
            }
            Err(e) if peer_gave_up(&e) => {}
            Err(e) => {
                stats.accept_errors.fetch_add(1, Ordering::Relaxed);
                if let Some(left_out) = failing.admit() {
                    tracing::warn!(error = %e, left_out, "accepting a connection failed; retrying");
                }
                tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
            }
        }
    }
}

/// Accept errors about one connection that closed before it was accepted.
fn peer_gave_up(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}
