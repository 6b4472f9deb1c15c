//! The engine's counters: per-request duration by method, tool and
//! outcome, in-flight requests, open streams, list-change notifications
//! and refused HTTP bodies. Every series is allocated up front (per method
//! here, per tool in the tool's registry entry), so recording is a few
//! relaxed atomic adds: no lock, no allocation, no hashing.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

#[cfg(feature = "http")]
use super::connections::ConnectionStats;
use super::histogram::Histogram;
use super::prometheus::Encoder;
use crate::access::CallOutcome;

/// Methods with their own series; anything else is counted as `_OTHER`
/// (the semantic conventions' value for an unknown method), so a client
/// cannot grow the label set.
pub(crate) const METHODS: [&str; 19] = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "_OTHER",
];

pub(crate) fn method_index(method: &str) -> usize {
    METHODS
        .iter()
        .position(|m| *m == method)
        .unwrap_or(METHODS.len() - 1)
}

/// One duration histogram per [`CallOutcome`].
#[derive(Debug, Default)]
pub(crate) struct OutcomeSeries([Histogram; CallOutcome::ALL.len()]);

impl OutcomeSeries {
    fn of(&self, outcome: CallOutcome) -> &Histogram {
        &self.0[outcome as usize]
    }
}

/// What dispatch learns about a request while it runs, for the
/// histogram: the tool it resolved to and whether the tool failed.
#[derive(Default)]
pub(crate) struct CallNote {
    tool: OnceLock<Arc<OutcomeSeries>>,
    tool_error: AtomicBool,
}

impl CallNote {
    /// The series of the registered tool a `tools/call` named.
    pub(crate) fn set_tool(&self, series: &Arc<OutcomeSeries>) {
        let _ = self.tool.set(Arc::clone(series));
    }

    /// The call's result has `isError: true`.
    pub(crate) fn set_tool_error(&self, failed: bool) {
        self.tool_error.store(failed, Ordering::Relaxed);
    }

    pub(crate) fn tool_error(&self) -> bool {
        self.tool_error.load(Ordering::Relaxed)
    }
}

/// Renders application series (audit writer, database pool…) into a
/// scrape.
pub type Collector = Box<dyn Fn(&mut Encoder) + Send + Sync>;

