//! `tools/list` and `tools/call`, including multi round-trip input.

use std::sync::Arc;

use mcp_protocol::jsonrpc::ResultPayload;
use mcp_protocol::{ProtocolError, shape};
use serde_json::{Map, Value, json};

use super::Call;
use crate::context::RequestContext;
use crate::registry::RegisteredTool;
use crate::request_state::Binding;
use crate::server::Server;
use crate::tool::{CallToolResult, InputRequired, ToolError, ToolOutcome};

/// How many times the legacy bridge re-invokes a handler before giving up.
const MAX_ROUNDS: usize = 10;

/// What to do after a handler asked for input.
pub(super) enum Next {
    /// Send this `input_required` result (modern wire).
    Respond(ResultPayload),
    /// The context now holds the answers: call the handler again (legacy bridge).
    Retry,
    /// The input cannot be had (legacy wire); the message says why.
    Fail(String),
}

/// Reads the optional string cursor of a list request.
pub(super) fn cursor_param(call: &Call) -> Result<Option<&str>, ProtocolError> {
    match call.params.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ProtocolError::invalid_params(
            "Invalid params: cursor must be a string taken from a previous nextCursor.",
        )),
    }
}

/// The error for a cursor this server did not issue (or that expired).
pub(super) fn invalid_cursor(method: &str) -> ProtocolError {
    ProtocolError::invalid_params(format!(
        "Invalid params: unknown or expired cursor; call {method} without a cursor to start from the first page."
    ))
}

impl Server {
    pub(super) fn list_tools(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let cursor = cursor_param(call)?;
        self.tool_set()
            .page(cursor, call.version, &self.inner.list_policy)
            .map(ResultPayload::Raw)
            .ok_or_else(|| invalid_cursor("tools/list"))
    }

