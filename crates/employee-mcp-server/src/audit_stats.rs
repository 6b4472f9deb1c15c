//! Counters of the audit writer, for `/metrics` and `/readyz`: how many
//! records wait for a commit, how long commits take, and whether the
//! writer is committing. The writer (`audit.rs`) reports into it with
//! relaxed atomics; nothing here blocks the writer.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mcpwire_server::observe::{Encoder, Histogram};

/// Why the audit writer is not fit to serve; the text is safe to show
/// unauthenticated (readiness probes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unhealthy {
    /// The writer thread is gone.
    #[error("audit writer stopped")]
    Stopped,
    /// A commit has been running longer than the stall bound.
    #[error("audit commit stalled")]
    Stalled,
    /// The last commit failed, recently.
    #[error("audit commit failing")]
    Failing,
}

/// How long after a failed commit readiness stays failed, unless a commit
/// succeeds first. Bounded so that a server taken out of rotation gets
/// traffic again and can show it recovered.
const FAILURE_HOLD: Duration = Duration::from_secs(30);

/// The audit writer's counters.
#[derive(Debug)]
pub struct AuditStats {
    epoch: Instant,
    queued: AtomicI64,
    commit: Histogram,
    failures: AtomicU64,
    /// Milliseconds since `epoch` (plus one, 0 = none) when the commit in
    /// progress began.
    busy_since: AtomicU64,
    /// Milliseconds since `epoch` (plus one, 0 = none) of the last failure.
    failed_at: AtomicU64,
    last_ok: AtomicBool,
    /// A commit running longer than this means the writer is stuck: the
    /// commit timeout, the longest a call waits for its row (a commit
    /// waiting out an import's hold on a SQLite file is not stuck).
    stalled_after: Duration,
}

impl AuditStats {
    /// Counters of a writer whose calls wait at most `commit_timeout`.
    pub fn new(commit_timeout: Duration) -> Self {
        Self {
            stalled_after: commit_timeout,
            epoch: Instant::now(),
            queued: AtomicI64::new(0),
            commit: Histogram::default(),
            failures: AtomicU64::new(0),
            busy_since: AtomicU64::new(0),
            failed_at: AtomicU64::new(0),
            last_ok: AtomicBool::new(true),
        }
    }

    fn now_mark(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    /// A record entered the writer's queue.
    pub fn enqueued(&self) {
        self.queued.fetch_add(1, Ordering::Relaxed);
    }

    /// A record counted by [`Self::enqueued`] did not enter the queue.
    pub fn not_enqueued(&self) {
        self.queued.fetch_sub(1, Ordering::Relaxed);
    }

    /// The writer took `n` records for one commit, which starts now.
    pub fn commit_started(&self, n: usize) {
        self.queued
            .fetch_sub(i64::try_from(n).unwrap_or(i64::MAX), Ordering::Relaxed);
        self.busy_since.store(self.now_mark(), Ordering::Relaxed);
    }

    /// The commit begun by [`Self::commit_started`] ended.
    pub fn commit_finished(&self, elapsed: Duration, ok: bool) {
        self.commit.observe(elapsed);
        self.busy_since.store(0, Ordering::Relaxed);
        self.last_ok.store(ok, Ordering::Relaxed);
        if !ok {
            self.failures.fetch_add(1, Ordering::Relaxed);
            self.failed_at.store(self.now_mark(), Ordering::Relaxed);
        }
    }

    /// Whether the writer is committing; `writer_alive` is false once its
    /// thread has gone. The reason is safe to show unauthenticated.
    pub fn health(&self, writer_alive: bool) -> Result<(), Unhealthy> {
        if !writer_alive {
            return Err(Unhealthy::Stopped);
        }
        let now = self.now_mark();
        let ago = |mark: u64| Duration::from_millis(now.saturating_sub(mark));
        let busy = self.busy_since.load(Ordering::Relaxed);
        if busy != 0 && ago(busy) > self.stalled_after {
            return Err(Unhealthy::Stalled);
        }
        let failed = self.failed_at.load(Ordering::Relaxed);
        if !self.last_ok.load(Ordering::Relaxed) && failed != 0 && ago(failed) < FAILURE_HOLD {
            return Err(Unhealthy::Failing);
        }
        Ok(())
    }

    /// The audit series of a scrape.
    pub fn render(&self, e: &mut Encoder) {
        e.single(
            "employee_audit_queue_depth",
            "gauge",
            "Audit records waiting for the writer's next commit.",
            self.queued.load(Ordering::Relaxed).max(0),
        );
        const NAME: &str = "employee_audit_commit_duration_seconds";
        e.family(
            NAME,
            "histogram",
            "Duration of one audit group commit (insert + fsync).",
        );
        e.histogram(NAME, &[], &self.commit.snapshot());
        e.single(
            "employee_audit_commit_failures_total",
            "counter",
            "Audit commits that failed (their calls were answered with an error).",
            self.failures.load(Ordering::Relaxed),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_is_not_ready_until_a_commit_succeeds() {
        let s = AuditStats::new(Duration::from_secs(30));
        assert!(s.health(true).is_ok());
        assert!(s.health(false).is_err());
        s.enqueued();
        s.commit_started(1);
        s.commit_finished(Duration::from_millis(1), false);
        assert_eq!(s.health(true), Err(Unhealthy::Failing));
        s.commit_started(0);
        s.commit_finished(Duration::from_millis(1), true);
        assert!(s.health(true).is_ok());
    }

    #[test]
    fn a_commit_longer_than_the_commit_timeout_is_stalled() {
        let s = AuditStats::new(Duration::from_millis(50));
        s.enqueued();
        s.commit_started(1);
        assert!(s.health(true).is_ok(), "a commit within the timeout");
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(s.health(true), Err(Unhealthy::Stalled));
        s.commit_finished(Duration::from_millis(80), true);
        assert!(s.health(true).is_ok());
    }
}
