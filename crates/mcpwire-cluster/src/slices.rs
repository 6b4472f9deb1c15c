//! Rate limits for the cluster without a database write per call: each
//! replica leases a slice of a bucket's tokens from PostgreSQL and admits
//! calls from it locally; what it did not use goes back when the slice
//! lapses (after [`SLICE_TTL`]) or the replica stops.
//!
//! Sizing: the first slice of a bucket is one token; a slice used up
//! before it lapsed is followed by one twice as big, one that lapsed
//! half-used by one the size of what was used (the replica's recent rate).
//! The database never grants more than [`MAX_SLICE`], nor more than a
//! quarter of the tokens in the bucket (at least one), so small buckets
//! are shared one token at a time, as before.
//!
//! A slice that runs out under load is leased again once: callers that
//! find it empty wait for the one lease in flight for their bucket (a
//! per-bucket turn) and then spend from the new slice, instead of each
//! sending its own lease for one token. At 64 calls in flight that herd
//! was up to 64 round trips, serialised on the bucket's row lock, every
//! time a slice ran out: the tail of every call behind them.
//!
//! Precision (documented in docs/cluster.md): tokens are
//! debited when leased, so the cluster never admits more than the bucket
//! holds at the moment of leasing. A token leased and spent up to
//! [`SLICE_TTL`] later lets the bucket refill meanwhile: in any interval,
//! the cluster admits at most what one bucket would, plus the tokens held
//! in slices when the interval began (a slice's first token is spent at
//! once), i.e. at most `replicas × (min(MAX_SLICE, burst / 4) − 1)` calls
//! over, none for a burst under 8. A killed replica's
//! unused slice is not returned: the bucket refills it at the configured
//! rate (`slice / rate`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use mcpwire_server::RateLimit;
use mcpwire_server::access::LimitError;

fn unavailable(e: impl std::fmt::Display) -> LimitError {
    LimitError::Unavailable(format!("PostgreSQL: {e}"))
}

fn pg_failed(e: tokio_postgres::Error) -> LimitError {
    unavailable(super::db_message(&e))
}

/// Most tokens one replica leases at once for one bucket.
pub const MAX_SLICE: u32 = 32;
/// How long a slice is spent from before its rest goes back.
pub const SLICE_TTL: Duration = Duration::from_secs(1);

/// The function leasing (and returning) tokens: refills from the elapsed
/// time (the database clock), adds back `p_return`, then grants up to
/// `p_want` (at most a quarter of what is there, at least one when one is
/// there). The row lock of the upsert serialises replicas on one bucket.
pub const MIGRATION: &str = "
CREATE OR REPLACE FUNCTION mcp_lease_tokens(p_caller text, p_tool text, p_burst float8,
    p_rate float8, p_want int, p_return float8, OUT granted int, OUT remaining float8)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    have float8;
BEGIN
    INSERT INTO mcp_rate_buckets AS b (caller, tool, tokens, admitted, updated_at)
    VALUES (p_caller, p_tool, p_burst, true, statement_timestamp())
    ON CONFLICT (caller, tool) DO UPDATE SET
        tokens = LEAST(p_burst, b.tokens + p_return + GREATEST(0,
            EXTRACT(EPOCH FROM statement_timestamp() - b.updated_at)::float8) * p_rate),
        updated_at = GREATEST(b.updated_at, statement_timestamp())
    RETURNING tokens INTO have;
    granted := GREATEST(0, LEAST(p_want, GREATEST(1, floor(have / 4))::int, floor(have)::int));
    remaining := have - granted;
    UPDATE mcp_rate_buckets SET tokens = remaining, admitted = granted > 0
        WHERE caller = p_caller AND tool = p_tool;
END $$;
";

const LEASE: &str = "SELECT granted, remaining FROM mcp_lease_tokens($1, $2, $3, $4, $5, $6)";

/// The tokens a replica holds for one (caller, tool).
#[derive(Debug, Clone, Copy)]
struct Slice {
    /// Tokens not spent yet.
    left: u32,
    /// Tokens the slice started with.
    granted: u32,
    /// When the rest goes back.
    expires: Instant,
    /// The bucket's limit, for returning.
    limit: RateLimit,
}

impl Slice {
    /// The size to ask for next, from how this slice went.
    fn next_want(&self, now: Instant) -> u32 {
        if self.left == 0 && now < self.expires {
            (self.granted * 2).clamp(1, MAX_SLICE)
        } else {
            (self.granted - self.left).clamp(1, MAX_SLICE)
        }
    }
}

fn per_second(limit: RateLimit) -> f64 {
    f64::from(limit.per_minute.max(1)) / 60.0
}

/// A bucket: (caller, tool).
type Key = (String, String);

/// Slices held by this replica, bounded by `max` buckets.
pub struct Slices {
    held: Mutex<HashMap<Key, Slice>>,
    max: usize,
    /// One lease in flight per bucket; an entry lives only while a call
    /// holds or waits for its turn, so the map is bounded by the calls
    /// running, not by the buckets ever seen.
    turns: Mutex<HashMap<Key, Arc<tokio::sync::Mutex<()>>>>,
    /// Leases sent to the database (tests count them).
    leases: AtomicU64,
}

