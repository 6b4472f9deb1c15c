//! Tasks-extension tools (SEP-2663, `tasks-*` scenarios).
//!
//! `greet` is synchronous only; the others run as tasks when the request
//! declares `io.modelcontextprotocol/tasks`. `failing_job` and
//! `test_tool_with_task` require it.

use std::time::Duration;

use mcpwire_server::protocol::model::InputRequest;
use mcpwire_server::{
    CallToolResult, InputRequired, RequestContext, TaskSupport, Tool, ToolError, ToolOutcome,
};
use serde_json::{Map, Value, json};

use super::input::{Elicited, ask_name, elicited};

/// The tasks tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::builder("greet")
            .description("Greets someone by name (synchronous only).")
            .input_schema(json!({
                "type": "object",
                "properties": { "name": { "type": "string" } },
                "required": ["name"]
            }))
            .raw_handler(|_ctx: RequestContext, args: Map<String, Value>| async move {
                let name = args.get("name").and_then(Value::as_str).unwrap_or("World");
                Ok::<ToolOutcome, ToolError>(CallToolResult::text(format!("Hello, {name}!")).into())
            }),
        Tool::builder("slow_compute")
            .description("Sleeps `seconds` seconds, then reports the label (task-supporting).")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "seconds": { "type": "number", "minimum": 0, "maximum": 600 },
                    "label": { "type": "string" }
                }
            }))
            .task_support(TaskSupport::Optional)
            .raw_handler(|ctx: RequestContext, args: Map<String, Value>| async move {
                let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
                let label = args
                    .get("label")
                    .and_then(Value::as_str)
                    .unwrap_or("compute")
                    .to_owned();
                pause(&ctx, seconds).await?;
                Ok::<ToolOutcome, ToolError>(
                    CallToolResult::text(format!("Computed \"{label}\" after {seconds} s.")).into(),
                )
            }),
        Tool::builder("failing_job")
            .description("Fails with a tool execution error after about a second (task required).")
            .task_support(TaskSupport::Required)
            .raw_handler(|ctx: RequestContext, _args: Map<String, Value>| async move {
                pause(&ctx, 1.0).await?;
                Err::<ToolOutcome, ToolError>(ToolError::execution(
                    "The job failed on purpose; this tool always fails.",
                ))
            }),
        Tool::builder("protocol_error_job")
            .description("Fails with an internal (protocol-level) error (task-supporting).")
            .task_support(TaskSupport::Optional)
            .raw_handler(|ctx: RequestContext, _args: Map<String, Value>| async move {
                pause(&ctx, 0.2).await?;
                Err::<ToolOutcome, ToolError>(ToolError::Internal(
                    "protocol_error_job always fails".to_owned(),
                ))
            }),
        Tool::builder("confirm_delete")
            .description("Asks for a confirmation (elicitation), then pretends to delete the file (task-supporting).")
            .input_schema(json!({
                "type": "object",
                "properties": { "filename": { "type": "string" } },
                "required": ["filename"]
            }))
            .task_support(TaskSupport::Optional)
            .raw_handler(|ctx: RequestContext, args: Map<String, Value>| async move {
                let file = args.get("filename").and_then(Value::as_str).unwrap_or("");
                let outcome = match elicited(&ctx, "confirm") {
                    Some(Elicited::Accepted(c)) if c.get("confirm") == Some(&json!(true)) => {
                        CallToolResult::text(format!("Deleted {file}.")).into()
                    }
                    Some(Elicited::Accepted(_)) => {
                        CallToolResult::text(format!("Kept {file} (not confirmed).")).into()
                    }
                    Some(Elicited::Refused(action)) => {
                        CallToolResult::text(format!("Kept {file} (action: {action}).")).into()
                    }
                    None => InputRequired::new()
                        .request("confirm", ask_confirm(&format!("Delete {file}?")))
                        .into(),
                };
                Ok::<ToolOutcome, ToolError>(outcome)
            }),
        Tool::builder("multi_input")
            .description("Asks two questions at once, then reports both answers (task-supporting).")
            .task_support(TaskSupport::Optional)
            .raw_handler(|ctx: RequestContext, _args: Map<String, Value>| async move {
                let outcome = match (answer(&ctx, "first"), answer(&ctx, "second")) {
                    (Some(a), Some(b)) => CallToolResult::text(format!("Got {a} and {b}.")).into(),
                    _ => InputRequired::new()
                        .request("first", ask_name("First value?"))
                        .request("second", ask_name("Second value?"))
                        .into(),
                };
                Ok::<ToolOutcome, ToolError>(outcome)
            }),
        Tool::builder("test_tool_with_task")
            .description("Asks the user's name synchronously, then greets them as a task (task required).")
            .task_support(TaskSupport::Required)
            .defer_task_creation()
            .raw_handler(|ctx: RequestContext, _args: Map<String, Value>| async move {
                let name = match elicited(&ctx, "user_name") {
                    Some(Elicited::Accepted(c)) => c.get("name").and_then(Value::as_str),
                    _ => None,
                };
                let Some(name) = name.map(str::to_owned) else {
                    return Ok(InputRequired::new()
                        .request("user_name", ask_name("What is your name?"))
                        .into());
                };
                ctx.start_task().await;
                pause(&ctx, 0.3).await?;
                Ok::<ToolOutcome, ToolError>(CallToolResult::text(format!("Hello, {name}!")).into())
            }),
    ]
}

/// Sleeps, unless the call is cancelled first.
async fn pause(ctx: &RequestContext, seconds: f64) -> Result<(), ToolError> {
    let wait = Duration::from_secs_f64(seconds.clamp(0.0, 600.0));
    tokio::select! {
        () = tokio::time::sleep(wait) => Ok(()),
        () = ctx.cancelled() => Err(ToolError::execution("Cancelled.")),
    }
}

fn ask_confirm(message: &str) -> InputRequest {
    InputRequest::elicit(
        message,
        json!({
            "type": "object",
            "properties": { "confirm": { "type": "boolean" } },
            "required": ["confirm"]
        }),
    )
}

/// The accepted `name` of an elicitation answer, or a placeholder for an
/// accepted answer without one.
fn answer(ctx: &RequestContext, key: &str) -> Option<String> {
    match elicited(ctx, key)? {
        Elicited::Accepted(c) => Some(
            c.get("name")
                .and_then(Value::as_str)
                .unwrap_or("(no name)")
                .to_owned(),
        ),
        Elicited::Refused(action) => Some(format!("({action})")),
    }
}
