//! The HTTP listener's connection counters, kept here so that metrics can
//! render them without knowing the transport.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of the listener, for operators. Read them with
/// `load(Ordering::Relaxed)`.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    /// Connections accepted.
    pub accepted: AtomicU64,
    /// Connections open now.
    pub open: AtomicU64,
    /// Times the listener paused because `max_connections` were open.
    pub paused_at_limit: AtomicU64,
    /// Failed `accept()` calls (e.g. out of file descriptors).
    pub accept_errors: AtomicU64,
    /// Connections closed because a request head arrived too slowly.
    pub header_timeouts: AtomicU64,
    /// Keep-alive connections closed after waiting idle for a request.
    pub idle_closed: AtomicU64,
    /// Idle keep-alive connections closed to make room at the cap.
    pub idle_reclaimed: AtomicU64,
    /// Connections accepted beyond the cap, for the probes.
    pub reserve_accepted: AtomicU64,
    /// Requests other than probes refused (503) beyond the cap.
    pub refused_at_limit: AtomicU64,
    /// Connections dropped at the shutdown deadline.
    pub dropped_at_shutdown: AtomicU64,
}

impl ConnectionStats {
    /// Logs the totals once, when the listener stops.
    pub(crate) fn log_summary(&self) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        tracing::info!(
            accepted = get(&self.accepted),
            paused_at_limit = get(&self.paused_at_limit),
            accept_errors = get(&self.accept_errors),
            header_timeouts = get(&self.header_timeouts),
            idle_closed = get(&self.idle_closed),
            idle_reclaimed = get(&self.idle_reclaimed),
            reserve_accepted = get(&self.reserve_accepted),
            refused_at_limit = get(&self.refused_at_limit),
            dropped_at_shutdown = get(&self.dropped_at_shutdown),
            "connections served"
        );
    }
}
