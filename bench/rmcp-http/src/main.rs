//! `stub-typed` of `mcp-bench --serve-stubs`, on rmcp's Streamable HTTP
//! server: the reference for `mcp-bench --url … --workloads stub-typed`.
//! Same tool name, same input, an answer of about the same size.
//!
//! Usage: `rmcp-http-stub [--stateless] ADDR` (e.g. `127.0.0.1:9001`); the
//! endpoint is `/mcp`.

use std::sync::Arc;

use axum::serve::ListenerExt;
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{Json, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `stub-typed`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct StubInput {
    /// Any id; the profile is made from it.
    employee_id: String,
}

/// What `stub-typed` returns: about the size of the mcpwire stub's profile.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct StubProfile {
    /// The id asked for.
    employee_id: String,
    /// Work email.
    email: String,
    /// A paragraph of prose, the bulk of the profile.
    bio: String,
    /// A few skills.
    skills: Vec<String>,
}

#[derive(Clone)]
struct Stubs {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Stubs {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    /// Returns an employee-like profile made from the id.
    #[tool(name = "stub-typed", annotations(read_only_hint = true))]
    async fn stub_typed(
        &self,
        Parameters(input): Parameters<StubInput>,
    ) -> Result<Json<StubProfile>, String> {
        let id = input.employee_id;
        let bio = format!(
            "{id} joined the Engineering department in 2019 and works from the Berlin office. \
             Known for careful reviews, patient mentoring of new colleagues and clear written \
             design notes, {id} has led the migration of several internal services, keeps the \
             team's runbooks current and regularly presents at the monthly engineering forum. \
             Outside of project work, {id} coordinates the office's volunteering day and \
             maintains the onboarding checklist used across the Engineering department. Recent \
             work includes the quarterly capacity review, a rewrite of the deployment pipeline \
             and a series of internal workshops on incident response."
        );
        Ok(Json(StubProfile {
            email: format!("{}@example.com", id.to_lowercase()),
            employee_id: id,
            bio,
            skills: ["Go", "Rust", "SQL", "Kubernetes"].map(String::from).to_vec(),
        }))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Stubs {}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_else(|| "127.0.0.1:9001".to_owned());
    // Sessions by default (rmcp's default); `--stateless` serves every
    // request without one and answers with plain JSON, rmcp's fastest mode.
    let stateless = std::env::args().any(|a| a == "--stateless");
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!stateless)
        .with_json_response(true);
    let service = StreamableHttpService::new(
        || Ok(Stubs::new()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    // Without TCP_NODELAY an SSE answer written in pieces waits out the
    // peer's delayed ACK (40 ms a request).
    let listener = tokio::net::TcpListener::bind(&addr)
        .await?
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    axum::serve(listener, app).await?;
    Ok(())
}
