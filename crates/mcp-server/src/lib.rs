//! Build Model Context Protocol tool servers.
//!
//! - [`tool`], [`prompt`], [`resource`]: what a server exposes, and the
//!   typed API for writing tools in a few lines.
//! - [`Server`]: registries and options; [`dispatch`] turns one request into
//!   one reply for either wire (stateless 2026-07-28, or the legacy
//!   `initialize` revisions).
//! - [`engine`]: the front door every transport uses: one message's
//!   bytes in, what to send out.
//! - [`transport`]: Streamable HTTP (axum), stdio and the 2024-11-05
//!   HTTP+SSE transport, all thin.
//!
//! Wire types and protocol rules live in the `mcp-protocol` crate.

#![warn(missing_docs)]

pub mod access;
#[cfg(feature = "client")]
pub mod client;
pub mod context;
pub mod dispatch;
pub mod engine;
pub mod events;
pub mod prompt;
pub mod registry;
mod request_state;
pub mod resource;
pub mod server;
pub mod session;
pub mod tasks;
pub mod tool;
pub mod transport;

pub use access::{AccessOptions, AuditRecord, AuditSink, CallOutcome, Principal, RateLimit};
pub use context::RequestContext;
pub use dispatch::{Inbound, Listener, Reply, Wire};
pub use events::ServerEvent;
pub use mcp_protocol as protocol;
pub use prompt::{Prompt, PromptOutcome};
pub use registry::RegistrationError;
pub use resource::{Resource, ResourceTemplate};
pub use server::{Server, ServerBuilder, ServerOptions};
pub use session::Session;
pub use tasks::{TaskOptions, TaskSupport};
pub use tool::{
    CallToolResult, InputRequired, Tool, ToolBuilder, ToolError, ToolOutcome, ToolResult,
};
