//! Settings of the HTTP transport.

use std::time::Duration;

/// How the HTTP transport serves and what it refuses.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// The MCP endpoint path.
    pub path: String,
    /// Largest request body accepted (larger → 413).
    pub max_body_bytes: usize,
    /// Time allowed to receive a whole request body, counted from the
    /// start of the read; slower bodies get 408 and the connection closes.
    pub body_read_timeout: Duration,
    /// Deepest JSON nesting accepted (deeper → 400).
    pub max_json_depth: usize,
    /// Host names (without port) accepted in `Host` and `Origin`; guards
    /// against DNS rebinding. Loopback names are always included.
    pub allowed_hosts: Vec<String>,
    /// Full origins (`https://app.example.com`) accepted in addition.
    pub allowed_origins: Vec<String>,
    /// Interval of SSE keep-alive comments on long-lived streams.
    pub keep_alive: Duration,
    /// The Protected Resource Metadata URL named in `WWW-Authenticate`
    /// challenges, when OAuth is configured.
    pub resource_metadata_url: Option<String>,
    /// Reverse proxies whose `X-Forwarded-For` is believed: behind them,
    /// rate limits key anonymous callers by the forwarded client address
    /// instead of lumping everyone under the proxy's address. Empty by
    /// default (the header is ignored, as anyone can send it).
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// Most long-lived streams (`subscriptions/listen`, legacy GET streams,
    /// HTTP+SSE `GET /sse`) open at once, all callers together; past it a
    /// new stream gets 429. Keep it well below
    /// [`ConnectionLimits::max_connections`] so that streams never take
    /// every connection (the default is half the default connection cap).
    pub max_streams: usize,
    /// Most long-lived streams one caller (token subject, else client
    /// address) may have open at once; past it a new stream gets 429.
    pub max_streams_per_caller: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            path: "/mcp".to_owned(),
            max_body_bytes: 1024 * 1024,
            body_read_timeout: Duration::from_secs(30),
            max_json_depth: 64,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            keep_alive: Duration::from_secs(15),
            resource_metadata_url: None,
            trusted_proxies: Vec::new(),
            max_streams: ConnectionLimits::default().max_connections / 2,
            max_streams_per_caller: 16,
        }
    }
}

/// Bounds on the connections the HTTP listener keeps (see
/// [`serve_with`](super::serve_with)).
#[derive(Clone, Debug)]
pub struct ConnectionLimits {
    /// Time allowed to receive a request head, counted from its first byte.
    /// Slower connections are closed without a response.
    pub header_read_timeout: Duration,
    /// Time a keep-alive connection may wait for its next request before the
    /// server closes it. A connection with a request in flight (including a
    /// long-lived SSE response) is never idle.
    pub idle_timeout: Duration,
    /// Most connections open at once. At the limit the listener asks a few
    /// idle keep-alive connections to close, and accepts up to
    /// `probe_reserve` more connections that only serve the probes
    /// (`/healthz`, `/readyz`); any other request on them gets 503 with
    /// `Retry-After` and `Connection: close`. Past that, new clients wait
    /// in the kernel backlog until a connection closes.
    pub max_connections: usize,
    /// Connections accepted beyond `max_connections` so that probes never
    /// wait behind clients (see above). 0 turns the reserve off.
    pub probe_reserve: usize,
    /// Largest unread request body read and discarded after an early
    /// answer (415, 403, 404 …) so the connection can carry the client's
    /// next request; a larger one, or one not received within
    /// `header_read_timeout`, closes the connection (`Connection: close`).
    pub drain_body_bytes: usize,
    /// After shutdown begins, time connections get to finish their requests
    /// before the rest are dropped.
    pub shutdown_grace: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 10_000,
            probe_reserve: 8,
            drain_body_bytes: 1024 * 1024,
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// Names that always mean this machine.
pub(crate) const LOOPBACK_HOSTS: [&str; 4] = ["localhost", "127.0.0.1", "[::1]", "::1"];
