//! The approval gate of `tools/call`: before a handler runs, the human yes
//! its tool's policy asks for — the user's (`confirm`, an elicitation) or
//! an operator's (`operator`, a pending approval in the store).
//!
//! A yes is bound to the exact call: the signed `requestState` carries a
//! one-time number and the policy version, and is bound to the subject,
//! the tool and a digest of the arguments; an operator's approval is
//! found by the same subject, tool, digest and version, and used up by the
//! one call it serves.

use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::jsonrpc::ResultPayload;
use mcpwire_protocol::model::InputRequest;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::tools::{AuditDraft, Next, call_binding};
use super::{Call, Dispatcher};
use crate::access::{
    Approval, ApprovalError, ApprovalFallback, ApprovalRequest, ApprovalStatus, ApprovalTicket,
    CallOutcome, Principal, redact_arguments, sanitize_text,
};
use crate::context::RequestContext;
use crate::registry::RegisteredTool;
use crate::request_state::digest;
use crate::tool::{CallToolResult, InputRequired};

/// The `inputRequests` key of the confirmation question.
const KEY: &str = "mcpwire.approval";

/// The request-state field that marks a confirmation question.
const STATE_FIELD: &str = "mcpwire.approval";

/// Longest summary shown to the user or the operator, in characters.
const SUMMARY_CHARS: usize = 400;

/// What the gate decided.
pub(super) enum Gate {
    /// Run the handler. `consumed`: the call's `inputResponses` and
    /// `requestState` were the gate's own (not the handler's).
    Proceed { consumed: bool },
    /// Run the handler on its own later input round of a call the user
    /// already confirmed: the call's `inputResponses` are the handler's,
    /// and this is its request state (unwrapped from the gate's marker).
    Resume(Value),
    /// Answer with this instead (a question, or a tool error).
    Answer(ResultPayload),
    /// An operator's approval is pending and the call asked for a task:
    /// answer with a task that waits for the decision.
    Later(ApprovalTicket),
}

/// What a decided (or lapsed) approval means for its call.
pub(super) enum Verdict {
    /// Run the handler once: the approval was redeemed; `by` approved it.
    Serve { by: String },
    /// Do not run it: audit this outcome, answer this tool error.
    Refuse(CallOutcome, String),
}

impl Dispatcher {
    /// Asks for the yes this call needs, if any. `task`: the call runs as
    /// a task, so a pending operator approval is waited for inside it.
    pub(super) async fn gate(
        &self,
        call: &Call,
        tool: &RegisteredTool,
        arguments: &Map<String, Value>,
        task: bool,
        draft: &mut AuditDraft,
    ) -> Result<Gate, ProtocolError> {
        let policy = &tool.tool.policy;
        let principal = call.ctx.extension::<Principal>();
        let is_self = policy.is_self_call(principal, arguments);
        match policy.approval.effective(arguments, is_self) {
            Approval::None => Ok(Gate::Proceed { consumed: false }),
            Approval::Confirm if call.ctx.client_supports("elicitation") => {
                self.confirm(call, tool, arguments, draft).await
            }
            Approval::Confirm => match self.state.approval.fallback {
                ApprovalFallback::Operator => {
                    self.operator(call, tool, arguments, task, draft).await
                }
                ApprovalFallback::Deny => {
                    let name = &tool.tool.definition.name;
                    let text = format!(
                        "Calls to \"{name}\" need the user's confirmation, and this client cannot ask (it declared no elicitation capability). Tell the user to make this request from a client that can confirm tool calls; do not retry from here."
                    );
                    Ok(self.refuse(call, draft, CallOutcome::ApprovalDenied, text))
                }
            },
            Approval::Operator => self.operator(call, tool, arguments, task, draft).await,
        }
    }

    /// A tool error as the call's answer, audited with `outcome`.
    fn refuse(
        &self,
        call: &Call,
        draft: &mut AuditDraft,
        outcome: CallOutcome,
        text: String,
    ) -> Gate {
        draft.fail(&text);
        draft.outcome = Some(outcome);
        Gate::Answer(self.tool_result(call, CallToolResult::error(text)))
    }

