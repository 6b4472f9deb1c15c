//! Multi round-trip tools (input-required-result-* scenarios, 2026 wire).
//!
//! Each handler is called once per round: without answers it returns
//! `InputRequired`; when `ctx.input_response(key)` holds a usable answer it
//! finishes. Answers that are missing or malformed get the same request
//! again (the suite prefers a re-prompt over an error).

use mcpwire_server::protocol::model::InputRequest;
use mcpwire_server::{CallToolResult, InputRequired, RequestContext, Tool, ToolError, ToolOutcome};
use serde_json::{Map, Value, json};

/// The MRTR tools.
pub fn tools() -> Vec<Tool> {
    vec![
        tool(
            "test_input_required_result_elicitation",
            "Asks the user's name (elicitation), then greets them.",
            elicitation,
        ),
        tool(
            "test_input_required_result_sampling",
            "Asks the client's model a question (sampling), then returns the answer.",
            sampling,
        ),
        tool(
            "test_input_required_result_list_roots",
            "Asks for the client's roots, then lists them.",
            list_roots,
        ),
        tool(
            "test_input_required_result_request_state",
            "Asks for a confirmation and checks the requestState it gets back.",
            request_state,
        ),
        tool(
            "test_input_required_result_multiple_inputs",
            "Asks for an elicitation, a sampling and the roots at once.",
            multiple_inputs,
        ),
        tool(
            "test_input_required_result_multi_round",
            "Asks two questions in two rounds, carrying state between them.",
            multi_round,
        ),
        // Integrity is the engine's job: it signs the state and rejects a
        // tampered one with a JSON-RPC error before this handler runs.
        tool(
            "test_input_required_result_tampered_state",
            "Asks for a confirmation with a signed requestState.",
            tampered_state,
        ),
        tool(
            "test_input_required_result_capabilities",
            "Asks only for the kinds of input the client declared it supports.",
            capabilities,
        ),
    ]
}

type Round = fn(&RequestContext) -> ToolOutcome;

/// A no-argument MRTR tool whose rounds are decided by `round`.
fn tool(name: &str, description: &str, round: Round) -> Tool {
    Tool::builder(name).description(description).raw_handler(
        move |ctx: RequestContext, _args: Map<String, Value>| async move {
            Ok::<ToolOutcome, ToolError>(round(&ctx))
        },
    )
}

/// The `{name: string}` elicitation the basic scenarios use.
pub fn ask_name(message: &str) -> InputRequest {
    InputRequest::elicit(message, string_form("name"))
}

/// A form schema with one required string property.
pub fn string_form(field: &str) -> Value {
    json!({
        "type": "object",
        "properties": { field: { "type": "string" } },
        "required": [field]
    })
}

/// What an elicitation answer says, if it is well formed.
pub enum Elicited<'a> {
    /// `action: "accept"` with this content.
    Accepted(&'a Map<String, Value>),
    /// `action: "decline"` or `"cancel"`.
    Refused(&'a str),
}

/// Reads an elicitation answer (`{action, content}`); `None` if malformed.
pub fn elicited<'a>(ctx: &'a RequestContext, key: &str) -> Option<Elicited<'a>> {
    let answer = ctx.input_response(key)?.as_object()?;
    match answer.get("action")?.as_str()? {
        "accept" => answer
            .get("content")
            .and_then(Value::as_object)
            .map(Elicited::Accepted),
        other @ ("decline" | "cancel") => Some(Elicited::Refused(other)),
        _ => None,
    }
}

/// An accepted string field of an elicitation answer; `None` if the answer
/// is malformed or lacks the field.
fn accepted_string<'a>(ctx: &'a RequestContext, key: &str, field: &str) -> Option<&'a str> {
    match elicited(ctx, key)? {
        Elicited::Accepted(content) => content.get(field)?.as_str(),
        Elicited::Refused(_) => None,
    }
}

/// The text of a sampling answer (`{role, content: {type: "text", text}}`).
pub fn sampled_text<'a>(ctx: &'a RequestContext, key: &str) -> Option<&'a str> {
    let content = ctx.input_response(key)?.get("content")?;
    // A single block, or (newer revisions) an array of blocks.
    let block = match content {
        Value::Array(blocks) => blocks.iter().find(|b| b.get("text").is_some())?,
        other => other,
    };
    block.get("text")?.as_str()
}

/// The roots of a roots/list answer (`{roots: [...]}`).
fn roots<'a>(ctx: &'a RequestContext, key: &str) -> Option<&'a Vec<Value>> {
    ctx.input_response(key)?.get("roots")?.as_array()
}

fn done(text: impl Into<String>) -> ToolOutcome {
    CallToolResult::text(text).into()
}

fn elicitation(ctx: &RequestContext) -> ToolOutcome {
    match elicited(ctx, "user_name") {
        Some(Elicited::Accepted(content)) => match content.get("name").and_then(Value::as_str) {
            Some(name) => done(format!("Hello, {name}!")),
            None => InputRequired::new()
                .request("user_name", ask_name("What is your name?"))
                .into(),
        },
        Some(Elicited::Refused(action)) => done(format!("No name given (action: {action}).")),
        // Round 1, a wrong key, or a malformed answer: ask (again).
        None => InputRequired::new()
            .request("user_name", ask_name("What is your name?"))
            .into(),
    }
}

