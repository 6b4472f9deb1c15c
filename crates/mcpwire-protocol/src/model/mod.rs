//! The MCP data model, as of the newest revision. Older revisions get a
//! down-converted copy (see [`crate::shape`]).

mod content;
mod implementation;
mod input;
mod logging;
mod prompt;
mod resource;
mod tool;

pub use content::{Annotations, Content, ResourceContents};
pub use implementation::{Icon, Implementation};
pub use input::{InputRequest, InputRequests};
pub use logging::LogLevel;
pub use prompt::{Prompt, PromptArgument, PromptMessage, Role};
pub use resource::{Resource, ResourceTemplate};
pub use tool::{ToolAnnotations, ToolDefinition};
