//! Prompts: named message templates a client can list and render.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::model::{PromptArgument, PromptMessage};
use serde_json::{Map, Value};

use crate::context::RequestContext;
use crate::tool::InputRequired;

/// A rendered prompt, or a request for client input first.
#[derive(Clone, Debug)]
pub enum PromptOutcome {
    /// The messages.
    Complete {
        /// Optional description of the rendering.
        description: Option<String>,
        /// The messages.
        messages: Vec<PromptMessage>,
    },
    /// Input is needed (modern wire only; legacy sessions get it bridged).
    InputRequired(InputRequired),
}

/// The future a prompt handler returns.
pub type PromptFuture = Pin<Box<dyn Future<Output = Result<PromptOutcome, ProtocolError>> + Send>>;

type PromptFn = dyn Fn(RequestContext, Map<String, Value>) -> PromptFuture + Send + Sync;

/// A prompt and its renderer.
#[derive(Clone)]
pub struct Prompt {
    pub(crate) definition: mcpwire_protocol::model::Prompt,
    pub(crate) render: Arc<PromptFn>,
}

impl Prompt {
    /// A prompt whose handler renders messages from string arguments.
    /// Required arguments are checked by the engine before the handler runs.
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        arguments: Vec<PromptArgument>,
        render: F,
    ) -> Self
    where
        F: Fn(RequestContext, Map<String, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<PromptOutcome, ProtocolError>> + Send + 'static,
    {
        Self {
            definition: mcpwire_protocol::model::Prompt {
                name: name.into(),
                title: None,
                description: Some(description.into()),
                arguments,
            },
            render: Arc::new(move |ctx, args| Box::pin(render(ctx, args))),
        }
    }

    /// The definition `prompts/list` publishes.
    pub fn definition(&self) -> &mcpwire_protocol::model::Prompt {
        &self.definition
    }
}

/// A required argument.
pub fn required_argument(name: &str, description: &str) -> PromptArgument {
    PromptArgument {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        required: Some(true),
    }
}
