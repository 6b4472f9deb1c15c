//! Tools that return each kind of content block (tools-call-* scenarios).

use mcpwire_server::protocol::model::Content;
use mcpwire_server::{CallToolResult, RequestContext, Tool, ToolError, ToolOutcome};
use serde_json::{Map, Value, json};

use super::media::{PNG_BASE64, WAV_BASE64};

/// The content tools; `test_simple_text` first (see [`super::all`]).
pub fn tools() -> Vec<Tool> {
    vec![
        // The suite calls it with no `arguments` key at all; a raw handler
        // with the default `{"type":"object"}` schema accepts that.
        fixed(
            "test_simple_text",
            "Returns a simple text response.",
            || CallToolResult::text("This is a simple text response for testing."),
        ),
        fixed("test_image_content", "Returns a PNG image.", || {
            CallToolResult::content(vec![Content::image(PNG_BASE64, "image/png")])
        }),
        fixed("test_audio_content", "Returns a WAV audio clip.", || {
            CallToolResult::content(vec![Content::audio(WAV_BASE64, "audio/wav")])
        }),
        fixed(
            "test_embedded_resource",
            "Returns an embedded text resource.",
            || {
                CallToolResult::content(vec![Content::embedded_text(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                )])
            },
        ),
        fixed(
            "test_multiple_content_types",
            "Returns text, an image and an embedded resource together.",
            || {
                CallToolResult::content(vec![
                    Content::text("Multiple content types test:"),
                    Content::image(PNG_BASE64, "image/png"),
                    Content::embedded_text(
                        "test://mixed-content-resource",
                        "application/json",
                        json!({ "test": "data", "value": 123 }).to_string(),
                    ),
                ])
            },
        ),
        // A tool-level failure is a *result* with isError, not a JSON-RPC error.
        fixed(
            "test_error_handling",
            "Always fails with a tool execution error.",
            || CallToolResult::error("This tool intentionally returns an error for testing"),
        ),
    ]
}

/// A no-argument tool whose result never changes.
fn fixed(name: &str, description: &str, result: fn() -> CallToolResult) -> Tool {
    Tool::builder(name).description(description).raw_handler(
        move |_ctx: RequestContext, _args: Map<String, Value>| async move {
            Ok::<ToolOutcome, ToolError>(result().into())
        },
    )
}
