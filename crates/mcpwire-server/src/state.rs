//! The core state every layer reads: the catalogue (tools, prompts,
//! resources), the options, the legacy session table, the event fan-out,
//! access control, the task store and the counters. Built once by
//! [`ServerBuilder`](crate::ServerBuilder); the layers above hold it in an
//! `Arc` and never reach past it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcpwire_protocol::ProtocolError;
use serde_json::{Map, Value};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::access::{
    AccessOptions, ApprovalOptions, ApprovalStore, AuditSink, CallLimiter, RateLimit, RateLimiter,
};
use crate::context::RequestContext;
use crate::events::ServerEvent;
use crate::observe::{Encoder, Metrics};
use crate::prompt::Prompt;
use crate::registry::{ListPolicy, RegisteredTool, RegistrationError, ToolRegistry, ToolSet};
use crate::request_state::StateSigner;
use crate::resource::{Resource, ResourceTemplate};
use crate::session::SessionStore;
use crate::tasks::TaskStore;
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

pub(crate) struct State {
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
    /// Pending approvals and spent confirmations.
    pub(crate) approvals: Arc<dyn ApprovalStore>,
    /// How approvals run.
    pub(crate) approval: ApprovalOptions,
    /// The task store, when the tasks extension is enabled.
    pub(crate) tasks: Option<Arc<TaskStore>>,
    /// Counters for `/metrics`.
    pub(crate) metrics: Arc<Metrics>,
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

impl State {
    pub(crate) fn tool_set(&self) -> Arc<ToolSet> {
        self.tools.snapshot()
    }

    pub(crate) fn prompts(&self) -> Arc<Vec<Prompt>> {
        read(&self.prompts)
    }

    pub(crate) fn resources(&self) -> Arc<Vec<Resource>> {
        read(&self.resources)
    }

    pub(crate) fn templates(&self) -> Arc<Vec<ResourceTemplate>> {
        read(&self.templates)
    }

    pub(crate) fn has_capability(&self, name: &str) -> bool {
        self.capabilities.contains_key(name)
    }

    /// Publishes an event to this replica's subscriptions only.
    pub(crate) fn notify_local(&self, event: ServerEvent) {
        let _ = self.events.send(event);
    }

    /// Adds a tool at runtime and notifies this replica's listeners
    /// (every replica applies catalogue changes itself).
    pub(crate) fn add_tool(&self, tool: Tool) -> Result<(), RegistrationError> {
        let registered = Arc::new(RegisteredTool::new(tool)?);
        self.tools.update(|tools| {
            let name = &registered.tool.definition.name;
            if tools.iter().any(|t| &t.tool.definition.name == name) {
                return Err(RegistrationError::Duplicate(name.clone()));
            }
            tools.push(registered);
            Ok(())
        })?;
        self.notify_local(ServerEvent::ToolsChanged);
        Ok(())
    }

    /// Removes a tool; `false` if there was none by that name.
    pub(crate) fn remove_tool(&self, name: &str) -> bool {
        let mut removed = false;
        let _ = self.tools.update(|tools| {
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

    /// Swaps the whole tool set (all compiled first; on error nothing
    /// changes) and announces it once, locally.
    pub(crate) fn replace_tools(&self, tools: Vec<Tool>) -> Result<(), RegistrationError> {
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
        self.tools.replace(registered);
        self.notify_local(ServerEvent::ToolsChanged);
        Ok(())
    }

    /// The names of the tools currently served, in listing order.
    pub(crate) fn tool_names(&self) -> Vec<String> {
        self.tools
            .snapshot()
            .tools
            .iter()
            .map(|t| t.tool.definition.name.clone())
            .collect()
    }

    /// Adds (or replaces) a prompt and announces it locally.
    pub(crate) fn add_prompt(&self, prompt: Prompt) {
        write(&self.prompts, |p| {
            p.retain(|x| x.definition.name != prompt.definition.name);
            p.push(prompt);
        });
        self.notify_local(ServerEvent::PromptsChanged);
    }

    /// Removes a prompt and announces it locally.
    pub(crate) fn remove_prompt(&self, name: &str) {
        write(&self.prompts, |p| p.retain(|x| x.definition.name != name));
        self.notify_local(ServerEvent::PromptsChanged);
    }

    /// Every series in the Prometheus text format.
    pub(crate) fn render_metrics(&self) -> String {
        let mut e = Encoder::default();
        let tools = self.tool_set();
        let series = tools
            .tools
            .iter()
            .map(|t| (t.tool.definition.name.as_str(), &*t.stats));
        self.metrics.render_requests(&mut e, series);
        self.metrics.render_rest(&mut e, self.sessions.len());
        e.finish()
    }
}