/// The server's counters. Get it with [`Server::metrics`](crate::Server::metrics).
#[derive(Default)]
pub struct Metrics {
    methods: [OutcomeSeries; METHODS.len()],
    in_flight: AtomicI64,
    listen_streams: AtomicI64,
    session_streams: AtomicI64,
    list_changed_listen: AtomicU64,
    list_changed_session: AtomicU64,
    bodies_too_large: AtomicU64,
    bodies_timed_out: AtomicU64,
    #[cfg(feature = "http")]
    connections: OnceLock<Arc<ConnectionStats>>,
    collectors: Mutex<Vec<Collector>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// Which stream a gauge or notification counter is about.
#[derive(Clone, Copy, Debug)]
pub(crate) enum StreamKind {
    /// A 2026-07-28 `subscriptions/listen` stream.
    Listen,
    /// A legacy session's unsolicited-notification stream (GET or stdio).
    Session,
}

/// Decrements a gauge when dropped (a stream or request ended, however).
#[derive(Debug)]
pub(crate) struct GaugeGuard(Option<Arc<Metrics>>, fn(&Metrics) -> &AtomicI64);

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        if let Some(m) = &self.0 {
            (self.1)(m).fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Metrics {
    /// Counts one request ending after `elapsed`.
    /// `method` is [`method_index`] of the request's method.
    pub(crate) fn record(
        &self,
        method: usize,
        note: &CallNote,
        outcome: CallOutcome,
        elapsed: Duration,
    ) {
        let series = match note.tool.get() {
            Some(series) => series,
            None => &self.methods[method.min(METHODS.len() - 1)],
        };
        series.of(outcome).observe(elapsed);
    }

    /// One more request in flight until the guard drops.
    pub(crate) fn in_flight(self: &Arc<Self>) -> GaugeGuard {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        GaugeGuard(Some(Arc::clone(self)), |m| &m.in_flight)
    }

    /// One more open stream of `kind` until the guard drops.
    pub(crate) fn stream_open(self: &Arc<Self>, kind: StreamKind) -> GaugeGuard {
        let gauge: fn(&Metrics) -> &AtomicI64 = match kind {
            StreamKind::Listen => |m| &m.listen_streams,
            StreamKind::Session => |m| &m.session_streams,
        };
        gauge(self).fetch_add(1, Ordering::Relaxed);
        GaugeGuard(Some(Arc::clone(self)), gauge)
    }

    /// A `notifications/*/list_changed` (or resource update) was sent.
    pub(crate) fn list_changed_sent(&self, kind: StreamKind) {
        match kind {
            StreamKind::Listen => &self.list_changed_listen,
            StreamKind::Session => &self.list_changed_session,
        }
        .fetch_add(1, Ordering::Relaxed);
    }

    /// An HTTP body was refused: too large (`true`) or too slow (`false`).
    #[cfg(feature = "http")]
    pub(crate) fn body_rejected(&self, too_large: bool) {
        let c = if too_large {
            &self.bodies_too_large
        } else {
            &self.bodies_timed_out
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Includes the HTTP listener's connection counters in scrapes (the
    /// same `Arc` given to `serve_with`).
    #[cfg(feature = "http")]
    pub fn attach_connections(&self, stats: Arc<ConnectionStats>) {
        let _ = self.connections.set(stats);
    }

    /// Adds application series to every scrape.
    pub fn add_collector(&self, collector: Collector) {
        match self.collectors.lock() {
            Ok(mut c) => c.push(collector),
            Err(p) => p.into_inner().push(collector),
        }
    }

    /// Requests in flight now.
    pub fn requests_in_flight(&self) -> i64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    pub(crate) fn render_requests<'a>(
        &self,
        e: &mut Encoder,
        tools: impl Iterator<Item = (&'a str, &'a OutcomeSeries)>,
    ) {
        const NAME: &str = "mcp_server_operation_duration_seconds";
        e.family(
            NAME,
            "histogram",
            "MCP request duration as observed by the server (OpenTelemetry mcp.server.operation.duration), by method, tool and outcome. Series without observations are omitted.",
        );
        for (method, series) in METHODS.iter().zip(&self.methods) {
            for outcome in CallOutcome::ALL {
                let s = series.of(outcome).snapshot();
                if s.count > 0 {
                    let labels = [("mcp_method_name", *method), ("outcome", outcome.as_str())];
                    e.histogram(NAME, &labels, &s);
                }
            }
        }
        for (name, stats) in tools {
            for outcome in CallOutcome::ALL {
                let s = stats.of(outcome).snapshot();
                if s.count > 0 {
                    let labels = [
                        ("mcp_method_name", "tools/call"),
                        ("gen_ai_tool_name", name),
                        ("outcome", outcome.as_str()),
                    ];
                    e.histogram(NAME, &labels, &s);
                }
            }
        }
    }

    pub(crate) fn render_rest(&self, e: &mut Encoder, sessions: usize) {
        let get = |a: &AtomicI64| a.load(Ordering::Relaxed);
        let count = |a: &AtomicU64| a.load(Ordering::Relaxed);
        e.single(
            "mcp_server_requests_in_flight",
            "gauge",
            "MCP requests being handled now.",
            get(&self.in_flight),
        );
        e.single(
            "mcp_server_sessions_active",
            "gauge",
            "Legacy (pre-2026-07-28) sessions held by the server.",
            sessions,
        );
        e.family(
            "mcp_server_streams_active",
            "gauge",
            "Open notification streams: subscriptions/listen (kind=listen) and legacy session streams (kind=session).",
        );
        e.sample(
            "mcp_server_streams_active",
            &[("kind", "listen")],
            get(&self.listen_streams),
        );
        e.sample(
            "mcp_server_streams_active",
            &[("kind", "session")],
            get(&self.session_streams),
        );
        e.family(
            "mcp_server_list_changed_sent_total",
            "counter",
            "List-change and resource-update notifications sent, by stream kind.",
        );
        let sent = [
            ("listen", &self.list_changed_listen),
            ("session", &self.list_changed_session),
        ];
        for (kind, c) in sent {
            e.sample(
                "mcp_server_list_changed_sent_total",
                &[("kind", kind)],
                count(c),
            );
        }
        e.family(
            "mcp_http_bodies_rejected_total",
            "counter",
            "HTTP request bodies refused before parsing: over the size limit (413) or too slow (408).",
        );
        let bodies = [
            ("too_large", &self.bodies_too_large),
            ("timeout", &self.bodies_timed_out),
        ];
        for (reason, c) in bodies {
            e.sample(
                "mcp_http_bodies_rejected_total",
                &[("reason", reason)],
                count(c),
            );
        }
        #[cfg(feature = "http")]
        if let Some(c) = self.connections.get() {
            render_connections(e, c);
        }
        let collectors = match self.collectors.lock() {
            Ok(c) => c,
            Err(p) => p.into_inner(),
        };
        for c in collectors.iter() {
            c(e);
        }
    }
}

#[cfg(feature = "http")]
fn render_connections(e: &mut Encoder, c: &ConnectionStats) {
    let count = |a: &AtomicU64| a.load(Ordering::Relaxed);
    e.single(
        "mcp_http_connections_accepted_total",
        "counter",
        "TCP connections accepted by the MCP listener.",
        count(&c.accepted),
    );
    e.single(
        "mcp_http_connections_open",
        "gauge",
        "TCP connections open on the MCP listener.",
        count(&c.open),
    );
    e.single(
        "mcp_http_connections_limited_total",
        "counter",
        "Times the listener stopped accepting because --max-connections were open.",
        count(&c.paused_at_limit),
    );
    e.single(
        "mcp_http_refused_at_limit_total",
        "counter",
        "Requests other than probes refused (503) on connections accepted beyond --max-connections.",
        count(&c.refused_at_limit),
    );
    e.single(
        "mcp_http_accept_errors_total",
        "counter",
        "Failed accept() calls (e.g. out of file descriptors).",
        count(&c.accept_errors),
    );
    e.family(
        "mcp_http_connections_closed_total",
        "counter",
        "Connections closed by the server: request head too slow, idle keep-alive, idle keep-alive closed to make room at the connection limit, or still open at the shutdown deadline.",
    );
    let closed = [
        ("header_timeout", &c.header_timeouts),
        ("idle", &c.idle_closed),
        ("idle_at_limit", &c.idle_reclaimed),
        ("shutdown_deadline", &c.dropped_at_shutdown),
    ];
    for (reason, n) in closed {
        e.sample(
            "mcp_http_connections_closed_total",
            &[("reason", reason)],
            count(n),
        );
    }
}
