//! Running a `tools/call` as a task: creation, the background runner, and
//! input rounds inside the task.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use futures_util::FutureExt;
use mcpwire_protocol::{ProtocolError, shape};
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use super::Dispatcher;
use super::approve::Verdict;
use crate::access::{ApprovalTicket, AuditRecord, CallOutcome, Principal};
use crate::context::{RequestContext, TaskHandle};
use crate::registry::RegisteredTool;
use crate::tasks::{EXTENSION_ID, TaskStatus, TaskStore, TaskSupport, WATCH_INTERVAL};
use crate::tool::{CallToolResult, ToolOutcome};

/// How many input rounds without any request a task may go through.
const MAX_EMPTY_ROUNDS: usize = 10;

/// How long a cancelled handler may keep running to clean up.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// How one `tools/call` runs.
pub(crate) enum Mode {
    /// Synchronously, as without the extension.
    Sync,
    /// As a task; `defer` leaves creation to the handler.
    Task { defer: bool },
}

/// Whether the request declares the tasks extension.
pub(crate) fn declares_extension(ctx: &RequestContext) -> bool {
    ctx.client_capabilities()
        .get("extensions")
        .and_then(Value::as_object)
        .is_some_and(|e| e.contains_key(EXTENSION_ID))
}

/// The -32021 for a request that needs the extension but did not declare it.
pub(crate) fn missing_extension(message: impl Into<String>) -> ProtocolError {
    ProtocolError::missing_capability(json!({ "extensions": { EXTENSION_ID: {} } }), message)
}

/// Decides how a call runs; a task-required tool called without the
/// extension on the modern wire is refused with -32021.
pub(crate) fn mode(
    server: &Dispatcher,
    ctx: &RequestContext,
    tool: &RegisteredTool,
) -> Result<Mode, ProtocolError> {
    let support = tool.tool.task_support;
    if support == TaskSupport::Forbidden
        || server.state.tasks.is_none()
        || !ctx.protocol_version().is_modern()
    {
        return Ok(Mode::Sync);
    }
    if declares_extension(ctx) {
        return Ok(Mode::Task {
            defer: tool.tool.defer_task,
        });
    }
    if support == TaskSupport::Required {
        return Err(missing_extension(format!(
            "Tool \"{}\" runs only as a task: declare the {EXTENSION_ID} extension in _meta clientCapabilities.extensions.",
            tool.tool.definition.name
        )));
    }
    Ok(Mode::Sync)
}

/// What the caller of [`call_as_task`] answers.
pub(crate) enum Launch {
    /// A task exists: answer with these `CreateTaskResult` fields.
    Created(Map<String, Value>),
    /// The handler finished before creating a task (deferred creation):
    /// answer synchronously, with the context it ran with.
    Finished(Result<ToolOutcome, ProtocolError>, Box<RequestContext>),
}

enum First {
    Created(Map<String, Value>),
    Finished(Result<ToolOutcome, ProtocolError>),
}

/// The link between a running handler and its (future) task, held by the
/// handler's [`RequestContext`].
pub(crate) struct TaskSlot {
    store: Arc<TaskStore>,
    owner: Option<String>,
    cancel: CancellationToken,
    id: OnceLock<String>,
    /// Held across the creation so two `start`s cannot both create.
    first: tokio::sync::Mutex<Option<oneshot::Sender<First>>>,
    /// Woken by the watcher when an input round has been answered.
    answered: Notify,
    /// Set when the handler runs on an operator's approval: the audit row
    /// its outcome is recorded in.
    served: OnceLock<Served>,
}

/// A task-augmented call waiting for an operator's decision.
pub(crate) struct Awaiting {
    /// The pending approval.
    pub(crate) ticket: ApprovalTicket,
    /// The call's audit row, to complete with the served (or refused)
    /// step; `None` without an audit sink.
    pub(crate) audit: Option<AuditRecord>,
}

/// The audit row of a call served on an approval, once its handler ends.
struct Served {
    record: AuditRecord,
    started: Instant,
}

