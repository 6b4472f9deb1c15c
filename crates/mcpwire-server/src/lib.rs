//! Build Model Context Protocol tool servers.
//!
//! # Quick start
//!
//! A tool is a builder plus an async function from its input to its
//! output; the schemas come from the types.
//!
//! ```
//! use mcpwire_server::{Server, Tool, ToolError, ToolResult};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Greeting {
//!     text: String,
//! }
//!
//! async fn greet(input: Greet) -> ToolResult<Greeting> {
//!     if input.name.is_empty() {
//!         return Err(ToolError::execution("Give a non-empty name."));
//!     }
//!     Ok(Greeting { text: format!("Hello, {}!", input.name) })
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder("greeter", "1.0.0")
//!     .tool(Tool::builder("greet").description("Greets someone.").handler(greet))
//!     .build()?;
//!
//! // Serve it: `transport::stdio::serve_stdio(server, Default::default())`,
//! // or `transport::http::router(server, Default::default())` in axum.
//! // Or test it in memory (feature `client`):
//! # #[cfg(feature = "client")] {
//! let client = mcpwire_server::client::Client::connect(server).await?;
//! let reply = client.call_tool("greet", serde_json::json!({ "name": "Ada" })).await?;
//! assert_eq!(reply.text(), r#"{"text":"Hello, Ada!"}"#);
//! # }
//! # Ok(()) }
//! ```
//!
//! Shared state is given once: `.state(pool).handler(|pool, input: Find| …)`;
//! see [`tool`] for every handler form.
//!
//! # Modules
//!
//! - [`tool`], [`prompt`], [`resource`]: what a server exposes.
//! - [`Server`]: registries and options; [`Server::handle`] turns one
//!   request ([`Inbound`]) into one [`Reply`] for either [`Wire`]
//!   (stateless 2026-07-28, or the legacy `initialize` revisions, whose
//!   [`Session`]s the engine keeps).
//! - [`engine`]: the front door every transport uses: one message's
//!   bytes in, what to send out.
//! - [`transport`]: Streamable HTTP (axum) and the 2024-11-05 HTTP+SSE
//!   transport (feature `http`, OAuth with `auth`), stdio (feature `stdio`).
//! - `client` (feature `client`): an in-memory client for tests; with
//!   `client-http`, the same client over Streamable HTTP to a URL.
//! - [`access`]: scopes, rate limits, redaction and the audit trail.
//! - [`tasks`]: the tasks extension and its [`tasks::TaskBackend`].
//! - [`shared`]: what replicas behind a load balancer share (session
//!   records, an event bus); implemented outside this crate by databases.
//! - [`observe`]: Prometheus metrics, request spans, readiness.
//!
//! Inside, the modules stand on floors (transports and client → the
//! `Server` facade → engine → dispatch → core state → tools, access,
//! tasks, observe → sessions, events): each imports only modules below
//! it. `docs/architecture.md` in the repository draws the order.
//!
//! # Features
//!
//! | feature | adds | default |
//! |---|---|---|
//! | `stdio` | `transport::stdio` | yes |
//! | `http` | `transport::http` (axum, hyper) | yes |
//! | `auth` | `transport::http::auth`, OAuth resource server (jsonwebtoken, reqwest); implies `http` | no |
//! | `client` | `client`, the in-memory client | no |
//! | `client-http` | `Client::http`, the client over Streamable HTTP (hyper's client); implies `client` and `http` | no |
//!
//! Wire types and protocol rules live in the `mcpwire-protocol` crate,
//! re-exported as [`protocol`].

#![warn(missing_docs)]

pub mod access;
#[cfg(feature = "client")]
pub mod client;
mod context;
mod dispatch;
pub mod engine;
mod events;
pub mod observe;
pub mod prompt;
mod registry;
mod request_state;
pub mod resource;
pub mod server;
mod session;
pub mod shared;
mod state;
mod sync;
pub mod tasks;
pub mod tool;
pub mod transport;
pub mod view;

pub use access::{AccessOptions, AuditRecord, AuditSink, CallOutcome, Principal, RateLimit};
pub use context::RequestContext;
pub use dispatch::{Inbound, Listener, Reply, Wire};
pub use events::ServerEvent;
pub use mcpwire_protocol as protocol;
pub use prompt::{Prompt, PromptOutcome};
pub use registry::RegistrationError;
pub use resource::{Resource, ResourceTemplate};
pub use server::{Server, ServerBuilder, ServerOptions};
pub use session::Session;
pub use tasks::{TaskOptions, TaskSupport};
pub use tool::{
    CallToolResult, InputRequired, SharedOutput, Tool, ToolBuilder, ToolError, ToolOutcome,
    ToolOutput, ToolResult,
};
pub use view::View;