    pub(super) async fn call_tool(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let Some(name) = call.params.get("name").and_then(Value::as_str) else {
            return Err(ProtocolError::invalid_params(
                "Invalid params: tools/call needs a string \"name\"; call tools/list to see the tools.",
            ));
        };
        let arguments = match call.params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) => a.clone(),
            Some(_) => {
                return Err(ProtocolError::invalid_params(
                    "Invalid params: \"arguments\" must be an object.",
                ));
            }
        };
        let set = self.tool_set();
        let Some(tool) = set.get(name).cloned() else {
            let known: Vec<&str> = set
                .tools
                .iter()
                .take(30)
                .map(|t| t.tool.definition.name.as_str())
                .collect();
            return Err(ProtocolError::invalid_params(format!(
                "Invalid params: unknown tool \"{name}\"; available tools: {}.",
                known.join(", ")
            ))
            .with_data(json!({ "tool": name })));
        };
        drop(set);
        let violations = tool.input.violations(&Value::Object(arguments.clone()));
        if !violations.is_empty() {
            let text = format!(
                "Invalid arguments for tool \"{name}\": {}. Fix the arguments to match the tool's inputSchema and call it again.",
                violations.join("; ")
            );
            return Ok(self.tool_result(call, CallToolResult::error(text)));
        }
        let binding = Binding {
            method: "tools/call",
            name,
            arguments: &arguments,
            principal: None,
        };
        let mut ctx = call.ctx.clone();
        if call.version.is_modern() {
            self.read_round_trip_params(call, &mut ctx, &binding)?;
        }
        for _ in 0..MAX_ROUNDS {
            match self.run_tool(&tool, ctx.clone(), arguments.clone()).await? {
                ToolOutcome::Complete(result) => return self.complete_tool(call, &tool, result),
                ToolOutcome::InputRequired(ir) => {
                    match self.input_required(call, &mut ctx, ir, &binding).await? {
                        Next::Respond(r) => return Ok(r),
                        Next::Retry => continue,
                        Next::Fail(msg) => {
                            return Ok(self.tool_result(call, CallToolResult::error(msg)));
                        }
                    }
                }
            }
        }
        tracing::error!(tool = name, "tool kept asking for input; giving up");
        Err(ProtocolError::internal(format!(
            "Internal error: tool \"{name}\" asked for input more than {MAX_ROUNDS} times."
        )))
    }

    /// Reads `inputResponses` and a verified `requestState` into the context.
    pub(super) fn read_round_trip_params(
        &self,
        call: &Call,
        ctx: &mut RequestContext,
        binding: &Binding<'_>,
    ) -> Result<(), ProtocolError> {
        ctx.input_responses = match call.params.get("inputResponses") {
            None => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(_) => {
                return Err(ProtocolError::invalid_params(
                    "Invalid params: inputResponses must be an object keyed by the names in inputRequests.",
                ));
            }
        };
        ctx.request_state = match call.params.get("requestState") {
            None | Some(Value::Null) => None,
            Some(Value::String(token)) => Some(self.inner.signer.verify(token, binding)?),
            Some(_) => {
                return Err(ProtocolError::invalid_params(
                    "Invalid params: requestState must be the string the server returned.",
                ));
            }
        };
        Ok(())
    }

    async fn run_tool(
        &self,
        tool: &Arc<RegisteredTool>,
        ctx: RequestContext,
        arguments: Map<String, Value>,
    ) -> Result<ToolOutcome, ProtocolError> {
        let name = &tool.tool.definition.name;
        let fut = tool.tool.handler.call(ctx, arguments);
        let outcome = match self.inner.options.call_timeout {
            Some(limit) => match tokio::time::timeout(limit, fut).await {
                Ok(r) => r,
                Err(_) => {
                    tracing::warn!(tool = %name, "tool call timed out");
                    return Ok(ToolOutcome::Complete(CallToolResult::error(format!(
                        "Tool \"{name}\" timed out after {} s; try a narrower request or retry later.",
                        limit.as_secs()
                    ))));
                }
            },
            None => fut.await,
        };
        match outcome {
            Ok(o) => Ok(o),
            Err(ToolError::Execution(msg)) => Ok(ToolOutcome::Complete(CallToolResult::error(msg))),
            Err(ToolError::Protocol(e)) => Err(e),
            Err(ToolError::Internal(detail)) => {
                tracing::error!(tool = %name, error = %detail, "tool failed");
                Err(ProtocolError::internal(format!(
                    "Internal error while running tool \"{name}\"; the failure was logged."
                )))
            }
        }
    }

    fn complete_tool(
        &self,
        call: &Call,
        tool: &RegisteredTool,
        result: CallToolResult,
    ) -> Result<ResultPayload, ProtocolError> {
        if !result.is_error
            && let Some(schema) = &tool.output
        {
            let violations = match &result.structured {
                Some(s) => schema.violations(s),
                None => vec!["structuredContent is missing".to_owned()],
            };
            if !violations.is_empty() {
                let name = &tool.tool.definition.name;
                tracing::error!(tool = %name, ?violations, "tool output does not match its outputSchema");
                return Err(ProtocolError::internal(format!(
                    "Internal error: tool \"{name}\" produced output that does not match its outputSchema; the failure was logged."
                )));
            }
        }
        Ok(self.tool_result(call, result))
    }

    fn tool_result(&self, call: &Call, result: CallToolResult) -> ResultPayload {
        call.finish(self, shape::call_result_for(result.to_map(), call.version))
    }

    /// Turns a handler's request for input into an `input_required` result
    /// (modern), or fetches the input from the legacy client and prepares
    /// the retry.
    pub(super) async fn input_required(
        &self,
        call: &Call,
        ctx: &mut RequestContext,
        ir: InputRequired,
        binding: &Binding<'_>,
    ) -> Result<Next, ProtocolError> {
        let missing: Vec<_> = ir
            .requests
            .iter()
            .map(|(_, r)| r.required_capability())
            .filter(|(cap, _)| !ctx.client_supports(cap))
            .collect();
        if let Some((cap, required)) = missing.first() {
            if call.version.is_modern() {
                return Err(ProtocolError::missing_capability(
                    required.clone(),
                    format!(
                        "This request needs the client capability \"{cap}\", which the request did not declare."
                    ),
                ));
            }
            return Ok(Next::Fail(format!(
                "This operation needs the client capability \"{cap}\", which this client did not declare at initialize."
            )));
        }
        if call.version.is_modern() {
            let mut requests = Map::new();
            for (key, r) in &ir.requests {
                requests.insert(
                    key.clone(),
                    json!({ "method": r.method, "params": r.params }),
                );
            }
            let state = self
                .inner
                .signer
                .sign(binding, ir.state.as_ref().unwrap_or(&Value::Null));
            let mut result = Map::new();
            result.insert("resultType".into(), json!("input_required"));
            if !requests.is_empty() {
                result.insert("inputRequests".into(), Value::Object(requests));
            }
            result.insert("requestState".into(), json!(state));
            return Ok(Next::Respond(call.finish(self, result)));
        }
        let (Some(session), Some(outbound)) = (&call.session, &ctx.outbound) else {
            return Ok(Next::Fail(
                "This operation needs input from the client, which requires an initialized session with a streaming response."
                    .to_owned(),
            ));
        };
        let mut answers = Map::new();
        for (key, r) in &ir.requests {
            let answer = session
                .request(
                    outbound,
                    &r.method,
                    Value::Object(r.params.clone()),
                    self.inner.options.peer_request_timeout,
                    &ctx.cancel,
                )
                .await;
            match answer {
                Ok(v) => {
                    answers.insert(key.clone(), v);
                }
                Err(why) => {
                    return Ok(Next::Fail(format!(
                        "Could not get input from the client: {why}."
                    )));
                }
            }
        }
        ctx.input_responses = Some(answers);
        ctx.request_state = ir.state;
        Ok(Next::Retry)
    }
}