impl TaskSlot {
    /// A slot for a call of `ctx`'s principal, and where its first outcome
    /// (a created task, or a synchronous answer) arrives.
    fn new(store: Arc<TaskStore>, ctx: &RequestContext) -> (Arc<Self>, oneshot::Receiver<First>) {
        let (tx, rx) = oneshot::channel();
        let slot = Arc::new(TaskSlot {
            store,
            owner: ctx.extension::<Principal>().map(|p| p.subject.clone()),
            cancel: CancellationToken::new(),
            id: OnceLock::new(),
            first: tokio::sync::Mutex::new(Some(tx)),
            answered: Notify::new(),
            served: OnceLock::new(),
        });
        (slot, rx)
    }

    /// Writes the served call's audit row with `outcome`; `false` if the
    /// trail is unavailable (the outcome must then not be shown). Calls
    /// not served on an approval have nothing to write here.
    async fn audit_served(&self, server: &Dispatcher, outcome: CallOutcome) -> bool {
        let Some(served) = self.served.get() else {
            return true;
        };
        let mut record = served.record.clone();
        record.outcome = outcome;
        record.latency_ms = u64::try_from(served.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        server.write_audit(record).await.is_ok()
    }

    /// The task id, once created.
    pub(crate) fn id(&self) -> Option<&str> {
        self.id.get().map(String::as_str)
    }

    /// Creates the task (once) and tells the waiting `tools/call` to answer
    /// with its `CreateTaskResult`.
    pub(crate) async fn start(&self) -> Result<(), ProtocolError> {
        let mut first = self.first.lock().await;
        if self.id.get().is_some() {
            return Ok(());
        }
        let Some(tx) = first.take() else {
            return Err(ProtocolError::internal(
                "Internal error: the call already answered synchronously.",
            ));
        };
        match self.store.create(self.owner.as_deref()).await {
            Ok((id, fields)) => {
                let _ = self.id.set(id);
                let _ = tx.send(First::Created(fields));
                Ok(())
            }
            Err(e) => {
                // Still synchronous: the call answers when the handler does.
                *first = Some(tx);
                Err(e)
            }
        }
    }

    /// Hands a synchronous outcome to the waiting `tools/call`; gives it
    /// back if a task exists (the runner records it there).
    async fn finish_sync(
        &self,
        outcome: Result<ToolOutcome, ProtocolError>,
    ) -> Option<Result<ToolOutcome, ProtocolError>> {
        let mut first = self.first.lock().await;
        if self.id.get().is_some() {
            return Some(outcome);
        }
        if let Some(tx) = first.take() {
            let _ = tx.send(First::Finished(outcome));
        }
        None
    }
}

impl TaskHandle for TaskSlot {
    fn id(&self) -> Option<&str> {
        TaskSlot::id(self)
    }

    fn start(&self) -> Pin<Box<dyn Future<Output = Result<(), ProtocolError>> + Send + '_>> {
        Box::pin(TaskSlot::start(self))
    }
}

/// Follows the task's shared record while its handler runs here: fires
/// the handler's token when the task was cancelled (on any replica) or
/// expired, and wakes a parked runner once its input round is answered.
async fn watch(slot: Arc<TaskSlot>, stop: CancellationToken) {
    let id = loop {
        if let Some(id) = slot.id() {
            break id.to_owned();
        }
        // Deferred creation: no record to follow yet.
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(WATCH_INTERVAL) => {}
        }
    };
    let backend = slot.store.backend();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = backend.wait_change(&id, WATCH_INTERVAL) => {}
        }
        match backend.get(&id).await {
            Ok(Some(r)) if r.status == TaskStatus::Cancelled => break,
            Ok(Some(r)) if r.status.is_terminal() => return,
            Ok(Some(r)) => {
                if r.status == TaskStatus::Working && !r.answers.is_empty() {
                    slot.answered.notify_one();
                }
            }
            // Expired (or pruned): nobody can read the outcome any more.
            Ok(None) => break,
            // Keep the handler running through a transient outage.
            Err(e) => tracing::warn!(task = %id, error = %e, "cannot read the task record"),
        }
    }
    slot.cancel.cancel();
}

