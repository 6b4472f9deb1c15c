//! Latency statistics over raw samples.
//!
//! The benchmark keeps every latency sample (nanoseconds, `u64`) and sorts
//! them once per cell: a few hundred thousand samples cost a few MiB and a
//! few milliseconds, and the percentiles are exact instead of bucketed.

use std::time::Duration;

use serde::Serialize;

/// Returns the `p`-th percentile (0..=100) of `sorted` by the nearest-rank
/// method: the smallest sample such that at least `p`% of samples are <= it.
/// Returns `None` for an empty slice. `sorted` must be in ascending order.
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let p = p.clamp(0.0, 100.0);
    // Nearest rank is 1-based; rank 0 (p == 0) is treated as the minimum.
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

/// The median (nearest rank) of `samples`, sorting them in place; `None`
/// when there are none.
pub fn median(samples: &mut [u64]) -> Option<u64> {
    samples.sort_unstable();
    percentile(samples, 50.0)
}

/// Latency summary of one cell, in milliseconds for readability.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest sample.
    pub max_ms: f64,
    /// Arithmetic mean.
    pub mean_ms: f64,
}

impl LatencySummary {
    /// Summarises `samples` (nanoseconds, any order; sorted in place).
    /// Returns `None` when there are no samples.
    pub fn from_samples(samples: &mut [u64]) -> Option<Self> {
        samples.sort_unstable();
        // Rounded to whole microseconds: finer digits are noise, and it
        // keeps the JSON output free of float artefacts like 0.69560300001.
        let to_ms = |ns: u64| round_us(Duration::from_nanos(ns).as_secs_f64() * 1e3);
        let sum: u128 = samples.iter().map(|&s| u128::from(s)).sum();
        let mean_ns = sum as f64 / samples.len().max(1) as f64;
        Some(Self {
            p50_ms: to_ms(percentile(samples, 50.0)?),
            p90_ms: to_ms(percentile(samples, 90.0)?),
            p99_ms: to_ms(percentile(samples, 99.0)?),
            max_ms: to_ms(*samples.last()?),
            mean_ms: round_us(mean_ns / 1e6),
        })
    }
}

/// Rounds milliseconds to three decimals (microseconds).
fn round_us(ms: f64) -> f64 {
    (ms * 1e3).round() / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_on_1_to_100() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 90.0), Some(90));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
    }

    #[test]
    fn small_and_empty_inputs() {
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7], 99.0), Some(7));
        // With 3 samples p50 is the 2nd, p90 and p99 are the 3rd.
        assert_eq!(percentile(&[1, 2, 3], 50.0), Some(2));
        assert_eq!(percentile(&[1, 2, 3], 90.0), Some(3));
        assert_eq!(percentile(&[1, 2, 3], 99.0), Some(3));
    }

    #[test]
    fn summary_sorts_and_converts_to_ms() {
        let mut v = vec![3_000_000, 1_000_000, 2_000_000];
        let s = LatencySummary::from_samples(&mut v).expect("non-empty");
        assert_eq!(s.p50_ms, 2.0);
        assert_eq!(s.max_ms, 3.0);
        assert_eq!(s.mean_ms, 2.0);
        assert!(LatencySummary::from_samples(&mut []).is_none());
    }
}
