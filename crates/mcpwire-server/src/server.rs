//! The server: [`ServerBuilder`] puts the core state together, and
//! [`Server`] is the facade transports and applications hold. Every
//! method here delegates to the layer that does the work: the catalogue
//! and counters (the private `state` module), the engine's front door
//! ([`crate::engine`]) and request dispatch. It knows nothing about HTTP or
//! stdio.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::headers::HeaderParam;
use mcpwire_protocol::model::Implementation;
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use crate::access::{
    AccessOptions, ApprovalOptions, ApprovalStore, AuditSink, CallLimiter, MemoryApprovals,
    MemoryLimiter, RateLimiter,
};
use crate::context::RequestContext;
use crate::dispatch::{Inbound, Reply};
use crate::engine::{Accepted, Connection, Engine, MessageLimits, Origin};
use crate::events::ServerEvent;
use crate::observe::Metrics;
use crate::prompt::Prompt;
use crate::registry::{ListPolicy, RegisteredTool, RegistrationError, ToolRegistry};
use crate::request_state::StateSigner;
use crate::resource::{Resource, ResourceTemplate};
use crate::session::{Session, SessionStore};
use crate::shared::Shared;
use crate::state::State;
pub use crate::state::{CompletionFn, CompletionFuture, ServerOptions};
use crate::tasks::{MemoryTasks, TaskBackend, TaskOptions, TaskStore, TaskSupport};
use crate::tool::Tool;
use crate::view::View;

/// Builds a [`Server`].
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    views: Vec<View>,
    completion: Option<Arc<CompletionFn>>,
    logging: bool,
    state_key: Option<[u8; 32]>,
    options: ServerOptions,
    access: AccessOptions,
    audit: Option<Arc<dyn AuditSink>>,
    approvals: Option<Arc<dyn ApprovalStore>>,
    approval: ApprovalOptions,
    tasks: Option<TaskOptions>,
    shared: Option<Shared>,
    task_backend: Option<Arc<dyn TaskBackend>>,
    limiter: Option<Arc<dyn CallLimiter>>,
}

impl ServerBuilder {
    /// Where task records live; [`MemoryTasks`] of this server by default.
    /// Replicas given one shared backend serve each other's tasks (see
    /// [`crate::tasks`]). Does not by itself enable the extension.
    pub fn task_backend(mut self, backend: Arc<dyn TaskBackend>) -> Self {
        self.task_backend = Some(backend);
        self
    }

    /// The `tools/call` rate and concurrency limiter; a [`MemoryLimiter`]
    /// of this server by default. Replicas given one shared limiter
    /// enforce the limits together. (The `initialize` rate of
    /// [`ServerOptions::initialize_rate`] stays per process.)
    pub fn limiter(mut self, limiter: Arc<dyn CallLimiter>) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// Shares legacy sessions and events with other replicas through
    /// `shared` (see [`crate::shared`]). Build the server inside a Tokio
    /// runtime: it starts a task that receives the other replicas'
    /// messages. Give every replica the same
    /// [`ServerBuilder::request_state_key`] too.
    pub fn shared(mut self, shared: Shared) -> Self {
        self.shared = Some(shared);
        self
    }

    /// Enables the tasks extension (SEP-2663) with these options; see
    /// [`crate::tasks`]. Also enabled, with default options, when a tool
    /// given to the builder declares task support.
    pub fn tasks(mut self, options: TaskOptions) -> Self {
        self.tasks = Some(options);
        self
    }

    /// Access control: scope enforcement, limits, output sanitization.
    pub fn access(mut self, access: AccessOptions) -> Self {
        self.access = access;
        self
    }

    /// Records every `tools/call` before its response is sent.
    pub fn audit(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(sink);
        self
    }

    /// Where pending approvals and spent confirmations live
    /// ([`MemoryApprovals`] by default: one process). Replicas given one
    /// shared store honour each other's decisions.
    pub fn approvals(mut self, store: Arc<dyn ApprovalStore>) -> Self {
        self.approvals = Some(store);
        self
    }

    /// How approvals run: lifetimes, the wait, the fallback.
    pub fn approval_options(mut self, options: ApprovalOptions) -> Self {
        self.approval = options;
        self
    }

