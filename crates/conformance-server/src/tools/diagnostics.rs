//! Progress, logging, streaming and list-change tools (tools-call-with-progress,
//! tools-call-with-logging, server-stateless, server-sse-polling).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcpwire_server::protocol::ProtocolError;
use mcpwire_server::protocol::model::{Content, InputRequest, LogLevel, PromptMessage, Role};
use mcpwire_server::{
    CallToolResult, InputRequired, Prompt, PromptOutcome, RequestContext, Server, Tool, ToolError,
    ToolOutcome,
};
use serde_json::{Map, Value, json};

/// The pause between notifications the scenarios ask for.
const STEP: Duration = Duration::from_millis(50);

/// Name of the tool `test_trigger_tool_change` adds and removes.
const DYNAMIC_TOOL: &str = "test_dynamic_tool";
/// Name of the prompt `test_trigger_prompt_change` adds and removes.
const DYNAMIC_PROMPT: &str = "test_dynamic_prompt";

/// The diagnostic tools. `server` is filled once the server is built.
pub fn tools(server: &Arc<OnceLock<Server>>) -> Vec<Tool> {
    vec![
        Tool::builder("test_tool_with_progress")
            .description("Reports progress 0, 50 and 100 of 100, about 50 ms apart.")
            .raw_handler(
                |ctx: RequestContext, _args: Map<String, Value>| async move {
                    // A no-op unless the request carried _meta.progressToken.
                    ctx.progress(0.0, Some(100.0), None).await;
                    tokio::time::sleep(STEP).await;
                    ctx.progress(50.0, Some(100.0), None).await;
                    tokio::time::sleep(STEP).await;
                    ctx.progress(100.0, Some(100.0), None).await;
                    Ok::<ToolOutcome, ToolError>(
                        CallToolResult::text("Progress test completed.").into(),
                    )
                },
            ),
        logging_tool(
            "test_tool_with_logging",
            "Sends three info log messages about 50 ms apart.",
        ),
        // server-stateless checks that nothing is logged to a 2026 client
        // that did not ask for a logLevel; the engine enforces that.
        logging_tool(
            "test_logging_tool",
            "Tries to log; clients that set no logLevel must receive nothing.",
        ),
        Tool::builder("test_streaming_elicitation")
            .description(
                "Needs an elicitation: on the 2026 wire this must come back as an \
                 input_required result, never as a request on the response stream.",
            )
            .raw_handler(
                |ctx: RequestContext, _args: Map<String, Value>| async move {
                    let outcome: ToolOutcome = match ctx.input_response("confirmation") {
                        Some(answer) => CallToolResult::text(format!(
                            "Streaming elicitation answered: {answer}"
                        ))
                        .into(),
                        None => InputRequired::new()
                            .request(
                                "confirmation",
                                InputRequest::elicit(
                                    "Please confirm",
                                    json!({
                                        "type": "object",
                                        "properties": { "ok": { "type": "boolean" } },
                                        "required": ["ok"]
                                    }),
                                ),
                            )
                            .into(),
                    };
                    Ok::<_, ToolError>(outcome)
                },
            ),
        // The engine answers -32021 {"sampling":{}} when the request did not
        // declare the sampling capability: the handler just asks.
        Tool::builder("test_missing_capability")
            .description("Needs sampling; clients without the sampling capability get -32021.")
            .raw_handler(
                |ctx: RequestContext, _args: Map<String, Value>| async move {
                    let outcome: ToolOutcome = match ctx.input_response("completion") {
                        Some(_) => CallToolResult::text("Sampling answered.").into(),
                        None => InputRequired::new()
                            .request("completion", InputRequest::sample("Say hello", 20))
                            .into(),
                    };
                    Ok::<_, ToolError>(outcome)
                },
            ),
        // server-sse-polling (2025-11-25 sessions): closes the SSE connection
        // mid-call; the result arrives on the client's GET + Last-Event-ID.
        // Elsewhere closing is a no-op and the tool just takes a moment.
        Tool::builder("test_reconnection")
            .description("Closes its SSE connection mid-call, then answers (SSE polling test).")
            .raw_handler(
                |ctx: RequestContext, _args: Map<String, Value>| async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    ctx.close_sse_stream();
                    tokio::time::sleep(Duration::from_millis(400)).await;
                    Ok::<ToolOutcome, ToolError>(
                        CallToolResult::text("Reconnection test completed.").into(),
                    )
                },
            ),
        trigger_tool_change(Arc::clone(server)),
        trigger_prompt_change(Arc::clone(server)),
    ]
}

