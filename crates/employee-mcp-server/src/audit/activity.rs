//! Calls per minute over a recent window, from the audit trail: how many,
//! how many failed or were refused, and the 99th-percentile latency, for
//! the console's Health charts. The trail is the one record every replica
//! writes to (the shared PostgreSQL table, or the SQLite file), so the
//! figures are the cluster's. One aggregate statement, the same text on
//! both backends: the answer is at most one row a minute, however many
//! calls the window holds.

use serde::Serialize;

/// Upper bounds of the latency buckets, in milliseconds; a last bucket
/// holds everything slower. The p99 is read off them (the bucket's bound).
pub const BUCKETS_MS: [i64; 12] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000];

/// Outcomes counted as errors: the call ran (or was meant to) and failed.
const ERRORS: &str = "'tool_error', 'protocol_error'";

/// Outcomes counted as refused: access, rate limits, an approval's no.
const REFUSED: &str =
    "'denied', 'rate_limited', 'approval_denied', 'approval_declined', 'approval_expired'";

/// One minute of calls.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Minute {
    /// Unix milliseconds of the minute's start.
    pub start_ms: i64,
    /// Calls (a folded row counts every call it stands for).
    pub calls: i64,
    /// Calls that ended as a tool or protocol error.
    pub errors: i64,
    /// Calls refused (scopes, rate limit, an approval's no or lapse).
    pub refused: i64,
    /// Calls per latency bucket ([`BUCKETS_MS`], then the slower rest).
    #[serde(skip)]
    pub buckets: [i64; BUCKETS_MS.len() + 1],
}

impl Minute {
    /// The 99th-percentile latency as the upper bound of its bucket, in
    /// milliseconds; `None` for a minute without calls or slower than the
    /// last bound.
    pub fn p99_ms(&self) -> Option<i64> {
        let total: i64 = self.buckets.iter().sum();
        if total == 0 {
            return None;
        }
        // The smallest bucket bound at or under which 99 % of calls fall.
        let needed = total - total / 100;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= needed {
                return BUCKETS_MS.get(i).copied();
            }
        }
        None
    }
}

/// The statement: `$1` is the window's start in unix milliseconds. Columns:
/// minute, calls, errors, refused, then one per bucket.
pub fn sql(count: &str) -> String {
    let mut buckets = String::new();
    let mut lower = None;
    for bound in BUCKETS_MS {
        let range = match lower {
            None => format!("latency_ms <= {bound}"),
            Some(low) => format!("latency_ms > {low} AND latency_ms <= {bound}"),
        };
        buckets.push_str(&format!(
            ", CAST(SUM(CASE WHEN {range} THEN {count} ELSE 0 END) AS BIGINT)"
        ));
        lower = Some(bound);
    }
    let last = BUCKETS_MS[BUCKETS_MS.len() - 1];
    buckets.push_str(&format!(
        ", CAST(SUM(CASE WHEN latency_ms > {last} THEN {count} ELSE 0 END) AS BIGINT)"
    ));
    format!(
        "SELECT at_unix_ms / 60000,
                CAST(SUM({count}) AS BIGINT),
                CAST(SUM(CASE WHEN outcome IN ({ERRORS}) THEN {count} ELSE 0 END) AS BIGINT),
                CAST(SUM(CASE WHEN outcome IN ({REFUSED}) THEN {count} ELSE 0 END) AS BIGINT)
                {buckets}
         FROM audit_log
         WHERE at_unix_ms >= $1
         GROUP BY at_unix_ms / 60000
         ORDER BY 1"
    )
}

/// A [`Minute`] from one result row of [`sql`], read with the driver's
/// `$get` (`get` for SQLite, `try_get` for PostgreSQL).
macro_rules! minute_from {
    ($row:ident, $get:ident) => {{
        let mut minute = $crate::audit::activity::Minute {
            start_ms: $row.$get::<_, i64>(0)? * 60_000,
            calls: $row.$get(1)?,
            errors: $row.$get(2)?,
            refused: $row.$get(3)?,
            ..Default::default()
        };
        for (i, slot) in minute.buckets.iter_mut().enumerate() {
            *slot = $row.$get(4 + i)?;
        }
        minute
    }};
}
pub(super) use minute_from;

/// Every minute from `since_ms` up to `now_ms`, with the minutes that had
/// no call filled in empty (a chart shows the gaps).
pub fn fill(minutes: Vec<Minute>, since_ms: i64, now_ms: i64) -> Vec<Minute> {
    let first = since_ms.div_euclid(60_000);
    let last = now_ms.div_euclid(60_000);
    let mut given = minutes.into_iter().peekable();
    (first..=last)
        .map(|m| {
            let start_ms = m * 60_000;
            match given.next_if(|g| g.start_ms == start_ms) {
                Some(g) => g,
                None => Minute {
                    start_ms,
                    ..Minute::default()
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(buckets: &[(usize, i64)]) -> Minute {
        let mut m = Minute::default();
        for &(i, n) in buckets {
            m.buckets[i] = n;
        }
        m
    }

    #[test]
    fn the_p99_is_the_bound_of_the_bucket_that_reaches_99_percent() {
        assert_eq!(with(&[]).p99_ms(), None);
        assert_eq!(with(&[(0, 100)]).p99_ms(), Some(1));
        // 98 fast calls and 2 slow ones: the 99th is slow.
        assert_eq!(with(&[(0, 98), (6, 2)]).p99_ms(), Some(100));
        // 990 fast, 10 slow: 99 % are fast.
        assert_eq!(with(&[(2, 990), (9, 10)]).p99_ms(), Some(5));
        // Slower than the last bound.
        assert_eq!(with(&[(BUCKETS_MS.len(), 5)]).p99_ms(), None);
    }

    #[test]
    fn fill_gives_every_minute_of_the_window() {
        let given = vec![Minute {
            start_ms: 120_000,
            calls: 3,
            ..Minute::default()
        }];
        let all = fill(given, 60_000, 240_500);
        let starts: Vec<i64> = all.iter().map(|m| m.start_ms).collect();
        assert_eq!(starts, vec![60_000, 120_000, 180_000, 240_000]);
        assert_eq!(all[1].calls, 3);
        assert_eq!(all[0].calls + all[2].calls + all[3].calls, 0);
    }

    #[test]
    fn the_statement_has_a_column_per_bucket() {
        let sql = sql("COALESCE(count, 1)");
        assert_eq!(sql.matches("CAST(SUM(").count(), 3 + BUCKETS_MS.len() + 1);
        assert!(sql.contains("WHERE at_unix_ms >= $1"), "{sql}");
    }
}