    /// `confirm`: the user answers a yes/no question in their client.
    async fn confirm(
        &self,
        call: &Call,
        tool: &RegisteredTool,
        arguments: &Map<String, Value>,
        draft: &mut AuditDraft,
    ) -> Result<Gate, ProtocolError> {
        let binding = call_binding(call, &tool.tool.definition.name, arguments);
        let version = tool.tool.policy.approval.version;
        if call.version.is_modern()
            && let Some(token) = call.params.get("requestState").and_then(Value::as_str)
        {
            let state = self.state.signer.verify(token, &binding)?;
            if let Some(marker) = state.get(STATE_FIELD) {
                return self.confirmed(call, tool, marker, version, draft).await;
            }
        }
        let ask = self.question(call, tool, arguments).await;
        if call.version.is_modern() {
            let nonce = nonce().map_err(|_| {
                ProtocolError::internal("Internal error: no random source for the confirmation.")
            })?;
            let ir = InputRequired::new()
                .request(KEY, ask)
                .state(json!({ STATE_FIELD: { "n": nonce, "v": version } }));
            let mut ctx = call.ctx.clone();
            let Next::Respond(payload) = self.input_required(call, &mut ctx, ir, &binding).await?
            else {
                return Err(ProtocolError::internal(
                    "Internal error: the confirmation could not be asked.",
                ));
            };
            draft.outcome = Some(CallOutcome::ApprovalPending);
            draft.detail = Some("asked the user to confirm".into());
            return Ok(Gate::Answer(payload));
        }
        // Earlier revisions: the engine asks over the session and waits.
        let mut ctx = call.ctx.clone();
        let ir = InputRequired::new().request(KEY, ask);
        match self.input_required(call, &mut ctx, ir, &binding).await? {
            Next::Retry => {
                let answer = ctx.input_response(KEY).cloned().unwrap_or(Value::Null);
                Ok(self.answered(call, tool, &answer, draft))
            }
            Next::Respond(_) => Err(ProtocolError::internal(
                "Internal error: the confirmation could not be asked.",
            )),
            Next::Fail(why) => Ok(self.refuse(
                call,
                draft,
                CallOutcome::ApprovalDenied,
                format!("The user's confirmation could not be had ({why}); the call was not run."),
            )),
        }
    }

