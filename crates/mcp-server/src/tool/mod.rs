//! Tools: how a Rust function becomes an MCP tool.
//!
//! ```
//! use mcp_server::{RequestContext, Tool, ToolError};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Greet { name: String }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Greeting { text: String }
//!
//! let tool = Tool::builder("greet")
//!     .description("Greets someone by name.")
//!     .handler(|_ctx: RequestContext, input: Greet| async move {
//!         Ok::<_, ToolError>(Greeting { text: format!("Hello, {}!", input.name) })
//!     });
//! assert_eq!(tool.definition().name, "greet");
//! ```

mod outcome;
pub(crate) mod schema;
mod simplify;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_protocol::model::{Icon, ToolAnnotations, ToolDefinition};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

pub use outcome::{CallToolResult, InputRequired, ToolError, ToolOutcome};
pub use schema::SUPPORTED_DIALECTS;

use crate::access::{ArgumentScopes, RateLimit, ToolPolicy, unrequire_fields};
use crate::context::RequestContext;
use crate::tasks::TaskSupport;

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
    /// Whether it can run as a task (tasks extension).
    pub(crate) task_support: TaskSupport,
    /// The handler decides when the task starts.
    pub(crate) defer_task: bool,
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
        ToolBuilder {
            definition: ToolDefinition {
                name: name.into(),
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
            policy: ToolPolicy::default(),
            task_support: TaskSupport::Forbidden,
            defer_task: false,
        }
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
}

/// Describes a tool; finish with [`handler`](Self::handler) (typed) or
/// [`raw_handler`](Self::raw_handler).
pub struct ToolBuilder {
    definition: ToolDefinition,
    input_schema: Option<Map<String, Value>>,
    output_schema: Option<Map<String, Value>>,
    policy: ToolPolicy,
    task_support: TaskSupport,
    defer_task: bool,
}

impl ToolBuilder {
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

    /// Overrides the input schema (otherwise derived from the input type,
    /// or `{"type":"object"}` for raw handlers).
    ///
    /// Non-standard `format`s are removed, as for derived schemas.
    pub fn input_schema(mut self, mut schema: Value) -> Self {
        simplify::standard_formats_only(&mut schema);
        self.input_schema = schema.as_object().cloned();
        self
    }

    /// Overrides the output schema (otherwise derived from the output type).
    ///
    /// Non-standard `format`s are removed, as for derived schemas.
    pub fn output_schema(mut self, mut schema: Value) -> Self {
        simplify::standard_formats_only(&mut schema);
        self.output_schema = schema.as_object().cloned();
        self
    }

    /// Requires one of these scopes to list and call the tool (enforced
    /// when the server enforces scopes).
    pub fn required_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
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
    pub fn argument_scopes<I, S>(
        mut self,
        argument: impl Into<String>,
        value: Value,
        all_of: I,
    ) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
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

    /// Finishes with a typed handler: the input schema comes from `I`, the
    /// output schema from `O`, and the output is returned as
    /// `structuredContent` plus the same JSON as a text block.
    pub fn handler<I, O, F, Fut>(mut self, f: F) -> Tool
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + 'static,
        F: Fn(RequestContext, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let input = self
            .input_schema
            .take()
            .unwrap_or_else(|| schema_object(schemars::schema_for!(I).to_value()));
        let output = self
            .output_schema
            .take()
            .unwrap_or_else(|| schema_object(schemars::schema_for!(O).to_value()));
        self.definition.input_schema = input;
        self.definition.output_schema = Some(output);
        let f = Arc::new(f);
        let handler = move |ctx: RequestContext, args: Map<String, Value>| {
            let f = Arc::clone(&f);
            async move {
                let input: I = serde_json::from_value(Value::Object(args))
                    .map_err(|e| ToolError::execution(format!("Invalid arguments: {e}.")))?;
                let output = f(ctx, input).await?;
                let value = serde_json::to_value(output).map_err(ToolError::internal)?;
                Ok(ToolOutcome::Complete(CallToolResult::structured(value)))
            }
        };
        self.finish(Arc::new(handler))
    }

    /// Finishes with a raw handler that sees the argument object and builds
    /// the result itself (content blocks, multi round-trip input…).
    pub fn raw_handler<F, Fut>(mut self, f: F) -> Tool
    where
        F: Fn(RequestContext, Map<String, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutcome, ToolError>> + Send + 'static,
    {
        self.definition.input_schema = self
            .input_schema
            .take()
            .unwrap_or_else(|| schema_object(json!({ "type": "object" })));
        self.definition.output_schema = self.output_schema.take();
        self.finish(Arc::new(f))
    }

    fn finish(mut self, handler: Arc<dyn ToolHandler>) -> Tool {
        if let Some(schema) = self.definition.output_schema.as_mut() {
            for (pointer, _) in &self.policy.field_scopes {
                unrequire_fields(schema, pointer);
            }
        }
        Tool {
            definition: self.definition,
            handler,
            policy: self.policy,
            task_support: self.task_support,
            defer_task: self.defer_task,
        }
    }
}

/// A generated schema as an object, without the root `title` (the tool has
/// its own name and title).
fn schema_object(schema: Value) -> Map<String, Value> {
    let mut m = schema.as_object().cloned().unwrap_or_default();
    m.remove("title");
    simplify::simplify(m)
}
