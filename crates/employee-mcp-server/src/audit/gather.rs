//! Group commit under load: the writer waits for a group of records
//! before it commits, and the callers wake it as soon as enough have
//! arrived. Each commit's WAL write and fsync cost about the same CPU
//! whatever the group size, so the group size sets the audit's cost per
//! call; the deadline bounds what the wait adds to a call's latency.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::Thread;
use std::time::Instant;

/// Shared by the writer thread and the callers that queue records.
#[derive(Debug)]
pub(super) struct Gathering {
    /// Records queued since the writer last began to wait.
    arrived: AtomicUsize,
    /// Arrivals that wake the writer; `usize::MAX` while it is not waiting.
    wake_at: AtomicUsize,
    /// The writer thread, known once it runs.
    writer: OnceLock<Thread>,
}

impl Default for Gathering {
    fn default() -> Self {
        Gathering {
            arrived: AtomicUsize::new(0),
            wake_at: AtomicUsize::new(usize::MAX),
            writer: OnceLock::new(),
        }
    }
}

impl Gathering {
    /// A caller queued a record: wakes a waiting writer whose group is
    /// now complete.
    pub(super) fn arrived(&self) {
        let n = self.arrived.fetch_add(1, Ordering::SeqCst) + 1;
        if n >= self.wake_at.load(Ordering::SeqCst)
            && let Some(writer) = self.writer.get()
        {
            writer.unpark();
        }
    }

    /// Called on the writer thread before it first waits.
    pub(super) fn register_writer(&self) {
        let _ = self.writer.set(std::thread::current());
    }

    /// Waits until `more` records have been queued, `until` passes, or
    /// `queued()` finds a record that was queued before the wait began.
    /// Waking early is harmless: the caller drains and decides again.
    pub(super) fn wait(&self, more: usize, until: Instant, queued: impl FnOnce() -> bool) {
        self.arrived.store(0, Ordering::SeqCst);
        self.wake_at.store(more.max(1), Ordering::SeqCst);
        // A record queued between the caller's last drain and the line
        // above was not counted: look once more before sleeping.
        if !queued() {
            let now = Instant::now();
            if now < until {
                std::thread::park_timeout(until - now);
            }
        }
        self.wake_at.store(usize::MAX, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn the_last_arrival_of_a_group_wakes_the_writer() {
        let gathering = Arc::new(Gathering::default());
        gathering.register_writer();
        let callers = Arc::clone(&gathering);
        let sender = std::thread::spawn(move || {
            // Until the writer waits, arrivals wake nobody.
            while callers.wake_at.load(Ordering::SeqCst) == usize::MAX {
                std::thread::yield_now();
            }
            for _ in 0..3 {
                callers.arrived();
            }
        });
        let started = Instant::now();
        gathering.wait(3, started + Duration::from_secs(30), || false);
        assert!(started.elapsed() < Duration::from_secs(20), "woken early");
        sender.join().unwrap();
    }

    #[test]
    fn a_record_queued_before_the_wait_ends_it_at_once() {
        let gathering = Gathering::default();
        let started = Instant::now();
        gathering.wait(10, started + Duration::from_secs(30), || true);
        assert!(started.elapsed() < Duration::from_secs(20));
    }
}