    /// The retry of a confirmation question: the answer, once.
    async fn confirmed(
        &self,
        call: &Call,
        tool: &RegisteredTool,
        marker: &Value,
        version: u64,
        draft: &mut AuditDraft,
    ) -> Result<Gate, ProtocolError> {
        let stale = || {
            ProtocolError::invalid_params(
                "Invalid params: the tool's approval policy changed after the user was asked; call the tool again without requestState.",
            )
        };
        if marker["v"].as_u64() != Some(version) {
            return Err(stale());
        }
        let answer = call
            .params
            .get("inputResponses")
            .and_then(|r| r.get(KEY))
            .cloned()
            .unwrap_or(Value::Null);
        let resume = marker.get("then").cloned();
        if answer.is_null() && resume.is_none() {
            return Err(ProtocolError::invalid_params(format!(
                "Invalid params: inputResponses must carry the answer to \"{KEY}\"."
            )));
        }
        let nonce = marker["n"].as_str().unwrap_or_default();
        let expires = SystemTime::now() + self.state.options.request_state_ttl;
        match self
            .state
            .approvals
            .spend_confirmation(nonce, expires)
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                return Err(ProtocolError::invalid_params(
                    "Invalid params: this confirmation was already used; call the tool again without requestState to ask the user again.",
                ));
            }
            Err(e) => return Err(unavailable(&e)),
        }
        if let Some(state) = resume {
            // A later round of the handler's own: the yes was given for
            // this exact call, and this round's marker is now spent.
            draft.confirmed = true;
            draft.detail = Some("confirmed by the user".into());
            return Ok(Gate::Resume(state));
        }
        let gate = self.answered(call, tool, &answer, draft);
        Ok(match gate {
            Gate::Proceed { .. } => Gate::Proceed { consumed: true },
            other => other,
        })
    }

    /// A confirmed call's handler asks for input itself (2026-07-28): its
    /// state travels inside the gate's marker, with a fresh one-time
    /// number, so the retry is not asked to confirm again and each round's
    /// state serves once.
    pub(super) fn behind_confirmation(
        &self,
        tool: &RegisteredTool,
        mut ir: InputRequired,
    ) -> Result<InputRequired, ProtocolError> {
        let nonce = nonce().map_err(|_| {
            ProtocolError::internal("Internal error: no random source for the confirmation.")
        })?;
        let version = tool.tool.policy.approval.version;
        let own = ir.state.take().unwrap_or(Value::Null);
        Ok(ir.state(json!({ STATE_FIELD: { "n": nonce, "v": version, "then": own } })))
    }

    /// The user's answer: yes runs the call, anything else refuses it.
    fn answered(
        &self,
        call: &Call,
        tool: &RegisteredTool,
        answer: &Value,
        draft: &mut AuditDraft,
    ) -> Gate {
        if answer["action"] == "accept" && answer["content"]["approve"] == true {
            draft.confirmed = true;
            draft.detail = Some("confirmed by the user".into());
            return Gate::Proceed { consumed: false };
        }
        let name = &tool.tool.definition.name;
        let text = format!(
            "The user declined this call to \"{name}\"; it was not run. Do not retry it unless the user asks again."
        );
        self.refuse(call, draft, CallOutcome::ApprovalDeclined, text)
    }

    /// The elicitation that asks the user.
    async fn question(
        &self,
        call: &Call,
        tool: &RegisteredTool,
        arguments: &Map<String, Value>,
    ) -> InputRequest {
        let summary = self.summary(&call.ctx, tool, arguments).await;
        let client = client_name(&call.ctx).unwrap_or_else(|| "Your assistant".to_owned());
        let message = format!("{client} asks to run this: {summary}. Allow it?");
        let schema = json!({
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Allow this call",
                    "description": "Yes runs it once, with exactly these arguments."
                }
            },
            "required": ["approve"]
        });
        InputRequest::elicit(message, schema)
    }

    /// The tool's own words for the call, or its title and arguments.
    async fn summary(
        &self,
        ctx: &RequestContext,
        tool: &RegisteredTool,
        arguments: &Map<String, Value>,
    ) -> String {
        let own = match &tool.tool.summary {
            Some(f) => f(ctx.clone(), arguments.clone()).await,
            None => None,
        };
        let text = own.unwrap_or_else(|| {
            let def = &tool.tool.definition;
            let title = def.title.as_deref().unwrap_or(&def.name);
            let shown = redact_arguments(arguments, &tool.tool.policy.redacted_arguments);
            let args: Vec<String> = shown
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            if args.is_empty() {
                format!("\"{title}\"")
            } else {
                format!("\"{title}\" with {}", args.join(", "))
            }
        });
        sanitize_text(&text).chars().take(SUMMARY_CHARS).collect()
    }

    /// `operator`: a pending approval someone at the company decides.
    async fn operator(
        &self,
        call: &Call,
        tool: &RegisteredTool,
        arguments: &Map<String, Value>,
        task: bool,
        draft: &mut AuditDraft,
    ) -> Result<Gate, ProtocolError> {
        let request = self.approval_request(call, tool, arguments).await;
        let store = &self.state.approvals;
        let ticket = match store.request(request).await {
            Ok(t) => t,
            Err(ApprovalError::Full(why)) => {
                let text = format!("This call needs an operator's approval, but {why}.");
                return Ok(self.refuse(call, draft, CallOutcome::ApprovalPending, text));
            }
            Err(e) => return Err(unavailable(&e)),
        };
        let ticket = match ticket.status {
            // A task waits as long as the approval is good, not `wait`.
            ApprovalStatus::Pending if task => return Ok(Gate::Later(ticket)),
            ApprovalStatus::Pending => self.wait(call, &ticket).await?,
            _ => ticket,
        };
        self.decided(call, tool, ticket, draft).await
    }

    /// Waits (bounded) for an operator's decision on a pending approval,
    /// with progress notifications when the client asked for them.
    async fn wait(
        &self,
        call: &Call,
        ticket: &ApprovalTicket,
    ) -> Result<ApprovalTicket, ProtocolError> {
        let options = &self.state.approval;
        let started = Instant::now();
        let total = options.wait.as_secs_f64();
        let message = format!("waiting for an operator's approval ({})", ticket.id);
        let mut current = ticket.clone();
        while current.status == ApprovalStatus::Pending && started.elapsed() < options.wait {
            call.ctx
                .progress(started.elapsed().as_secs_f64(), Some(total), Some(&message))
                .await;
            let nap = options
                .poll
                .min(options.wait.saturating_sub(started.elapsed()));
            tokio::select! {
                () = tokio::time::sleep(nap.max(Duration::from_millis(10))) => {}
                () = call.ctx.cancelled() => break,
            }
            match self.state.approvals.ticket(&ticket.id).await {
                Ok(Some(t)) => current = t,
                Ok(None) => break,
                Err(e) => return Err(unavailable(&e)),
            }
        }
        Ok(current)
    }

    /// Serves an approved call once; anything else is a tool error that
    /// says what to do.
    async fn decided(
        &self,
        call: &Call,
        tool: &RegisteredTool,
        ticket: ApprovalTicket,
        draft: &mut AuditDraft,
    ) -> Result<Gate, ProtocolError> {
        match self.verdict(tool, &ticket).await? {
            Verdict::Serve { by } => {
                draft.detail = Some(format!("approval {}, approved by {by}", ticket.id));
                Ok(Gate::Proceed { consumed: false })
            }
            Verdict::Refuse(outcome, text) => Ok(self.refuse(call, draft, outcome, text)),
        }
    }

    /// Redeems an approved approval (once); for anything else, the outcome
    /// and the tool error that says what to do. Shared by the synchronous
    /// call and the task that waited for the decision.
    pub(super) async fn verdict(
        &self,
        tool: &RegisteredTool,
        ticket: &ApprovalTicket,
    ) -> Result<Verdict, ProtocolError> {
        let name = &tool.tool.definition.name;
        let id = &ticket.id;
        let by = ticket.decided_by.as_deref().unwrap_or("an operator");
        let reason = ticket
            .reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        let (outcome, text) = match ticket.status {
            ApprovalStatus::Approved => match self.state.approvals.redeem(id).await {
                Ok(true) => return Ok(Verdict::Serve { by: by.to_owned() }),
                Ok(false) => (
                    CallOutcome::ApprovalDenied,
                    format!(
                        "Approval {id} was already used by another call; call the tool again to ask for a new approval."
                    ),
                ),
                Err(e) => return Err(unavailable(&e)),
            },
            ApprovalStatus::Denied => (
                CallOutcome::ApprovalDenied,
                format!(
                    "An operator ({by}) denied this call to \"{name}\" (approval {id}){reason}. It was not run; do not retry it."
                ),
            ),
            ApprovalStatus::Pending => {
                let expires = humantime_secs(ticket.expires_at);
                (
                    CallOutcome::ApprovalPending,
                    format!(
                        "This call to \"{name}\" waits for an operator's approval (approval {id}, good for {expires} more). Tell the user an operator must approve it; then retry the same call with the same arguments."
                    ),
                )
            }
            ApprovalStatus::Served | ApprovalStatus::Expired | ApprovalStatus::Void => (
                CallOutcome::ApprovalExpired,
                format!(
                    "Approval {id} is {}; call the tool again to ask for a new approval.",
                    ticket.status.as_str()
                ),
            ),
        };
        Ok(Verdict::Refuse(outcome, text))
    }

    /// Inside a task: waits for an operator's decision on `ticket` for as
    /// long as it is good (no `wait` bound). `None` if `cancel` fired
    /// (the task was cancelled or expired). A ticket still pending at its
    /// expiry, or gone from the store, comes back expired or void.
    pub(super) async fn await_decision(
        &self,
        ticket: &ApprovalTicket,
        cancel: &CancellationToken,
    ) -> Option<ApprovalTicket> {
        let poll = self.state.approval.poll.max(Duration::from_millis(10));
        let mut current = ticket.clone();
        while current.status == ApprovalStatus::Pending {
            let left = current
                .expires_at
                .duration_since(SystemTime::now())
                .unwrap_or_default();
            if left.is_zero() {
                // A store that does not mark lapsed approvals itself.
                current.status = ApprovalStatus::Expired;
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(poll.min(left)) => {}
                () = cancel.cancelled() => return None,
            }
            match self.state.approvals.ticket(&ticket.id).await {
                Ok(Some(t)) => current = t,
                Ok(None) => current.status = ApprovalStatus::Void,
                // Nothing is served while the store is down; keep waiting
                // until it answers or the approval lapses.
                Err(e) => {
                    tracing::warn!(approval = %ticket.id, error = %e, "cannot read the approval")
                }
            }
        }
        Some(current)
    }

    /// What the store keeps of this call.
    async fn approval_request(
        &self,
        call: &Call,
        tool: &RegisteredTool,
        arguments: &Map<String, Value>,
    ) -> ApprovalRequest {
        let principal = call.ctx.extension::<Principal>();
        let now = SystemTime::now();
        ApprovalRequest {
            subject: principal.map(|p| p.subject.clone()),
            client_id: principal.and_then(|p| p.client_id.clone()),
            client_name: client_name(&call.ctx),
            tool: tool.tool.definition.name.clone(),
            arguments: redact_arguments(arguments, &tool.tool.policy.redacted_arguments),
            digest: digest(arguments),
            policy_version: tool.tool.policy.approval.version,
            summary: self.summary(&call.ctx, tool, arguments).await,
            requested_at: now,
            expires_at: now + self.state.approval.ttl,
        }
    }
}

/// The client's self-reported name, cleaned and cut.
fn client_name(ctx: &RequestContext) -> Option<String> {
    ctx.client_info()
        .and_then(|c| c.get("title").or_else(|| c.get("name")))
        .and_then(Value::as_str)
        .map(|n| sanitize_text(n).chars().take(64).collect())
}

/// A one-time number for a confirmation question.
fn nonce() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// "4 min" or "30 s" until `at`.
fn humantime_secs(at: SystemTime) -> String {
    let secs = at
        .duration_since(SystemTime::now())
        .map(|d| d.as_secs())
        .unwrap_or(0);
    if secs >= 120 {
        format!("{} min", secs / 60)
    } else {
        format!("{secs} s")
    }
}

/// The store failed: refuse the call (fail closed), log why.
fn unavailable(e: &ApprovalError) -> ProtocolError {
    tracing::error!(error = %e, "approval store unavailable; refusing the call");
    ProtocolError::internal(
        "Internal error: the approval store is unavailable, so the call was refused (the failure was logged); retry later.",
    )
}
