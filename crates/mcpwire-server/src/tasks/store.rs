//! The engine's view of the task store: ids, the wire shape of a task,
//! and the errors a client sees; the records themselves live in a
//! [`TaskBackend`].

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcpwire_protocol::ProtocolError;
use serde_json::{Map, Value, json};

use super::TaskOptions;
use super::backend::{Settled, TaskBackend, TaskBackendError, TaskRecord, TaskStatus};

/// The tasks of this server, in its backend.
pub(crate) struct TaskStore {
    backend: Arc<dyn TaskBackend>,
    pub(crate) options: TaskOptions,
}

/// A `tasks/*` lookup failed.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// No such task for this caller (or it expired).
    Unknown,
    /// The backend failed; the error says what to do.
    Failed(ProtocolError),
}

/// The -32603 a client sees when the task store is down (logged here).
pub(crate) fn unavailable(e: &TaskBackendError) -> ProtocolError {
    match e {
        TaskBackendError::Full => ProtocolError::rate_limited(
            "Too many tasks are running on this server; retry when some have finished.",
            1,
        ),
        TaskBackendError::Unavailable(why) => {
            tracing::error!(error = %why, "task store unavailable");
            ProtocolError::internal(
                "Internal error: the task store is unavailable (the failure was logged); retry in a few seconds.",
            )
        }
    }
}

impl From<TaskBackendError> for Lookup {
    fn from(e: TaskBackendError) -> Self {
        Self::Failed(unavailable(&e))
    }
}

impl TaskStore {
    pub(crate) fn new(backend: Arc<dyn TaskBackend>, options: TaskOptions) -> Self {
        Self { backend, options }
    }

    pub(crate) fn backend(&self) -> &dyn TaskBackend {
        self.backend.as_ref()
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.options.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// Creates a `working` task; returns its id and the `CreateTaskResult`
    /// fields. Refused (rate limited) when the store is full of running tasks.
    pub(crate) async fn create(
        &self,
        owner: Option<&str>,
    ) -> Result<(String, Map<String, Value>), ProtocolError> {
        let id = new_id();
        let record = self
            .backend
            .create(&id, owner, self.options.ttl, self.options.max_tasks)
            .await
            .map_err(|e| unavailable(&e))?;
        Ok((id, self.base_fields(&record)))
    }

    /// `taskId`, `status`, timestamps, `ttlMs` and `pollIntervalMs`.
    fn base_fields(&self, r: &TaskRecord) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("taskId".into(), json!(r.id));
        m.insert("status".into(), json!(r.status.as_str()));
        m.insert("createdAt".into(), json!(iso8601(r.created)));
        m.insert("lastUpdatedAt".into(), json!(iso8601(r.updated)));
        m.insert("ttlMs".into(), json!(self.ttl_ms()));
        let poll = u64::try_from(self.options.poll_interval.as_millis()).unwrap_or(u64::MAX);
        if poll > 0 {
            m.insert("pollIntervalMs".into(), json!(poll));
        }
        if let Some(message) = &r.status_message {
            m.insert("statusMessage".into(), json!(message));
        }
        m
    }

    /// The `DetailedTask` fields for `tasks/get`.
    pub(crate) async fn view(
        &self,
        id: &str,
        owner: Option<&str>,
    ) -> Result<Map<String, Value>, Lookup> {
        let Some(r) = self.backend.get(id).await? else {
            return Err(Lookup::Unknown);
        };
        if r.owner.as_deref() != owner {
            return Err(Lookup::Unknown);
        }
        let mut m = self.base_fields(&r);
        match r.status {
            TaskStatus::Completed => {
                if let Some(res) = r.result {
                    m.insert("result".into(), Value::Object(res));
                }
            }
            TaskStatus::Failed => {
                if let Some(err) = r.error {
                    m.insert("error".into(), err);
                }
            }
            TaskStatus::InputRequired => {
                m.insert("inputRequests".into(), Value::Object(r.pending));
            }
            TaskStatus::Working | TaskStatus::Cancelled => {}
        }
        Ok(m)
    }

    /// Answers pending input requests; unknown or already answered keys are
    /// ignored, as is an update to a task that is not waiting for input.
    pub(crate) async fn update(
        &self,
        id: &str,
        owner: Option<&str>,
        responses: &Map<String, Value>,
    ) -> Result<(), Lookup> {
        let found = self
            .backend
            .answer(id, owner, responses, self.options.ttl)
            .await?;
        found.then_some(()).ok_or(Lookup::Unknown)
    }

    /// Cancels a task that has not finished; a finished one is left as is.
    pub(crate) async fn cancel(&self, id: &str, owner: Option<&str>) -> Result<(), Lookup> {
        let found = self.backend.cancel(id, owner, self.options.ttl).await?;
        found.then_some(()).ok_or(Lookup::Unknown)
    }

    /// Sets (`Some`) or clears (`None`) a running task's `statusMessage`;
    /// `false` if the task is gone or finished.
    pub(crate) async fn set_status_message(
        &self,
        id: &str,
        message: Option<&str>,
    ) -> Result<bool, ProtocolError> {
        self.backend
            .set_status_message(id, message, self.options.ttl)
            .await
            .map_err(|e| unavailable(&e))
    }

    /// Ends a task `completed` with this (shaped) tool result.
    pub(crate) async fn complete(&self, id: &str, result: Map<String, Value>) {
        self.settle(id, Settled::Completed(result)).await;
    }

    /// Ends a task `failed` with this protocol error.
    pub(crate) async fn fail(&self, id: &str, error: &ProtocolError) {
        let mut err = Map::new();
        err.insert("code".into(), json!(error.code));
        err.insert("message".into(), json!(error.message));
        if let Some(d) = &error.data {
            err.insert("data".into(), d.clone());
        }
        self.settle(id, Settled::Failed(Value::Object(err))).await;
    }

    async fn settle(&self, id: &str, outcome: Settled) {
        // Retried once: a lost outcome leaves the client polling `working`
        // until the TTL, so a transient failure is worth a second try.
        for attempt in 0..2 {
            match self
                .backend
                .settle(id, outcome.clone(), self.options.ttl)
                .await
            {
                Ok(()) => return,
                Err(e) => {
                    tracing::error!(task = %id, attempt, error = %e, "recording a task outcome failed");
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
            }
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
    use std::time::Duration;

    use super::*;

    #[test]
    fn formats_utc_timestamps() {
        let t = UNIX_EPOCH + Duration::from_millis(1_785_241_696_789);
        assert_eq!(iso8601(t), "2026-07-28T12:28:16.789Z");
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
    }
}
