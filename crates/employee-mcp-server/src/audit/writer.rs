//! The audit writer thread: group commits, rate-limit flood aggregation
//! and retention pruning, all on the one connection that writes the table.
//!
//! Flood aggregation: a rate-limited call is not worth a full row each (a
//! client hammering the server would write one per refusal). The first
//! refused call of a caller (token subject, else client address) and tool
//! in a one-minute window (aligned on the clock) inserts a row with
//! `count = 1` and no arguments; later ones in the window only raise the
//! count in memory, which is written to the row every few seconds, when the
//! window closes, and at shutdown. At most [`MAX_FLOOD_KEYS`] callers and
//! tools are tracked per window; past that, refusals are counted in one
//! row for everyone else (tool `*`). Protocol errors (calls to unknown or
//! disabled tools, malformed calls) fold the same way, keyed by caller
//! alone: the tool names are the caller's own, as many as it likes, so
//! the row names the first one and counts them all.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcpwire_server::access::CallOutcome;
use mcpwire_server::observe::{LOG_EVERY, LogThrottle};
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::{mpsc, oneshot};

use super::store::Store;
use super::{Entry, Error};
use crate::audit_stats::AuditStats;

/// The answer to one queued record.
pub(super) type Ack = oneshot::Sender<Result<(), String>>;

/// What the writer thread receives.
pub(super) enum Message {
    /// A record to store, and who waits for it (boxed: the other
    /// messages are tiny).
    Record(Box<Entry>, Ack),
    /// Time passed: flush counts, close windows, prune when due.
    Tick,
    /// Write every pending count, then answer.
    Close(oneshot::Sender<()>),
}

/// Most records committed in one transaction.
const MAX_BATCH: usize = 256;
/// Under load (the last commit grouped at least [`GATHER_FROM`] records),
/// a commit waits up to this long for more records to join it: each
/// commit's WAL write and fsync cost the same CPU whatever the group size,
/// so fewer, larger groups cost less per call. Calls wait for the commit
/// anyway; this adds at most this much to their latency, and nothing when
/// calls come one at a time.
const GATHER: Duration = Duration::from_micros(500);
/// Smallest previous group that counts as load.
const GATHER_FROM: usize = 4;
/// How often the ticker wakes the writer.
const TICK: Duration = Duration::from_secs(1);
/// Length of a flood-aggregation window, in milliseconds.
const FLOOD_WINDOW_MS: i64 = 60_000;
/// How often pending flood counts are written to their rows.
const FLOOD_FLUSH_EVERY: Duration = Duration::from_secs(5);
/// Callers and tools tracked per window before folding into one bucket.
pub(super) const MAX_FLOOD_KEYS: usize = 10_000;
/// How often old rows are pruned (also once at start).
const PRUNE_EVERY: Duration = Duration::from_secs(600);
/// Rows deleted per statement: each delete is a short transaction, and
/// queued records are written between two of them.
const PRUNE_BATCH: i64 = 500;

/// Wakes the writer every [`TICK`] until the sink is gone. It holds a weak
/// handle, so it does not keep the queue open on its own.
pub(super) fn start_ticker(queue: mpsc::WeakSender<Message>) -> Result<(), Error> {
    std::thread::Builder::new()
        .name("audit-ticker".to_owned())
        .spawn(move || {
            loop {
                std::thread::sleep(TICK);
                let Some(queue) = queue.upgrade() else { break };
                // A full queue means the writer is busy anyway.
                if let Err(mpsc::error::TrySendError::Closed(_)) = queue.try_send(Message::Tick) {
                    break;
                }
            }
        })
        .map(drop)
        .map_err(Error::io("cannot start the audit ticker thread"))
}

/// Who was refused what: the aggregation key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct FloodKey {
    caller: String,
    tool: String,
    outcome: &'static str,
}

impl FloodKey {
    /// The bucket for callers past [`MAX_FLOOD_KEYS`].
    fn other(outcome: CallOutcome) -> FloodKey {
        FloodKey {
            caller: "*".to_owned(),
            tool: "*".to_owned(),
            outcome: outcome.as_str(),
        }
    }
}

/// Outcomes a client can produce as fast as it sends: folded into
/// counted rows instead of one row each.
fn folds(outcome: CallOutcome) -> bool {
    matches!(
        outcome,
        CallOutcome::RateLimited | CallOutcome::ProtocolError
    )
}

