//! A destructive action confirmed first: the tool asks the user (an
//! elicitation) and only deletes on an explicit yes. One handler serves
//! both wires: on 2026-07-28 the call returns `input_required` and is
//! retried with the answer; on a legacy session the engine sends
//! `elicitation/create` itself and calls the handler again.
//!
//! ```sh
//! cargo run -p mcpwire-server --example confirm_delete
//! ```

use mcpwire_server::client::Client;
use mcpwire_server::protocol::ProtocolVersion;
use mcpwire_server::protocol::model::InputRequest;
use mcpwire_server::{
    CallToolResult, InputRequired, RequestContext, Server, Tool, ToolOutcome, ToolResult,
};
use serde_json::{Map, Value, json};

/// Asks before deleting, then deletes (here: says so) on a yes.
async fn delete(ctx: RequestContext, args: Map<String, Value>) -> ToolResult<ToolOutcome> {
    let name = args
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let Some(answer) = ctx.input_response("confirm") else {
        let schema = json!({
            "type": "object",
            "properties": { "confirm": { "type": "boolean", "description": "Delete it?" } },
            "required": ["confirm"]
        });
        let ask = InputRequest::elicit(format!("Delete \"{name}\" for good?"), schema);
        // The state comes back signed on the retry, bound to these arguments.
        return Ok(InputRequired::new()
            .request("confirm", ask)
            .state(json!({ "name": name }))
            .into());
    };
    let yes = answer["action"] == "accept" && answer["content"]["confirm"] == true;
    let text = if yes {
        format!("Deleted \"{name}\".")
    } else {
        format!("Kept \"{name}\".")
    };
    Ok(CallToolResult::text(text).into())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tool = Tool::builder("delete-file")
        .description("Deletes a file after the user confirms.")
        .input_schema(json!({
            "type": "object",
            "properties": { "name": { "type": "string" } },
            "required": ["name"]
        }))
        .raw_handler(delete);
    let server = Server::builder("files", "1.0.0").tool(tool).build()?;

    // The client's side: show the question, answer it (here: always yes).
    let answer = |request: InputRequest| async move {
        println!("server asks: {}", request.params["message"]);
        json!({ "action": "accept", "content": { "confirm": true } })
    };
    let modern = Client::builder(server.clone())
        .on_input(answer)
        .connect()
        .await?;
    println!(
        "{}",
        modern
            .call_tool("delete-file", json!({ "name": "a.txt" }))
            .await?
            .text()
    );
    let legacy = Client::builder(server)
        .on_input(answer)
        .legacy(ProtocolVersion::LATEST_LEGACY)
        .connect()
        .await?;
    println!(
        "{}",
        legacy
            .call_tool("delete-file", json!({ "name": "b.txt" }))
            .await?
            .text()
    );
    Ok(())
}
