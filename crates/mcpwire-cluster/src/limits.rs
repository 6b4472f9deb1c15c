//! Rate and concurrency limits on PostgreSQL, so replicas enforce them
//! for the cluster as a whole.
//!
//! - Rate: one token bucket row per (caller, tool), refilled and debited
//!   in one statement (the row lock makes concurrent leases on any replica
//!   queue up; the refill is computed in SQL from the database clock).
//!   Replicas lease slices of tokens and admit from them locally
//!   ([`super::slices`]), so a busy bucket costs one write per slice, not
//!   per call.
//! - Concurrency: each replica holds a share of a caller's limit, one row
//!   per (caller, replica) with an expiry the replica pushes forward, and
//!   counts its running calls in memory ([`super::shares`]); a replica
//!   killed with -9 stops refreshing, so its shares lapse after
//!   [`LEASE_TTL`].
//!
//! One background task per limiter returns lapsed slices, shrinks idle
//! shares and refreshes the replica's shares (see [`PgLimiter::new`]).
//!
//! Fail closed: when PostgreSQL does not answer within the timeout the
//! limiter errs and the engine refuses the call with -32603.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use deadpool_postgres::Pool;
use mcpwire_server::RateLimit;
use mcpwire_server::access::{CallLimiter, LimitError, LimitFuture, Permit};

use super::shares::{SHRINK_AFTER, Shares};
use super::slices::{SLICE_TTL, Slices};

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
-- (mcp_call_leases: one row per running call, as replicas before
-- per-replica shares kept them; still pruned during a rolling upgrade.)
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
";

/// How long a replica's concurrency share outlives its last refresh by
/// default (a crashed replica's calls stop counting after this).
pub const LEASE_TTL: Duration = Duration::from_secs(15);

/// How often idle buckets and lapsed leases are pruned (at most).
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// Tunables of [`PgLimiter`].
#[derive(Clone, Debug)]
pub struct PgLimitOptions {
    /// The longest one decision may take before the call is refused.
    pub timeout: Duration,
    /// Buckets idle this long are deleted (a forgotten bucket is full).
    pub idle_ttl: Duration,
    /// Most bucket rows kept; the least recently used go first.
    pub max_buckets: usize,
    /// How long a concurrency share outlives its last refresh
    /// ([`LEASE_TTL`]); the replica refreshes it every third of this.
    pub lease_ttl: Duration,
}

/// Limits kept in one PostgreSQL database.
pub struct PgLimiter {
    pool: Pool,
    options: PgLimitOptions,
    /// Seconds since the epoch of the last prune.
    pruned: AtomicU64,
    /// Tokens this replica leased and has not spent.
    slices: Slices,
    /// This replica's shares of callers' concurrency limits.
    shares: Shares,
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
    /// Limits in `pool`'s database (tables from [`super::migrate`]), with
    /// their background task (must run inside a tokio runtime; the task
    /// ends when the limiter is dropped).
    pub fn new(pool: Pool, options: PgLimitOptions) -> Arc<Self> {
        let me = Arc::new(Self {
            slices: Slices::new(options.max_buckets),
            shares: Shares::new(pool.clone(), options.lease_ttl),
            pool,
            options,
            pruned: AtomicU64::new(epoch_secs()),
        });
        me.start_maintaining();
        me
    }

    /// Every [`SLICE_TTL`] (or a third of the share TTL, if shorter):
    /// returns lapsed slices, shrinks idle shares, refreshes the others.
    /// Holds the limiter weakly, so it stops when the limiter is dropped.
    fn start_maintaining(self: &Arc<Self>) {
        let me = Arc::downgrade(self);
        let period = SLICE_TTL.min(SHRINK_AFTER).min(self.options.lease_ttl / 3);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            loop {
                tick.tick().await;
                let Some(me) = me.upgrade() else { break };
                let back = me.bounded(me.slices.give_back(&me.pool, false)).await;
                if let Err(e) = back {
                    tracing::warn!(error = %e, "returning unused rate-limit tokens failed");
                }
                // A missed refresh only shortens the shares; the next may land.
                if let Err(e) = me.bounded(me.shares.maintain()).await {
                    tracing::warn!(error = %e, "refreshing the concurrency shares failed");
                }
            }
        });
    }

    /// At shutdown: gives every unspent token and every share back to the
    /// cluster.
    pub async fn give_back_all(&self) {
        match self.bounded(self.slices.give_back(&self.pool, true)).await {
            Ok(n) => tracing::debug!(tokens = n, "returned unused rate-limit tokens"),
            Err(e) => tracing::warn!(error = %e, "returning unused rate-limit tokens failed"),
        }
        if let Err(e) = self.bounded(self.shares.release_all()).await {
            tracing::warn!(error = %e, "releasing the concurrency shares failed; they lapse");
        }
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
        client
            .execute("DELETE FROM mcp_call_shares WHERE expires_at <= now()", &[])
            .await
            .map_err(pg_failed)?;
        Ok(())
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
        Box::pin(me.bounded(me.slices.take(&me.pool, caller, tool, limit)))
    }

    fn acquire<'a>(&'a self, caller: &'a str, max: usize) -> LimitFuture<'a, Option<Permit>> {
        let me = &self.0;
        Box::pin(me.bounded(me.shares.acquire(caller, max)))
    }
}

fn pg_failed(e: tokio_postgres::Error) -> LimitError {
    unavailable(super::db_message(&e))
}