/// The refusals of one key in one window.
#[derive(Debug)]
struct Flood {
    /// Window number (unix ms / window length).
    window: i64,
    /// The row holding the count.
    row: i64,
    /// Whether that row's insert is committed (a count may only be
    /// acknowledged early against a committed row).
    committed: bool,
    /// Refusals counted.
    count: i64,
    /// The count last written to the row.
    stored: i64,
    /// Slowest refusal, in milliseconds.
    latency_ms: i64,
}

/// The writer thread's state.
pub(super) struct Writer {
    store: Box<dyn Store>,
    retention: Option<Duration>,
    floods: HashMap<FloodKey, Flood>,
    last_flood_flush: Instant,
    next_prune: Instant,
    /// Old rows remain to delete (work done while the queue is idle).
    pruning: bool,
    pruned: usize,
    /// Queue depth and commit latency, for `/metrics` and `/readyz`.
    stats: Arc<AuditStats>,
    /// Records in the last group commit (decides whether to gather).
    last_batch: usize,
}

impl Writer {
    pub(super) fn new(
        store: Box<dyn Store>,
        retention: Option<Duration>,
        stats: Arc<AuditStats>,
    ) -> Writer {
        Writer {
            store,
            retention,
            floods: HashMap::new(),
            last_flood_flush: Instant::now(),
            next_prune: Instant::now() + PRUNE_EVERY,
            pruning: retention.is_some(),
            pruned: 0,
            stats,
            last_batch: 0,
        }
    }

    /// Serves the queue until every sender is gone, then writes the
    /// pending counts.
    pub(super) fn run(mut self, mut rx: mpsc::Receiver<Message>) {
        while let Some(message) = self.next(&mut rx) {
            let deferred = match message {
                Message::Record(entry, ack) => self.write_batch(vec![(*entry, ack)], &mut rx),
                other => Some(other),
            };
            match deferred {
                Some(Message::Tick) => self.tick(),
                Some(Message::Close(done)) => {
                    self.close();
                    let _ = done.send(());
                }
                Some(Message::Record(..)) | None => {}
            }
        }
        self.flush_floods(true);
    }

    /// The next message; while old rows remain to prune, a batch of them
    /// is deleted whenever the queue is empty.
    fn next(&mut self, rx: &mut mpsc::Receiver<Message>) -> Option<Message> {
        while self.pruning {
            match rx.try_recv() {
                Ok(message) => return Some(message),
                Err(TryRecvError::Empty) => self.prune_step(),
                Err(TryRecvError::Disconnected) => return None,
            }
        }
        rx.blocking_recv()
    }

    /// Writes `batch` plus whatever records are already queued as one
    /// transaction; returns a non-record message met while draining.
    fn write_batch(
        &mut self,
        mut batch: Vec<(Entry, Ack)>,
        rx: &mut mpsc::Receiver<Message>,
    ) -> Option<Message> {
        let gather_until = (self.last_batch >= GATHER_FROM).then(|| Instant::now() + GATHER);
        let deferred = drain(&mut batch, rx, gather_until);
        self.last_batch = batch.len();
        let mut waiting = Vec::with_capacity(batch.len());
        self.stats.commit_started(batch.len());
        let started = Instant::now();
        let outcome = self.insert_all(batch, &mut waiting);
        self.stats
            .commit_finished(started.elapsed(), outcome.is_ok());
        if let Err(e) = &outcome {
            // A full disk fails every call: one line per period.
            static FAILED: LogThrottle = LogThrottle::new(LOG_EVERY);
            if let Some(suppressed) = FAILED.admit() {
                tracing::error!(error = %e, records = waiting.len(), suppressed, "audit commit failed");
            }
            // Rows of this batch were rolled back: forget their floods.
            self.floods.retain(|_, f| f.committed);
        } else {
            self.floods.values_mut().for_each(|f| f.committed = true);
        }
        // Every caller of the group gets the same answer.
        let reply = outcome.map_err(String::from);
        for ack in waiting {
            let _ = ack.send(reply.clone());
        }
        deferred
    }

