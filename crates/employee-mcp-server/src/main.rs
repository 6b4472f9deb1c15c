//! `employee-mcp-server`: wires the HR directory, the tools and a transport.

mod cli;
mod tools;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use employee_directory::{Directory, SystemClock};
use mcp_server::transport::http::{self, HttpConfig};
use mcp_server::transport::stdio::{StdioConfig, serve_stdio};
use mcp_server::{Server, ServerOptions};
use tracing_subscriber::EnvFilter;

use cli::Cli;

#[tokio::main]
async fn main() -> ExitCode {
    // Logs go to stderr: on stdio, stdout carries only MCP messages.
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            tracing::error!("{message}");
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), String> {
    if !cli.stdio && !cli.listen.ip().is_loopback() && !cli.insecure_public_bind {
        return Err(format!(
            "refusing to serve HR data on {} without authentication; bind a loopback address (e.g. 127.0.0.1:8080), or pass --i-understand-this-exposes-hr-data-without-auth",
            cli.listen
        ));
    }
    let directory = Directory::open(&cli.database, Arc::new(SystemClock))
        .await
        .map_err(|e| format!("cannot open the employee database: {e}"))?;
    let server = build_server(&directory, &cli)?;
    if cli.stdio {
        tracing::info!(database = %cli.database, "serving MCP on stdio");
        return serve_stdio(server, StdioConfig::default())
            .await
            .map_err(|e| format!("stdio transport failed: {e}"));
    }
    let listener = tokio::net::TcpListener::bind(cli.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", cli.listen))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address: {e}"))?;
    if let Some(path) = &cli.port_file {
        std::fs::write(path, addr.to_string())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    tracing::info!(
        "serving MCP on http://{addr}/mcp (database {})",
        cli.database
    );
    let mut allowed_hosts = cli.allowed_hosts.clone();
    if !addr.ip().is_unspecified() {
        allowed_hosts.push(addr.ip().to_string());
    }
    let config = HttpConfig {
        max_body_bytes: cli.max_body_bytes,
        allowed_hosts,
        allowed_origins: cli.allowed_origins.clone(),
        ..HttpConfig::default()
    };
    let router = http::router(server.clone(), config);
    http::serve(listener, router, server, shutdown_signal())
        .await
        .map_err(|e| format!("HTTP server failed: {e}"))?;
    tracing::info!("stopped");
    Ok(())
}

fn build_server(directory: &Directory, cli: &Cli) -> Result<Server, String> {
    let options = ServerOptions {
        call_timeout: Some(Duration::from_secs(cli.call_timeout_secs.max(1))),
        ..ServerOptions::default()
    };
    let mut builder = Server::builder("employee-mcp-server", env!("CARGO_PKG_VERSION"))
        .title("Employee Directory")
        .instructions(
            "HR directory of Acme Corp. Employee ids are PascalCase names (AliceJohnson); department and team ids are lowercase slugs (engineering, backend). Start from list-department-employees or search-employees-by-skill to find ids.",
        )
        .options(options);
    for tool in tools::all(directory) {
        builder = builder.tool(tool);
    }
    builder
        .build()
        .map_err(|e| format!("invalid tool definition: {e}"))
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}
