//! Command-line interface.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

/// An HR directory served to language models over the Model Context Protocol.
///
/// By default: Streamable HTTP at http://127.0.0.1:8080/mcp, on an embedded
/// SQLite database in the working directory (created, migrated and filled
/// with a demo company on first start). Logs go to stderr; set RUST_LOG
/// (e.g. RUST_LOG=debug) to change the level.
#[derive(Debug, Parser)]
#[command(name = "employee-mcp-server", version, about, long_about)]
pub struct Cli {
    /// Address to serve Streamable HTTP on (port 0 picks a free port).
    #[arg(long, env = "EMPLOYEE_MCP_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Database URL: sqlite://PATH (created if missing) or sqlite::memory:.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_DATABASE",
        default_value = "sqlite://employees.db"
    )]
    pub database: String,

    /// Serve MCP on stdin/stdout instead of HTTP (for desktop clients).
    #[arg(long)]
    pub stdio: bool,

    /// Extra host names accepted in Host/Origin headers (loopback names
    /// always are). Needed when clients reach the server by another name.
    #[arg(
        long = "allowed-host",
        env = "EMPLOYEE_MCP_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,

    /// Extra browser origins accepted in the Origin header, e.g. https://app.example.com.
    #[arg(
        long = "allowed-origin",
        env = "EMPLOYEE_MCP_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    pub allowed_origins: Vec<String>,

    /// Largest accepted request body in bytes.
    #[arg(long, env = "EMPLOYEE_MCP_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Per-call time limit for tools, in seconds.
    #[arg(long, env = "EMPLOYEE_MCP_CALL_TIMEOUT_SECS", default_value_t = 30)]
    pub call_timeout_secs: u64,

    /// Serve on a non-loopback address WITHOUT any authentication. Anyone
    /// who can reach the port can read every employee's data.
    #[arg(long = "i-understand-this-exposes-hr-data-without-auth")]
    pub insecure_public_bind: bool,

    /// Write the address actually bound (useful with port 0) to this file.
    #[arg(long, hide = true)]
    pub port_file: Option<PathBuf>,
}
