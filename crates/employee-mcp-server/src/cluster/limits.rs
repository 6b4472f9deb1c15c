//! Rate and concurrency limits on PostgreSQL, so replicas enforce them
//! for the cluster as a whole.
//!
//! - Rate: one token bucket row per (caller, tool), refilled and debited
//!   in a single `INSERT … ON CONFLICT DO UPDATE` (the row lock makes
//!   concurrent takes on any replica queue up; the refill is computed in
//!   SQL from the database clock).
//! - Concurrency: one lease row per running call, with an expiry the
//!   holder pushes forward while the call runs; a replica killed with -9
//!   stops refreshing, so its leases lapse after [`LEASE_TTL`].
//!
//! Fail closed: when PostgreSQL does not answer within the timeout the
//! limiter errs and the engine refuses the call with -32603.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use deadpool_postgres::Pool;
use mcpwire_server::RateLimit;
use mcpwire_server::access::{CallLimiter, LimitError, LimitFuture, Permit};

/// The bucket and lease tables.
pub const MIGRATION: &str = "
CREATE UNLOGGED TABLE IF NOT EXISTS mcp_rate_buckets (
    caller      text NOT NULL,
    tool        text NOT NULL,
    tokens      double precision NOT NULL,
    admitted    boolean NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (caller, tool)
);
CREATE INDEX IF NOT EXISTS mcp_rate_buckets_updated ON mcp_rate_buckets (updated_at);
CREATE UNLOGGED TABLE IF NOT EXISTS mcp_call_leases (
    id          bigserial PRIMARY KEY,
    caller      text NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS mcp_call_leases_caller ON mcp_call_leases (caller, expires_at);
-- Buckets and leases are coordination state, rewritten on every call:
-- unlogged, so a call pays no WAL flush for them (after a database crash
-- they start empty: limits reset, which is harmless). Tables created
-- logged by an earlier version are converted once.
DO $$
BEGIN
    IF (SELECT relpersistence FROM pg_class WHERE oid = 'mcp_rate_buckets'::regclass) = 'p' THEN
        ALTER TABLE mcp_rate_buckets SET UNLOGGED;
    END IF;
    IF (SELECT relpersistence FROM pg_class WHERE oid = 'mcp_call_leases'::regclass) = 'p' THEN
        ALTER TABLE mcp_call_leases SET UNLOGGED;
    END IF;
END $$;
-- One round trip per lease. A volatile PL/pgSQL function takes a fresh
-- snapshot per statement, so the count runs after the per-caller lock is
-- held and sees every lease committed before it (a single plain
-- statement would count from a snapshot taken before the lock).
CREATE OR REPLACE FUNCTION mcp_take_lease(p_caller text, p_max bigint, p_ttl float8)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    lease bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(7402, hashtext(p_caller));
    INSERT INTO mcp_call_leases (caller, expires_at)
    SELECT p_caller, now() + make_interval(secs => p_ttl)
    WHERE (SELECT count(*) FROM mcp_call_leases
           WHERE caller = p_caller AND expires_at > now()) < p_max
    RETURNING id INTO lease;
    RETURN lease;
END $$;
";

/// How long a lease outlives its last refresh by default (a crashed
/// replica's calls stop counting after this).
pub const LEASE_TTL: Duration = Duration::from_secs(30);

/// How often idle buckets and lapsed leases are pruned (at most).
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// One statement: refill from the elapsed time, then take a token if one
/// is there. `$3` burst, `$4` tokens per second. Statements queued on the
/// row lock may carry an earlier timestamp; `GREATEST` keeps time moving
/// forward so no refill is counted twice.
const TAKE: &str = "
INSERT INTO mcp_rate_buckets AS b (caller, tool, tokens, admitted, updated_at)
VALUES ($1, $2, $3::float8 - 1, true, statement_timestamp())
ON CONFLICT (caller, tool) DO UPDATE SET
    tokens = CASE
        WHEN LEAST($3::float8, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM statement_timestamp() - b.updated_at)::float8) * $4::float8) >= 1
        THEN LEAST($3::float8, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM statement_timestamp() - b.updated_at)::float8) * $4::float8) - 1
        ELSE LEAST($3::float8, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM statement_timestamp() - b.updated_at)::float8) * $4::float8)
    END,
    admitted = LEAST($3::float8, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM statement_timestamp() - b.updated_at)::float8) * $4::float8) >= 1,
    updated_at = GREATEST(b.updated_at, statement_timestamp())