    /// Inserts the batch in one transaction. Acknowledgements that must
    /// wait for the commit go to `waiting`; refusals counted against a
    /// committed flood row are acknowledged at once.
    fn insert_all(
        &mut self,
        batch: Vec<(Entry, Ack)>,
        waiting: &mut Vec<Ack>,
    ) -> Result<(), Error> {
        // One check per group: rows are never committed to a file that is
        // no longer the served one.
        if let Err(e) = self.store.verify() {
            waiting.extend(batch.into_iter().map(|(_, ack)| ack));
            return Err(e);
        }
        self.store.begin()?;
        let mut result = Ok(());
        // Calls' records in arrival order, inserted together; a refusal
        // inserts them first, so rows keep the order of the queue.
        let mut records = Vec::with_capacity(batch.len());
        for (entry, ack) in batch {
            if result.is_err() {
                waiting.push(ack);
                continue;
            }
            if !folds(entry.outcome) {
                records.push(entry);
                waiting.push(ack);
                continue;
            }
            result = self.store.insert_all(&records);
            records.clear();
            if result.is_err() {
                waiting.push(ack);
                continue;
            }
            match count_refusal(self.store.as_mut(), &mut self.floods, &entry) {
                Ok(true) => {
                    let _ = ack.send(Ok(()));
                }
                Ok(false) => waiting.push(ack),
                Err(e) => {
                    result = Err(e);
                    waiting.push(ack);
                }
            }
        }
        if result.is_ok() {
            result = self.store.insert_all(&records);
        }
        match result.and_then(|()| self.store.commit()) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.store.rollback();
                Err(e)
            }
        }
    }

    /// At shutdown: writes the pending counts and copies the WAL into the
    /// main file, so the stopped database is complete in one file.
    fn close(&mut self) {
        self.flush_floods(true);
        if self.store.verify().is_ok() {
            self.store.checkpoint();
        }
    }

    /// Writes changed flood counts, and forgets closed windows (all of
    /// them when `all`, at shutdown).
    fn flush_floods(&mut self, all: bool) {
        let now_window = window_of(now_ms());
        let store = self.store.as_mut();
        let result = store.verify().and_then(|()| store.begin()).and_then(|()| {
            for flood in self.floods.values_mut() {
                store_count(store, flood)?;
            }
            store.commit()
        });
        if result.is_err() {
            store.rollback();
        }
        match result {
            Ok(()) => self
                .floods
                .retain(|_, f| !all && f.window >= now_window && f.committed),
            Err(e) => {
                static FAILED: LogThrottle = LogThrottle::new(LOG_EVERY);
                if let Some(suppressed) = FAILED.admit() {
                    tracing::error!(error = %e, suppressed, "cannot write rate-limited call counts to audit_log");
                }
            }
        }
        self.last_flood_flush = Instant::now();
    }

    fn tick(&mut self) {
        let now_window = window_of(now_ms());
        let window_closed = self.floods.values().any(|f| f.window < now_window);
        let dirty = self.floods.values().any(|f| f.count != f.stored);
        if window_closed || (dirty && self.last_flood_flush.elapsed() >= FLOOD_FLUSH_EVERY) {
            self.flush_floods(false);
        }
        if self.retention.is_some() && Instant::now() >= self.next_prune {
            self.next_prune = Instant::now() + PRUNE_EVERY;
            self.pruning = true;
        }
    }

    /// Deletes one batch of rows older than the retention.
    fn prune_step(&mut self) {
        let Some(retention) = self.retention else {
            self.pruning = false;
            return;
        };
        let keep_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        let cutoff = now_ms().saturating_sub(keep_ms);
        let deleted = self
            .store
            .verify()
            .and_then(|()| self.store.prune(cutoff, PRUNE_BATCH));
        match deleted {
            Ok(n) => {
                self.pruned += n;
                if i64::try_from(n).unwrap_or(i64::MAX) < PRUNE_BATCH {
                    self.finish_pruning();
                }
            }
            Err(e) => {
                // Retried at the next period; a locked database is no
                // reason to stop writing records.
                tracing::warn!(error = %e, "cannot prune old audit_log rows");
                self.finish_pruning();
            }
        }
    }

    fn finish_pruning(&mut self) {
        if self.pruned > 0 {
            tracing::info!(
                rows = self.pruned,
                "pruned audit_log rows past the retention"
            );
        }
        self.pruning = false;
        self.pruned = 0;
    }
}

/// Moves queued records into `batch` (up to [`MAX_BATCH`]); with a
/// deadline, keeps polling for late ones until it passes. Returns a
/// non-record message met on the way.
fn drain(
    batch: &mut Vec<(Entry, Ack)>,
    rx: &mut mpsc::Receiver<Message>,
    mut until: Option<Instant>,
) -> Option<Message> {
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(Message::Record(entry, ack)) => batch.push((*entry, ack)),
            Ok(other) => return Some(other),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => match until {
                // One sleep for the rest of the window, not a polling loop:
                // senders do not wake a thread that is not parked on the
                // queue, so records join for free meanwhile.
                Some(deadline) if Instant::now() < deadline => {
                    std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
                    until = None;
                }
                _ => return None,
            },
        }
    }
    None
}

