//! Testing a tool with the in-memory client: no sockets, no processes, both
//! wires; then end to end, the same client over Streamable HTTP (feature
//! `client-http`). The same code goes into a `#[tokio::test]`.
//!
//! ```sh
//! cargo run -p mcpwire-server --example testing
//! ```

use mcpwire_server::client::Client;
use mcpwire_server::protocol::ProtocolVersion;
use mcpwire_server::transport::http::{self, HttpConfig};
use mcpwire_server::{Server, Tool, ToolError, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Arguments of `divide`.
#[derive(Deserialize, JsonSchema)]
struct Divide {
    a: f64,
    b: f64,
}

/// The quotient.
#[derive(Serialize, JsonSchema)]
struct Quotient {
    value: f64,
}

async fn divide(input: Divide) -> ToolResult<Quotient> {
    if input.b == 0.0 {
        return Err(ToolError::execution(
            "Cannot divide by zero; pass a non-zero b.",
        ));
    }
    Ok(Quotient {
        value: input.a / input.b,
    })
}

fn server() -> Server {
    let tool = Tool::builder("divide")
        .description("Divides a by b.")
        .handler(divide);
    match Server::builder("calc", "1.0.0").tool(tool).build() {
        Ok(s) => s,
        Err(e) => panic!("the tool registers: {e}"),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The stateless 2026-07-28 wire.
    let client = Client::connect(server()).await?;
    let tools = client.list_tools().await?;
    assert_eq!(tools[0].name, "divide");
    let ok = client
        .call_tool("divide", json!({ "a": 6, "b": 3 }))
        .await?;
    assert_eq!(ok.structured, Some(json!({ "value": 2.0 })));
    let err = client
        .call_tool("divide", json!({ "a": 1, "b": 0 }))
        .await?;
    assert!(err.is_error && err.text().contains("non-zero"));
    // Schema violations are reported to the model, naming the field.
    let bad = client.call_tool("divide", json!({ "a": "six" })).await?;
    assert!(bad.is_error);

    // A legacy session, as a 2025-06-18 client would open it.
    let legacy = Client::builder(server())
        .legacy(ProtocolVersion::V2025_06_18)
        .connect()
        .await?;
    let ok = legacy
        .call_tool("divide", json!({ "a": 1, "b": 4 }))
        .await?;
    assert_eq!(ok.structured, Some(json!({ "value": 0.25 })));

    // End to end over HTTP: the server on a loopback port, the same client
    // API pointed at its URL (`.bearer(token)` when the endpoint wants one).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let served = server();
    let app = http::router(served.clone(), HttpConfig::default());
    tokio::spawn(http::serve(listener, app, served, std::future::pending()));
    let remote = Client::http(&url).connect().await?;
    let ok = remote
        .call_tool("divide", json!({ "a": 9, "b": 3 }))
        .await?;
    assert_eq!(ok.structured, Some(json!({ "value": 3.0 })));
    println!("all checks passed");
    Ok(())
}
