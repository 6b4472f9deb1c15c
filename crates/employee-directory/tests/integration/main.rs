//! The integration tests of employee-directory, one harness (one binary to
//! build and link): each module is one concern, run on SQLite and, where it
//! applies, on PostgreSQL (`common::pg`, the scratch cluster).

#[macro_use]
mod common;

mod backends_agree;
mod directory;
mod faults;
mod postgres;
mod ranking;
mod report_aggregates;
mod schema;
