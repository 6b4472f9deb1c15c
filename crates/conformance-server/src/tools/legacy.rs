//! Tools of the legacy (2025) interaction scenarios: tools-call-sampling,
//! tools-call-elicitation, elicitation-sep1034-defaults, elicitation-sep1330-enums.
//!
//! They are written in the multi round-trip style: on legacy sessions the
//! engine sends each input request to the client as a real server→client
//! request and calls the handler again with the answer.

use mcpwire_server::protocol::model::InputRequest;
use mcpwire_server::{CallToolResult, InputRequired, RequestContext, Tool, ToolError, ToolOutcome};
use serde_json::{Map, Value, json};

use super::input::sampled_text;

/// The legacy interaction tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::builder("test_sampling")
            .description("Asks the client's model to answer a prompt (sampling).")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "prompt": { "type": "string", "description": "The prompt to send to the LLM" }
                },
                "required": ["prompt"]
            }))
            .raw_handler(|ctx: RequestContext, args: Map<String, Value>| async move {
                if ctx.input_response("llm").is_some() {
                    let text = sampled_text(&ctx, "llm").unwrap_or("(no text)");
                    return Ok::<ToolOutcome, ToolError>(
                        CallToolResult::text(format!("LLM response: {text}")).into(),
                    );
                }
                let prompt = string_arg(&args, "prompt")?;
                Ok(InputRequired::new()
                    .request("llm", InputRequest::sample(prompt, 100))
                    .into())
            }),
        Tool::builder("test_elicitation")
            .description("Asks the user for a username and email (elicitation).")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "message": { "type": "string", "description": "The message to show the user" }
                },
                "required": ["message"]
            }))
            .raw_handler(|ctx: RequestContext, args: Map<String, Value>| async move {
                if let Some(answer) = ctx.input_response("user_info") {
                    return Ok::<ToolOutcome, ToolError>(
                        CallToolResult::text(format!("User response: {}", describe(answer))).into(),
                    );
                }
                let message = string_arg(&args, "message")?;
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": { "type": "string", "description": "User's response" },
                        "email": { "type": "string", "description": "User's email address" }
                    },
                    "required": ["username", "email"]
                });
                Ok(InputRequired::new()
                    .request("user_info", InputRequest::elicit(message, schema))
                    .into())
            }),
        elicit_once(
            "test_elicitation_sep1034_defaults",
            "Elicits a form whose fields all have default values (SEP-1034).",
            "Please review and update the form fields with defaults",
            json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "User name", "default": "John Doe" },
                    "age": { "type": "integer", "description": "User age", "default": 30 },
                    "score": { "type": "number", "description": "User score", "default": 95.5 },
                    "status": {
                        "type": "string",
                        "description": "User status",
                        "enum": ["active", "inactive", "pending"],
                        "default": "active"
                    },
                    "verified": { "type": "boolean", "description": "Verification status", "default": true }
                }
            }),
        ),
        elicit_once(
            "test_elicitation_sep1330_enums",
            "Elicits a form with every enum variant (SEP-1330).",
            "Please select options from the enum fields",
            json!({
                "type": "object",
                "properties": {
                    "untitledSingle": {
                        "type": "string",
                        "description": "Select one option",
                        "enum": ["option1", "option2", "option3"]
                    },
                    "titledSingle": {
                        "type": "string",
                        "description": "Select one option with titles",
                        "oneOf": [
                            { "const": "value1", "title": "First Option" },
                            { "const": "value2", "title": "Second Option" },
                            { "const": "value3", "title": "Third Option" }
                        ]
                    },
                    "legacyEnum": {
                        "type": "string",
                        "description": "Select one option (legacy)",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]
                    },
                    "untitledMulti": {
                        "type": "array",
                        "description": "Select multiple options",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
                    },
                    "titledMulti": {
                        "type": "array",
                        "description": "Select multiple options with titles",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": {
                            "anyOf": [
                                { "const": "value1", "title": "First Choice" },
                                { "const": "value2", "title": "Second Choice" },
                                { "const": "value3", "title": "Third Choice" }
                            ]
                        }
                    }
                },
                "required": []
            }),
        ),
    ]
}

/// A no-argument tool that elicits one fixed form and reports the answer.
fn elicit_once(name: &str, description: &str, message: &'static str, schema: Value) -> Tool {
    Tool::builder(name).description(description).raw_handler(
        move |ctx: RequestContext, _args: Map<String, Value>| {
            let schema = schema.clone();
            async move {
                let outcome: ToolOutcome = match ctx.input_response("form") {
                    Some(answer) => {
                        CallToolResult::text(format!("Elicitation completed: {}", describe(answer)))
                            .into()
                    }
                    None => InputRequired::new()
                        .request("form", InputRequest::elicit(message, schema))
                        .into(),
                };
                Ok::<_, ToolError>(outcome)
            }
        },
    )
}

/// `action=…, content={…}` of an elicitation answer.
fn describe(answer: &Value) -> String {
    let action = answer
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let content = answer.get("content").cloned().unwrap_or(Value::Null);
    format!("action={action}, content={content}")
}

/// A required string argument (the engine already validated the schema;
/// this only guards the handler against a changed schema).
fn string_arg<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a str, ToolError> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::execution(format!("Argument \"{name}\" must be a string.")))
}
