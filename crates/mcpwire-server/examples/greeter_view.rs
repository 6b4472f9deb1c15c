//! A tool with an MCP Apps view: hosts that render views (the
//! `io.modelcontextprotocol/ui` extension) show the greeting as a card;
//! every other client gets the same text and JSON as before.
//!
//! ```sh
//! cargo run -p mcpwire-server --example greeter_view   # stdio, for desktop clients
//! ```

use mcpwire_server::transport::stdio::{StdioConfig, serve_stdio};
use mcpwire_server::{Server, Tool, ToolResult, View};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const CARD: &str = "ui://greeter/card";

/// The view: one self-contained page. It answers the host's handshake and
/// shows `structuredContent.text` of the tool result, as text only.
const HTML: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><style>
body { font: 1.2rem system-ui, sans-serif; margin: 1rem; }
</style></head><body><p id="greeting">…</p><script>
let next = 1;
const send = (m) => window.parent.postMessage({ jsonrpc: "2.0", ...m }, "*");
window.addEventListener("message", (e) => {
  const m = e.data || {};
  if (m.method === "ui/notifications/tool-result") {
    const text = m.params && m.params.structuredContent && m.params.structuredContent.text;
    document.getElementById("greeting").textContent = String(text || "");
  }
});
send({ id: next++, method: "ui/initialize", params: {
  protocolVersion: "2026-01-26", appInfo: { name: "greeter-card", version: "1" },
  appCapabilities: {} } });
send({ method: "ui/notifications/initialized", params: {} });
</script></body></html>"#;

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

async fn greet(input: Greet) -> ToolResult<Greeting> {
    Ok(Greeting {
        text: format!("Hello, {}!", input.name),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("greeter-view", "1.0.0")
        .view(View::html(CARD, "greeting-card", HTML).title("Greeting card"))
        .tool(
            Tool::builder("greet")
                .description("Greets someone by name.")
                .view(CARD)
                .handler(greet),
        )
        .build()?;
    serve_stdio(server, StdioConfig::default()).await?;
    Ok(())
}
