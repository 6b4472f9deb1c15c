//! Prompts the prompts-get-* and input-required-result-non-tool-request
//! scenarios render.

use mcpwire_server::prompt::required_argument;
use mcpwire_server::protocol::ProtocolError;
use mcpwire_server::protocol::model::{Content, PromptMessage, Role};
use mcpwire_server::{InputRequired, Prompt, PromptOutcome, RequestContext};
use serde_json::{Map, Value};

use crate::tools::media::PNG_BASE64;

/// All fixture prompts.
pub fn all() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "test_simple_prompt",
            "A simple prompt without arguments.",
            Vec::new(),
            |_ctx: RequestContext, _args: Map<String, Value>| async move {
                complete(vec![user(Content::text(
                    "This is a simple prompt for testing.",
                ))])
            },
        ),
        Prompt::new(
            "test_prompt_with_arguments",
            "A prompt with two required arguments.",
            vec![
                required_argument("arg1", "First test argument"),
                required_argument("arg2", "Second test argument"),
            ],
            |_ctx: RequestContext, args: Map<String, Value>| async move {
                let text = format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arg(&args, "arg1"),
                    arg(&args, "arg2")
                );
                complete(vec![user(Content::text(text))])
            },
        ),
        Prompt::new(
            "test_prompt_with_embedded_resource",
            "A prompt that embeds the resource it is given.",
            vec![required_argument(
                "resourceUri",
                "URI of the resource to embed",
            )],
            |_ctx: RequestContext, args: Map<String, Value>| async move {
                complete(vec![
                    user(Content::embedded_text(
                        arg(&args, "resourceUri"),
                        "text/plain",
                        "Embedded resource content for testing.",
                    )),
                    user(Content::text("Please process the embedded resource above.")),
                ])
            },
        ),
        Prompt::new(
            "test_prompt_with_image",
            "A prompt that includes an image.",
            Vec::new(),
            |_ctx: RequestContext, _args: Map<String, Value>| async move {
                complete(vec![
                    user(Content::image(PNG_BASE64, "image/png")),
                    user(Content::text("Please analyze the image above.")),
                ])
            },
        ),
        Prompt::new(
            "test_input_required_result_prompt",
            "A prompt that first asks the user for context (multi round-trip).",
            Vec::new(),
            |ctx: RequestContext, _args: Map<String, Value>| async move { input_prompt(&ctx) },
        ),
    ]
}

/// Round 1 asks for `user_context`; round 2 renders with the answer.
fn input_prompt(ctx: &RequestContext) -> Result<PromptOutcome, ProtocolError> {
    use crate::tools::input::{Elicited, elicited, string_form};
    let context = match elicited(ctx, "user_context") {
        Some(Elicited::Accepted(content)) => content.get("context").and_then(Value::as_str),
        Some(Elicited::Refused(_)) => Some("(none given)"),
        None => None,
    };
    match context {
        Some(context) => complete(vec![user(Content::text(format!(
            "Answer using this context: {context}"
        )))]),
        None => Ok(PromptOutcome::InputRequired(InputRequired::new().request(
            "user_context",
            mcpwire_server::protocol::model::InputRequest::elicit(
                "What context should the prompt use?",
                string_form("context"),
            ),
        ))),
    }
}

fn complete(messages: Vec<PromptMessage>) -> Result<PromptOutcome, ProtocolError> {
    Ok(PromptOutcome::Complete {
        description: None,
        messages,
    })
}

fn user(content: Content) -> PromptMessage {
    PromptMessage {
        role: Role::User,
        content,
    }
}

/// A string argument (required ones are checked by the engine).
fn arg<'a>(args: &'a Map<String, Value>, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or_default()
}
