//! Concurrency limits for the cluster without a database write per call:
//! each replica holds a share of a caller's `max` running calls, recorded
//! in PostgreSQL, and counts its running calls against it in memory.
//!
//! - A call that finds room in the local share runs without a round trip.
//! - A call that does not asks the database to grow the share (doubling,
//!   at least by one), under a per-caller advisory lock, up to what the
//!   other replicas' live shares leave of `max`; the shares of all
//!   replicas never add up to more than `max`, so the cluster never runs
//!   more than `max` calls of one caller.
//! - Shares with unused room are shrunk to what runs after [`SHRINK_AFTER`]
//!   without growth (so another replica can take the room), and every
//!   share of a replica is kept alive by one statement per third of the
//!   TTL; a killed replica's shares lapse after the TTL.
//! - Fail-closed: a share is used locally only while its row is known to
//!   be alive (the TTL counted from when the last statement that extended
//!   it was sent). A replica cut off from the database longer than that
//!   admits nothing from memory, since the other replicas may have taken
//!   the room its lapsed row held; its calls wait for the database like a
//!   first call does, and fail with "unavailable" while it is down.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use mcpwire_server::access::{LimitError, Permit};

/// Unused room is given back after this long without growth.
pub const SHRINK_AFTER: Duration = Duration::from_secs(1);

/// The shares table and the function that resizes a share.
pub const MIGRATION: &str = "
CREATE UNLOGGED TABLE IF NOT EXISTS mcp_call_shares (
    caller      text NOT NULL,
    replica     text NOT NULL,
    slots       integer NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (caller, replica)
);
CREATE INDEX IF NOT EXISTS mcp_call_shares_replica ON mcp_call_shares (replica);
-- Sets a replica's share of a caller to p_want, or to what the other
-- replicas' live shares leave of p_max; returns the share. The per-caller
-- lock serialises resizes, and a volatile function reads the other shares
-- after taking it.
CREATE OR REPLACE FUNCTION mcp_resize_share(p_replica text, p_caller text, p_max int,
    p_want int, p_ttl float8) RETURNS int LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    others int;
    mine int;
BEGIN
    PERFORM pg_advisory_xact_lock(7403, hashtext(p_caller));
    SELECT COALESCE(sum(slots), 0) INTO others FROM mcp_call_shares
        WHERE caller = p_caller AND replica <> p_replica AND expires_at > now();
    mine := GREATEST(0, LEAST(p_want, p_max - others));
    IF mine = 0 THEN
        DELETE FROM mcp_call_shares WHERE caller = p_caller AND replica = p_replica;
    ELSE
        INSERT INTO mcp_call_shares (caller, replica, slots, expires_at)
        VALUES (p_caller, p_replica, mine, now() + make_interval(secs => p_ttl))
        ON CONFLICT (caller, replica) DO UPDATE
            SET slots = mine, expires_at = now() + make_interval(secs => p_ttl);
    END IF;
    RETURN mine;
END $$;
";

const RESIZE: &str = "SELECT mcp_resize_share($1, $2, $3, $4, $5::float8)";

/// One caller's share on this replica.
struct Share {
    /// Slots recorded in the database.
    claimed: usize,
    /// Calls running here.
    running: usize,
    /// When the share last grew.
    grown: Instant,
    /// The caller's limit when it last grew.
    max: usize,
    /// Until when the database row is known to hold `claimed`: the TTL
    /// after the last resize or keep-alive that extended it was sent.
    alive_until: Instant,
    /// Serialises this caller's resizes on this replica.
    resizing: Arc<tokio::sync::Mutex<()>>,
}

/// This replica's shares.
pub struct Shares {
    replica: String,
    pool: Pool,
    ttl: Duration,
    held: Arc<Mutex<HashMap<String, Share>>>,
}

fn lock(held: &Mutex<HashMap<String, Share>>) -> MutexGuard<'_, HashMap<String, Share>> {
    held.lock().unwrap_or_else(PoisonError::into_inner)
}

fn unavailable(e: impl std::fmt::Display) -> LimitError {
    LimitError::Unavailable(format!("PostgreSQL: {e}"))
}

fn pg_failed(e: tokio_postgres::Error) -> LimitError {
    unavailable(super::db_message(&e))
}

/// A running call: frees its local slot when dropped (no round trip).
struct Running {
    held: Arc<Mutex<HashMap<String, Share>>>,
    caller: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(share) = lock(&self.held).get_mut(&self.caller) {
            share.running = share.running.saturating_sub(1);
        }
    }
}

impl Shares {
    /// Shares of a new replica (a random name) on `pool`, lapsing `ttl`
    /// after their last refresh.
    pub fn new(pool: Pool, ttl: Duration) -> Shares {
        let mut id = [0u8; 8];
        // A clash would only merge two replicas' shares (never over max).
        let _ = getrandom::fill(&mut id);
        Shares {
            replica: id.iter().map(|b| format!("{b:02x}")).collect(),
            pool,
            ttl,
            held: Arc::default(),
        }
    }

    fn admit_locally(&self, caller: &str) -> Option<Permit> {
        let mut held = lock(&self.held);
        let share = held.get_mut(caller)?;
        if share.running >= share.claimed || Instant::now() >= share.alive_until {
            return None;
        }
        share.running += 1;
        Some(self.permit(caller))
    }

    fn permit(&self, caller: &str) -> Permit {
        Permit::new(Running {
            held: Arc::clone(&self.held),
            caller: caller.to_owned(),
        })
    }

