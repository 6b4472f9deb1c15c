//! The bound on failed logins: one token bucket for the whole console.
//! The console listens on loopback only, so every client (an SSH tunnel
//! included) comes from the same address and a per-address bound would
//! bound nothing; the bucket holds `--console-login-failures` tokens and
//! refills that many a minute. A failed login (form or bearer token)
//! spends one; while it is empty every login is refused, the right token
//! too, so guessing stays at that rate.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long the bucket takes to refill from empty.
const REFILL_PERIOD: Duration = Duration::from_secs(60);

/// Failed logins allowed: a burst of `capacity`, then `capacity` a minute.
pub struct LoginLimit {
    capacity: f64,
    state: Mutex<Bucket>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

impl LoginLimit {
    /// A full bucket of `per_minute` tokens (at least one).
    pub fn new(per_minute: u32, now: Instant) -> LoginLimit {
        let capacity = f64::from(per_minute.max(1));
        LoginLimit {
            capacity,
            state: Mutex::new(Bucket {
                tokens: capacity,
                at: now,
            }),
        }
    }

    fn refilled(&self, now: Instant) -> std::sync::MutexGuard<'_, Bucket> {
        // A poisoned lock still holds a usable count.
        let mut b = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let rate = self.capacity / REFILL_PERIOD.as_secs_f64();
        let gained = now.saturating_duration_since(b.at).as_secs_f64() * rate;
        b.tokens = (b.tokens + gained).min(self.capacity);
        b.at = now;
        b
    }

    /// `Ok` when a login may be tried now, else how long until one may.
    pub fn check(&self, now: Instant) -> Result<(), Duration> {
        let b = self.refilled(now);
        if b.tokens >= 1.0 {
            return Ok(());
        }
        let rate = self.capacity / REFILL_PERIOD.as_secs_f64();
        Err(Duration::from_secs_f64((1.0 - b.tokens) / rate))
    }

    /// A failed login spends a token.
    pub fn failed(&self, now: Instant) {
        let mut b = self.refilled(now);
        b.tokens = (b.tokens - 1.0).max(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_refill_rate() {
        let t0 = Instant::now();
        let limit = LoginLimit::new(2, t0);
        assert!(limit.check(t0).is_ok());
        limit.failed(t0);
        assert!(limit.check(t0).is_ok());
        limit.failed(t0);
        let wait = limit.check(t0).expect_err("empty after two failures");
        assert!(wait <= Duration::from_secs(30) && wait > Duration::from_secs(29));
        // Two a minute: one token back after 30 s.
        assert!(limit.check(t0 + Duration::from_secs(31)).is_ok());
        limit.failed(t0 + Duration::from_secs(31));
        assert!(limit.check(t0 + Duration::from_secs(31)).is_err());
        // Never more than the burst, however long it rests.
        let later = t0 + Duration::from_secs(3600);
        assert!(limit.check(later).is_ok());
        limit.failed(later);
        limit.failed(later);
        assert!(limit.check(later).is_err());
    }
}
