//! The `greet` tool of `mcpwire-server`'s greeter example, on rmcp, served on
//! stdio: the reference `mcp-bench --stdio --rmcp` measures against.
//!
//! `--pipes` serves on `rmcp::transport::stdio_pipes()` (non-blocking pipe
//! I/O on Linux) instead of the default `rmcp::transport::stdio()`.

use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::{Json, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
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

#[derive(Clone)]
struct Greeter {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Greeter {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    /// Greets someone by name.
    #[tool(name = "greet", annotations(read_only_hint = true))]
    async fn greet(&self, Parameters(input): Parameters<Greet>) -> Result<Json<Greeting>, String> {
        if input.name.trim().is_empty() {
            return Err("Give a non-empty name.".to_owned());
        }
        Ok(Json(Greeting {
            text: format!("Hello, {}!", input.name),
        }))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Greeter {}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = if std::env::args().any(|a| a == "--pipes") {
        Greeter::new().serve(rmcp::transport::stdio_pipes()).await?
    } else {
        Greeter::new().serve(rmcp::transport::stdio()).await?
    };
    service.waiting().await?;
    Ok(())
}
