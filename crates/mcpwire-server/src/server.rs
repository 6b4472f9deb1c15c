//! The server: registries, options and shared state. Transports hand it
//! requests (see [`Server::handle`]); it knows nothing about HTTP or stdio.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::headers::HeaderParam;
use mcpwire_protocol::model::Implementation;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::access::{AccessOptions, AuditSink, CallLimiter, MemoryLimiter, RateLimit, RateLimiter};
use crate::context::RequestContext;
use crate::engine::Replicas;
use crate::events::ServerEvent;
use crate::prompt::Prompt;
use crate::registry::{ListPolicy, RegisteredTool, RegistrationError, ToolRegistry, ToolSet};
use crate::request_state::StateSigner;
use crate::resource::{Resource, ResourceTemplate};
use crate::session::{Session, SessionStore};
use crate::shared::Shared;
use crate::tasks::{MemoryTasks, TaskBackend, TaskOptions, TaskStore, TaskSupport};
use crate::tool::Tool;

/// The future a completion handler returns: candidate values.
pub type CompletionFuture =
    Pin<Box<dyn Future<Output = Result<Vec<String>, ProtocolError>> + Send>>;

/// Completes an argument: `(ctx, ref, argument name, partial value)`.
pub type CompletionFn =
    dyn Fn(RequestContext, Value, String, String) -> CompletionFuture + Send + Sync;

/// Tunables with production defaults.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Items per `tools/list` (and other list) page.
    pub page_size: usize,
    /// `ttlMs` on cacheable results.
    pub list_ttl_ms: u64,
    /// How long a `requestState` stays redeemable.
    pub request_state_ttl: Duration,
    /// How long to wait for a legacy client's answer to our request.
    pub peer_request_timeout: Duration,
    /// Per-call time limit for tool handlers; `None` for no limit.
    pub call_timeout: Option<Duration>,
    /// Most legacy HTTP sessions kept at once.
    pub max_sessions: usize,
    /// Legacy sessions idle this long are dropped.
    pub session_idle_timeout: Duration,
    /// New legacy HTTP sessions per caller (token subject, else client
    /// address); `None` for no limit.
    pub initialize_rate: Option<RateLimit>,
    /// Most messages in one JSON-RPC batch (2025-03-26 sessions). Every
    /// request of a batch is answered in one body, so without a bound a
    /// body of tiny requests could ask for thousands of large results.
    pub max_batch_items: usize,
    /// Most resource URIs one legacy session (`resources/subscribe`) or
    /// one `subscriptions/listen` stream (`resourceSubscriptions`) may
    /// watch: each is kept in memory and, with replicas, in the shared
    /// session record.
    pub max_subscriptions_per_session: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            page_size: 100,
            list_ttl_ms: 300_000,
            request_state_ttl: Duration::from_secs(600),
            peer_request_timeout: Duration::from_secs(300),
            call_timeout: Some(Duration::from_secs(60)),
            max_sessions: 10_000,
            session_idle_timeout: Duration::from_secs(3600),
            initialize_rate: Some(RateLimit {
                per_minute: 600,
                burst: 120,
            }),
            max_batch_items: 64,
            max_subscriptions_per_session: 256,
        }
    }
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    completion: Option<Arc<CompletionFn>>,
    logging: bool,
    state_key: Option<[u8; 32]>,
    options: ServerOptions,
    access: AccessOptions,
    audit: Option<Arc<dyn AuditSink>>,
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
            resources: !self.resources.is_empty() || !self.templates.is_empty(),
            completions: self.completion.is_some(),
            logging: self.logging,
            tasks: tasks.is_some(),
        }
        .to_json();
        let info_json = serde_json::to_value(&self.info).unwrap_or(Value::Null);
        let (events, _) = broadcast::channel(256);
        Ok(Server {
            inner: Arc::new(ServerInner {
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
                resources: RwLock::new(Arc::new(self.resources)),
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
                tasks: tasks.map(|o| {
                    let backend = self
                        .task_backend
                        .unwrap_or_else(|| Arc::new(MemoryTasks::new()));
                    Arc::new(TaskStore::new(backend, o))
                }),
                metrics: Arc::default(),
                replicas: self.shared.map(Replicas::new).transpose()?,
            }),
        }
        .started())
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

