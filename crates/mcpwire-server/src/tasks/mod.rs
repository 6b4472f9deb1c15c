//! The tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`).
//!
//! A tool registered with [`TaskSupport::Optional`] or
//! [`TaskSupport::Required`] may answer `tools/call` with a
//! `CreateTaskResult` (`resultType: "task"`) instead of its result; the
//! handler keeps running in the background and the client polls
//! `tasks/get`, answers input requests with `tasks/update`, and stops the
//! work with `tasks/cancel`.
//!
//! Rules the engine applies:
//!
//! - The server advertises `capabilities.extensions["io.modelcontextprotocol/tasks"]`
//!   (modern wire only) when tasks are enabled: by
//!   [`ServerBuilder::tasks`](crate::ServerBuilder::tasks), or because a tool
//!   given to the builder declares task support.
//! - Tasks are used only when *this request's* `clientCapabilities` declare
//!   the extension (stateless: nothing carries over between requests).
//!   Otherwise an `Optional` tool runs synchronously, a `Required` tool is
//!   refused with -32021, and `tasks/get|update|cancel` get -32021. On the
//!   legacy wires tasks do not exist: task-supporting tools run
//!   synchronously and the `tasks/*` methods are unknown (-32601).
//! - By default the task is created before the handler runs. A tool built
//!   with [`ToolBuilder::defer_task_creation`](crate::ToolBuilder::defer_task_creation)
//!   runs synchronously (it may finish at once or ask for input with
//!   `input_required` rounds) until its handler calls
//!   [`RequestContext::start_task`](crate::RequestContext::start_task).
//! - Inside a task, a handler's `InputRequired` parks the task in
//!   `input_required` with the requests on `tasks/get`; once `tasks/update`
//!   has answered every pending key, the handler is called again with the
//!   answers and its state, as in a multi round-trip retry.
//! - A tool execution error ends the task `completed` with
//!   `result.isError: true`; a protocol or internal error ends it `failed`
//!   with `error`; `tasks/cancel` ends it `cancelled` and fires the
//!   handler's cancellation token.
//! - A call whose operator approval is pending (see
//!   [`Approval::Operator`](crate::access::Approval::Operator)) is a
//!   `working` task at once, with a `statusMessage` naming the approval;
//!   it runs (or completes with the refusal) once an operator decides.
//! - Tasks are bound to the principal that created them: another caller
//!   gets the same -32602 as for an unknown id.
//!
//! Task records live in a [`TaskBackend`]: by default [`MemoryTasks`], a
//! bounded map in this process whose entries expire `ttl` after their last
//! status change (a task still running then is cancelled). Replicas behind
//! a load balancer share one backend
//! ([`ServerBuilder::task_backend`](crate::ServerBuilder::task_backend)):
//! the handler runs where the task was created, and any replica serves
//! `tasks/get|update|cancel`; the runner follows its record (every
//! [`WATCH_INTERVAL`] at most) to see cancels and answers.

mod backend;
mod memory;
mod store;

use std::time::Duration;

pub use backend::{Settled, TaskBackend, TaskBackendError, TaskFuture, TaskRecord, TaskStatus};
pub use memory::MemoryTasks;
pub(crate) use store::{Lookup, TaskStore, unavailable};

/// How often a running task re-reads its record when the backend does not
/// signal changes: the most a cancel sent to another replica waits.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(250);

/// The extension identifier, as advertised and as declared by clients.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/tasks";

/// Whether a tool can run as a task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TaskSupport {
    /// Always synchronous (the default).
    #[default]
    Forbidden,
    /// A task when the request declares the extension, else synchronous.
    Optional,
    /// Only as a task: requests that do not declare the extension get -32021.
    Required,
}

impl TaskSupport {
    /// The wire spelling (`"forbidden"`, `"optional"`, `"required"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

/// Tunables of the task store.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TaskOptions {
    /// How long a task stays readable after its last status change
    /// (`ttlMs`); a task still running then is cancelled.
    pub ttl: Duration,
    /// The polling interval suggested to clients (`pollIntervalMs`).
    pub poll_interval: Duration,
    /// Most tasks kept at once; when full, finished tasks are evicted oldest
    /// first, and new tasks are refused if all are still running.
    pub max_tasks: usize,
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(500),
            max_tasks: 10_000,
        }
    }
}