/// Runs the handler on a spawned task and waits until it either created a
/// task (answer with `CreateTaskResult`) or finished without one.
/// `permit` (a concurrency slot) is held until the handler is done.
pub(crate) async fn call_as_task<P: Send + 'static>(
    server: &Dispatcher,
    ctx: RequestContext,
    tool: Arc<RegisteredTool>,
    arguments: Map<String, Value>,
    permit: P,
    defer: bool,
) -> Result<Launch, ProtocolError> {
    let Some(store) = server.state.tasks.clone() else {
        return Err(ProtocolError::internal(
            "Internal error: tasks are not enabled on this server.",
        ));
    };
    let (slot, rx) = TaskSlot::new(store, &ctx);
    let run_cancel = slot.cancel.clone();
    let request_cancel = ctx.cancel.clone();
    let mut run_ctx = ctx;
    run_ctx.cancel = run_cancel.clone();
    run_ctx.task = Some(Arc::clone(&slot) as Arc<dyn TaskHandle>);
    if !defer {
        slot.start().await?;
    }
    // Until a task exists, the handler belongs to this request: if the
    // request goes away, so does the handler.
    let guard = run_cancel.clone().drop_guard();
    if let Some(grace) = tool.tool.task_grace {
        tokio::spawn(start_after(grace, Arc::clone(&slot), run_cancel.clone()));
    }
    tokio::spawn(drive(
        server.clone(),
        tool,
        run_ctx.clone(),
        arguments,
        slot,
        permit,
    ));
    let first = tokio::select! {
        biased;
        f = rx => f,
        _ = request_cancel.cancelled() => {
            return Err(ProtocolError::internal("Internal error: the request was cancelled."));
        }
    };
    match first {
        Ok(First::Created(fields)) => {
            guard.disarm();
            Ok(Launch::Created(fields))
        }
        Ok(First::Finished(outcome)) => {
            run_ctx.cancel = request_cancel;
            run_ctx.task = None;
            Ok(Launch::Finished(outcome, Box::new(run_ctx)))
        }
        Err(_) => Err(ProtocolError::internal(
            "Internal error: the tool stopped without an answer; the failure was logged.",
        )),
    }
}

/// Turns a call that is still running after `grace` into a task. Does
/// nothing when the handler has answered (or asked for input) by then, or
/// the request is gone; if the task cannot be created (the store is
/// full), the call simply stays synchronous.
async fn start_after(grace: Duration, slot: Arc<TaskSlot>, cancel: CancellationToken) {
    tokio::select! {
        () = tokio::time::sleep(grace) => {}
        () = cancel.cancelled() => return,
    }
    let _ = slot.start().await;
}

/// The background runner: calls the handler (again after each answered
/// input round) and records the outcome on the task.
async fn drive<P: Send + 'static>(
    server: Dispatcher,
    tool: Arc<RegisteredTool>,
    ctx: RequestContext,
    arguments: Map<String, Value>,
    slot: Arc<TaskSlot>,
    _permit: P,
) {
    let stop = CancellationToken::new();
    let _stop_watching = stop.clone().drop_guard();
    tokio::spawn(watch(Arc::clone(&slot), stop));
    rounds(server, tool, ctx, arguments, slot).await;
}

/// What the runner does after one handler call.
enum Step {
    /// Stop: the outcome is recorded (or no longer matters).
    Done,
    /// Call the handler again with these answers and state.
    Again(Map<String, Value>, Option<Value>),
}

async fn rounds(
    server: Dispatcher,
    tool: Arc<RegisteredTool>,
    mut ctx: RequestContext,
    arguments: Map<String, Value>,
    slot: Arc<TaskSlot>,
) {
    let name = tool.tool.definition.name.clone();
    let cancel = ctx.cancel.clone();
    let mut empty_rounds = 0;
    loop {
        let call =
            AssertUnwindSafe(tool.tool.handler.call(ctx.clone(), arguments.clone())).catch_unwind();
        let mut call = std::pin::pin!(call);
        let outcome = tokio::select! {
            r = &mut call => match r {
                Ok(r) => ToolOutcome::settle(&name, r),
                Err(_) => {
                    tracing::error!(tool = %name, "tool handler panicked");
                    Err(ProtocolError::internal(format!(
                        "Internal error while running tool \"{name}\"; the failure was logged."
                    )))
                }
            },
            () = cancel.cancelled() => {
                // Let the handler see its token and wind down, briefly; its
                // outcome no longer matters.
                let _ = tokio::time::timeout(CANCEL_GRACE, call).await;
                return;
            }
        };
        let Some(outcome) = slot.finish_sync(outcome).await else {
            return;
        };
        match record(&server, &tool, &ctx, &slot, outcome, &mut empty_rounds).await {
            Step::Done => return,
            Step::Again(answers, state) => {
                ctx.input_responses = Some(answers);
                ctx.request_state = state;
            }
        }
    }
}

