//! The tool of json-schema-2020-12: its input schema uses 2020-12 keywords
//! that must survive `tools/list` unchanged.

use mcpwire_server::{CallToolResult, RequestContext, Tool, ToolError, ToolOutcome};
use serde_json::{Map, Value, json};

/// The schema tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::builder("json_schema_2020_12_tool")
            .description("Tool with JSON Schema 2020-12 features")
            .input_schema(json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "$anchor": "addressDef",
                        "type": "object",
                        "properties": {
                            "street": { "type": "string" },
                            "city": { "type": "string" }
                        }
                    }
                },
                "properties": {
                    "name": { "type": "string" },
                    "address": { "$ref": "#/$defs/address" },
                    "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                    "phone": { "type": "string" },
                    "email": { "type": "string" }
                },
                "allOf": [
                    { "anyOf": [ { "required": ["phone"] }, { "required": ["email"] } ] }
                ],
                "if": {
                    "properties": { "contactMethod": { "const": "phone" } },
                    "required": ["contactMethod"]
                },
                "then": { "required": ["phone"] },
                "else": { "required": ["email"] },
                "additionalProperties": false
            }))
            .raw_handler(
                |_ctx: RequestContext, args: Map<String, Value>| async move {
                    Ok::<ToolOutcome, ToolError>(
                        CallToolResult::text(format!("Received: {}", Value::Object(args))).into(),
                    )
                },
            ),
    ]
}