/// Counts one refusal: `Ok(true)` when it was folded into a committed
/// row (acknowledge now), `Ok(false)` when it needs this transaction.
fn count_refusal(
    tx: &mut dyn Store,
    floods: &mut HashMap<FloodKey, Flood>,
    entry: &Entry,
) -> Result<bool, Error> {
    let window = window_of(entry.at_unix_ms);
    let mut key = FloodKey {
        caller: entry
            .subject
            .clone()
            .or_else(|| entry.remote_addr.clone())
            .unwrap_or_else(|| "-".to_owned()),
        // Unknown tool names are the caller's to invent: not a key.
        tool: match entry.outcome {
            CallOutcome::RateLimited => entry.tool.clone(),
            _ => String::new(),
        },
        outcome: entry.outcome.as_str(),
    };
    if !floods.contains_key(&key) && floods.len() >= MAX_FLOOD_KEYS {
        key = FloodKey::other(entry.outcome);
    }
    if let Some(flood) = floods.get_mut(&key) {
        if flood.window >= window {
            flood.count += 1;
            flood.latency_ms = flood.latency_ms.max(entry.latency_ms);
            return Ok(flood.committed);
        }
        // A new window for this key: the old row gets its final count.
        store_count(tx, flood)?;
    }
    let row = if key == FloodKey::other(entry.outcome) {
        tx.insert(&other_entry(entry), Some(1))?
    } else {
        let mut stored = entry.clone();
        stored.arguments = "{}".to_owned();
        tx.insert(&stored, Some(1))?
    };
    let flood = Flood {
        window,
        row,
        committed: false,
        count: 1,
        stored: 1,
        latency_ms: entry.latency_ms,
    };
    floods.insert(key, flood);
    Ok(false)
}

/// The row counting refusals of callers past [`MAX_FLOOD_KEYS`].
fn other_entry(entry: &Entry) -> Entry {
    Entry {
        subject: None,
        client_id: None,
        client_name: None,
        remote_addr: None,
        tool: "*".to_owned(),
        arguments: "{}".to_owned(),
        detail: Some(format!(
            "{}: callers and tools past the {MAX_FLOOD_KEYS} tracked per minute",
            entry.outcome.as_str()
        )),
        ..entry.clone()
    }
}

/// Writes a flood's count to its row when it changed.
fn store_count(tx: &mut dyn Store, flood: &mut Flood) -> Result<(), Error> {
    if flood.count == flood.stored {
        return Ok(());
    }
    tx.store_count(flood.row, flood.count, flood.latency_ms)?;
    flood.stored = flood.count;
    Ok(())
}

