//! Assembled employee profiles, answered without SQL while the directory
//! does not change.
//!
//! Exactness: every lookup first reads the directory's generation (a
//! counter that triggers on every directory table bump in the changing
//! transaction, migration 0003) on the connection that will be used, and
//! entries are kept only under the generation and file read *before* their
//! data. Data newer than its stamp only makes the entry unreachable (the
//! counter has moved past the stamp), never stale. A replaced or restored
//! file has a new identity, so its stamp differs too. The audit trail's
//! commits to the same file do not touch the counter.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::Connection;

use super::pool::FileId;
use super::row::CachedRow;
use crate::error::DirectoryError;
use crate::model::EmployeeDetails;

/// Most profiles kept; the cache starts over when full (1,400 employees
/// fit, and junk ids are never cached since misses are not stored).
const MAX_ENTRIES: usize = 4096;

/// The state of the directory a cached answer was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    file: Option<FileId>,
    generation: i64,
}

impl Stamp {
    /// Reads the current stamp with one cached single-row statement.
    pub(crate) fn read(conn: &Connection, file: Option<FileId>) -> Result<Stamp, DirectoryError> {
        let generation = conn
            .cached_row(
                "SELECT n FROM directory_generation WHERE id = 1",
                [],
                |row| row.get(0),
            )
            .map_err(DirectoryError::db("read directory generation"))?;
        Ok(Stamp { file, generation })
    }
}

/// Profiles by the caller's input (id, name or email), all read at one
/// stamp.
#[derive(Default)]
pub(crate) struct DetailsCache {
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    stamp: Option<Stamp>,
    by_input: HashMap<String, EmployeeDetails>,
}

impl DetailsCache {
    /// The profile cached for `input`, if it was read at `now`.
    pub(crate) fn get(&self, now: Stamp, input: &str) -> Option<EmployeeDetails> {
        let entries = self.lock();
        if entries.stamp != Some(now) {
            return None;
        }
        entries.by_input.get(input).cloned()
    }

    /// Keeps `details`, read after `stamp` was, for `input`.
    pub(crate) fn put(&self, stamp: Stamp, input: String, details: EmployeeDetails) {
        let mut entries = self.lock();
        if entries.stamp != Some(stamp) {
            entries.by_input.clear();
            entries.stamp = Some(stamp);
        }
        if entries.by_input.len() >= MAX_ENTRIES {
            entries.by_input.clear();
        }
        entries.by_input.insert(input, details);
    }

    /// The map is valid even if a holder panicked.
    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
