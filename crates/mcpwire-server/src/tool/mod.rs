//! Tools: how a Rust function becomes an MCP tool.
//!
//! A typed tool is a builder plus an async function from its input to its
//! output; schemas come from the types (`schemars`), and the output is
//! returned as `structuredContent` with the same JSON as a text block.
//!
//! ```
//! use mcpwire_server::{Tool, ToolError, ToolResult};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Greet { name: String }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Greeting { text: String }
//!
//! async fn greet(input: Greet) -> ToolResult<Greeting> {
//!     if input.name.is_empty() {
//!         return Err(ToolError::execution("Give a name."));
//!     }
//!     Ok(Greeting { text: format!("Hello, {}!", input.name) })
//! }
//!
//! let tool = Tool::builder("greet").description("Greets someone by name.").handler(greet);
//! assert_eq!(tool.definition().name, "greet");
//! ```
//!
//! The handler forms, all on [`ToolBuilder`]:
//!
//! | the handler needs | write |
//! |---|---|
//! | only its input | `.handler(\|input: I\| …)` |
//! | the request too (progress, logs, cancellation, input answers) | `.handler_with_context(\|ctx, input: I\| …)` |
//! | shared state (a pool, a client) | `.state(pool).handler(\|pool, input: I\| …)` |
//! | both | `.state(pool).handler_with_context(\|pool, ctx, input: I\| …)` |
//! | raw JSON in and a [`ToolOutcome`] out (multi round-trip) | `.raw_handler(\|ctx, args\| …)` |
//!
//! State is cloned for each call by the library, as axum does with its
//! `State`: give it a cheap handle (an `Arc`, a pool).

mod outcome;
mod output;
mod portable;
pub(crate) mod schema;
mod simplify;
mod typed;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use mcpwire_protocol::model::{Icon, ToolAnnotations, ToolDefinition};
use serde_json::{Map, Value};

pub use outcome::{CallToolResult, InputRequired, ToolError, ToolOutcome};
pub use output::{SharedOutput, ToolOutput};
pub use schema::SUPPORTED_DIALECTS;
pub use simplify::STANDARD_FORMATS;
pub use typed::{ToolResult, WithState};

use crate::access::{
    Approval, ArgumentApproval, ArgumentScopes, RateLimit, ToolPolicy, unrequire_fields,
};
use crate::context::RequestContext;
use crate::tasks::TaskSupport;

/// The `_meta` key of MCP Apps data on a tool definition.
const UI_META: &str = "ui";

/// The boxed future a handler returns.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<ToolOutcome, ToolError>> + Send>>;

/// Runs a tool call. Arguments arrive already validated against the
/// tool's input schema.
pub trait ToolHandler: Send + Sync + 'static {
    /// Handles one call.
    fn call(&self, ctx: RequestContext, arguments: Map<String, Value>) -> ToolFuture;
}