/// Records a handler's outcome on the task; for an input request, parks
/// the task and waits for the answers.
async fn record(
    server: &Dispatcher,
    tool: &RegisteredTool,
    ctx: &RequestContext,
    slot: &TaskSlot,
    outcome: Result<ToolOutcome, ProtocolError>,
    empty_rounds: &mut usize,
) -> Step {
    let Some(id) = slot.id() else {
        return Step::Done;
    };
    let store = &slot.store;
    let name = &tool.tool.definition.name;
    let ir = match outcome {
        Ok(ToolOutcome::Complete(result)) => {
            match server.post_process(ctx, tool, result) {
                Ok(r) => {
                    let outcome = if r.is_error {
                        CallOutcome::ToolError
                    } else {
                        CallOutcome::Success
                    };
                    let shaped = shape::call_result_for(r.to_map(), ctx.protocol_version());
                    let result = shape::finish_result(shaped, ctx.protocol_version(), None);
                    settle_audited(server, slot, id, outcome, Ok(result)).await;
                }
                Err(e) => {
                    settle_audited(server, slot, id, CallOutcome::of_error(e.code), Err(e)).await;
                }
            }
            return Step::Done;
        }
        Ok(ToolOutcome::InputRequired(ir)) => ir,
        Err(e) => {
            settle_audited(server, slot, id, CallOutcome::of_error(e.code), Err(e)).await;
            return Step::Done;
        }
    };
    if let Some((cap, required)) = ir.missing_capability(ctx) {
        let message = format!(
            "This task needs the client capability \"{cap}\", which the creating request did not declare."
        );
        store
            .fail(id, &ProtocolError::missing_capability(required, message))
            .await;
        return Step::Done;
    }
    let requests = ir.wire_requests();
    if !requests.is_empty() {
        *empty_rounds = 0;
        return match wait_for_answers(slot, id, &requests).await {
            Some(answers) => Step::Again(answers, ir.state),
            None => Step::Done,
        };
    }
    *empty_rounds += 1;
    if *empty_rounds > MAX_EMPTY_ROUNDS {
        tracing::error!(tool = %name, "tool kept asking for input without requests");
        let message = format!(
            "Internal error: tool \"{name}\" asked for input more than {MAX_EMPTY_ROUNDS} times without saying what."
        );
        store.fail(id, &ProtocolError::internal(message)).await;
        return Step::Done;
    }
    Step::Again(Map::new(), ir.state)
}

/// Parks the task with `requests` and waits until they are all answered
/// (through any replica); `None` if the task was cancelled or is gone.
async fn wait_for_answers(
    slot: &TaskSlot,
    id: &str,
    requests: &Map<String, Value>,
) -> Option<Map<String, Value>> {
    let store = &slot.store;
    let ttl = store.options.ttl;
    match store.backend().park(id, requests, ttl).await {
        Ok(true) => {}
        Ok(false) => return None,
        Err(e) => {
            store.fail(id, &crate::tasks::unavailable(&e)).await;
            return None;
        }
    }
    loop {
        tokio::select! {
            () = slot.answered.notified() => {}
            () = slot.cancel.cancelled() => return None,
        }
        match store.backend().take_answers(id, ttl).await {
            Ok(Some(answers)) => return Some(answers),
            Ok(None) => {}
            Err(e) => tracing::warn!(task = %id, error = %e, "cannot collect the task's answers"),
        }
    }
}

/// Ends the task with `end`, once the served call's audit row (if any)
/// is written; an unaudited outcome is replaced by the trail's -32603.
async fn settle_audited(
    server: &Dispatcher,
    slot: &TaskSlot,
    id: &str,
    outcome: CallOutcome,
    end: Result<Map<String, Value>, ProtocolError>,
) {
    if !slot.audit_served(server, outcome).await {
        let e = ProtocolError::internal(
            "Internal error: the audit trail is unavailable, so the result was withheld; call the tool again later.",
        );
        slot.store.fail(id, &e).await;
        return;
    }
    match end {
        Ok(result) => slot.store.complete(id, result).await,
        Err(e) => slot.store.fail(id, &e).await,
    }
}

