//! `tools/list` and `tools/call`, including multi round-trip input.

use std::sync::Arc;

use mcpwire_protocol::jsonrpc::ResultPayload;
use mcpwire_protocol::{ProtocolError, shape};
use serde_json::{Map, Value, json};
use tracing::Instrument;

use std::time::{Instant, SystemTime};

use mcpwire_protocol::model::Content;

use super::Call;
use super::Dispatcher;
use super::approve::Gate;
use super::task_run::{self as tasks, Launch, Mode};
use crate::access::{
    ApprovalTicket, AuditRecord, CallOutcome, ClientAddress, LIMIT_TIMEOUT, LimitFuture, Permit,
    Principal, caller_key, json_is_clean, redact_arguments, sanitize_text, sanitize_value,
    strip_fields,
};
use crate::context::RequestContext;
use crate::registry::RegisteredTool;
use crate::request_state::Binding;
use crate::tool::{CallToolResult, InputRequired, ToolOutcome};
use crate::view::{self, MIME_TYPE, VIA_META};

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

impl Dispatcher {
    pub(super) fn list_tools(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let cursor = cursor_param(call)?;
        let set = self.state.tool_set();
        // App-only tools are for views: a client without MCP Apps would
        // hand them to its model, so it does not see them.
        let hide_app_only =
            set.has_app_only() && !view::client_declares(call.ctx.client_capabilities());
        let enforce = self.state.access.enforce_scopes;
        if enforce || hide_app_only {
            let principal = call.ctx.extension::<Principal>();
            let page = set
                .filtered_page(cursor, call.version, &self.state.list_policy, |t| {
                    !(hide_app_only && t.tool.app_only())
                        && (!enforce || t.tool.policy.visible_to(principal))
                })
                .ok_or_else(|| invalid_cursor("tools/list"))?;
            return Ok(call.finish(self, page));
        }
        set.page(cursor, call.version, &self.state.list_policy)
            .map(ResultPayload::Raw)
            .ok_or_else(|| invalid_cursor("tools/list"))
    }

    pub(super) async fn call_tool(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let started = Instant::now();
        let at = SystemTime::now();
        let mut draft = AuditDraft::default();
        let result = self.call_tool_checked(call, &mut draft).await;
        call.note.set_tool_error(draft.tool_error);
        if self.state.audit.is_none() {
            return result;
        }
        let Some(tool) = draft.tool else {
            return result;
        };
        let (outcome, detail) = match &result {
            Ok(_) => match draft.outcome {
                Some(step) => (step, draft.detail),
                None if draft.tool_error => (CallOutcome::ToolError, draft.detail),
                // A served call keeps the yes it was served on.
                None => (CallOutcome::Success, draft.detail),
            },
            Err(e) => (CallOutcome::of_error(e.code), Some(e.message.clone())),
        };
        let mut record = audit_record(self, call, at, tool, draft.arguments);
        record.outcome = outcome;
        record.detail = detail;
        record.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.write_audit(record).await?;
        result
    }

    /// The `tools/call` pipeline: resolve → authorize → limit → validate →
    /// run → post-process (the audit wraps it in [`Self::call_tool`]).
    async fn call_tool_checked(
        &self,
        call: &Call,
        draft: &mut AuditDraft,
    ) -> Result<ResultPayload, ProtocolError> {
        let (tool, arguments) = self.resolve(call, draft)?;
        let name = tool.tool.definition.name.as_str();
        let no_arguments = Map::new();
        let args = arguments
            .and_then(Value::as_object)
            .unwrap_or(&no_arguments);
        self.authorize(call, &tool, args)?;
        let mode = tasks::mode(self, &call.ctx, &tool)?;
        let permit = self.limit(call, &tool).await?;
        let empty = Value::Object(Map::new());
        let violations = tool.input.violations(arguments.unwrap_or(&empty));
        if !violations.is_empty() {
            let text = format!(
                "Invalid arguments for tool \"{name}\": {}. Fix the arguments to match the tool's inputSchema and call it again.",
                violations.join("; ")
            );
            draft.fail(&text);
            return Ok(self.tool_result(call, CallToolResult::error(text)));
        }
        let task = matches!(mode, Mode::Task { .. });
        match self.gate(call, &tool, args, task, draft).await? {
            Gate::Answer(answer) => return Ok(answer),
            Gate::Proceed { consumed } => draft.gated = consumed,
            Gate::Resume(state) => draft.resume = Some(state),
            Gate::Later(ticket) => {
                return self
                    .task_after_approval(call, &tool, args, permit, ticket, draft)
                    .await;
            }
        }
        self.execute(call, &tool, args, mode, permit, draft).await
    }