    /// Instructions for the client on how to use this server.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Sets the implementation's display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds a prompt (and declares the `prompts` capability).
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Adds a resource (and declares the `resources` capability).
    pub fn resource(mut self, resource: Resource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Adds an MCP Apps view (a `ui://` resource; see [`crate::view`]),
    /// declaring the `resources` capability and the
    /// `io.modelcontextprotocol/ui` extension. Link it from a tool with
    /// [`ToolBuilder::view`](crate::ToolBuilder::view).
    pub fn view(mut self, view: View) -> Self {
        self.views.push(view);
        self
    }

    /// Adds a resource template (and declares the `resources` capability).
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.templates.push(template);
        self
    }

    /// Handles `completion/complete` (and declares `completions`).
    pub fn completion<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(RequestContext, Value, String, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ProtocolError>> + Send + 'static,
    {
        self.completion = Some(Arc::new(move |c, r, n, v| Box::pin(f(c, r, n, v))));
        self
    }

    /// Declares the (deprecated) `logging` capability so handlers can send
    /// `notifications/message` to clients that opt in.
    pub fn logging(mut self, enabled: bool) -> Self {
        self.logging = enabled;
        self
    }

    /// The HMAC key for `requestState`; share it between replicas behind a
    /// load balancer. Random per process by default.
    pub fn request_state_key(mut self, key: [u8; 32]) -> Self {
        self.state_key = Some(key);
        self
    }

    /// Replaces the options.
    pub fn options(mut self, options: ServerOptions) -> Self {
        self.options = options;
        self
    }

    /// Validates and compiles everything (schemas once, here).
    pub fn build(self) -> Result<Server, RegistrationError> {
        let tools = register(self.tools)?;
        let ui = !self.views.is_empty();
        let resources = with_views(self.resources, self.views)?;
        let signer = match self.state_key {
            Some(k) => StateSigner::new(k, self.options.request_state_ttl),
            None => StateSigner::random(self.options.request_state_ttl)
                .map_err(|e| RegistrationError::Randomness(e.to_string()))?,
        };
        // Tasks are on when asked for, or when some tool can run as one.
        let tasks = match self.tasks {
            Some(options) => Some(options),
            None => tools
                .iter()
                .any(|t| t.tool.task_support != TaskSupport::Forbidden)
                .then(TaskOptions::default),
        };
        let caps = Capabilities {
            prompts: !self.prompts.is_empty(),
            resources: !resources.is_empty() || !self.templates.is_empty(),
            completions: self.completion.is_some(),
            logging: self.logging,
            tasks: tasks.is_some(),
            ui,
        }
        .to_json();
        let info_json = serde_json::to_value(&self.info).unwrap_or(Value::Null);
        let (events, _) = broadcast::channel(256);
        let state = Arc::new(State {
            list_policy: ListPolicy {
                page_size: self.options.page_size,
                ttl_ms: self.options.list_ttl_ms,
                server_info: info_json.clone(),
            },
            info_json,
            id: next_server_id(),
            instructions: self.instructions,
            tools: ToolRegistry::new(tools),
            prompts: RwLock::new(Arc::new(self.prompts)),
            resources: RwLock::new(Arc::new(resources)),
            templates: RwLock::new(Arc::new(self.templates)),
            completion: self.completion,
            capabilities: caps,
            events,
            signer,
            sessions: SessionStore::new(
                self.options.max_sessions,
                self.options.session_idle_timeout,
            ),
            shutdown: CancellationToken::new(),
            options: self.options,
            rate_limiter: RateLimiter::new(
                self.access.max_tracked_callers,
                self.access.idle_bucket_ttl,
            ),
            limiter: self.limiter.unwrap_or_else(|| {
                Arc::new(MemoryLimiter::new(
                    self.access.max_tracked_callers,
                    self.access.idle_bucket_ttl,
                ))
            }),
            access: self.access,
            audit: self.audit,
            approvals: self
                .approvals
                .unwrap_or_else(|| Arc::new(MemoryApprovals::default())),
            approval: self.approval,
            tasks: tasks.map(|o| {
                let backend = self
                    .task_backend
                    .unwrap_or_else(|| Arc::new(MemoryTasks::new()));
                Arc::new(TaskStore::new(backend, o))
            }),
            metrics: Arc::default(),
        });
        Ok(Server {
            engine: Engine::start(state, self.shared)?,
        })
    }
}

/// Compiles each tool (its schemas, once); a name may appear only once.
fn register(tools: Vec<Tool>) -> Result<Vec<Arc<RegisteredTool>>, RegistrationError> {
    let mut registered: Vec<Arc<RegisteredTool>> = Vec::with_capacity(tools.len());
    for tool in tools {
        if registered
            .iter()
            .any(|t| t.tool.definition.name == tool.definition.name)
        {
            return Err(RegistrationError::Duplicate(tool.definition.name));
        }
        registered.push(Arc::new(RegisteredTool::new(tool)?));
    }
    Ok(registered)
}

/// The resources with each view's appended; a view needs a `ui://` URI no
/// other resource has.
fn with_views(
    mut resources: Vec<Resource>,
    views: Vec<View>,
) -> Result<Vec<Resource>, RegistrationError> {
    for view in views {
        if !view.has_valid_uri() || resources.iter().any(|r| r.definition.uri == view.uri()) {
            return Err(RegistrationError::InvalidView(view.uri().to_owned()));
        }
        resources.push(view.into_resource());
    }
    Ok(resources)
}

/// What the server declares in `capabilities`, from what it was built
/// with. Tools are always declared, since the tool set can change.
struct Capabilities {
    prompts: bool,
    resources: bool,
    completions: bool,
    logging: bool,
    tasks: bool,
    /// MCP Apps views are served.
    ui: bool,
}

impl Capabilities {
    fn to_json(&self) -> Map<String, Value> {
        let mut caps = Map::new();
        caps.insert("tools".into(), json!({ "listChanged": true }));
        if self.prompts {
            caps.insert("prompts".into(), json!({ "listChanged": true }));
        }
        if self.resources {
            caps.insert(
                "resources".into(),
                json!({ "subscribe": true, "listChanged": true }),
            );
        }
        if self.completions {
            caps.insert("completions".into(), json!({}));
        }
        if self.logging {
            caps.insert("logging".into(), json!({}));
        }
        let mut extensions = Map::new();
        if self.tasks {
            extensions.insert(crate::tasks::EXTENSION_ID.into(), json!({}));
        }
        if self.ui {
            extensions.insert(crate::view::EXTENSION_ID.into(), json!({}));
        }
        if !extensions.is_empty() {
            caps.insert("extensions".into(), Value::Object(extensions));
        }
        caps
    }
}

/// A number no other server built in this process has (see
/// [`State::id`]).
fn next_server_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A running MCP server. Cheap to clone; share it between transports.
#[derive(Clone)]
pub struct Server {
    engine: Arc<Engine>,
}

impl Server {
    /// Starts building a server with this name and version.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            tools: Vec::new(),
            prompts: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            views: Vec::new(),
            completion: None,
            logging: false,
            state_key: None,
            options: ServerOptions::default(),
            access: AccessOptions::default(),
            audit: None,
            approvals: None,
            approval: ApprovalOptions::default(),
            tasks: None,
            shared: None,
            task_backend: None,
            limiter: None,
        }
    }

    /// The options in force.
    pub fn options(&self) -> &ServerOptions {
        &self.state().options
    }

    /// Adds a tool at runtime and notifies subscribed clients.
    pub fn add_tool(&self, tool: Tool) -> Result<(), RegistrationError> {
        self.state().add_tool(tool)
    }

    /// Removes a tool at runtime; `false` if there was none by that name.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.state().remove_tool(name)
    }

    /// Replaces the whole tool set at once (every tool validated and
    /// compiled first; on error nothing changes) and announces
    /// `list_changed` once to this process's listeners.
    ///
    /// Calls already running keep the tool they started with; new calls
    /// see only the new set (a removed tool is an unknown tool).
    ///
    /// The announcement is local on purpose: the caller is typically a
    /// watcher that every replica runs on a shared catalogue, so each
    /// replica announces its own swap.
    pub fn replace_tools(&self, tools: Vec<Tool>) -> Result<(), RegistrationError> {
        self.state().replace_tools(tools)
    }

    /// The names of the tools currently served, in listing order.
    pub fn tool_names(&self) -> Vec<String> {
        self.state().tool_names()
    }

    /// Adds a prompt at runtime and notifies subscribed clients.
    pub fn add_prompt(&self, prompt: Prompt) {
        self.state().add_prompt(prompt);
    }

    /// Removes a prompt at runtime.
    pub fn remove_prompt(&self, name: &str) {
        self.state().remove_prompt(name);
    }

    /// Tells subscribers that a resource's contents changed.
    pub fn resource_updated(&self, uri: impl Into<String>) {
        self.notify(ServerEvent::ResourceUpdated(uri.into()));
    }

    /// Publishes an event to every open subscription, on every replica
    /// when the server is replicated (see [`ServerBuilder::shared`]).
    pub fn notify(&self, event: ServerEvent) {
        self.engine.notify(event);
    }

    /// Publishes an event to this replica's subscriptions only: for
    /// changes every replica makes itself (the tool set, prompts).
    pub fn notify_local(&self, event: ServerEvent) {
        self.state().notify_local(event);
    }

    /// Subscribes to server events (for transports' standalone streams).
    pub fn events(&self) -> broadcast::Receiver<ServerEvent> {
        self.state().events.subscribe()
    }

    /// The `x-mcp-header` parameters of a tool, for HTTP header checks.
    pub fn tool_header_params(&self, name: &str) -> Option<Vec<HeaderParam>> {
        let tools = self.state().tool_set();
        tools.get(name).map(|t| t.header_params.clone())
    }

    /// Looks up a legacy session this process holds (a replicated
    /// server may serve others too: see [`Server::find_session`]).
    pub fn session(&self, id: &str) -> Option<Arc<Session>> {
        self.state().sessions.get(id)
    }

    /// Looks up a legacy session: this replica's copy, or (replicated)
    /// the shared record, loaded into a local copy. `Ok(None)` for an
    /// unknown or expired id; an error if the shared store fails.
    pub async fn find_session(&self, id: &str) -> Result<Option<Arc<Session>>, ProtocolError> {
        self.engine.find_session(id).await
    }

    /// Ends a legacy session (on every replica when replicated); `false`
    /// if it did not exist.
    pub async fn end_session(&self, id: &str) -> Result<bool, ProtocolError> {
        self.engine.end_session(id).await
    }

    /// Takes one message from a transport: checks its size and nesting,
    /// parses it, decides its wire and version, applies notifications,
    /// responses and `initialize` at once (so a later message always sees
    /// their effect), and returns requests ready to run. Never fails: bad
    /// input becomes an error [`Answer`](crate::engine::Answer).
    pub async fn accept(&self, bytes: &[u8], origin: Origin<'_>) -> Accepted {
        self.engine.accept(bytes, origin).await
    }

    /// Handles one request. Never fails: protocol errors become error
    /// responses with the request's id. Each request is counted (see
    /// [`crate::observe`]) and, when spans are on, traced.
    pub async fn handle(&self, inbound: Inbound) -> Reply {
        self.engine.dispatch.handle(inbound, None).await
    }

    /// A stream transport's connection (stdio, HTTP+SSE, the in-memory
    /// client) whose outgoing lines go to `out`.
    pub fn connection(
        &self,
        out: mpsc::Sender<String>,
        extensions: Arc<http::Extensions>,
        limits: MessageLimits,
    ) -> Arc<Connection> {
        Connection::new(Arc::clone(&self.engine), out, extensions, limits)
    }

    /// Forwards server events to a legacy session as unsolicited
    /// notifications (legacy revisions have no subscription step): list
    /// changes always, resource updates only for URIs the session
    /// subscribed to. Runs until the session ends, `stop` fires or `out`
    /// closes. Both transports use it: HTTP for the session's GET stream,
    /// stdio for the process's session.
    pub fn forward_to_session(
        &self,
        session: Arc<Session>,
        out: mpsc::Sender<String>,
        stop: CancellationToken,
    ) {
        self.engine.dispatch.forward_to_session(session, out, stop);
    }

    /// The server's counters (add application series with
    /// [`Metrics::add_collector`]).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.state().metrics
    }

    /// Every series in the Prometheus text format.
    pub fn render_metrics(&self) -> String {
        self.state().render_metrics()
    }

    /// Begins shutdown: open subscriptions end with their final response.
    pub fn shutdown(&self) {
        let state = self.state();
        state.shutdown.cancel();
        state.sessions.close_all();
    }

    /// Fires when shutdown begins.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.state().shutdown.clone()
    }

    fn state(&self) -> &State {
        &self.engine.state
    }
}
