//! Operations: counters in the Prometheus text format, request spans for
//! OpenTelemetry, and health probes.
//!
//! - metrics ([`Metrics`], [`Encoder`] for application series): per-request duration by method, tool and outcome, and
//!   gauges and counters of streams, sessions and refused input; all
//!   recorded with relaxed atomics into series allocated up front.
//! - tracing ([`enable_request_spans`]): one SERVER span per request, parented on the W3C trace
//!   context of `params._meta` (or the HTTP headers), when the
//!   application turned spans on.
//! - readiness ([`ReadinessCheck`], [`Readiness`]): whether the application can serve now, cached for
//!   probes (the HTTP routes are in `transport::http::probes`).
//! - [`LogThrottle`]: a failure repeated on every request logged once per
//!   period, with a count.

#[cfg(feature = "http")]
pub(crate) mod connections;
pub(crate) mod histogram;
pub(crate) mod metrics;
pub(crate) mod prometheus;
pub(crate) mod readiness;
pub(crate) mod throttle;
pub(crate) mod trace;

#[cfg(feature = "http")]
pub use connections::ConnectionStats;
pub use histogram::{BOUNDS_MICROS, Histogram, Snapshot};
pub use metrics::{Collector, Metrics};
pub use prometheus::{CONTENT_TYPE, Encoder, Label};
pub use readiness::{CheckFuture, NotReady, READY_CACHE, READY_TIMEOUT, Readiness, ReadinessCheck};
pub use throttle::{LOG_EVERY, LogThrottle};
pub use trace::{AdoptParent, HttpTraceHeaders, TraceContext, enable_request_spans, spans_enabled};