fn window_of(unix_ms: i64) -> i64 {
    unix_ms.div_euclid(FLOOD_WINDOW_MS)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer() -> Writer {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        super::super::migrate(&conn).unwrap();
        let store = super::super::sqlite::SqliteStore::new(conn, None);
        Writer::new(
            Box::new(store),
            None,
            Arc::new(AuditStats::new(super::super::COMMIT_TIMEOUT)),
        )
    }

    fn refusal(caller: &str, tool: &str, at_unix_ms: i64) -> Entry {
        Entry {
            at: "2026-01-01T00:00:00.000Z".to_owned(),
            at_unix_ms,
            subject: Some(caller.to_owned()),
            client_id: None,
            client_name: None,
            remote_addr: Some("127.0.0.1".to_owned()),
            tool: tool.to_owned(),
            arguments: r#"{"employeeId":"JohnDoe"}"#.to_owned(),
            outcome: CallOutcome::RateLimited,
            detail: Some("rate limited".to_owned()),
            latency_ms: 1,
            protocol_version: "2026-07-28".to_owned(),
            via: None,
        }
    }

    /// Writes `entries` as one batch; every call must be acknowledged.
    fn write(w: &mut Writer, entries: Vec<Entry>) {
        let (_tx, mut rx) = mpsc::channel(1);
        let (batch, answers): (Vec<_>, Vec<_>) = entries
            .into_iter()
            .map(|e| {
                let (ack, answer) = oneshot::channel();
                ((e, ack), answer)
            })
            .unzip();
        w.write_batch(batch, &mut rx);
        for mut answer in answers {
            assert_eq!(answer.try_recv(), Ok(Ok(())));
        }
    }

    fn rows(w: &mut Writer) -> Vec<(String, String, i64)> {
        w.store.dump()
    }

    #[test]
    fn refusals_fold_into_one_row_per_caller_tool_and_window() {
        let mut w = writer();
        let minute = FLOOD_WINDOW_MS * 1_000;
        write(&mut w, vec![refusal("a", "t", minute); 3]);
        write(&mut w, vec![refusal("a", "t", minute + 10); 5]);
        write(&mut w, vec![refusal("b", "t", minute + 20)]);
        assert_eq!(rows(&mut w).len(), 2, "one row per caller");
        // The next window: the old row gets its final count.
        write(&mut w, vec![refusal("a", "t", minute + FLOOD_WINDOW_MS)]);
        w.flush_floods(true);
        assert!(w.floods.is_empty());
        let rows = rows(&mut w);
        let counts: Vec<i64> = rows.iter().map(|r| r.2).collect();
        assert_eq!(counts, [8, 1, 1], "{rows:?}");
        assert!(rows.iter().all(|r| r.1 == "{}"), "no arguments stored");
    }

    #[test]
    fn protocol_errors_fold_per_caller_whatever_the_tool_name() {
        let mut w = writer();
        let at = FLOOD_WINDOW_MS * 3_000;
        let junk = |i: usize| {
            let mut e = refusal("a", &format!("no-such-tool-{i}"), at);
            e.outcome = CallOutcome::ProtocolError;
            e
        };
        write(&mut w, (0..40).map(junk).collect());
        // A rate-limited call of the same caller keeps its own row.
        write(&mut w, vec![refusal("a", "t", at)]);
        w.flush_floods(true);
        let rows = rows(&mut w);
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!((rows[0].0.as_str(), rows[0].2), ("no-such-tool-0", 40));
        assert_eq!((rows[1].0.as_str(), rows[1].2), ("t", 1));
    }

    #[test]
    fn callers_past_the_bound_share_one_row() {
        let mut w = writer();
        let at = FLOOD_WINDOW_MS * 2_000;
        let many: Vec<Entry> = (0..MAX_FLOOD_KEYS + 50)
            .map(|i| refusal(&format!("caller{i}"), "t", at))
            .collect();
        for chunk in many.chunks(MAX_BATCH) {
            write(&mut w, chunk.to_vec());
        }
        assert_eq!(w.floods.len(), MAX_FLOOD_KEYS + 1);
        w.flush_floods(true);
        let rows = rows(&mut w);
        assert_eq!(rows.len(), MAX_FLOOD_KEYS + 1);
        let other = rows.iter().find(|r| r.0 == "*").map(|r| r.2);
        assert_eq!(other, Some(50));
    }

    #[test]
    fn a_gathering_commit_takes_records_that_arrive_meanwhile() {
        let (tx, mut rx) = mpsc::channel(8);
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            let (ack, _answer) = oneshot::channel();
            let record = Message::Record(Box::new(refusal("a", "t", 1)), ack);
            assert!(tx.blocking_send(record).is_ok());
            // Dropping `tx` ends the wait before the deadline.
        });
        let mut batch = Vec::new();
        assert!(drain(&mut batch, &mut rx, None).is_none());
        assert!(batch.is_empty(), "without a deadline nothing is awaited");
        let deadline = Instant::now() + Duration::from_secs(30);
        assert!(drain(&mut batch, &mut rx, Some(deadline)).is_none());
        assert_eq!(batch.len(), 1, "the late record joined the group");
        late.join().unwrap();
    }

    #[test]
    fn a_group_keeps_the_order_of_the_queue() {
        let mut w = writer();
        let call = |i: usize| {
            let mut e = refusal("a", &format!("t{i}"), 1);
            e.outcome = CallOutcome::Success;
            e
        };
        // 16 + 4 + 1 rows, a refusal, then 3 more: every statement shape.
        let mut group: Vec<Entry> = (0..21).map(call).collect();
        group.push(refusal("a", "refused", 1));
        group.extend((21..24).map(call));
        write(&mut w, group);
        let tools: Vec<String> = rows(&mut w).into_iter().map(|r| r.0).collect();
        let mut expected: Vec<String> = (0..21).map(|i| format!("t{i}")).collect();
        expected.push("refused".to_owned());
        expected.extend((21..24).map(|i| format!("t{i}")));
        assert_eq!(tools, expected);
    }

    #[test]
    fn other_calls_are_stored_one_row_each() {
        let mut w = writer();
        let mut call = refusal("a", "t", 1);
        call.outcome = CallOutcome::Success;
        write(&mut w, vec![call.clone(), call]);
        let rows = rows(&mut w);
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.1.contains("JohnDoe") && r.2 == 1));
    }
}
