//! A fixed-bucket latency histogram made of atomics: recording is three
//! relaxed `fetch_add`s and a short scan, with no lock and no allocation,
//! so it can sit on every request's path.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets, in microseconds. The OpenTelemetry MCP
/// semantic conventions advise 10 ms … 300 s for
/// `mcp.server.operation.duration`; this server answers most calls in well
/// under a millisecond (SQLite on local disk), so finer buckets are added
/// below 10 ms or every call would land in the first one.
pub const BOUNDS_MICROS: [u64; 18] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000,
    1_000_000, 2_000_000, 5_000_000, 10_000_000, 30_000_000, 60_000_000,
];

/// Counts of observations per bucket (not cumulative; the encoder sums
/// them), plus the total count and the sum in microseconds.
#[derive(Debug)]
pub struct Histogram {
    buckets: [AtomicU64; BOUNDS_MICROS.len() + 1],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }
}

/// A consistent-enough copy of a [`Histogram`] for rendering.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Cumulative counts, one per bound in [`BOUNDS_MICROS`], then `+Inf`.
    pub cumulative: Vec<u64>,
    /// Observations.
    pub count: u64,
    /// Sum of observations in microseconds.
    pub sum_micros: u64,
}

impl Histogram {
    /// Records one observation.
    pub fn observe(&self, elapsed: Duration) {
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let slot = BOUNDS_MICROS
            .iter()
            .position(|&b| micros <= b)
            .unwrap_or(BOUNDS_MICROS.len());
        self.buckets[slot].fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Cumulative bucket counts for the text format. Reads are not atomic
    /// as a whole; the `+Inf` bucket is the bucket sum, so it always
    /// equals `count` in the output even while calls are recorded.
    pub fn snapshot(&self) -> Snapshot {
        let mut running = 0;
        let cumulative: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| {
                running += b.load(Ordering::Relaxed);
                running
            })
            .collect();
        Snapshot {
            count: running,
            sum_micros: self.sum_micros.load(Ordering::Relaxed),
            cumulative,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_inf_equals_count() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(50));
        h.observe(Duration::from_micros(100));
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(3600));
        let s = h.snapshot();
        assert_eq!(s.count, 4);
        assert_eq!(s.cumulative[0], 2, "≤100µs holds both small ones");
        assert_eq!(s.cumulative[5], 3, "≤5ms adds the 3 ms one");
        assert_eq!(*s.cumulative.last().unwrap(), 4);
        assert_eq!(s.sum_micros, 50 + 100 + 3_000 + 3_600_000_000);
    }
}