    /// A slot for one more call of `caller`, if the cluster runs fewer
    /// than `max` of them.
    pub async fn acquire(&self, caller: &str, max: usize) -> Result<Option<Permit>, LimitError> {
        if let Some(permit) = self.admit_locally(caller) {
            return Ok(Some(permit));
        }
        let resizing: Arc<tokio::sync::Mutex<()>> = Arc::clone(
            &lock(&self.held)
                .entry(caller.to_owned())
                .or_insert_with(|| Share {
                    claimed: 0,
                    running: 0,
                    grown: Instant::now(),
                    max,
                    alive_until: Instant::now(),
                    resizing: Arc::default(),
                })
                .resizing,
        );
        let _one_at_a_time = resizing.clone().lock_owned().await;
        // Another call may have grown the share meanwhile.
        if let Some(permit) = self.admit_locally(caller) {
            return Ok(Some(permit));
        }
        let want = {
            let held = lock(&self.held);
            let share = held.get(caller);
            let (claimed, running) = share.map_or((0, 0), |s| (s.claimed, s.running));
            (claimed * 2).max(running + 1).min(max)
        };
        let sent = Instant::now();
        let granted = self.resize(caller, max, want).await?;
        let mut held = lock(&self.held);
        // Kept even if forgotten meanwhile: the database holds it now.
        let share = held.entry(caller.to_owned()).or_insert_with(|| Share {
            claimed: 0,
            running: 0,
            grown: Instant::now(),
            max,
            alive_until: sent,
            resizing,
        });
        share.claimed = granted;
        share.grown = Instant::now();
        share.max = max;
        share.alive_until = sent + self.ttl;
        if share.running >= share.claimed {
            return Ok(None);
        }
        share.running += 1;
        Ok(Some(self.permit(caller)))
    }

    async fn resize(&self, caller: &str, max: usize, want: usize) -> Result<usize, LimitError> {
        let client = self.pool.get().await.map_err(unavailable)?;
        let stmt = client.prepare_cached(RESIZE).await.map_err(pg_failed)?;
        let max = i32::try_from(max).unwrap_or(i32::MAX);
        let want = i32::try_from(want).unwrap_or(i32::MAX);
        let row = client
            .query_one(
                &stmt,
                &[&self.replica, &caller, &max, &want, &self.ttl.as_secs_f64()],
            )
            .await
            .map_err(pg_failed)?;
        let granted: i32 = row.try_get(0).map_err(pg_failed)?;
        Ok(usize::try_from(granted).unwrap_or(0))
    }

    /// Gives back room unused since [`SHRINK_AFTER`] (forgetting shares
    /// with nothing running), then keeps every share alive for a TTL; a
    /// shrink that fails does not keep the others from being kept alive.
    pub async fn maintain(&self) -> Result<(), LimitError> {
        let shrunk = self.shrink_idle().await;
        let sent = Instant::now();
        let client = self.pool.get().await.map_err(unavailable)?;
        client
            .execute(
                "UPDATE mcp_call_shares SET expires_at = now() + make_interval(secs => $2) \
                 WHERE replica = $1",
                &[&self.replica, &self.ttl.as_secs_f64()],
            )
            .await
            .map_err(pg_failed)?;
        // Every row of this replica now lives a TTL from `sent` at least
        // (a share claimed after `sent` was extended by its own resize).
        for share in lock(&self.held).values_mut() {
            share.alive_until = share.alive_until.max(sent + self.ttl);
        }
        shrunk
    }

    /// Gives back room unused since [`SHRINK_AFTER`]; the first failure,
    /// after trying every idle share.
    async fn shrink_idle(&self) -> Result<(), LimitError> {
        let now = Instant::now();
        // Entries left with nothing claimed or running (a resize that
        // failed or granted nothing, e.g. during an outage): one per caller
        // ever seen otherwise.
        lock(&self.held)
            .retain(|_, s| s.claimed > 0 || s.running > 0 || Arc::strong_count(&s.resizing) > 1);
        let idle: Vec<(String, usize, Arc<tokio::sync::Mutex<()>>)> = lock(&self.held)
            .iter()
            .filter(|(_, s)| s.claimed > s.running && now >= s.grown + SHRINK_AFTER)
            .map(|(c, s)| (c.clone(), s.max, Arc::clone(&s.resizing)))
            .collect();
        let mut failed = None;
        for (caller, max, resizing) in idle {
            let Ok(_one_at_a_time) = resizing.try_lock() else {
                continue; // Growing right now: not idle.
            };
            // Lowered here first, so no call starts beyond it meanwhile.
            let running = match lock(&self.held).get_mut(&caller) {
                Some(share) => {
                    share.claimed = share.running;
                    share.running
                }
                None => 0,
            };
            // Shrinking never fails for lack of room: it only lowers. A
            // failed one leaves the share at `running` here (the database
            // row may still hold more, which only leaves other replicas
            // less room until it is shrunk next time or lapses).
            let granted = match self.resize(&caller, max, running).await {
                Ok(granted) => granted,
                Err(e) => {
                    failed.get_or_insert(e);
                    continue;
                }
            };
            let mut held = lock(&self.held);
            if let Some(share) = held.get_mut(&caller) {
                // Calls may have ended meanwhile; none started beyond it.
                share.claimed = granted;
                // Forgotten only when no call waits on its resize lock
                // (ours and the share's are the two references): a waiter
                // holding the old lock and a new call making a new one
                // would resize side by side, and the later would set
                // `claimed` below what the earlier had started.
                if share.claimed == 0
                    && share.running == 0
                    && Arc::strong_count(&share.resizing) <= 2
                {
                    held.remove(&caller);
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// At shutdown: gives every share back (calls have drained).
    pub async fn release_all(&self) -> Result<(), LimitError> {
        lock(&self.held).clear();
        let client = self.pool.get().await.map_err(unavailable)?;
        client
            .execute(
                "DELETE FROM mcp_call_shares WHERE replica = $1",
                &[&self.replica],
            )
            .await
            .map_err(pg_failed)?;
        Ok(())
    }
}