impl<F, Fut> ToolHandler for F
where
    F: Fn(RequestContext, Map<String, Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutcome, ToolError>> + Send + 'static,
{
    fn call(&self, ctx: RequestContext, arguments: Map<String, Value>) -> ToolFuture {
        Box::pin(self(ctx, arguments))
    }
}

/// A tool: its definition and its handler. Register it on a
/// [`ServerBuilder`](crate::ServerBuilder) or a running
/// [`Server`](crate::Server).
#[derive(Clone)]
pub struct Tool {
    pub(crate) definition: ToolDefinition,
    pub(crate) handler: Arc<dyn ToolHandler>,
    /// Who may call it and what they see; enforced by the engine.
    pub(crate) policy: ToolPolicy,
    /// Words for the approval question (see `ToolBuilder::approval_summary`).
    pub(crate) summary: Option<Arc<SummaryFn>>,
    /// Whether it can run as a task (tasks extension).
    pub(crate) task_support: TaskSupport,
    /// The handler decides when the task starts.
    pub(crate) defer_task: bool,
    /// A task starts only if the handler is still running after this long.
    pub(crate) task_grace: Option<Duration>,
    /// The output schema was derived from the typed handler's output type,
    /// so serde cannot produce output it rejects: release builds skip the
    /// runtime check (debug builds keep it).
    pub(crate) output_from_type: bool,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.definition.name)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// Starts describing a tool.
    pub fn builder(name: impl Into<String>) -> ToolBuilder {
        ToolBuilder::new(name.into())
    }

    /// The definition `tools/list` publishes.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The access policy declared for this tool.
    pub fn policy(&self) -> &ToolPolicy {
        &self.policy
    }

    /// Whether it can run as a task.
    pub fn task_support(&self) -> TaskSupport {
        self.task_support
    }

    /// The `ui://` view an MCP Apps host renders for its results, if any
    /// (see [`ToolBuilder::view`]).
    pub fn view_uri(&self) -> Option<&str> {
        self.ui_meta()?.get("resourceUri")?.as_str()
    }

    /// Whether only a view may call it (`_meta.ui.visibility` is `["app"]`):
    /// such a tool is listed only to clients that declare MCP Apps.
    pub fn app_only(&self) -> bool {
        self.ui_meta()
            .and_then(|ui| ui.get("visibility"))
            .and_then(Value::as_array)
            .is_some_and(|v| !v.iter().any(|x| x == "model"))
    }

    fn ui_meta(&self) -> Option<&Map<String, Value>> {
        self.definition.meta.as_ref()?.get(UI_META)?.as_object()
    }

    /// The same tool with one approval level for every call, given under
    /// policy `version` (a runtime catalogue's override: it replaces the
    /// declared argument rules; a self exemption stays).
    #[must_use]
    pub fn with_approval(mut self, approval: Approval, version: u64) -> Self {
        self.policy.approval.base = approval;
        self.policy.approval.arguments.clear();
        self.policy.approval.version = version;
        self
    }

    /// The same tool with its declared approval rules, under policy
    /// `version` (so answers given under an older policy are void).
    #[must_use]
    pub fn with_approval_version(mut self, version: u64) -> Self {
        self.policy.approval.version = version;
        self
    }
}

/// Describes a tool; finish with one of the handler methods (see the
/// [module docs](self)). `S` is the shared state given with
/// [`state`](ToolBuilder::state), `()` until then.
pub struct ToolBuilder<S = ()> {
    definition: ToolDefinition,
    input_schema: Option<Map<String, Value>>,
    output_schema: Option<Map<String, Value>>,
    /// The output schema, though given, holds for every value of the
    /// output type (see [`ToolBuilder::output_schema_of_type`]).
    output_schema_of_type: bool,
    policy: ToolPolicy,
    summary: Option<Arc<SummaryFn>>,
    task_support: TaskSupport,
    defer_task: bool,
    task_grace: Option<Duration>,
    state: S,
}

/// What an approval summary returns.
pub(crate) type SummaryFuture = Pin<Box<dyn Future<Output = Option<String>> + Send>>;

/// Says in words what a call will do (see `ToolBuilder::approval_summary`).
pub(crate) type SummaryFn =
    dyn Fn(RequestContext, Map<String, Value>) -> SummaryFuture + Send + Sync;

impl ToolBuilder {
    fn new(name: String) -> Self {
        ToolBuilder {
            definition: ToolDefinition {
                name,
                title: None,
                description: None,
                input_schema: Map::new(),
                output_schema: None,
                annotations: None,
                icons: None,
                meta: None,
            },
            input_schema: None,
            output_schema: None,
            output_schema_of_type: false,
            policy: ToolPolicy::default(),
            summary: None,
            task_support: TaskSupport::Forbidden,
            defer_task: false,
            task_grace: None,
            state: (),
        }
    }
}

impl<S> ToolBuilder<S> {
    /// The same description carrying `state`, and the state it had.
    fn replace_state<T>(self, state: T) -> (ToolBuilder<T>, S) {
        let builder = ToolBuilder {
            definition: self.definition,
            input_schema: self.input_schema,
            output_schema: self.output_schema,
            output_schema_of_type: self.output_schema_of_type,
            policy: self.policy,
            summary: self.summary,
            task_support: self.task_support,
            defer_task: self.defer_task,
            task_grace: self.task_grace,
            state,
        };
        (builder, self.state)
    }

