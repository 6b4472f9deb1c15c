//! The in-memory task store: a bounded map with TTL expiry.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_protocol::ProtocolError;
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::TaskOptions;

/// A task's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

struct Entry {
    /// The subject of the principal that created it (`None`: anonymous).
    owner: Option<String>,
    created: SystemTime,
    updated: SystemTime,
    /// When it expires: `ttl` after the last status change.
    expires: Instant,
    status: Status,
    /// The inlined tool result (`completed`).
    result: Option<Map<String, Value>>,
    /// The JSON-RPC error object (`failed`).
    error: Option<Value>,
    /// Input requests not answered yet (`input_required`).
    pending: Map<String, Value>,
    /// Answers collected so far in this round.
    answers: Map<String, Value>,
    /// Hands the answers to the waiting runner once none is pending.
    resume: Option<oneshot::Sender<Map<String, Value>>>,
    /// Stops the handler.
    cancel: CancellationToken,
}

impl Entry {
    fn touch(&mut self, ttl: Duration) {
        self.updated = SystemTime::now();
        self.expires = Instant::now() + ttl;
    }
}

/// All tasks of this process.
pub(crate) struct TaskStore {
    entries: Mutex<HashMap<String, Entry>>,
    pub(crate) options: TaskOptions,
}

/// The lookup failed: no such task for this caller (or it expired).
#[derive(Debug)]
pub(crate) struct Unknown;

impl TaskStore {
    pub(crate) fn new(options: TaskOptions) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            options,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        match self.entries.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.options.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// Creates a `working` task; returns its id and the `CreateTaskResult`
    /// fields. Refused (rate limited) when the store is full of running tasks.
    pub(crate) fn create(
        &self,
        owner: Option<String>,
        cancel: CancellationToken,
    ) -> Result<(String, Map<String, Value>), ProtocolError> {
        let mut entries = self.lock();
        let now = Instant::now();
        entries.retain(|_, e| {
            let keep = e.expires > now;
            if !keep {
                e.cancel.cancel();
            }
            keep
        });
        while entries.len() >= self.options.max_tasks.max(1) {
            let oldest = entries
                .iter()
                .filter(|(_, e)| e.status.is_terminal())
                .min_by_key(|(_, e)| e.updated)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => {
                    entries.remove(&id);
                }
                None => {
                    return Err(ProtocolError::rate_limited(
                        "Too many tasks are running on this server; retry when some have finished.",
                        1,
                    ));
                }
            }
        }
        let id = new_id();
        let at = SystemTime::now();
        let entry = Entry {
            owner,
            created: at,
            updated: at,
            expires: now + self.options.ttl,
            status: Status::Working,
            result: None,
            error: None,
            pending: Map::new(),
            answers: Map::new(),
            resume: None,
            cancel,
        };
        let fields = self.base_fields(&id, &entry);
        entries.insert(id.clone(), entry);
        Ok((id, fields))
    }

    /// `taskId`, `status`, timestamps, `ttlMs` and `pollIntervalMs`.
    fn base_fields(&self, id: &str, e: &Entry) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("taskId".into(), json!(id));
        m.insert("status".into(), json!(e.status.as_str()));
        m.insert("createdAt".into(), json!(iso8601(e.created)));
        m.insert("lastUpdatedAt".into(), json!(iso8601(e.updated)));
        m.insert("ttlMs".into(), json!(self.ttl_ms()));
        let poll = u64::try_from(self.options.poll_interval.as_millis()).unwrap_or(u64::MAX);
        if poll > 0 {
            m.insert("pollIntervalMs".into(), json!(poll));
        }
        m
    }

    /// Runs `f` on the caller's live task.
    fn with<R>(
        &self,
        id: &str,
        owner: Option<&str>,
        f: impl FnOnce(&mut Entry) -> R,
    ) -> Result<R, Unknown> {
        let mut entries = self.lock();
        let Some(e) = entries.get_mut(id) else {
            return Err(Unknown);
        };
        if e.expires <= Instant::now() {
            e.cancel.cancel();
            entries.remove(id);
            return Err(Unknown);
        }
        if e.owner.as_deref() != owner {
            return Err(Unknown);
        }
        Ok(f(e))
    }

    /// The `DetailedTask` fields for `tasks/get`.
    pub(crate) fn view(
        &self,
        id: &str,
        owner: Option<&str>,
    ) -> Result<Map<String, Value>, Unknown> {
        let mut entries = self.lock();
        let Some(e) = entries.get(id) else {
            return Err(Unknown);
        };
        if e.expires <= Instant::now() {
            e.cancel.cancel();
            entries.remove(id);
            return Err(Unknown);
        }
        if e.owner.as_deref() != owner {
            return Err(Unknown);
        }
        let mut m = self.base_fields(id, e);
        match e.status {
            Status::Completed => {
                if let Some(r) = &e.result {
                    m.insert("result".into(), Value::Object(r.clone()));
                }
            }
            Status::Failed => {
                if let Some(err) = &e.error {
                    m.insert("error".into(), err.clone());
                }
            }
            Status::InputRequired => {
                m.insert("inputRequests".into(), Value::Object(e.pending.clone()));
            }
            Status::Working | Status::Cancelled => {}
        }
        Ok(m)
    }

    /// Answers pending input requests; unknown or already answered keys are
    /// ignored, as is an update to a task that is not waiting for input.
    pub(crate) fn update(
        &self,
        id: &str,
        owner: Option<&str>,
        responses: &Map<String, Value>,
    ) -> Result<(), Unknown> {
        let ttl = self.options.ttl;
        self.with(id, owner, |e| {
            if e.status != Status::InputRequired {
                return;
            }
            for (key, answer) in responses {
                if e.pending.remove(key).is_some() {
                    e.answers.insert(key.clone(), answer.clone());
                }
            }
            if e.pending.is_empty() {
                e.status = Status::Working;
                let answers = std::mem::take(&mut e.answers);
                if let Some(tx) = e.resume.take() {
                    let _ = tx.send(answers);
                }
            }
            e.touch(ttl);
        })
    }

    /// Cancels a task that has not finished; a finished one is left as is.
    pub(crate) fn cancel(&self, id: &str, owner: Option<&str>) -> Result<(), Unknown> {
        let ttl = self.options.ttl;
        self.with(id, owner, |e| {
            if e.status.is_terminal() {
                return;
            }
            e.status = Status::Cancelled;
            e.pending.clear();
            e.answers.clear();
            e.resume = None;
            e.cancel.cancel();
            e.touch(ttl);
        })
    }

    /// Parks a running task until `requests` are answered; `None` if the
    /// task is gone or already finished (cancelled).
    pub(crate) fn park(
        &self,
        id: &str,
        requests: Map<String, Value>,
    ) -> Option<oneshot::Receiver<Map<String, Value>>> {
        let ttl = self.options.ttl;
        let mut entries = self.lock();
        let e = entries.get_mut(id)?;
        if e.status.is_terminal() {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        e.status = Status::InputRequired;
        e.pending = requests;
        e.answers = Map::new();
        e.resume = Some(tx);
        e.touch(ttl);
        Some(rx)
    }

    /// Ends a task `completed` with this (shaped) tool result.
    pub(crate) fn complete(&self, id: &str, result: Map<String, Value>) {
        self.settle(id, |e| {
            e.status = Status::Completed;
            e.result = Some(result);
        });
    }

    /// Ends a task `failed` with this protocol error.
    pub(crate) fn fail(&self, id: &str, error: &ProtocolError) {
        let mut err = Map::new();
        err.insert("code".into(), json!(error.code));
        err.insert("message".into(), json!(error.message));
        if let Some(d) = &error.data {
            err.insert("data".into(), d.clone());
        }
        self.settle(id, |e| {
            e.status = Status::Failed;
            e.error = Some(Value::Object(err));
        });
    }

    fn settle(&self, id: &str, f: impl FnOnce(&mut Entry)) {
        let ttl = self.options.ttl;
        let mut entries = self.lock();
        if let Some(e) = entries.get_mut(id)
            && !e.status.is_terminal()
        {
            f(e);
            e.pending.clear();
            e.resume = None;
            e.touch(ttl);
        }
    }
}

