//! Rate and concurrency limits per caller, with bounded memory, behind
//! the [`CallLimiter`] trait so replicas can share them.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{ClientAddress, Principal};
use crate::sync::lock;

/// A token bucket: `burst` calls at once, refilled at `per_minute`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RateLimit {
    /// Sustained calls per minute.
    pub per_minute: u32,
    /// Calls allowed in a burst.
    pub burst: u32,
}

impl RateLimit {
    /// `burst` calls at once, refilled at `per_minute`.
    pub const fn new(per_minute: u32, burst: u32) -> Self {
        Self { per_minute, burst }
    }

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
pub(crate) struct RateLimiter {
    buckets: Mutex<HashMap<(String, String), Bucket>>,
    max_keys: usize,
    idle_ttl: Duration,
}

impl RateLimiter {
    /// A limiter remembering at most `max_keys` buckets.
    pub(crate) fn new(max_keys: usize, idle_ttl: Duration) -> Self {
        Self {
            buckets: Mutex::new(HashMap::new()),
            max_keys: max_keys.max(1),
            idle_ttl,
        }
    }

    /// Takes one token; `Err(wait)` says how long until one is available.
    pub(crate) fn check(&self, caller: &str, tool: &str, limit: RateLimit) -> Result<(), Duration> {
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

    /// How many buckets are held.
    #[cfg(test)]
    pub(crate) fn tracked(&self) -> usize {
        lock(&self.buckets).len()
    }
}

/// Caps the calls one caller has running at once. Memory is bounded by the
/// number of callers with calls in flight.
#[derive(Default)]
pub(crate) struct ConcurrencyLimiter {
    running: Arc<Mutex<HashMap<String, usize>>>,
}

/// A concurrency slot: released when dropped.
pub struct Permit {
    _release: Box<dyn Send + Sync>,
}

impl Permit {
    /// A permit whose `guard` releases the slot when dropped.
    pub fn new(guard: impl Send + Sync + 'static) -> Self {
        Self {
            _release: Box::new(guard),
        }
    }
}

/// Releases an in-memory slot when dropped.
struct Slot {
    running: Arc<Mutex<HashMap<String, usize>>>,
    caller: String,
}

impl Drop for Slot {
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
    pub(crate) fn acquire(&self, caller: &str, max: usize) -> Option<Permit> {
        let mut running = lock(&self.running);
        let n = running.entry(caller.to_owned()).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Permit::new(Slot {
            running: Arc::clone(&self.running),
            caller: caller.to_owned(),
        }))
    }
}

/// The future a [`CallLimiter`] returns.
pub type LimitFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, LimitError>> + Send + 'a>>;

/// The limiter could not decide.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// Its store did not answer in time (down, unreachable, overloaded).
    #[error("limit store unavailable: {0}")]
    Unavailable(String),
}

/// The `tools/call` limits: a token bucket per (caller, tool) and a cap on
/// calls running per caller. Replicas sharing one implementation enforce
/// the limits for the cluster as a whole. The engine refuses the call
/// (-32603, fail closed) when the limiter errs or takes longer than
/// [`LIMIT_TIMEOUT`], so an implementation should fail fast.
pub trait CallLimiter: Send + Sync + 'static {
    /// Takes one token from the bucket of (`caller`, `tool`); `Ok(Err(wait))`
    /// says how long until one is available.
    fn take<'a>(
        &'a self,
        caller: &'a str,
        tool: &'a str,
        limit: RateLimit,
    ) -> LimitFuture<'a, Result<(), Duration>>;

    /// A slot for one more running call of `caller`, or `None` if it
    /// already has `max` running. The slot is held until the permit drops.
    fn acquire<'a>(&'a self, caller: &'a str, max: usize) -> LimitFuture<'a, Option<Permit>>;
}

/// The longest the engine waits for a [`CallLimiter`] before refusing.
pub const LIMIT_TIMEOUT: Duration = Duration::from_secs(5);

/// The default [`CallLimiter`]: buckets and counters in this process.
/// Share one between [`Server`](crate::Server)s of a process to share the
/// limits.
pub struct MemoryLimiter {
    rate: RateLimiter,
    concurrency: ConcurrencyLimiter,
}

impl MemoryLimiter {
    /// Remembers at most `max_keys` buckets, forgetting idle ones after `idle_ttl`.
    pub fn new(max_keys: usize, idle_ttl: Duration) -> Self {
        Self {
            rate: RateLimiter::new(max_keys, idle_ttl),
            concurrency: ConcurrencyLimiter::default(),
        }
    }
}

impl CallLimiter for MemoryLimiter {
    fn take<'a>(
        &'a self,
        caller: &'a str,
        tool: &'a str,
        limit: RateLimit,
    ) -> LimitFuture<'a, Result<(), Duration>> {
        Box::pin(std::future::ready(Ok(self.rate.check(caller, tool, limit))))
    }

    fn acquire<'a>(&'a self, caller: &'a str, max: usize) -> LimitFuture<'a, Option<Permit>> {
        Box::pin(std::future::ready(Ok(self
            .concurrency
            .acquire(caller, max))))
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
