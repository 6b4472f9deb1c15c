//! The integration tests of mcpwire-server, one harness (one binary to build
//! and link): each module is one concern, driven over the wire (HTTP on port
//! 0, stdio pipes, a child process) or through the in-memory client.

mod common;

mod approvals;
mod client;
mod client_http;
mod client_stdio;
mod envelope;
mod legacy_http;
mod modern_http;
mod oauth;
mod replicas;
mod replicated_tasks;
mod resumability;
mod security;
mod stdio;
mod tasks;
mod tools_engine;
mod views;
