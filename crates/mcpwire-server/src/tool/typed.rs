//! The handler methods of [`ToolBuilder`]: typed handlers (input only,
//! with the request context, with shared state) and the raw handler.
//!
//! Every typed form ends in [`ToolBuilder::typed`], which derives the
//! schemas and wraps the function into a [`ToolHandler`](super::ToolHandler);
//! the forms only differ in which arguments they pass along.

use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{Tool, ToolBuilder, ToolError, ToolOutcome, ToolOutput, schema_object};
use crate::context::RequestContext;

/// What a typed handler returns: its output, or why there is none.
/// Lets handlers be written without naming the error type:
/// `async fn find(input: Find) -> ToolResult<Found>`.
pub type ToolResult<T> = Result<T, ToolError>;

/// The state a [`ToolBuilder`] carries after
/// [`state`](ToolBuilder::state); handlers receive a clone of it per call.
#[derive(Clone, Debug)]
pub struct WithState<T>(T);

impl ToolBuilder {
    /// Shares `state` with the handler, which receives it as its first
    /// argument: `.state(pool).handler(|pool, input: Find| …)`. The library
    /// clones it for each call (as axum does with `State`), so give a cheap
    /// handle: a pool, an `Arc`, a client.
    pub fn state<T>(self, state: T) -> ToolBuilder<WithState<T>>
    where
        T: Clone + Send + Sync + 'static,
    {
        self.replace_state(WithState(state)).0
    }

    /// Finishes with a typed handler that needs only its input: the input
    /// schema comes from `I`, the output schema from `O`, and the output is
    /// returned as `structuredContent` plus the same JSON as a text block.
    pub fn handler<I, O, F, Fut>(self, f: F) -> Tool
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: ToolOutput,
        F: Fn(I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult<O>> + Send + 'static,
    {
        self.typed(move |_ctx, input| f(input))
    }

    /// Like [`handler`](Self::handler), for handlers that also use the
    /// request: progress, log messages, cancellation, input answers, the
    /// principal.
    pub fn handler_with_context<I, O, F, Fut>(self, f: F) -> Tool
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: ToolOutput,
        F: Fn(RequestContext, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult<O>> + Send + 'static,
    {
        self.typed(f)
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
}

impl<T: Clone + Send + Sync + 'static> ToolBuilder<WithState<T>> {
    /// Finishes with a typed handler that gets the shared state and its
    /// input; see [`ToolBuilder::handler`].
    pub fn handler<I, O, F, Fut>(self, f: F) -> Tool
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: ToolOutput,
        F: Fn(T, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult<O>> + Send + 'static,
    {
        let (builder, WithState(state)) = self.replace_state(());
        builder.typed(move |_ctx, input| f(state.clone(), input))
    }

    /// Finishes with a typed handler that gets the shared state, the
    /// request context and its input.
    pub fn handler_with_context<I, O, F, Fut>(self, f: F) -> Tool
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: ToolOutput,
        F: Fn(T, RequestContext, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult<O>> + Send + 'static,
    {
        let (builder, WithState(state)) = self.replace_state(());
        builder.typed(move |ctx, input| f(state.clone(), ctx, input))
    }
}

impl<S> ToolBuilder<S> {
    /// The common end of every typed form: schemas from `I` and `O` (unless
    /// overridden), arguments deserialized into `I`, the output serialized
    /// into a structured result.
    fn typed<I, O, F, Fut>(mut self, f: F) -> Tool
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: ToolOutput,
        F: Fn(RequestContext, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult<O>> + Send + 'static,
    {
        let input = self
            .input_schema
            .take()
            .unwrap_or_else(|| schema_object(schemars::schema_for!(I).to_value()));
        let output_from_type = self.output_schema.is_none() || self.output_schema_of_type;
        let output = self
            .output_schema
            .take()
            .unwrap_or_else(|| schema_object(O::output_schema()));
        self.definition.input_schema = input;
        self.definition.output_schema = Some(output);
        let f = Arc::new(f);
        let handler = move |ctx: RequestContext, args: Map<String, Value>| {
            let f = Arc::clone(&f);
            async move {
                // Arguments were validated against the schema; this only
                // fails where serde is stricter than the schema.
                let input: I = serde_json::from_value(Value::Object(args))
                    .map_err(|e| ToolError::execution(format!("Invalid arguments: {e}.")))?;
                let output = f(ctx, input).await?;
                Ok(ToolOutcome::Complete(output.into_result()?))
            }
        };
        let mut tool = self.finish(Arc::new(handler));
        tool.output_from_type = output_from_type;
        tool
    }
}
