//! Rate-limited log lines: a failure that repeats on every request (a full
//! disk, a lost database) is logged the first time, then at most once per
//! period with the number of repeats left out, so the log cannot grow as
//! fast as a client can send requests.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often a repeated failure is logged by default.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// Decides which occurrences of one repeated log line are written.
#[derive(Debug)]
pub struct LogThrottle {
    every: Duration,
    /// When a line was last written, and repeats left out since.
    state: Mutex<(Option<Instant>, u64)>,
}

impl LogThrottle {
    /// At most one line per `every` (usable in a `static`).
    pub const fn new(every: Duration) -> LogThrottle {
        LogThrottle {
            every,
            state: Mutex::new((None, 0)),
        }
    }

    /// `Some(suppressed)` when this occurrence is to be logged, with the
    /// number of occurrences left out since the last line; `None` to
    /// leave it out.
    pub fn admit(&self) -> Option<u64> {
        self.admit_at(Instant::now())
    }

    fn admit_at(&self, now: Instant) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let due = state
            .0
            .is_none_or(|last| now.saturating_duration_since(last) >= self.every);
        if !due {
            state.1 += 1;
            return None;
        }
        let suppressed = state.1;
        *state = (Some(now), 0);
        Some(suppressed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_the_first_then_one_per_period_with_the_count_left_out() {
        let throttle = LogThrottle::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(throttle.admit_at(t0), Some(0));
        for i in 1..=1000 {
            assert_eq!(throttle.admit_at(t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(throttle.admit_at(t0 + Duration::from_secs(10)), Some(1000));
        assert_eq!(throttle.admit_at(t0 + Duration::from_secs(11)), None);
        assert_eq!(throttle.admit_at(t0 + Duration::from_secs(30)), Some(1));
    }
}
