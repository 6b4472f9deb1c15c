//! Operations: counters in the Prometheus text format, request spans for
//! OpenTelemetry, and health probes.
//!
//! - [`metrics`]: per-request duration by method, tool and outcome, and
//!   gauges and counters of streams, sessions and refused input; all
//!   recorded with relaxed atomics into series allocated up front.
//! - [`trace`]: one SERVER span per request, parented on the W3C trace
//!   context of `params._meta` (or the HTTP headers), when the
//!   application turned spans on.
//! - [`readiness`]: whether the application can serve now, cached for
//!   probes (the HTTP routes are in `transport::http::probes`).

pub mod histogram;
pub mod metrics;
pub mod prometheus;
pub mod readiness;
pub mod trace;

pub use histogram::Histogram;
pub use metrics::Metrics;
pub use prometheus::Encoder;
pub use readiness::{CheckFuture, Readiness, ReadinessCheck};
pub use trace::{AdoptParent, HttpTraceHeaders, TraceContext, enable_request_spans};

use std::sync::Arc;

use crate::server::Server;

impl Server {
    /// The server's counters (add application series with
    /// [`Metrics::add_collector`]).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.metrics
    }

    /// Every series in the Prometheus text format.
    pub fn render_metrics(&self) -> String {
        let mut e = Encoder::default();
        let tools = self.tool_set();
        let m = &self.inner.metrics;
        m.render_requests(&mut e, tools.tools.iter().map(AsRef::as_ref));
        m.render_rest(&mut e, self.inner.sessions.len());
        e.finish()
    }
}