/// What the server declares in `capabilities`, from what it was built
/// with. Tools are always declared, since the tool set can change.
struct Capabilities {
    prompts: bool,
    resources: bool,
    completions: bool,
    logging: bool,
    tasks: bool,
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
        if self.tasks {
            caps.insert(
                "extensions".into(),
                json!({ crate::tasks::EXTENSION_ID: {} }),
            );
        }
        caps
    }
}

/// A number no other server built in this process has (see
/// [`ServerInner::id`]).
fn next_server_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A running MCP server. Cheap to clone; share it between transports.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<ServerInner>,
}

pub(crate) struct ServerInner {
    /// `serverInfo` as JSON, newest shape.
    pub(crate) info_json: Value,
    /// Unique in the process: results finished for one server (which embed
    /// its `serverInfo`) are never served by another, even one built later
    /// at the same address.
    pub(crate) id: u64,
    pub(crate) instructions: Option<String>,
    pub(crate) tools: ToolRegistry,
    pub(crate) prompts: RwLock<Arc<Vec<Prompt>>>,
    pub(crate) resources: RwLock<Arc<Vec<Resource>>>,
    pub(crate) templates: RwLock<Arc<Vec<ResourceTemplate>>>,
    pub(crate) completion: Option<Arc<CompletionFn>>,
    /// Server capabilities, newest shape; fixed at build time.
    pub(crate) capabilities: Map<String, Value>,
    /// Fan-out of list changes to listen streams and legacy GET streams.
    pub(crate) events: broadcast::Sender<ServerEvent>,
    pub(crate) signer: StateSigner,
    pub(crate) sessions: SessionStore,
    /// Fires at shutdown so long-lived streams end cleanly.
    pub(crate) shutdown: CancellationToken,
    pub(crate) list_policy: ListPolicy,
    pub(crate) options: ServerOptions,
    pub(crate) access: AccessOptions,
    /// Token buckets per caller for `initialize`.
    pub(crate) rate_limiter: RateLimiter,
    /// `tools/call` rate and concurrency limits.
    pub(crate) limiter: Arc<dyn CallLimiter>,
    pub(crate) audit: Option<Arc<dyn AuditSink>>,
    /// The task store, when the tasks extension is enabled.
    pub(crate) tasks: Option<Arc<TaskStore>>,
    /// Counters for `/metrics`.
    pub(crate) metrics: Arc<crate::observe::Metrics>,
    /// Sessions and events shared with other replicas, if any.
    pub(crate) replicas: Option<Arc<Replicas>>,
}

fn read<T>(lock: &RwLock<Arc<T>>) -> Arc<T> {
    match lock.read() {
        Ok(g) => Arc::clone(&g),
        Err(p) => Arc::clone(&p.into_inner()),
    }
}

