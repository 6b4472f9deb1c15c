//! Bounds on long-lived streams: `subscriptions/listen`, a legacy
//! session's standalone GET stream and the HTTP+SSE `GET /sse` stream each
//! hold a connection for as long as the client likes. They are counted per
//! caller (the rate limiter's key: token subject, else client address) and
//! all together, so one client cannot take every stream and streams cannot
//! take every connection: requests always find room.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::response::Response;
use http::StatusCode;
use mcpwire_protocol::{ProtocolError, RequestId};

use super::config::HttpConfig;
use super::reply::{add_error_headers, error_response};
use crate::sync::lock;

/// Seconds a refused client is told to wait.
const RETRY_AFTER_SECS: u64 = 10;

/// Streams open now: in total and per caller (only callers with at least
/// one stream have an entry, so memory follows the streams).
#[derive(Default)]
struct Open {
    total: usize,
    per_caller: HashMap<String, usize>,
}

/// The stream counts of one HTTP transport.
pub(crate) struct StreamSlots {
    open: Mutex<Open>,
    max_total: usize,
    max_per_caller: usize,
}

/// Which bound refused a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The caller already has `max` streams open.
    Caller { max: usize },
    /// All callers together have `max` streams open.
    Total { max: usize },
}

/// One open stream; the count goes down when it is dropped.
pub(crate) struct StreamSlot {
    slots: Arc<StreamSlots>,
    caller: String,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = lock(&self.slots.open);
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.per_caller.get_mut(&self.caller) {
            *n -= 1;
            if *n == 0 {
                open.per_caller.remove(&self.caller);
            }
        }
    }
}

impl StreamSlots {
    /// Slots for at most `max_total` streams, `max_per_caller` per caller.
    pub(crate) fn new(config: &HttpConfig) -> Arc<StreamSlots> {
        Arc::new(StreamSlots {
            open: Mutex::default(),
            max_total: config.max_streams,
            max_per_caller: config.max_streams_per_caller,
        })
    }

    /// A slot for one more stream of `caller`, or which bound refuses it.
    pub(crate) fn acquire(self: &Arc<Self>, caller: String) -> Result<StreamSlot, Refused> {
        let mut open = lock(&self.open);
        let mine = open.per_caller.get(&caller).copied().unwrap_or(0);
        if mine >= self.max_per_caller {
            return Err(Refused::Caller {
                max: self.max_per_caller,
            });
        }
        if open.total >= self.max_total {
            return Err(Refused::Total {
                max: self.max_total,
            });
        }
        open.total += 1;
        *open.per_caller.entry(caller.clone()).or_insert(0) += 1;
        Ok(StreamSlot {
            slots: Arc::clone(self),
            caller,
        })
    }
}

impl Refused {
    /// 429 with `Retry-After` and a JSON-RPC error naming the bound.
    pub(crate) fn response(self, config: &HttpConfig, id: Option<RequestId>) -> Response {
        let message = match self {
            Refused::Caller { max } => format!(
                "Too many open streams from this client: at most {max} (subscriptions/listen, GET and /sse streams together, per client). Close a stream you no longer read before opening another."
            ),
            Refused::Total { max } => format!(
                "The server's stream capacity is in use: at most {max} open streams across all clients, so that requests always find a connection. Retry later."
            ),
        };
        let e = ProtocolError::rate_limited(message, RETRY_AFTER_SECS);
        let mut r = error_response(StatusCode::TOO_MANY_REQUESTS, id, e.clone());
        add_error_headers(&mut r, &e, config);
        r
    }
}

/// `response` with `slot` held until its body is finished or dropped.
pub(crate) fn hold(response: Response, slot: StreamSlot) -> Response {
    super::held_body::hold(response, slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(total: usize, per_caller: usize) -> Arc<StreamSlots> {
        StreamSlots::new(&HttpConfig {
            max_streams: total,
            max_streams_per_caller: per_caller,
            ..HttpConfig::default()
        })
    }

    #[test]
    fn per_caller_then_total_bounds_and_release() {
        let s = slots(3, 2);
        let a1 = s.acquire("a".into());
        let a2 = s.acquire("a".into());
        assert!(a1.is_ok() && a2.is_ok());
        let a3 = s.acquire("a".into()).err();
        assert_eq!(a3, Some(Refused::Caller { max: 2 }));
        let b1 = s.acquire("b".into());
        assert!(b1.is_ok());
        let c1 = s.acquire("c".into()).err();
        assert_eq!(c1, Some(Refused::Total { max: 3 }));
        drop(a1);
        assert!(s.acquire("c".into()).is_ok());
        drop((a2, b1));
        assert!(lock(&s.open).per_caller.is_empty());
    }
}