/// An unguessable task id (24 random bytes, base64url).
fn new_id() -> String {
    let mut raw = [0u8; 24];
    if getrandom::fill(&mut raw).is_err() {
        // No OS randomness: fall back to the clock and a counter. Tasks are
        // also bound to their owner, so a guess alone grants nothing.
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        raw[..16].copy_from_slice(&t.to_le_bytes());
        raw[16..].copy_from_slice(&n.to_le_bytes());
    }
    URL_SAFE_NO_PAD.encode(raw)
}

/// `2026-07-28T12:34:56.789Z`.
pub(crate) fn iso8601(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_timestamps() {
        let t = UNIX_EPOCH + Duration::from_millis(1_785_241_696_789);
        assert_eq!(iso8601(t), "2026-07-28T12:28:16.789Z");
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn tasks_are_bound_to_their_owner_and_expire() {
        let store = TaskStore::new(TaskOptions {
            ttl: Duration::from_millis(50),
            ..TaskOptions::default()
        });
        let (id, fields) = store
            .create(Some("alice".into()), CancellationToken::new())
            .unwrap();
        assert_eq!(fields["status"], "working");
        assert!(store.view(&id, Some("alice")).is_ok());
        assert!(store.view(&id, Some("bob")).is_err());
        assert!(store.view(&id, None).is_err());
        std::thread::sleep(Duration::from_millis(80));
        assert!(store.view(&id, Some("alice")).is_err());
    }

    #[test]
    fn a_full_store_evicts_finished_tasks_first() {
        let store = TaskStore::new(TaskOptions {
            max_tasks: 2,
            ..TaskOptions::default()
        });
        let (a, _) = store.create(None, CancellationToken::new()).unwrap();
        let (_b, _) = store.create(None, CancellationToken::new()).unwrap();
        assert!(store.create(None, CancellationToken::new()).is_err());
        store.complete(&a, Map::new());
        let (_c, _) = store.create(None, CancellationToken::new()).unwrap();
        assert!(store.view(&a, None).is_err());
    }
}