    /// Resolve: the tool named by the call, and its arguments (borrowed
    /// from the request, `None` when absent: validation needs no copy).
    fn resolve<'c>(
        &self,
        call: &'c Call,
        draft: &mut AuditDraft,
    ) -> Result<(Arc<RegisteredTool>, Option<&'c Value>), ProtocolError> {
        let Some(name) = call.params.get("name").and_then(Value::as_str) else {
            return Err(ProtocolError::invalid_params(
                "Invalid params: tools/call needs a string \"name\"; call tools/list to see the tools.",
            ));
        };
        let arguments = match call.params.get("arguments") {
            None | Some(Value::Null) => None,
            Some(v @ Value::Object(_)) => Some(v),
            Some(_) => {
                return Err(ProtocolError::invalid_params(
                    "Invalid params: \"arguments\" must be an object.",
                ));
            }
        };
        let tool = match &call.tool {
            Some(tool) => Arc::clone(tool),
            None => self.look_up(name, draft)?,
        };
        draft.tool = Some(name.to_owned());
        call.note.set_tool(&tool.stats);
        if self.state.audit.is_some()
            && let Some(args) = arguments.and_then(Value::as_object)
        {
            draft.arguments = redact_arguments(args, &tool.tool.policy.redacted_arguments);
        }
        Ok((tool, arguments))
    }

    /// The tool named `name` in the current set, unless the engine already
    /// looked it up for the header checks.
    fn look_up(
        &self,
        name: &str,
        draft: &mut AuditDraft,
    ) -> Result<Arc<RegisteredTool>, ProtocolError> {
        let set = self.state.tool_set();
        let Some(tool) = set.get(name).cloned() else {
            // Audited as a protocol error under the name asked for (cut
            // and cleaned: it is the caller's text); its arguments are
            // not kept, as no policy says which of them are personal.
            draft.tool = Some(
                sanitize_text(name)
                    .chars()
                    .take(AUDITED_NAME_CHARS)
                    .collect(),
            );
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
        Ok(tool)
    }

    /// Authorize: the scopes the tool's policy asks for.
    fn authorize(
        &self,
        call: &Call,
        tool: &RegisteredTool,
        arguments: &Map<String, Value>,
    ) -> Result<(), ProtocolError> {
        if !self.state.access.enforce_scopes {
            return Ok(());
        }
        let principal = call.ctx.extension::<Principal>();
        let Err(denied) = tool.tool.policy.check(principal, arguments) else {
            return Ok(());
        };
        let name = &tool.tool.definition.name;
        let which = if denied.all_required {
            "all of"
        } else {
            "one of"
        };
        let message = match principal {
            None => format!("Access denied: tool \"{name}\" needs authentication."),
            Some(_) => format!(
                "Access denied: this call to \"{name}\" needs {which} the scopes {}.",
                denied.scopes.join(", ")
            ),
        };
        Err(ProtocolError::access_denied(message, &denied.scopes))
    }

    /// Limit: the caller's rate and concurrency; the permit is held until
    /// the handler is done. A limiter that fails or does not answer within
    /// [`LIMIT_TIMEOUT`] refuses the call (fail closed).
    async fn limit(
        &self,
        call: &Call,
        tool: &RegisteredTool,
    ) -> Result<Option<Permit>, ProtocolError> {
        let access = &self.state.access;
        let name = tool.tool.definition.name.as_str();
        let rate = tool.tool.policy.rate_limit.or(access.rate_limit);
        if rate.is_none() && access.max_concurrent_calls.is_none() {
            return Ok(None);
        }
        let caller = caller_key(
            call.ctx.extension::<Principal>(),
            call.ctx.extension::<ClientAddress>(),
        );
        let limiter = &self.state.limiter;
        if let Some(limit) = rate
            && let Err(wait) = bounded(limiter.take(&caller, name, limit)).await?
        {
            let secs = wait.as_secs() + 1;
            return Err(ProtocolError::rate_limited(
                format!("Rate limit exceeded for tool \"{name}\"; retry in {secs} s."),
                secs,
            ));
        }
        let Some(max) = access.max_concurrent_calls else {
            return Ok(None);
        };
        bounded(limiter.acquire(&caller, max)).await?.map(Some).ok_or_else(|| {
            ProtocolError::rate_limited(
                format!("Too many concurrent calls (limit {max}); retry when one of your calls finishes."),
                1,
            )
        })
    }

    /// Run → post-process: the handler (as a task when the call asks for
    /// one), again after each answered input round.
    async fn execute(
        &self,
        call: &Call,
        tool: &Arc<RegisteredTool>,
        arguments: &Map<String, Value>,
        mode: Mode,
        mut permit: Option<Permit>,
        draft: &mut AuditDraft,
    ) -> Result<ResultPayload, ProtocolError> {
        let name = tool.tool.definition.name.as_str();
        let binding = call_binding(call, name, arguments);
        let mut ctx = call.ctx.clone();
        if call.version.is_modern() && !draft.gated {
            self.read_round_trip_params(call, &mut ctx, &binding)?;
            if let Some(state) = draft.resume.take() {
                ctx.request_state = (!state.is_null()).then_some(state);
            }
        }
        let mut first = None;
        if let Mode::Task { defer } = mode {
            let launch = tasks::call_as_task(
                self,
                ctx.clone(),
                Arc::clone(tool),
                arguments.clone(),
                permit.take(),
                defer,
            )
            .await?;
            match launch {
                Launch::Created(mut created) => {
                    created.insert("resultType".into(), json!("task"));
                    return Ok(call.finish(self, created));
                }
                Launch::Finished(outcome, c) => {
                    ctx = *c;
                    first = Some(outcome);
                }
            }
        }
        for _ in 0..MAX_ROUNDS {
            let outcome = match first.take() {
                Some(outcome) => outcome?,
                None => self.run_tool(tool, ctx.clone(), arguments.clone()).await?,
            };
            let ir = match outcome {
                ToolOutcome::Complete(result) => {
                    let result = self.post_process(&call.ctx, tool, result)?;
                    if result.is_error {
                        draft.fail(&text_of(&result));
                    }
                    return Ok(self.tool_result(call, result));
                }
                ToolOutcome::InputRequired(ir) if draft.confirmed && call.version.is_modern() => {
                    self.behind_confirmation(tool, ir)?
                }
                ToolOutcome::InputRequired(ir) => ir,
            };
            match self.input_required(call, &mut ctx, ir, &binding).await? {
                Next::Respond(r) => return Ok(r),
                Next::Retry => continue,
                Next::Fail(msg) => {
                    draft.fail(&msg);
                    return Ok(self.tool_result(call, CallToolResult::error(msg)));
                }
            }
        }
        tracing::error!(tool = name, "tool kept asking for input; giving up");
        Err(ProtocolError::internal(format!(
            "Internal error: tool \"{name}\" asked for input more than {MAX_ROUNDS} times."
        )))
    }

    /// A task-augmented call whose operator approval is pending: answers
    /// with a `working` task at once (its `statusMessage` names the
    /// approval); the task's runner waits for the decision and serves or
    /// refuses the call.
    async fn task_after_approval(
        &self,
        call: &Call,
        tool: &Arc<RegisteredTool>,
        arguments: &Map<String, Value>,
        permit: Option<Permit>,
        ticket: ApprovalTicket,
        draft: &mut AuditDraft,
    ) -> Result<ResultPayload, ProtocolError> {
        let binding = call_binding(call, &tool.tool.definition.name, arguments);
        let mut ctx = call.ctx.clone();
        // The operator gate reads no round-trip params: they are the handler's.
        self.read_round_trip_params(call, &mut ctx, &binding)?;
        let audit = match (&self.state.audit, &draft.tool) {
            (Some(_), Some(name)) => Some(audit_record(
                self,
                call,
                SystemTime::now(),
                name.clone(),
                draft.arguments.clone(),
            )),
            _ => None,
        };
        let approval = ticket.id.clone();
        let awaiting = tasks::Awaiting { ticket, audit };
        let mut created = tasks::call_after_approval(
            self,
            ctx,
            Arc::clone(tool),
            arguments.clone(),
            permit,
            awaiting,
        )
        .await?;
        let task = created
            .get("taskId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        draft.outcome = Some(CallOutcome::ApprovalPending);
        draft.detail = Some(format!(
            "approval {approval} pending; the call waits for it in task {task}"
        ));
        created.insert("resultType".into(), json!("task"));
        Ok(call.finish(self, created))
    }

    /// Stores one audit record; an error (logged, throttled) is the
    /// -32603 that withholds the answer.
    pub(super) async fn write_audit(&self, record: AuditRecord) -> Result<(), ProtocolError> {
        let Some(sink) = &self.state.audit else {
            return Ok(());
        };
        // The sink logs the record itself; this line is for debugging.
        tracing::debug!(
            tool = %record.tool,
            subject = record.subject.as_deref().unwrap_or("-"),
            outcome = record.outcome.as_str(),
            latency_ms = record.latency_ms,
            "tools/call"
        );
        let audit = sink
            .record(record)
            .instrument(crate::observe::trace::audit_span());
        let Err(why) = audit.await else {
            return Ok(());
        };
        // An answer that cannot be audited is not sent. On a full disk
        // every call fails: one line per period, with a count.
        static FAILED: crate::observe::LogThrottle =
            crate::observe::LogThrottle::new(crate::observe::LOG_EVERY);
        if let Some(suppressed) = FAILED.admit() {
            tracing::error!(
                error = %why,
                suppressed,
                "audit trail write failed; withholding the response"
            );
        }
        Err(ProtocolError::internal(
            "Internal error: the audit trail is unavailable, so the call was not answered; retry later.",
        ))
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
            Some(Value::String(token)) => Some(self.state.signer.verify(token, binding)?),
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
        let outcome = match self.state.options.call_timeout {
            Some(limit) => match tokio::time::timeout(limit, fut).await {
                Ok(r) => r,
                Err(_) => {
                    tracing::warn!(tool = %name, "tool call timed out");
                    return Ok(ToolOutcome::Complete(CallToolResult::error(format!(
                        "Tool \"{name}\" timed out after {:.1} s; try a narrower request or retry later.",
                        limit.as_secs_f64()
                    ))));
                }
            },
            None => fut.await,
        };
        ToolOutcome::settle(name, outcome)
    }

    /// Field redaction, sanitization, the size cap, then the output-schema
    /// check, in that order (redacted fields are optional in the schema).
    pub(crate) fn post_process(
        &self,
        ctx: &RequestContext,
        tool: &RegisteredTool,
        mut result: CallToolResult,
    ) -> Result<CallToolResult, ProtocolError> {
        let access = &self.state.access;
        // A schema derived from the output type holds by construction;
        // release builds trust it, debug builds (and tests) still check.
        let trusted = tool.tool.output_from_type && !cfg!(debug_assertions);
        // A typed result known only as JSON text stays text unless it must
        // be redacted, sanitised or validated (the common case: one
        // serialisation in all).
        if result.structured_is_mirror && self.must_parse(ctx, tool, &result, trusted) {
            result.parse_mirror().map_err(|e| {
                ProtocolError::internal(format!("Internal error: unreadable tool output: {e}"))
            })?;
        }
        // A typed result's text block mirrors its structured content; keep
        // the mirror exact after the structured content changes.
        let mirrored = result.text_mirrors_structured && result.structured.is_some();
        if let Some(structured) = result.structured.as_mut() {
            if access.enforce_scopes {
                let principal = ctx.extension::<Principal>();
                for (pointer, scope) in &tool.tool.policy.field_scopes {
                    if !principal.is_some_and(|p| p.has_scope(scope)) {
                        strip_fields(structured, pointer);
                    }
                }
            }
            if access.sanitize_output {
                sanitize_value(structured);
            }
        }
        if mirrored && let Some(s) = &result.structured {
            result.content = vec![Content::text(s.to_string())];
        } else if access.sanitize_output && !result.structured_is_mirror {
            for block in &mut result.content {
                if let Content::Text { text, .. } = block
                    && let std::borrow::Cow::Owned(clean) = sanitize_text(text)
                {
                    *text = clean;
                }
            }
        }
        let size = match (result.prepared(), result.mirror_text()) {
            (Some(shared), _) => {
                shared.size(|text| super::mirrored::result_size(text, result.is_error))
            }
            (None, Some(text)) => super::mirrored::result_size(text, result.is_error),
            (None, None) => Value::Object(result.to_map()).to_string().len(),
        };
        if size > access.max_result_bytes {
            let name = &tool.tool.definition.name;
            tracing::warn!(tool = %name, size, limit = access.max_result_bytes, "tool result over the size limit");
            if result.has_structured() {
                return Ok(CallToolResult::error(format!(
                    "The result of \"{name}\" is {size} bytes, over this server's limit of {} bytes; ask for less (a narrower filter or a smaller group).",
                    access.max_result_bytes
                )));
            }
            truncate_text(&mut result, access.max_result_bytes);
        }
        if !result.is_error
            && !trusted
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
        Ok(result)
    }

    /// Whether a typed result known only as text must be parsed: a field
    /// the caller may not see is to be stripped, its text holds something
    /// sanitising would remove, or its schema is checked.
    fn must_parse(
        &self,
        ctx: &RequestContext,
        tool: &RegisteredTool,
        result: &CallToolResult,
        trusted: bool,
    ) -> bool {
        let access = &self.state.access;
        let redacts = access.enforce_scopes && {
            let principal = ctx.extension::<Principal>();
            tool.tool
                .policy
                .field_scopes
                .iter()
                .any(|(_, scope)| !principal.is_some_and(|p| p.has_scope(scope)))
        };
        let validates = !result.is_error && !trusted && tool.output.is_some();
        let dirty = access.sanitize_output
            && match result.prepared() {
                Some(shared) => !shared.clean,
                None => result
                    .mirror_text()
                    .is_some_and(|text| !json_is_clean(text)),
            };
        redacts || validates || dirty
    }

    pub(super) fn tool_result(&self, call: &Call, result: CallToolResult) -> ResultPayload {
        if let Some(text) = result.mirror_text() {
            let is_object = result.structured_is_object();
            let info = Some(&self.state.info_json);
            let finish = |text: &str| {
                super::mirrored::payload(text, is_object, result.is_error, call.version, info)
            };
            let payload = match result.prepared() {
                Some(shared) => {
                    let shape = super::mirrored::shape(call.version, is_object);
                    shared.payload(shape, self.state.id, finish)
                }
                None => finish(text),
            };
            if let Some(payload) = payload {
                return payload;
            }
        }
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
        if let Some((cap, required)) = ir.missing_capability(ctx) {
            if call.version.is_modern() {
                return Err(ProtocolError::missing_capability(
                    required,
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
            let requests = ir.wire_requests();
            let state = self
                .state
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
                    self.state.options.peer_request_timeout,
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

/// What a `tools/call`'s request state is bound to.
pub(super) fn call_binding<'a>(
    call: &'a Call,
    name: &'a str,
    arguments: &'a Map<String, Value>,
) -> Binding<'a> {
    Binding {
        method: "tools/call",
        name,
        arguments,
        // A state handed to one principal is refused to any other.
        principal: call
            .ctx
            .extension::<Principal>()
            .map(|p| p.subject.as_str()),
    }
}

/// The audit row of this call (outcome `Success`, no detail, no latency:
/// the caller fills those in).
fn audit_record(
    dispatcher: &Dispatcher,
    call: &Call,
    at: SystemTime,
    tool: String,
    arguments: Value,
) -> AuditRecord {
    let principal = call.ctx.extension::<Principal>();
    AuditRecord {
        at,
        subject: principal.map(|p| p.subject.clone()),
        client_id: principal.and_then(|p| p.client_id.clone()),
        client_name: call
            .ctx
            .client_info()
            .and_then(|c| c.get("name"))
            .and_then(Value::as_str)
            .map(|n| sanitize_text(n).chars().take(128).collect()),
        remote_addr: call
            .ctx
            .extension::<ClientAddress>()
            .map(|a| a.0.to_string()),
        tool,
        arguments,
        outcome: CallOutcome::Success,
        detail: None,
        latency_ms: 0,
        protocol_version: call.version.as_str().to_owned(),
        via: via_view(dispatcher, call),
    }
}

/// The view that made this call through its host: the call's
/// `_meta["dev.mcpwire/view"]`, when it names a view this server serves
/// (anything else is not kept: it is the caller's text).
fn via_view(dispatcher: &Dispatcher, call: &Call) -> Option<String> {
    let uri = call.params.get("_meta")?.get(VIA_META)?.as_str()?;
    dispatcher
        .state
        .resources()
        .iter()
        .any(|r| r.definition.uri == uri && r.definition.mime_type.as_deref() == Some(MIME_TYPE))
        .then(|| uri.to_owned())
}

/// Awaits a limiter decision for at most [`LIMIT_TIMEOUT`]; a limiter that
/// cannot decide refuses the call with an actionable -32603.
async fn bounded<T>(decision: LimitFuture<'_, T>) -> Result<T, ProtocolError> {
    let why = match tokio::time::timeout(LIMIT_TIMEOUT, decision).await {
        Ok(Ok(v)) => return Ok(v),
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no answer within {} s", LIMIT_TIMEOUT.as_secs()),
    };
    tracing::error!(error = %why, "rate limiter unavailable; refusing the call");
    Err(ProtocolError::internal(
        "Internal error: the rate limiter is unavailable, so the call was refused (the failure was logged); retry in a few seconds.",
    ))
}

/// Longest unknown tool name kept in the audit trail, in characters.
const AUDITED_NAME_CHARS: usize = 128;

/// What the audit record needs from inside the call.
#[derive(Default)]
pub(super) struct AuditDraft {
    /// The tool name, once known; for an unknown tool the name asked for
    /// (calls without a name are not audited).
    tool: Option<String>,
    /// Redacted arguments.
    arguments: Value,
    /// The call ended as a tool error.
    tool_error: bool,
    /// Its message (or the approval a served call was served on).
    pub(super) detail: Option<String>,
    /// An approval step the call ended on, instead of its plain outcome.
    pub(super) outcome: Option<CallOutcome>,
    /// The call's round-trip params were the approval gate's answer, not
    /// its handler's: the handler starts without them.
    gated: bool,
    /// The user confirmed this call (2026-07-28): the handler's own input
    /// rounds carry the gate's marker, so its retries are not asked again.
    pub(super) confirmed: bool,
    /// The handler's own request state, unwrapped from the gate's marker
    /// of a confirmed call's later round.
    pub(super) resume: Option<Value>,
}

impl AuditDraft {
    pub(super) fn fail(&mut self, message: &str) {
        self.tool_error = true;
        self.detail = Some(message.chars().take(500).collect());
    }
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            Content::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Cuts text blocks so the result fits `limit`, with an explicit notice.
fn truncate_text(result: &mut CallToolResult, limit: usize) {
    let notice =
        format!("\n[truncated: the result exceeded {limit} bytes; ask for less to see the rest]");
    let mut budget = limit.saturating_sub(notice.len() + 256);
    for block in &mut result.content {
        if let Content::Text { text, .. } = block {
            if text.len() > budget {
                let mut cut = budget;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
                text.push_str(&notice);
                budget = 0;
            } else {
                budget -= text.len();
            }
        }
    }
    result
        .content
        .retain(|c| !matches!(c, Content::Text { text, .. } if text.is_empty()));
}
