//! Rate and concurrency limits per caller, with bounded memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{ClientAddress, Principal};
use crate::session::lock;

/// A token bucket: `burst` calls at once, refilled at `per_minute`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    /// Sustained calls per minute.
    pub per_minute: u32,
    /// Calls allowed in a burst.
    pub burst: u32,
}

impl RateLimit {
    fn rate_per_sec(self) -> f64 {
        f64::from(self.per_minute.max(1)) / 60.0
    }
}

struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// Token buckets keyed by (caller, tool). When the table is full, idle
/// buckets (which would be full anyway) are dropped first, then the
/// least recently used; forgetting a bucket only ever grants a caller a
/// fresh burst, never blocks one.
pub struct RateLimiter {
    buckets: Mutex<HashMap<(String, String), Bucket>>,
    max_keys: usize,
    idle_ttl: Duration,
}

impl RateLimiter {
    /// A limiter remembering at most `max_keys` buckets.
    pub fn new(max_keys: usize, idle_ttl: Duration) -> Self {
        Self {
            buckets: Mutex::new(HashMap::new()),
            max_keys: max_keys.max(1),
            idle_ttl,
        }
    }

    /// Takes one token; `Err(wait)` says how long until one is available.
    pub fn check(&self, caller: &str, tool: &str, limit: RateLimit) -> Result<(), Duration> {
        let now = Instant::now();
        let mut buckets = lock(&self.buckets);
        let key = (caller.to_owned(), tool.to_owned());
        if !buckets.contains_key(&key) && buckets.len() >= self.max_keys {
            self.evict(&mut buckets, now);
        }
        let burst = f64::from(limit.burst.max(1));
        let bucket = buckets.entry(key).or_insert(Bucket {
            tokens: burst,
            updated: now,
        });
        let elapsed = now.duration_since(bucket.updated).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * limit.rate_per_sec()).min(burst);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - bucket.tokens) / limit.rate_per_sec();
            Err(Duration::from_secs_f64(wait))
        }
    }

    fn evict(&self, buckets: &mut HashMap<(String, String), Bucket>, now: Instant) {
        buckets.retain(|_, b| now.duration_since(b.updated) < self.idle_ttl);
        if buckets.len() >= self.max_keys {
            // Still full: drop the least recently used tenth in one pass.
            let mut ages: Vec<(Instant, (String, String))> = buckets
                .iter()
                .map(|(k, b)| (b.updated, k.clone()))
                .collect();
            ages.sort_by_key(|(t, _)| *t);
            for (_, k) in ages.into_iter().take((self.max_keys / 10).max(1)) {
                buckets.remove(&k);
            }
        }
    }

    /// How many buckets are held (for tests and metrics).
    pub fn tracked(&self) -> usize {
        lock(&self.buckets).len()
    }
}

/// Caps the calls one caller has running at once. Memory is bounded by the
/// number of callers with calls in flight.
#[derive(Default)]
pub struct ConcurrencyLimiter {
    running: Arc<Mutex<HashMap<String, usize>>>,
}

/// Releases a caller's slot when dropped.
pub struct Permit {
    running: Arc<Mutex<HashMap<String, usize>>>,
    caller: String,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut running = lock(&self.running);
        if let Some(n) = running.get_mut(&self.caller) {
            *n -= 1;
            if *n == 0 {
                running.remove(&self.caller);
            }
        }
    }
}

impl ConcurrencyLimiter {
    /// Takes a slot, or `None` if the caller already has `max` calls running.
    pub fn acquire(&self, caller: &str, max: usize) -> Option<Permit> {
        let mut running = lock(&self.running);
        let n = running.entry(caller.to_owned()).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Permit {
            running: Arc::clone(&self.running),
            caller: caller.to_owned(),
        })
    }
}

/// The rate-limit key: the token subject, else the peer address.
pub(crate) fn caller_key(principal: Option<&Principal>, addr: Option<&ClientAddress>) -> String {
    match (principal, addr) {
        (Some(p), _) => format!("sub:{}", p.subject),
        (None, Some(a)) => format!("ip:{}", a.0),
        (None, None) => "anonymous".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_a_burst_then_refuses_with_a_wait() {
        let l = RateLimiter::new(10, Duration::from_secs(60));
        let limit = RateLimit {
            per_minute: 60,
            burst: 2,
        };
        assert!(l.check("a", "t", limit).is_ok());
        assert!(l.check("a", "t", limit).is_ok());
        let wait = l.check("a", "t", limit).err();
        assert!(wait.is_some_and(|w| w <= Duration::from_secs(1)));
        // Other callers and other tools have their own buckets.
        assert!(l.check("b", "t", limit).is_ok());
        assert!(l.check("a", "u", limit).is_ok());
    }

    #[test]
    fn memory_stays_bounded_under_many_callers() {
        let l = RateLimiter::new(100, Duration::from_secs(600));
        let limit = RateLimit {
            per_minute: 60,
            burst: 5,
        };
        for i in 0..10_000 {
            let _ = l.check(&format!("caller-{i}"), "t", limit);
        }
        assert!(l.tracked() <= 100);
    }

    #[test]
    fn concurrency_slots_are_released() {
        let c = ConcurrencyLimiter::default();
        let a = c.acquire("x", 1);
        assert!(a.is_some());
        assert!(c.acquire("x", 1).is_none());
        drop(a);
        assert!(c.acquire("x", 1).is_some());
    }
}