    /// A display name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.definition.title = Some(title.into());
        self
    }

    /// What the tool does and when to use it, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.definition.description = Some(description.into());
        self
    }

    /// Behaviour hints.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.definition.annotations = Some(annotations);
        self
    }

    /// Icons.
    pub fn icons(mut self, icons: Vec<Icon>) -> Self {
        self.definition.icons = Some(icons);
        self
    }

    /// Links an MCP Apps view (a `ui://` resource registered with
    /// [`ServerBuilder::view`](crate::ServerBuilder::view)): hosts that
    /// render views show it with the tool's input and result. The result
    /// itself is unchanged, so other clients see the same answer.
    pub fn view(mut self, uri: impl Into<String>) -> Self {
        self.ui_entry()
            .insert("resourceUri".into(), Value::from(uri.into()));
        self
    }

    /// Makes the tool callable only by views (`_meta.ui.visibility:
    /// ["app"]`): it is left out of `tools/list` for clients that do not
    /// declare MCP Apps (their model must not see it), yet still callable.
    pub fn visibility_app_only(mut self) -> Self {
        self.ui_entry()
            .insert("visibility".into(), serde_json::json!(["app"]));
        self
    }

    /// `_meta.ui` of the definition, created empty when missing.
    fn ui_entry(&mut self) -> &mut Map<String, Value> {
        let meta = self.definition.meta.get_or_insert_with(Map::new);
        let ui = meta
            .entry(UI_META)
            .or_insert_with(|| Value::Object(Map::new()));
        if !ui.is_object() {
            *ui = Value::Object(Map::new());
        }
        match ui {
            Value::Object(m) => m,
            _ => unreachable!("made an object above"),
        }
    }

    /// Overrides the input schema (otherwise derived from the input type,
    /// or `{"type":"object"}` for raw handlers).
    ///
    /// Non-standard `format`s are removed and type arrays become `anyOf`,
    /// as for derived schemas.
    pub fn input_schema(mut self, mut schema: Value) -> Self {
        simplify::standard_formats_only(&mut schema);
        portable::single_types(&mut schema);
        self.input_schema = schema.as_object().cloned();
        self
    }

    /// Overrides the output schema (otherwise derived from the output type).
    ///
    /// Non-standard `format`s are removed and type arrays become `anyOf`,
    /// as for derived schemas.
    pub fn output_schema(mut self, mut schema: Value) -> Self {
        simplify::standard_formats_only(&mut schema);
        portable::single_types(&mut schema);
        self.output_schema = schema.as_object().cloned();
        self.output_schema_of_type = false;
        self
    }

    /// Like [`output_schema`](Self::output_schema), for a schema every value
    /// of the typed handler's output type satisfies: its derived schema,
    /// adjusted (an explicit object root, a reworded description). As with
    /// a derived schema, release builds then trust each output instead of
    /// validating it; debug builds (and tests) still check every output, so
    /// a schema stricter than the type fails there, not in production.
    pub fn output_schema_of_type(self, schema: Value) -> Self {
        let mut builder = self.output_schema(schema);
        builder.output_schema_of_type = true;
        builder
    }

    /// Requires one of these scopes to list and call the tool (enforced
    /// when the server enforces scopes).
    pub fn required_scopes<I, N>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
    {
        self.policy.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Lets a caller without the scopes call the tool about themselves:
    /// when `argument` equals the principal's `self_id`.
    pub fn self_access(mut self, argument: impl Into<String>) -> Self {
        self.policy.self_argument = Some(argument.into());
        self
    }

    /// Removes the output field at `pointer` (`/email`, `/members/*/phone`)
    /// unless the caller holds `scope`. The field becomes optional in the
    /// published output schema.
    pub fn field_scope(mut self, pointer: impl Into<String>, scope: impl Into<String>) -> Self {
        self.policy
            .field_scopes
            .push((pointer.into(), scope.into()));
        self
    }

    /// Calls where `argument` equals `value` need every one of `all_of`
    /// (on top of the tool's own scopes), e.g. a report type that reveals
    /// salaries.
    pub fn argument_scopes<I, N>(
        mut self,
        argument: impl Into<String>,
        value: Value,
        all_of: I,
    ) -> Self
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
    {
        self.policy.argument_scopes.push(ArgumentScopes {
            argument: argument.into(),
            value,
            all_of: all_of.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Keeps this argument's value out of the audit trail.
    pub fn redact_argument(mut self, name: impl Into<String>) -> Self {
        self.policy.redacted_arguments.push(name.into());
        self
    }

    /// Overrides the server's default rate limit for this tool.
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.policy.rate_limit = Some(limit);
        self
    }

    /// Who must say yes before every call runs: the user in their client
    /// ([`Approval::Confirm`]) or an operator ([`Approval::Operator`]).
    /// The engine enforces it (see [`crate::access::ApprovalStore`]).
    pub fn approval(mut self, approval: Approval) -> Self {
        self.policy.approval.base = approval;
        self
    }

    /// Calls where `argument` equals `value` need (at least) `approval`.
    pub fn argument_approval(
        mut self,
        argument: impl Into<String>,
        value: Value,
        approval: Approval,
    ) -> Self {
        self.policy.approval.arguments.push(ArgumentApproval {
            argument: argument.into(),
            value,
            approval,
        });
        self
    }

    /// Calls about the caller's own record (see
    /// [`self_access`](Self::self_access)) need no approval.
    pub fn approval_exempts_self(mut self) -> Self {
        self.policy.approval.exempt_self = true;
        self
    }

    /// Says in words what a call will do, for the question the user or the
    /// operator is asked (e.g. with the names the ids stand for). Without
    /// it the question lists the arguments.
    pub fn approval_summary<F, Fut>(mut self, summary: F) -> Self
    where
        F: Fn(RequestContext, Map<String, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<String>> + Send + 'static,
    {
        self.summary = Some(Arc::new(move |ctx, args| Box::pin(summary(ctx, args))));
        self
    }

    /// Lets the tool run as a task (tasks extension, see [`crate::tasks`]):
    /// `Optional` runs it as a task when the request declares the extension
    /// and synchronously otherwise; `Required` refuses requests without the
    /// extension (-32021). A server given such a tool advertises the extension.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = support;
        self
    }

    /// Lets the handler decide when the task starts: it runs synchronously
    /// (finishing at once or asking for input with `input_required` rounds)
    /// until it calls [`RequestContext::start_task`]. Without this, a task
    /// call starts as a task before the handler runs.
    pub fn defer_task_creation(mut self) -> Self {
        self.defer_task = true;
        self
    }

    /// Answers a task call directly when the handler finishes within
    /// `grace`, and makes it a task only if it is still running then (the
    /// handler keeps running; the client polls for its outcome). For tools
    /// that are usually quick but may be slow: a client never waits a poll
    /// interval for work that was done in milliseconds. Implies
    /// [`defer_task_creation`](Self::defer_task_creation).
    pub fn task_after(mut self, grace: Duration) -> Self {
        self.defer_task = true;
        self.task_grace = Some(grace);
        self
    }

    pub(super) fn finish(mut self, handler: Arc<dyn ToolHandler>) -> Tool {
        if let Some(schema) = self.definition.output_schema.as_mut() {
            for (pointer, _) in &self.policy.field_scopes {
                unrequire_fields(schema, pointer);
            }
        }
        Tool {
            definition: self.definition,
            handler,
            policy: self.policy,
            summary: self.summary,
            task_support: self.task_support,
            defer_task: self.defer_task,
            task_grace: self.task_grace,
            output_from_type: false,
        }
    }
}

/// A generated schema as an object, without the root `title` (the tool has
/// its own name and title).
pub(super) fn schema_object(schema: Value) -> Map<String, Value> {
    let mut m = schema.as_object().cloned().unwrap_or_default();
    m.remove("title");
    simplify::simplify(m)
}