RETURNING admitted, tokens";

/// Tunables of [`PgLimiter`].
#[derive(Clone, Debug)]
pub struct PgLimitOptions {
    /// The longest one decision may take before the call is refused.
    pub timeout: Duration,
    /// Buckets idle this long are deleted (a forgotten bucket is full).
    pub idle_ttl: Duration,
    /// Most bucket rows kept; the least recently used go first.
    pub max_buckets: usize,
    /// How long a lease outlives its last refresh ([`LEASE_TTL`]); the
    /// holder refreshes it every third of this.
    pub lease_ttl: Duration,
}

/// Limits kept in one PostgreSQL database.
pub struct PgLimiter {
    pool: Pool,
    options: PgLimitOptions,
    /// Seconds since the epoch of the last prune.
    pruned: AtomicU64,
}

fn unavailable(e: impl std::fmt::Display) -> LimitError {
    LimitError::Unavailable(format!("PostgreSQL: {e}"))
}

fn epoch_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl PgLimiter {
    /// Limits in `pool`'s database (tables from [`super::migrate`]).
    pub fn new(pool: Pool, options: PgLimitOptions) -> Arc<Self> {
        Arc::new(Self {
            pool,
            options,
            pruned: AtomicU64::new(epoch_secs()),
        })
    }

    async fn bounded<T>(
        &self,
        work: impl Future<Output = Result<T, LimitError>>,
    ) -> Result<T, LimitError> {
        match tokio::time::timeout(self.options.timeout, work).await {
            Ok(r) => r,
            Err(_) => Err(LimitError::Unavailable(format!(
                "PostgreSQL did not answer within {} ms",
                self.options.timeout.as_millis()
            ))),
        }
    }

    async fn take_now(
        &self,
        caller: &str,
        tool: &str,
        limit: RateLimit,
    ) -> Result<Result<(), Duration>, LimitError> {
        let client = self.pool.get().await.map_err(unavailable)?;
        let burst = f64::from(limit.burst.max(1));
        let rate = f64::from(limit.per_minute.max(1)) / 60.0;
        // Cached per pooled connection: one round trip per call, not two.
        let take = client.prepare_cached(TAKE).await.map_err(pg_failed)?;
        let row = client
            .query_one(&take, &[&caller, &tool, &burst, &rate])
            .await
            .map_err(pg_failed)?;
        let admitted: bool = row.try_get(0).map_err(pg_failed)?;
        let tokens: f64 = row.try_get(1).map_err(pg_failed)?;
        if admitted {
            return Ok(Ok(()));
        }
        let wait = ((1.0 - tokens) / rate).clamp(0.0, 86_400.0);
        Ok(Err(Duration::from_secs_f64(wait)))
    }

    /// A lease if the caller runs fewer than `max` calls: one statement
    /// (see `mcp_take_lease`); lapsed leases do not count and are deleted
    /// by [`PgLimiter::prune`].
    async fn acquire_now(&self, caller: &str, max: usize) -> Result<Option<i64>, LimitError> {
        let client = self.pool.get().await.map_err(unavailable)?;
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        let lease = client
            .prepare_cached("SELECT mcp_take_lease($1, $2, $3::float8)")
            .await
            .map_err(pg_failed)?;
        let row = client
            .query_one(
                &lease,
                &[&caller, &max, &self.options.lease_ttl.as_secs_f64()],
            )
            .await
            .map_err(pg_failed)?;
        row.try_get(0).map_err(pg_failed)
    }

    /// Deletes idle buckets, buckets over the bound, and lapsed leases;
    /// at most once per [`PRUNE_EVERY`] across calls, in the background.
    fn maybe_prune(self: &Arc<Self>) {
        let now = epoch_secs();
        let last = self.pruned.load(Ordering::Relaxed);
        if now < last + PRUNE_EVERY.as_secs()
            || self
                .pruned
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let me = Arc::clone(self);
        tokio::spawn(async move {
            if let Err(e) = me.bounded(me.prune()).await {
                tracing::warn!(error = %e, "pruning the shared rate limits failed");
            }
        });
    }

    /// Deletes idle buckets, buckets over the bound, and lapsed leases.
    pub async fn prune(&self) -> Result<(), LimitError> {
        let client = self.pool.get().await.map_err(unavailable)?;
        let idle = self.options.idle_ttl.as_secs_f64();
        let max = i64::try_from(self.options.max_buckets).unwrap_or(i64::MAX);
        client
            .execute(
                "DELETE FROM mcp_rate_buckets WHERE updated_at < now() - make_interval(secs => $1)",
                &[&idle],
            )
            .await
            .map_err(pg_failed)?;
        client
            .execute(
                "DELETE FROM mcp_rate_buckets WHERE (caller, tool) IN (SELECT caller, tool \
                 FROM mcp_rate_buckets ORDER BY updated_at DESC OFFSET $1)",
                &[&max],
            )
            .await
            .map_err(pg_failed)?;
        client
            .execute("DELETE FROM mcp_call_leases WHERE expires_at <= now()", &[])
            .await
            .map_err(pg_failed)?;
        Ok(())
    }
}

