//! `conformance-server`: the fixture the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`) runs against.
//!
//! It exposes exactly the tools, resources and prompts the suite calls (see
//! `/work/shared/mcp-spec/conformance-contract.md`), built only on the public
//! API of `mcpwire-server`, so a failing scenario points at the library rather
//! than at fixture glue. It serves Streamable HTTP at `/mcp` (both the
//! 2026-07-28 stateless wire and the legacy session wire) or stdio.

mod prompts;
mod resources;
mod tools;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use clap::Parser;
use mcpwire_server::protocol::ProtocolError;
use mcpwire_server::transport::http::{self, HttpConfig};
use mcpwire_server::transport::shutdown_signal;
use mcpwire_server::transport::stdio::{StdioConfig, serve_stdio};
use mcpwire_server::{RegistrationError, Server};
use serde_json::Value;
use tracing_subscriber::EnvFilter;

/// Serve the MCP conformance fixture over Streamable HTTP (or stdio).
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Address to listen on; the suite's DNS-rebinding check expects a
    /// loopback address.
    #[arg(long, default_value = "127.0.0.1:3000", conflicts_with = "stdio")]
    listen: SocketAddr,

    /// Serve one client on stdin/stdout instead of HTTP.
    #[arg(long)]
    stdio: bool,
}

/// The server name reported in `serverInfo`.
const NAME: &str = "mcp-conformance-server";

fn main() -> ExitCode {
    let args = Args::parse();
    // Logs go to stderr so they never mix with the stdio transport's stdout.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();

    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let server = build_server()?;
    if args.stdio {
        tracing::info!("serving MCP on stdio");
        serve_stdio(server, StdioConfig::default()).await?;
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    tracing::info!("serving MCP at http://{}/mcp", listener.local_addr()?);
    let router = http::router(server.clone(), HttpConfig::default());
    http::serve(listener, router, server, shutdown_signal()).await?;
    Ok(())
}

/// Builds the fixture: every tool, resource and prompt the suite calls.
fn build_server() -> Result<Server, RegistrationError> {
    // The list-change trigger tools need the server they live in, which does
    // not exist yet while they are registered: they read it from here.
    let handle: Arc<OnceLock<Server>> = Arc::new(OnceLock::new());
    let mut builder = Server::builder(NAME, env!("CARGO_PKG_VERSION"))
        .instructions("Fixture for the MCP conformance suite; its tools exist only for testing.")
        // Declares the logging capability the legacy tools-call-with-logging
        // scenario needs before it calls logging/setLevel.
        .logging(true)
        .completion(complete);
    for tool in tools::all(&handle) {
        builder = builder.tool(tool);
    }
    for prompt in prompts::all() {
        builder = builder.prompt(prompt);
    }
    for resource in resources::all() {
        builder = builder.resource(resource);
    }
    for template in resources::templates() {
        builder = builder.resource_template(template);
    }
    let server = builder.build()?;
    // Only set here, once; a second set cannot happen.
    let _ = handle.set(server.clone());
    Ok(server)
}

/// `completion/complete`: suggestions for `test_prompt_with_arguments`
/// (any other reference gets an empty list, which the suite accepts).
async fn complete(
    _ctx: mcpwire_server::RequestContext,
    reference: Value,
    _argument: String,
    value: String,
) -> Result<Vec<String>, ProtocolError> {
    const CANDIDATES: [&str; 4] = ["test", "testValue1", "testValue2", "example"];
    let is_prompt = reference.get("type").and_then(Value::as_str) == Some("ref/prompt")
        && reference.get("name").and_then(Value::as_str) == Some("test_prompt_with_arguments");
    if !is_prompt {
        return Ok(Vec::new());
    }
    Ok(CANDIDATES
        .iter()
        .filter(|c| c.starts_with(&value))
        .map(|c| (*c).to_owned())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_builds() {
        assert!(build_server().is_ok());
    }

    #[test]
    fn first_tool_takes_no_arguments() {
        // http-header-validation calls the first listed tool with `{}`.
        let handle = Arc::new(OnceLock::new());
        let tools = tools::all(&handle);
        assert_eq!(tools[0].definition().name, "test_simple_text");
    }
}