fn write<T: Clone>(lock: &RwLock<Arc<T>>, f: impl FnOnce(&mut T)) {
    let mut g = match lock.write() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let mut v = T::clone(&g);
    f(&mut v);
    *g = Arc::new(v);
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
            completion: None,
            logging: false,
            state_key: None,
            options: ServerOptions::default(),
            access: AccessOptions::default(),
            audit: None,
            tasks: None,
            shared: None,
            task_backend: None,
            limiter: None,
        }
    }

    /// The options in force.
    pub fn options(&self) -> &ServerOptions {
        &self.inner.options
    }

    /// Adds a tool at runtime and notifies subscribed clients.
    pub fn add_tool(&self, tool: Tool) -> Result<(), RegistrationError> {
        let registered = Arc::new(RegisteredTool::new(tool)?);
        self.inner.tools.update(|tools| {
            let name = &registered.tool.definition.name;
            if tools.iter().any(|t| &t.tool.definition.name == name) {
                return Err(RegistrationError::Duplicate(name.clone()));
            }
            tools.push(registered);
            Ok(())
        })?;
        // Every replica applies catalogue changes itself: local only.
        self.notify_local(ServerEvent::ToolsChanged);
        Ok(())
    }

    /// Removes a tool at runtime; `false` if there was none by that name.
    pub fn remove_tool(&self, name: &str) -> bool {
        let mut removed = false;
        let _ = self.inner.tools.update(|tools| {
            let before = tools.len();
            tools.retain(|t| t.tool.definition.name != name);
            removed = tools.len() != before;
            Ok(())
        });
        if removed {
            self.notify_local(ServerEvent::ToolsChanged);
        }
        removed
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
        let mut registered: Vec<RegisteredTool> = Vec::with_capacity(tools.len());
        for tool in tools {
            if registered
                .iter()
                .any(|t| t.tool.definition.name == tool.definition.name)
            {
                return Err(RegistrationError::Duplicate(tool.definition.name));
            }
            registered.push(RegisteredTool::new(tool)?);
        }
        self.inner.tools.replace(registered);
        self.notify_local(ServerEvent::ToolsChanged);
        Ok(())
    }

    /// The names of the tools currently served, in listing order.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner
            .tools
            .snapshot()
            .tools
            .iter()
            .map(|t| t.tool.definition.name.clone())
            .collect()
    }

    /// Adds a prompt at runtime and notifies subscribed clients.
    pub fn add_prompt(&self, prompt: Prompt) {
        write(&self.inner.prompts, |p| {
            p.retain(|x| x.definition.name != prompt.definition.name);
            p.push(prompt);
        });
        self.notify_local(ServerEvent::PromptsChanged);
    }

    /// Removes a prompt at runtime.
    pub fn remove_prompt(&self, name: &str) {
        write(&self.inner.prompts, |p| {
            p.retain(|x| x.definition.name != name)
        });
        self.notify_local(ServerEvent::PromptsChanged);
    }

    /// Tells subscribers that a resource's contents changed.
    pub fn resource_updated(&self, uri: impl Into<String>) {
        self.notify(ServerEvent::ResourceUpdated(uri.into()));
    }

    /// Publishes an event to every open subscription, on every replica
    /// when the server is replicated (see [`ServerBuilder::shared`]).
    pub fn notify(&self, event: ServerEvent) {
        if let Some(r) = &self.inner.replicas {
            r.publish_event(event.clone());
        }
        self.notify_local(event);
    }

    /// Publishes an event to this replica's subscriptions only: for
    /// changes every replica makes itself (the tool set, prompts).
    pub fn notify_local(&self, event: ServerEvent) {
        let _ = self.inner.events.send(event);
    }

    /// Subscribes to server events (for transports' standalone streams).
    pub fn events(&self) -> broadcast::Receiver<ServerEvent> {
        self.inner.events.subscribe()
    }

    /// The `x-mcp-header` parameters of a tool, for HTTP header checks.
    pub fn tool_header_params(&self, name: &str) -> Option<Vec<HeaderParam>> {
        self.inner
            .tools
            .snapshot()
            .get(name)
            .map(|t| t.header_params.clone())
    }

    /// Looks up a legacy session this process holds (a replicated
    /// server may serve others too: see [`Server::find_session`]).
    pub fn session(&self, id: &str) -> Option<Arc<Session>> {
        self.inner.sessions.get(id)
    }

    /// Begins shutdown: open subscriptions end with their final response.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
        self.inner.sessions.close_all();
    }

    /// Fires when shutdown begins.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.inner.shutdown.clone()
    }

    pub(crate) fn tool_set(&self) -> Arc<ToolSet> {
        self.inner.tools.snapshot()
    }

    pub(crate) fn prompts(&self) -> Arc<Vec<Prompt>> {
        read(&self.inner.prompts)
    }

    pub(crate) fn resources(&self) -> Arc<Vec<Resource>> {
        read(&self.inner.resources)
    }

    pub(crate) fn templates(&self) -> Arc<Vec<ResourceTemplate>> {
        read(&self.inner.templates)
    }

    pub(crate) fn has_capability(&self, name: &str) -> bool {
        self.inner.capabilities.contains_key(name)
    }
}