fn sampling(ctx: &RequestContext) -> ToolOutcome {
    match sampled_text(ctx, "capital_question") {
        Some(text) => done(format!("The model answered: {text}")),
        None => InputRequired::new()
            .request(
                "capital_question",
                InputRequest::sample("What is the capital of France?", 100),
            )
            .into(),
    }
}

fn list_roots(ctx: &RequestContext) -> ToolOutcome {
    match roots(ctx, "client_roots") {
        Some(roots) => {
            let uris: Vec<&str> = roots
                .iter()
                .filter_map(|r| r.get("uri").and_then(Value::as_str))
                .collect();
            done(format!(
                "The client has {} root(s): {}",
                roots.len(),
                uris.join(", ")
            ))
        }
        None => InputRequired::new()
            .request("client_roots", InputRequest::list_roots())
            .into(),
    }
}

/// The state `request_state` and `tampered_state` expect back.
fn confirm_state() -> Value {
    json!({ "step": "confirm" })
}

fn ask_confirm() -> InputRequired {
    InputRequired::new()
        .request(
            "confirm",
            InputRequest::elicit(
                "Please confirm",
                json!({
                    "type": "object",
                    "properties": { "ok": { "type": "boolean" } },
                    "required": ["ok"]
                }),
            ),
        )
        .state(confirm_state())
}

fn request_state(ctx: &RequestContext) -> ToolOutcome {
    // The engine verified the signature; this checks it is *our* state.
    if ctx.request_state() == Some(&confirm_state()) && elicited(ctx, "confirm").is_some() {
        done("state-ok: the requestState came back intact.")
    } else {
        ask_confirm().into()
    }
}

fn tampered_state(ctx: &RequestContext) -> ToolOutcome {
    if ctx.request_state() == Some(&confirm_state()) && elicited(ctx, "confirm").is_some() {
        done("state-ok: the signed requestState verified.")
    } else {
        ask_confirm().into()
    }
}

fn multiple_inputs(ctx: &RequestContext) -> ToolOutcome {
    let name = accepted_string(ctx, "user_name", "name");
    let greeting = sampled_text(ctx, "greeting");
    let roots = roots(ctx, "client_roots");
    let expected = json!({ "step": "all" });
    match (name, greeting, roots) {
        (Some(name), Some(greeting), Some(roots)) if ctx.request_state() == Some(&expected) => {
            done(format!(
                "Name: {name}; greeting: {greeting}; {} root(s).",
                roots.len()
            ))
        }
        _ => InputRequired::new()
            .request("user_name", ask_name("What is your name?"))
            .request("greeting", InputRequest::sample("Generate a greeting", 50))
            .request("client_roots", InputRequest::list_roots())
            .state(expected)
            .into(),
    }
}

fn multi_round(ctx: &RequestContext) -> ToolOutcome {
    let round = ctx
        .request_state()
        .and_then(|s| s.get("round"))
        .and_then(Value::as_u64);
    let step1 = || {
        InputRequired::new()
            .request("step1", ask_name("Step 1: What is your name?"))
            .state(json!({ "round": 1 }))
            .into()
    };
    match round {
        Some(1) => match accepted_string(ctx, "step1", "name") {
            // Round 2: a different question and a different state.
            Some(name) => InputRequired::new()
                .request(
                    "step2",
                    InputRequest::elicit(
                        "Step 2: What is your favorite color?",
                        string_form("color"),
                    ),
                )
                .state(json!({ "round": 2, "name": name }))
                .into(),
            None => step1(),
        },
        Some(2) => {
            let name = ctx
                .request_state()
                .and_then(|s| s.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("stranger");
            match accepted_string(ctx, "step2", "color") {
                Some(color) => done(format!("Hello, {name}! Your favorite color is {color}.")),
                None => InputRequired::new()
                    .request(
                        "step2",
                        InputRequest::elicit(
                            "Step 2: What is your favorite color?",
                            string_form("color"),
                        ),
                    )
                    .state(json!({ "round": 2, "name": name }))
                    .into(),
            }
        }
        _ => step1(),
    }
}

fn capabilities(ctx: &RequestContext) -> ToolOutcome {
    if ctx.input_responses().is_some_and(|r| !r.is_empty()) {
        let keys: Vec<&str> = ctx
            .input_responses()
            .map(|r| r.keys().map(String::as_str).collect())
            .unwrap_or_default();
        return done(format!("Received answers for: {}", keys.join(", ")));
    }
    // Ask only for what this request's client declared.
    let mut needed = InputRequired::new();
    if ctx.client_supports("elicitation") {
        needed = needed.request("user_name", ask_name("What is your name?"));
    }
    if ctx.client_supports("sampling") {
        needed = needed.request(
            "capital_question",
            InputRequest::sample("What is the capital of France?", 100),
        );
    }
    if ctx.client_supports("roots") {
        needed = needed.request("client_roots", InputRequest::list_roots());
    }
    if needed.requests.is_empty() {
        done("The client declared no input capabilities; nothing to ask.")
    } else {
        needed.into()
    }
}