/// A tool that sends the three log lines tools-call-with-logging expects.
fn logging_tool(name: &str, description: &str) -> Tool {
    Tool::builder(name).description(description).raw_handler(
        |ctx: RequestContext, _args: Map<String, Value>| async move {
            // Delivered only if the client opted in (legacy logging/setLevel,
            // or a 2026 _meta logLevel).
            for (i, text) in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
            .into_iter()
            .enumerate()
            {
                if i > 0 {
                    tokio::time::sleep(STEP).await;
                }
                ctx.log(LogLevel::Info, Some("conformance"), json!(text))
                    .await;
            }
            Ok::<ToolOutcome, ToolError>(CallToolResult::text("Logging test completed.").into())
        },
    )
}

/// Toggles `test_dynamic_tool` so a `notifications/tools/list_changed` fires.
fn trigger_tool_change(server: Arc<OnceLock<Server>>) -> Tool {
    Tool::builder("test_trigger_tool_change")
        .description("Adds or removes test_dynamic_tool, so tools/list changes.")
        .raw_handler(move |_ctx: RequestContext, _args: Map<String, Value>| {
            let server = server.get().cloned();
            async move {
                let server = server.ok_or_else(|| ToolError::internal("server not built yet"))?;
                let text = if server.remove_tool(DYNAMIC_TOOL) {
                    format!("Removed {DYNAMIC_TOOL}.")
                } else {
                    server
                        .add_tool(dynamic_tool())
                        .map_err(ToolError::internal)?;
                    format!("Added {DYNAMIC_TOOL}.")
                };
                Ok::<ToolOutcome, ToolError>(CallToolResult::text(text).into())
            }
        })
}

fn dynamic_tool() -> Tool {
    Tool::builder(DYNAMIC_TOOL)
        .description("Registered at runtime by test_trigger_tool_change.")
        .raw_handler(
            |_ctx: RequestContext, _args: Map<String, Value>| async move {
                Ok::<ToolOutcome, ToolError>(CallToolResult::text("Dynamic tool called.").into())
            },
        )
}

/// Toggles `test_dynamic_prompt` so a `notifications/prompts/list_changed` fires.
fn trigger_prompt_change(server: Arc<OnceLock<Server>>) -> Tool {
    // The library has no "is this prompt registered" query; track it here.
    let present = Arc::new(AtomicBool::new(false));
    Tool::builder("test_trigger_prompt_change")
        .description("Adds or removes test_dynamic_prompt, so prompts/list changes.")
        .raw_handler(move |_ctx: RequestContext, _args: Map<String, Value>| {
            let server = server.get().cloned();
            let present = Arc::clone(&present);
            async move {
                let server = server.ok_or_else(|| ToolError::internal("server not built yet"))?;
                let text = if present.fetch_xor(true, Ordering::SeqCst) {
                    server.remove_prompt(DYNAMIC_PROMPT);
                    format!("Removed {DYNAMIC_PROMPT}.")
                } else {
                    server.add_prompt(dynamic_prompt());
                    format!("Added {DYNAMIC_PROMPT}.")
                };
                Ok::<ToolOutcome, ToolError>(CallToolResult::text(text).into())
            }
        })
}

fn dynamic_prompt() -> Prompt {
    Prompt::new(
        DYNAMIC_PROMPT,
        "Registered at runtime by test_trigger_prompt_change.",
        Vec::new(),
        |_ctx, _args| async move {
            Ok::<_, ProtocolError>(PromptOutcome::Complete {
                description: None,
                messages: vec![PromptMessage {
                    role: Role::User,
                    content: Content::text("This is a dynamically added prompt."),
                }],
            })
        },
    )
}
