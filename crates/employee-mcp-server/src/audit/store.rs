//! Where the audit writer puts rows: the operations it needs, implemented
//! for SQLite in [`super::sqlite`] and for PostgreSQL in [`super::postgres`]. The writer's
//! logic (group commits, flood rows, pruning) is the same for both.

use super::{Entry, Error};

/// The statements the audit writer runs. Calls between [`Store::begin`]
/// and [`Store::commit`] / [`Store::rollback`] form one transaction.
pub(super) trait Store: Send {
    /// Checks, before a transaction, that the storage is still the one
    /// opened at start (SQLite: the pinned file is in place; one `stat`).
    fn verify(&self) -> Result<(), Error> {
        Ok(())
    }
    /// Starts a transaction.
    fn begin(&mut self) -> Result<(), Error>;
    /// Commits the transaction (durably, before any caller is answered).
    fn commit(&mut self) -> Result<(), Error>;
    /// Abandons the transaction.
    fn rollback(&mut self);
    /// Inserts one row; returns its id.
    fn insert(&mut self, entry: &Entry, count: Option<i64>) -> Result<i64, Error>;
    /// Inserts one row per entry, in order (ids are not needed).
    fn insert_all(&mut self, entries: &[Entry]) -> Result<(), Error> {
        entries
            .iter()
            .try_for_each(|e| self.insert(e, None).map(drop))
    }
    /// Sets a flood row's count and raises its latency.
    fn store_count(&mut self, row: i64, count: i64, latency_ms: i64) -> Result<(), Error>;
    /// Deletes at most `limit` rows older than `cutoff_ms`; returns how many.
    fn prune(&mut self, cutoff_ms: i64, limit: i64) -> Result<usize, Error>;
    /// At shutdown: leaves the storage complete (SQLite: WAL checkpoint).
    fn checkpoint(&mut self) {}
    /// (tool, arguments, count) of every row, for the writer's tests.
    #[cfg(test)]
    fn dump(&mut self) -> Vec<(String, String, i64)>;
}
