//! What one custom statement may cost, on either backend: time (the
//! smaller of the tool's `timeout_ms` and the engine's call timeout),
//! bytes received (the answer's byte limit) and, on SQLite, heap.
//!
//! A call whose future is dropped (the engine's timeout fired, the client
//! cancelled) must not leave its statement running: [`CancelOnDrop`]
//! raises a flag the SQLite progress handler reads, or sends PostgreSQL a
//! cancel request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Bounds on custom statements, from the server's flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The engine's per-call timeout (`--call-timeout-secs`): no statement
    /// outlives its call.
    pub call_timeout: Duration,
    /// The answer's byte limit (`--max-result-bytes`): the most bytes of
    /// values one call reads, and on SQLite the largest value a statement
    /// may build (`SQLITE_LIMIT_LENGTH`).
    pub max_result_bytes: usize,
    /// SQLite: how much SQLite's heap may grow while a custom statement
    /// runs (`--custom-query-memory-mib`).
    pub max_heap_bytes: usize,
}

/// Default of `--custom-query-memory-mib`.
pub const DEFAULT_HEAP_MIB: u32 = 64;

/// The smallest value-length limit given to SQLite, so a small
/// `--max-result-bytes` still leaves room for ordinary intermediate values.
const MIN_VALUE_BYTES: usize = 64 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(30),
            max_result_bytes: 512 * 1024,
            max_heap_bytes: DEFAULT_HEAP_MIB as usize * 1024 * 1024,
        }
    }
}

impl Limits {
    /// The deadline of a tool declaring `timeout`: the smaller of the two.
    pub fn effective_timeout(&self, timeout: Duration) -> Duration {
        timeout.min(self.call_timeout)
    }

    /// `SQLITE_LIMIT_LENGTH` of custom connections: a value larger than
    /// the answer may be could never be returned.
    pub fn max_value_bytes(&self) -> i32 {
        i32::try_from(self.max_result_bytes.max(MIN_VALUE_BYTES)).unwrap_or(i32::MAX)
    }
}

/// Raised when a call ends, however it ends; a statement still running
/// for it stops at its next check.
#[derive(Clone, Debug, Default)]
pub struct Cancelled(Arc<AtomicBool>);

impl Cancelled {
    /// Whether the call is over.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `on_drop` when dropped (the call's future finished or was
/// dropped).
pub struct CancelOnDrop<F: FnOnce()> {
    on_drop: Option<F>,
}

impl<F: FnOnce()> CancelOnDrop<F> {
    /// A guard running `on_drop`.
    pub fn new(on_drop: F) -> Self {
        Self {
            on_drop: Some(on_drop),
        }
    }

    /// Dropped without running `on_drop` (no caller needs it since the
    /// PostgreSQL statement guard owns its connection; kept for the test
    /// that pins the guard's contract).
    #[cfg(test)]
    pub fn disarm(mut self) {
        self.on_drop = None;
    }
}

impl<F: FnOnce()> Drop for CancelOnDrop<F> {
    fn drop(&mut self) {
        if let Some(f) = self.on_drop.take() {
            f();
        }
    }
}

/// A guard that raises `flag` when dropped.
pub fn raise_on_drop(flag: &Cancelled) -> CancelOnDrop<impl FnOnce() + use<>> {
    let flag = flag.clone();
    CancelOnDrop::new(move || flag.set())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smaller_deadline_wins_and_values_have_a_floor() {
        let l = Limits {
            call_timeout: Duration::from_secs(3),
            max_result_bytes: 1000,
            max_heap_bytes: 1,
        };
        assert_eq!(
            l.effective_timeout(Duration::from_secs(60)),
            Duration::from_secs(3)
        );
        assert_eq!(
            l.effective_timeout(Duration::from_millis(200)),
            Duration::from_millis(200)
        );
        assert_eq!(l.max_value_bytes(), 64 * 1024);
    }

    #[test]
    fn a_dropped_guard_raises_the_flag() {
        let flag = Cancelled::default();
        drop(raise_on_drop(&flag));
        assert!(flag.is_set());
        let flag = Cancelled::default();
        raise_on_drop(&flag).disarm();
        assert!(!flag.is_set());
    }
}
