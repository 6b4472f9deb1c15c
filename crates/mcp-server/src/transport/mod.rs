//! Transports: thin adapters from bytes to [`crate::Server::handle`].
//!
//! - [`http`]: Streamable HTTP on axum (both wires on one endpoint).
//! - [`stdio`]: newline-delimited JSON-RPC on stdin/stdout.

pub mod http;
pub mod stdio;
