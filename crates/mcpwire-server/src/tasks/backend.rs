//! Where task records live: the [`TaskBackend`] trait.
//!
//! The engine keeps only what cannot be shared (the handler's future and
//! its cancellation token) in the process that runs the handler; the
//! record a client reads and changes (`tasks/get|update|cancel`) lives in
//! the backend. Replicas given one backend behave as one server: the
//! runner re-reads its record while the handler runs (on a change signal
//! from [`TaskBackend::wait_change`], else every
//! [`WATCH_INTERVAL`](super::WATCH_INTERVAL)), so a cancel or an answer
//! sent to another replica reaches it.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

/// The future every backend operation returns.
pub type TaskFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, TaskBackendError>> + Send + 'a>>;

/// A task's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskStatus {
    /// The handler is running.
    Working,
    /// The handler waits for answers to `pending`.
    InputRequired,
    /// Finished with a result (possibly `isError`).
    Completed,
    /// Finished with a JSON-RPC error.
    Failed,
    /// Stopped by `tasks/cancel`.
    Cancelled,
}

impl TaskStatus {
    /// The wire spelling (`"working"`, `"input_required"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "working" => Self::Working,
            "input_required" => Self::InputRequired,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }

    /// Completed, failed or cancelled: nothing changes it any more.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// One task as stored.
#[derive(Clone, Debug)]
pub struct TaskRecord {
    /// The unguessable id handed to the client.
    pub id: String,
    /// The subject of the principal that created it (`None`: anonymous).
    pub owner: Option<String>,
    /// Its status.
    pub status: TaskStatus,
    /// When it was created.
    pub created: SystemTime,
    /// Its last status change.
    pub updated: SystemTime,
    /// The inlined tool result (`completed`).
    pub result: Option<Map<String, Value>>,
    /// The JSON-RPC error object (`failed`).
    pub error: Option<Value>,
    /// Input requests not answered yet (`input_required`).
    pub pending: Map<String, Value>,
    /// Answers collected in this round. Once nothing is pending the status
    /// is back to `working` and these wait for the runner
    /// ([`TaskBackend::take_answers`]).
    pub answers: Map<String, Value>,
    /// A human-readable note on the current status (`statusMessage`), e.g.
    /// what a `working` task waits for; shared so every replica shows it.
    pub status_message: Option<String>,
}

/// How a task ends (recorded by [`TaskBackend::settle`]).
#[derive(Clone, Debug)]
pub enum Settled {
    /// `completed` with this (shaped) tool result.
    Completed(Map<String, Value>),
    /// `failed` with this JSON-RPC error object.
    Failed(Value),
}

/// The backend could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskBackendError {
    /// The store is full of running tasks; retry later.
    #[error("too many tasks are running")]
    Full,
    /// The store did not answer (down, unreachable, timed out).
    #[error("task store unavailable: {0}")]
    Unavailable(String),
}

/// Stores task records; shared by every replica that must see the same
/// tasks. Every operation is atomic on its record. `ttl` is how long a
/// record stays after the change being made: records whose time is up
/// are gone for every reader (and pruned), which also cancels a handler
/// still running (its runner no longer finds the record).
pub trait TaskBackend: Send + Sync + 'static {
    /// Stores a new `working` task. When `max_tasks` are stored, expired
    /// records are dropped, then finished ones oldest first; if all are
    /// still running, [`TaskBackendError::Full`].
    fn create<'a>(
        &'a self,
        id: &'a str,
        owner: Option<&'a str>,
        ttl: Duration,
        max_tasks: usize,
    ) -> TaskFuture<'a, TaskRecord>;

    /// The live (unexpired) record, whoever owns it.
    fn get<'a>(&'a self, id: &'a str) -> TaskFuture<'a, Option<TaskRecord>>;

    /// Answers pending input requests of `owner`'s task: answered keys move
    /// from `pending` to `answers` (unknown keys are ignored); with nothing
    /// left pending the status is `working` again. A task not waiting for
    /// input is left as is. `false` if there is no such live task.
    fn answer<'a>(
        &'a self,
        id: &'a str,
        owner: Option<&'a str>,
        responses: &'a Map<String, Value>,
        ttl: Duration,
    ) -> TaskFuture<'a, bool>;

    /// Cancels `owner`'s task unless it finished. `false` if there is no
    /// such live task.
    fn cancel<'a>(
        &'a self,
        id: &'a str,
        owner: Option<&'a str>,
        ttl: Duration,
    ) -> TaskFuture<'a, bool>;

    /// Parks a running task in `input_required` with these requests;
    /// `false` if it is gone or finished.
    fn park<'a>(
        &'a self,
        id: &'a str,
        requests: &'a Map<String, Value>,
        ttl: Duration,
    ) -> TaskFuture<'a, bool>;

    /// Takes the answers of a completed input round (status `working` with
    /// answers), leaving none; `None` while input is still pending.
    fn take_answers<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> TaskFuture<'a, Option<Map<String, Value>>>;

    /// Sets (or with `None` clears) the status message of a task that has
    /// not finished; `false` if it is gone or finished.
    fn set_status_message<'a>(
        &'a self,
        id: &'a str,
        message: Option<&'a str>,
        ttl: Duration,
    ) -> TaskFuture<'a, bool>;

    /// Records how a task ended, unless it already finished (a cancel wins).
    fn settle<'a>(&'a self, id: &'a str, outcome: Settled, ttl: Duration) -> TaskFuture<'a, ()>;

    /// Resolves when the record may have changed, or after `max`. The
    /// default sleeps `max` (the runner then polls); a backend that can
    /// signal changes wakes the runner sooner.
    fn wait_change<'a>(
        &'a self,
        _id: &'a str,
        max: Duration,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(tokio::time::sleep(max))
    }
}
