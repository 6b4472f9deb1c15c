//! The integration tests of employee-mcp-server, one harness (one binary to
//! build and link): each module is one concern and drives the real binary
//! over HTTP or stdio (`common::Server`). Run one with
//! `cargo test --release -p employee-mcp-server --test integration cluster::`.

mod common;

mod access;
mod approvals;
mod article;
mod audit;
mod audit_limits;
mod bad_input;
mod catalog;
mod cluster;
mod connections;
mod console;
mod custom_tools;
mod exchange;
mod exchange_hostile;
mod exchange_safety;
mod exchange_sheets;
mod faults;
mod legacy_wire;
mod modern_wire;
mod operating;
mod paging;
mod replicas;
mod replicated_limits;
mod report_tasks;
mod revision_schemas;
mod scaling;
mod shutdown;
mod stdio;
mod swap;
mod tools;
mod views;
