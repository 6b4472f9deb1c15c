//! The tool of http-custom-header-server-validation: its `value` argument is
//! mirrored in the `Mcp-Param-Value` header, which the HTTP transport checks.

use mcpwire_server::{CallToolResult, RequestContext, Tool, ToolError, ToolOutcome};
use serde_json::{Map, Value, json};

/// The header tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::builder("test_custom_header")
            .description(
                "Echoes `value`, which clients must also send as the Mcp-Param-Value header.",
            )
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "value": { "type": "string", "x-mcp-header": "Value" }
                },
                "required": ["value"]
            }))
            .raw_handler(
                |_ctx: RequestContext, args: Map<String, Value>| async move {
                    let value = args
                        .get("value")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    Ok::<ToolOutcome, ToolError>(
                        CallToolResult::text(format!("Received value: {value}")).into(),
                    )
                },
            ),
    ]
}
