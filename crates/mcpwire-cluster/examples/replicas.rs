//! A tool server whose replicas share one PostgreSQL database: start two
//! on different ports behind any load balancer, and a session, a task or
//! a rate limit opened on one is honoured by the other.
//!
//! ```sh
//! DATABASE_URL=postgres://me@localhost/mcp PORT=3010 \
//!     cargo run -p mcpwire-cluster --example replicas
//! DATABASE_URL=postgres://me@localhost/mcp PORT=3011 \
//!     cargo run -p mcpwire-cluster --example replicas
//! ```

use std::time::Duration;

use mcpwire_server::transport::http::{self, HttpConfig};
use mcpwire_server::{Server, Tool, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `whoami`.
#[derive(Deserialize, JsonSchema)]
struct Whoami {}

/// Which replica answered: the port it listens on.
#[derive(Serialize, JsonSchema)]
struct Replica {
    port: u16,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("DATABASE_URL")
        .map_err(|_| "set DATABASE_URL to a postgres:// URL all replicas share")?;
    let port: u16 = std::env::var("PORT")
        .unwrap_or_else(|_| "3010".into())
        .parse()?;
    // Eight connections, and a database that does not answer in five
    // seconds fails the request instead of hanging it.
    let replication = mcpwire_cluster::connect(&url, 8, Duration::from_secs(5)).await?;
    let server = Server::builder("replicas", "1.0.0")
        .tool(
            Tool::builder("whoami")
                .handler(move |_: Whoami| async move { ToolResult::Ok(Replica { port }) }),
        )
        .shared(replication.shared)
        .request_state_key(replication.key)
        .task_backend(replication.tasks)
        .limiter(replication.limiter)
        .build()?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("replica on http://{}/mcp", listener.local_addr()?);
    let app = http::router(server.clone(), HttpConfig::default());
    http::serve(listener, app, server, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    // Tokens this replica took but did not spend go back to the others.
    replication.limits.give_back_all().await;
    Ok(())
}
