//! Model Context Protocol wire types and protocol rules.
//!
//! This crate holds everything about MCP that can be decided without I/O:
//! the JSON-RPC envelope, error codes, protocol revisions, the `_meta`
//! keys, the data model (tools, content, resources, prompts), how a result
//! is shaped for each revision, and the 2026 HTTP header rules. Engines and
//! transports live in `mcpwire-server`.

#![warn(missing_docs)]

pub mod cursor;
pub mod depth;
pub mod error;
pub mod headers;
pub mod jsonrpc;
pub mod meta;
pub mod model;
pub mod shape;
pub mod sse;
pub mod version;

pub use error::{ErrorCode, ProtocolError};
pub use jsonrpc::{Message, Notification, Request, RequestId, Response};
pub use version::ProtocolVersion;
