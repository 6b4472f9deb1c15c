//! A complete MCP server with one typed tool, in a few lines.
//!
//! ```sh
//! cargo run -p mcpwire-server --example greeter            # HTTP on http://127.0.0.1:3001/mcp
//! cargo run -p mcpwire-server --example greeter -- --stdio # stdio, for desktop clients
//! ```
//!
//! Built without the `http` feature (`scripts/build-report` does, in a
//! scratch crate) it serves stdio only.

use mcpwire_server::protocol::model::ToolAnnotations;
#[cfg(feature = "http")]
use mcpwire_server::transport::http::{self, HttpConfig};
use mcpwire_server::transport::stdio::{StdioConfig, serve_stdio};
use mcpwire_server::{Server, Tool, ToolError, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `greet`.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

/// What `greet` returns.
#[derive(Serialize, JsonSchema)]
struct Greeting {
    /// The greeting.
    text: String,
}

/// The tool itself: a plain async function from input to output.
async fn greet(input: Greet) -> ToolResult<Greeting> {
    if input.name.trim().is_empty() {
        return Err(ToolError::execution("Give a non-empty name."));
    }
    Ok(Greeting {
        text: format!("Hello, {}!", input.name),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let greet = Tool::builder("greet")
        .title("Greeter")
        .description("Greets someone by name.")
        .annotations(ToolAnnotations::read_only())
        .handler(greet);
    let server = Server::builder("greeter", "1.0.0").tool(greet).build()?;

    if !cfg!(feature = "http") || std::env::args().any(|a| a == "--stdio") {
        serve_stdio(server, StdioConfig::default()).await?;
        return Ok(());
    }
    #[cfg(feature = "http")]
    serve_http(server).await?;
    Ok(())
}

#[cfg(feature = "http")]
async fn serve_http(server: Server) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3001").await?;
    eprintln!("serving on http://{}/mcp", listener.local_addr()?);
    let router = http::router(server.clone(), HttpConfig::default());
    http::serve(listener, router, server, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}