/// A call's claim on its bucket's turn; forgets the turn when nobody
/// else holds or waits for it (also when the call is dropped mid-lease).
struct Turn<'a> {
    slices: &'a Slices,
    key: &'a Key,
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl<'a> Turn<'a> {
    fn claim(slices: &'a Slices, key: &'a Key) -> Self {
        let turn = lock(&slices.turns).entry(key.clone()).or_default().clone();
        Turn { slices, key, turn }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut turns = lock(&self.slices.turns);
        // The map's reference and ours: nobody else can take a clone
        // without this lock.
        if Arc::strong_count(&self.turn) <= 2 {
            turns.remove(self.key);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Slices {
    /// At most `max` buckets' slices held (past that, calls lease one
    /// token at a time).
    pub fn new(max: usize) -> Slices {
        Slices {
            held: Mutex::default(),
            max,
            turns: Mutex::default(),
            leases: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Slice>> {
        lock(&self.held)
    }

    /// Leases sent so far (returns included).
    #[cfg(test)]
    pub fn leases(&self) -> u64 {
        self.leases.load(Ordering::Relaxed)
    }

    /// Takes a token for (`caller`, `tool`): from the held slice, else,
    /// after the lease already in flight for the bucket, from the slice it
    /// brought or from a new one leased on `pool`.
    pub async fn take(
        &self,
        pool: &Pool,
        caller: &str,
        tool: &str,
        limit: RateLimit,
    ) -> Result<Result<(), Duration>, LimitError> {
        let key = (caller.to_owned(), tool.to_owned());
        if self.spend(&key, Instant::now()) {
            return Ok(Ok(()));
        }
        let claim = Turn::claim(self, &key);
        let _mine = claim.turn.lock().await;
        self.lease_and_take(pool, &key, limit).await
    }

    /// Spends a token of a live slice, if there is one.
    fn spend(&self, key: &Key, now: Instant) -> bool {
        match self.lock().get_mut(key) {
            Some(s) if s.left > 0 && now < s.expires => {
                s.left -= 1;
                true
            }
            _ => false,
        }
    }

    /// [`Slices::take`] with the bucket's turn held: the slice may have
    /// been refilled while this call waited.
    async fn lease_and_take(
        &self,
        pool: &Pool,
        key: &Key,
        limit: RateLimit,
    ) -> Result<Result<(), Duration>, LimitError> {
        let now = Instant::now();
        let (caller, tool) = (key.0.as_str(), key.1.as_str());
        let (want, returned) = {
            let mut held = self.lock();
            match held.get_mut(key) {
                Some(s) if s.left > 0 && now < s.expires => {
                    s.left -= 1;
                    return Ok(Ok(()));
                }
                Some(s) => {
                    let s = *s;
                    held.remove(key);
                    // A lapsed slice's rest goes back with this lease.
                    let back = if now < s.expires { 0 } else { s.left };
                    (s.next_want(now), back)
                }
                None => (1, 0),
            }
        };
        let (granted, remaining) = self
            .lease(pool, caller, tool, limit, want, f64::from(returned))
            .await?;
        if granted == 0 {
            let wait = ((1.0 - remaining) / per_second(limit)).clamp(0.0, 86_400.0);
            return Ok(Err(Duration::from_secs_f64(wait)));
        }
        let kept = {
            let mut held = self.lock();
            let room = held.len() < self.max || held.contains_key(key);
            if room {
                let slice = held.entry(key.clone()).or_insert(Slice {
                    left: 0,
                    granted: 0,
                    expires: now + SLICE_TTL,
                    limit,
                });
                // Two calls that leased at once keep both rests.
                slice.left += granted - 1;
                slice.granted += granted;
            }
            room
        };
        if !kept && granted > 1 {
            // No room to hold the rest: give it back now.
            self.lease(pool, caller, tool, limit, 0, f64::from(granted - 1))
                .await?;
        }
        Ok(Ok(()))
    }

    /// Returns the rest of lapsed slices (all of them when `all`, at
    /// shutdown); a slice that could not be returned is lost, which only
    /// under-admits until the bucket refills.
    pub async fn give_back(&self, pool: &Pool, all: bool) -> Result<usize, LimitError> {
        let now = Instant::now();
        let lapsed: Vec<(Key, Slice)> = {
            let mut held = self.lock();
            let keys: Vec<Key> = held
                .iter()
                .filter(|(_, s)| all || now >= s.expires)
                .map(|(k, _)| k.clone())
                .collect();
            keys.into_iter()
                .filter_map(|k| held.remove(&k).map(|s| (k, s)))
                .collect()
        };
        let mut returned = 0;
        for ((caller, tool), s) in lapsed.into_iter().filter(|(_, s)| s.left > 0) {
            self.lease(pool, &caller, &tool, s.limit, 0, f64::from(s.left))
                .await?;
            returned += s.left as usize;
        }
        Ok(returned)
    }

    /// One call of `mcp_lease_tokens`: (granted, tokens left in the bucket).
    async fn lease(
        &self,
        pool: &Pool,
        caller: &str,
        tool: &str,
        limit: RateLimit,
        want: u32,
        returned: f64,
    ) -> Result<(u32, f64), LimitError> {
        self.leases.fetch_add(1, Ordering::Relaxed);
        let client = pool.get().await.map_err(unavailable)?;
        let burst = f64::from(limit.burst.max(1));
        let want = i32::try_from(want).unwrap_or(i32::MAX);
        // Cached per pooled connection: one round trip per lease.
        let stmt = client.prepare_cached(LEASE).await.map_err(pg_failed)?;
        let row = client
            .query_one(
                &stmt,
                &[&caller, &tool, &burst, &per_second(limit), &want, &returned],
            )
            .await
            .map_err(pg_failed)?;
        let granted: i32 = row.try_get(0).map_err(pg_failed)?;
        let remaining: f64 = row.try_get(1).map_err(pg_failed)?;
        Ok((u32::try_from(granted).unwrap_or(0), remaining))
    }
}
