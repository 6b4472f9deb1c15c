//! What a handler knows about the request it serves, without any
//! transport types.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcpwire_protocol::jsonrpc::notification_json;
use mcpwire_protocol::model::LogLevel;
use mcpwire_protocol::{ProtocolError, ProtocolVersion};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The transport's hook behind [`RequestContext::close_sse_stream`],
/// attached to the request's extensions where the stream can be resumed.
#[derive(Clone)]
pub(crate) struct SseStreamCloser(pub(crate) Arc<dyn Fn() + Send + Sync>);

/// The link between a running handler and the task it runs as (or may
/// become): implemented by dispatch, which runs tasks; held here so a
/// handler can start its task without this layer knowing how tasks run.
pub(crate) trait TaskHandle: Send + Sync {
    /// The task id, once created.
    fn id(&self) -> Option<&str>;
    /// Creates the task (once) and lets the waiting `tools/call` answer
    /// with it.
    fn start(&self) -> Pin<Box<dyn Future<Output = Result<(), ProtocolError>> + Send + '_>>;
}

/// Per-request facts and request-scoped messaging for handlers.
#[derive(Clone)]
pub struct RequestContext {
    /// The revision this request speaks, so output can be adapted.
    pub(crate) version: ProtocolVersion,
    /// Self-reported client identity (informational only).
    pub(crate) client_info: Option<Value>,
    /// What the client can do on this request (modern) or session (legacy).
    pub(crate) client_capabilities: Arc<Map<String, Value>>,
    /// Where progress and log notifications for this request go.
    pub(crate) outbound: Option<mpsc::Sender<String>>,
    /// Set when the client asked for progress.
    pub(crate) progress_token: Option<Value>,
    /// The last progress value sent, as f64 bits: progress must increase.
    pub(crate) last_progress: Arc<AtomicU64>,
    /// The minimum level of log notifications the client wants, if any.
    pub(crate) log_level: Option<LogLevel>,
    /// Fires when the client cancels or goes away.
    pub(crate) cancel: CancellationToken,
    /// Answers to earlier input requests (multi round-trip).
    pub(crate) input_responses: Option<Map<String, Value>>,
    /// The verified state the handler asked to get back.
    pub(crate) request_state: Option<Value>,
    /// Values the transport attached (e.g. the authenticated principal).
    pub(crate) extensions: Arc<http::Extensions>,
    /// The task this call runs as (or may become), when it may be one.
    pub(crate) task: Option<Arc<dyn TaskHandle>>,
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl RequestContext {
    /// A context for calling handlers outside a transport (tests, tools
    /// composed of other tools).
    pub fn detached(version: ProtocolVersion) -> Self {
        Self {
            version,
            client_info: None,
            client_capabilities: Arc::new(Map::new()),
            outbound: None,
            progress_token: None,
            last_progress: Arc::new(AtomicU64::new(f64::NEG_INFINITY.to_bits())),
            log_level: None,
            cancel: CancellationToken::new(),
            input_responses: None,
            request_state: None,
            extensions: Arc::new(http::Extensions::new()),
            task: None,
        }
    }

    /// The protocol revision of this request.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.version
    }

    /// The client's self-reported `clientInfo`, if sent.
    pub fn client_info(&self) -> Option<&Value> {
        self.client_info.as_ref()
    }

    /// The client capabilities in force for this request.
    pub fn client_capabilities(&self) -> &Map<String, Value> {
        &self.client_capabilities
    }

    /// Whether the client declared a capability (`"elicitation"`, `"sampling"`, `"roots"`).
    pub fn client_supports(&self, capability: &str) -> bool {
        self.client_capabilities.contains_key(capability)
    }

    /// The answer to an earlier input request, by its key.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.input_responses.as_ref()?.get(key)
    }

    /// All answers to earlier input requests.
    pub fn input_responses(&self) -> Option<&Map<String, Value>> {
        self.input_responses.as_ref()
    }

    /// The state the handler attached to its last `InputRequired`, verified.
    pub fn request_state(&self) -> Option<&Value> {
        self.request_state.as_ref()
    }

    /// A value the transport attached, such as the authenticated principal.
    pub fn extension<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.extensions.get::<T>()
    }

    /// Continues this call as a task (tasks extension): the `tools/call` is
    /// answered with a `CreateTaskResult` now, and this handler keeps running
    /// in the background; its outcome goes to `tasks/get`. For tools built
    /// with [`ToolBuilder::defer_task_creation`](crate::ToolBuilder::defer_task_creation);
    /// other task calls start as tasks already. Returns whether the call now
    /// runs as a task: `false` when it cannot be one (the request did not
    /// declare the extension, a legacy wire, or the task store is full), in
    /// which case it simply stays synchronous.
    pub async fn start_task(&self) -> bool {
        let Some(slot) = &self.task else {
            return false;
        };
        match slot.start().await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e.message, "could not create a task; running synchronously");
                false
            }
        }
    }

    /// The id of the task this call runs as, if it runs as one.
    pub fn task_id(&self) -> Option<&str> {
        self.task.as_ref()?.id()
    }

    /// Closes this request's SSE connection without ending the request
    /// (SSE polling, 2025-11-25 sessions over Streamable HTTP): the client
    /// reconnects with `GET` + `Last-Event-ID` and receives what follows,
    /// including the result. The connection is closed after the priming
    /// event and whatever was already sent. Returns `false`, doing nothing,
    /// where the stream cannot be resumed (other revisions, the 2026 wire,
    /// stdio, clients that do not accept SSE).
    pub fn close_sse_stream(&self) -> bool {
        match self.extensions.get::<SseStreamCloser>() {
            Some(c) => {
                (c.0)();
                true
            }
            None => false,
        }
    }

    /// Resolves when the request is cancelled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Whether the client asked for progress notifications.
    pub fn wants_progress(&self) -> bool {
        self.progress_token.is_some() && self.outbound.is_some()
    }

    /// Reports progress, if the client asked for it. Values that do not
    /// increase are dropped (the spec requires increasing progress).
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let (Some(token), Some(out)) = (&self.progress_token, &self.outbound) else {
            return;
        };
        let last = f64::from_bits(self.last_progress.load(Ordering::Relaxed));
        if progress <= last || self.cancel.is_cancelled() {
            return;
        }
        self.last_progress
            .store(progress.to_bits(), Ordering::Relaxed);
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(t) = total {
            params["total"] = json!(t);
        }
        if let Some(m) = message {
            params["message"] = json!(m);
        }
        let _ = out
            .send(notification_json("notifications/progress", params))
            .await;
    }

    /// Whether a log message at `level` would be delivered.
    pub fn logs_at(&self, level: LogLevel) -> bool {
        self.outbound.is_some() && self.log_level.is_some_and(|min| level >= min)
    }

    /// Sends a `notifications/message` on this request's stream, if the
    /// client opted in at this level. Never put secrets or personal data in it.
    pub async fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) {
        if !self.logs_at(level) || self.cancel.is_cancelled() {
            return;
        }
        let Some(out) = &self.outbound else { return };
        let mut params = json!({ "level": level.as_str(), "data": data });
        if let Some(l) = logger {
            params["logger"] = json!(l);
        }
        let _ = out
            .send(notification_json("notifications/message", params))
            .await;
    }
}
