//! Mounting the MCP endpoint inside an existing axum application, next to
//! its own routes and behind its own middleware.
//!
//! ```sh
//! cargo run -p mcpwire-server --example axum_mount    # http://127.0.0.1:3002/mcp and /health
//! ```

use axum::Router;
use axum::routing::get;
use mcpwire_server::transport::http::{self, HttpConfig};
use mcpwire_server::{Server, Tool, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `shout`.
#[derive(Deserialize, JsonSchema)]
struct Shout {
    /// Text to upper-case.
    text: String,
}

/// What `shout` returns.
#[derive(Serialize, JsonSchema)]
struct Shouted {
    text: String,
}

async fn shout(input: Shout) -> ToolResult<Shouted> {
    Ok(Shouted {
        text: input.text.to_uppercase(),
    })
}

/// The application's own routes, MCP merged in.
fn app(server: Server) -> Router {
    let mcp = http::router(server, HttpConfig::default());
    Router::new()
        .route("/health", get(|| async { "ok" }))
        .merge(mcp)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("shouter", "1.0.0")
        .tool(Tool::builder("shout").handler(shout))
        .build()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3002").await?;
    eprintln!(
        "serving on http://{}/mcp (and /health)",
        listener.local_addr()?
    );
    // `http::serve` bounds connections and lets streams end cleanly on
    // shutdown; any axum-compatible server works too.
    http::serve(listener, app(server.clone()), server, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}