/// A lease row held while the call runs: refreshed in the background,
/// deleted on drop.
struct Lease {
    id: i64,
    pool: Pool,
    timeout: Duration,
    refresher: tokio::task::JoinHandle<()>,
}

impl Lease {
    fn start(id: i64, pool: Pool, options: &PgLimitOptions) -> Self {
        let p = pool.clone();
        let (ttl, timeout) = (options.lease_ttl, options.timeout);
        let refresher = tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(
                tokio::time::Instant::from_std(Instant::now() + ttl / 3),
                ttl / 3,
            );
            loop {
                tick.tick().await;
                let refresh = async {
                    let c = p.get().await.map_err(unavailable)?;
                    c.execute(
                        "UPDATE mcp_call_leases SET expires_at = now() + make_interval(secs => $2) WHERE id = $1",
                        &[&id, &ttl.as_secs_f64()],
                    )
                    .await
                    .map_err(pg_failed)
                };
                // A missed refresh only shortens the lease; the next may land.
                if let Ok(Err(e)) | Err(e) = tokio::time::timeout(timeout, refresh)
                    .await
                    .map_err(|_| unavailable("refresh timed out"))
                {
                    tracing::warn!(lease = id, error = %e, "refreshing a call lease failed");
                }
            }
        });
        Self {
            id,
            pool,
            timeout,
            refresher,
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.refresher.abort();
        let (id, pool, timeout) = (self.id, self.pool.clone(), self.timeout);
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return; // No runtime (shutdown): the lease lapses by itself.
        };
        rt.spawn(async move {
            let release = async {
                let c = pool.get().await.map_err(unavailable)?;
                c.execute("DELETE FROM mcp_call_leases WHERE id = $1", &[&id])
                    .await
                    .map_err(pg_failed)
            };
            if let Ok(Err(e)) | Err(e) = tokio::time::timeout(timeout, release)
                .await
                .map_err(|_| unavailable("release timed out"))
            {
                tracing::warn!(lease = id, error = %e, "releasing a call lease failed; it lapses by itself");
            }
        });
    }
}

/// The limiter as the engine uses it (an `Arc` so pruning can run in the
/// background).
pub struct SharedLimiter(pub Arc<PgLimiter>);

impl CallLimiter for SharedLimiter {
    fn take<'a>(
        &'a self,
        caller: &'a str,
        tool: &'a str,
        limit: RateLimit,
    ) -> LimitFuture<'a, Result<(), Duration>> {
        let me = &self.0;
        me.maybe_prune();
        Box::pin(me.bounded(me.take_now(caller, tool, limit)))
    }

    fn acquire<'a>(&'a self, caller: &'a str, max: usize) -> LimitFuture<'a, Option<Permit>> {
        let me = &self.0;
        Box::pin(async move {
            let id = me.bounded(me.acquire_now(caller, max)).await?;
            Ok(id.map(|id| Permit::new(Lease::start(id, me.pool.clone(), &me.options))))
        })
    }
}

fn pg_failed(e: tokio_postgres::Error) -> LimitError {
    unavailable(super::db_message(&e))
}