/// Creates a task at once for a call whose operator approval is pending
/// and answers with its `CreateTaskResult` fields (with a
/// `statusMessage` naming the approval). Its runner waits for the
/// decision — until the approval expires or the task is cancelled — then
/// serves the call once, or completes the task with the refusal the
/// synchronous call would get. `permit` is held until then.
pub(crate) async fn call_after_approval<P: Send + 'static>(
    server: &Dispatcher,
    ctx: RequestContext,
    tool: Arc<RegisteredTool>,
    arguments: Map<String, Value>,
    permit: P,
    awaiting: Awaiting,
) -> Result<Map<String, Value>, ProtocolError> {
    let Some(store) = server.state.tasks.clone() else {
        return Err(ProtocolError::internal(
            "Internal error: tasks are not enabled on this server.",
        ));
    };
    let (slot, rx) = TaskSlot::new(Arc::clone(&store), &ctx);
    slot.start().await?;
    let (Ok(First::Created(mut fields)), Some(id)) = (rx.await, slot.id()) else {
        return Err(ProtocolError::internal(
            "Internal error: the task could not be created.",
        ));
    };
    let message = format!(
        "waiting for approval by an operator ({})",
        awaiting.ticket.id
    );
    if let Err(e) = store.set_status_message(id, Some(&message)).await {
        // A task nobody will run must not look like one still working.
        store.fail(id, &e).await;
        return Err(e);
    }
    fields.insert("statusMessage".into(), json!(message));
    let mut run_ctx = ctx;
    run_ctx.cancel = slot.cancel.clone();
    run_ctx.task = Some(Arc::clone(&slot) as Arc<dyn TaskHandle>);
    tokio::spawn(drive_approval(
        server.clone(),
        tool,
        run_ctx,
        arguments,
        slot,
        permit,
        awaiting,
    ));
    Ok(fields)
}

/// The runner of a task that waits for an operator: the decision, then
/// the handler (as [`drive`] runs it) or the refusal.
async fn drive_approval<P: Send + 'static>(
    server: Dispatcher,
    tool: Arc<RegisteredTool>,
    ctx: RequestContext,
    arguments: Map<String, Value>,
    slot: Arc<TaskSlot>,
    _permit: P,
    awaiting: Awaiting,
) {
    let stop = CancellationToken::new();
    let _stop_watching = stop.clone().drop_guard();
    tokio::spawn(watch(Arc::clone(&slot), stop));
    let Some(id) = slot.id().map(str::to_owned) else {
        return;
    };
    let Some(ticket) = server.await_decision(&awaiting.ticket, &slot.cancel).await else {
        // Cancelled (or expired): the record says so; nothing was run.
        return;
    };
    let started = Instant::now();
    let approval = &ticket.id;
    match server.verdict(&tool, &ticket).await {
        Ok(Verdict::Serve { by }) => {
            if let Some(mut record) = awaiting.audit {
                record.at = SystemTime::now();
                record.detail = Some(format!(
                    "approval {approval} approved by {by}, served as task {id}"
                ));
                let _ = slot.served.set(Served { record, started });
            }
            // The wait is over: the message would now mislead.
            if let Err(e) = slot.store.set_status_message(&id, None).await {
                tracing::warn!(task = %id, error = %e.message, "cannot clear the task's status message");
            }
            rounds(server, tool, ctx, arguments, slot).await;
        }
        Ok(Verdict::Refuse(outcome, text)) => {
            if let Some(mut record) = awaiting.audit {
                record.at = SystemTime::now();
                record.detail = Some(format!("{text} (task {id})").chars().take(500).collect());
                let _ = slot.served.set(Served { record, started });
            }
            let refusal = CallToolResult::error(text).to_map();
            let shaped = shape::call_result_for(refusal, ctx.protocol_version());
            let result = shape::finish_result(shaped, ctx.protocol_version(), None);
            settle_audited(&server, &slot, &id, outcome, Ok(result)).await;
        }
        Err(e) => {
            settle_audited(&server, &slot, &id, CallOutcome::of_error(e.code), Err(e)).await;
        }
    }
}
