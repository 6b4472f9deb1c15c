//! The Tools and Approvals pages and their forms. Changes go through the
//! same functions as the `tools` and `approvals` commands, so they have
//! the same effect and history, with `console:NAME` as the actor.

use std::sync::Arc;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use clap::ValueEnum;
use maud::{Markup, html};
use serde_json::Value;

use super::error::ConsoleError;
use super::session::Operator;
use super::{Console, Form, csrf_field, layout};
use crate::approvals::{self, Stored, iso};
use crate::catalog::command::{self, ApprovalArgs, ApprovalLevel};
use crate::custom::spec::ToolSpec;

/// One Tools row: what the models see and the catalogue's state.
struct ToolRow {
    state: Value,
    title: Option<String>,
    description: String,
    scopes: Vec<String>,
    /// The listing's `inputSchema`, `outputSchema` and `annotations`, as
    /// `tools/list` gives them (`None`: not known until served).
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    annotations: Option<Value>,
}

/// What a custom tool is listed with, from its stored definition; its
/// output schema comes from the query's columns when a server loads it.
fn custom_row(state: Value, spec: Option<ToolSpec>) -> ToolRow {
    let Some(spec) = spec else {
        return ToolRow {
            state,
            title: None,
            description: "(stored definition unreadable)".into(),
            scopes: Vec::new(),
            input_schema: None,
            output_schema: None,
            annotations: None,
        };
    };
    ToolRow {
        state,
        input_schema: Some(Value::Object(spec.input_schema())),
        output_schema: None,
        annotations: serde_json::to_value(crate::custom::annotations(&spec)).ok(),
        title: spec.title,
        description: spec.description,
        scopes: spec.scopes,
    }
}

async fn tool_rows(console: &Console) -> Result<Vec<ToolRow>, ConsoleError> {
    let entries = console.catalog.entries().await?;
    let builtins = &console.builtins;
    let mut rows: Vec<ToolRow> = builtins
        .iter()
        .map(|t| {
            let d = t.definition();
            let entry = entries.iter().find(|e| e.name == d.name);
            ToolRow {
                state: command::list_row(builtins, entry, &d.name),
                title: d.title.clone(),
                description: d.description.clone().unwrap_or_default(),
                scopes: t.policy().required_scopes.clone(),
                input_schema: Some(Value::Object(d.input_schema.clone())),
                output_schema: d.output_schema.clone().map(Value::Object),
                annotations: d
                    .annotations
                    .as_ref()
                    .and_then(|a| serde_json::to_value(a).ok()),
            }
        })
        .collect();
    for e in entries.iter().filter(|e| e.kind == "custom") {
        let spec: Option<ToolSpec> = e
            .definition
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok());
        let state = command::list_row(builtins, Some(e), &e.name);
        rows.push(custom_row(state, spec));
    }
    Ok(rows)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("-")
}

/// A schema, pretty-printed, folded away until opened.
fn schema(summary: &str, value: Option<&Value>, missing: &str) -> Markup {
    html! {
        details class="schema" {
            summary { (summary) }
            @match value {
                Some(v) => pre { (serde_json::to_string_pretty(v).unwrap_or_default()) },
                None => p { (missing) },
            }
        }
    }
}

/// The annotations as `name: value` lines (the hints clients show).
fn annotations(value: Option<&Value>) -> Markup {
    let hints: Vec<(String, String)> = value
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.to_string())).collect())
        .unwrap_or_default();
    html! {
        @if hints.is_empty() { "none" } @else {
            ul class="annotations" {
                @for (k, v) in &hints { li { code { (k) ": " (v) } } }
            }
        }
    }
}

fn tool_row(op: &Operator, row: &ToolRow) -> Markup {
    let s = &row.state;
    let name = text(s, "name");
    let enabled = s["enabled"] == true;
    // The form starts at what is in force, so a bare submit changes nothing.
    let current = s["approval_override"].as_str().unwrap_or("default");
    html! {
        tr {
            td { code { (name) } @if let Some(t) = &row.title { br; (t) } }
            td {
                (row.description)
                (schema("Input schema", row.input_schema.as_ref(), "(stored definition unreadable)"))
                (schema("Output schema", row.output_schema.as_ref(), "none declared here (a custom tool's comes from its query's columns when served)"))
            }
            td { (annotations(row.annotations.as_ref())) }
            td { @if row.scopes.is_empty() { "none" } @else { (row.scopes.join(", ")) } }
            td { (text(s, "approval_policy")) @if s["approval_override"].is_string() { " (override)" } }
            td { @if enabled { "enabled" } @else { strong { "disabled" } } }
            td { (text(s, "kind")) }
            td { (text(s, "updated_at")) " by " (text(s, "updated_by")) }
            td {
                form method="post" action="/tools/enabled" {
                    (csrf_field(op))
                    input type="hidden" name="name" value=(name);
                    input type="hidden" name="enabled" value=(if enabled { "false" } else { "true" });
                    button type="submit" { @if enabled { "Disable" } @else { "Enable" } }
                }
                form method="post" action="/tools/approval" {
                    (csrf_field(op))
                    input type="hidden" name="name" value=(name);
                    select name="level" {
                        @for level in ["none", "confirm", "operator", "default"] {
                            option value=(level) selected[level == current] { (level) }
                        }
                    }
                    input name="reason" placeholder="reason" maxlength="500";
                    button type="submit" { "Set approval" }
                }
            }
        }
    }
}

async fn tools_page(
    console: &Console,
    op: &Operator,
    notice: Option<&str>,
) -> Result<Markup, ConsoleError> {
    let rows = tool_rows(console).await?;
    let body = html! {
        p { "Every tool the server knows, as the models see it. Changes apply to every replica within a few seconds and notify connected clients." }
        table {
            thead { tr {
                th { "Tool" } th { "Description and schemas" } th { "Annotations" } th { "Scopes" } th { "Approval" }
                th { "State" } th { "Kind" } th { "Last change" } th { "Change" }
            } }
            tbody { @for row in &rows { (tool_row(op, row)) } }
        }
    };
    Ok(layout("Tools", Some(op), notice, body))
}

/// `GET /tools`.
pub async fn tools(
    State(console): State<Arc<Console>>,
    Extension(op): Extension<Operator>,
) -> Result<Markup, ConsoleError> {
    tools_page(&console, &op, None).await
}

/// A page after a change: what happened, or why nothing did (409).
async fn after_change(
    console: &Console,
    op: &Operator,
    outcome: Result<Vec<String>, crate::catalog::Error>,
) -> Result<Response, ConsoleError> {
    let (status, notice) = match outcome {
        Ok(lines) => (StatusCode::OK, lines.join("; ")),
        Err(e) => (StatusCode::CONFLICT, e.to_string()),
    };
    let page = tools_page(console, op, Some(&notice)).await?;
    Ok((status, page).into_response())
}

/// `POST /tools/enabled`: enable or disable a tool, as `tools enable|disable`.
pub async fn set_enabled(
    State(console): State<Arc<Console>>,
    Extension(op): Extension<Operator>,
    body: Bytes,
) -> Result<Response, ConsoleError> {
    let form = Form::checked(&op, &body)?;
    let name = form.need("name")?;
    let enabled = match form.need("enabled")? {
        "true" => true,
        "false" => false,
        other => return Err(ConsoleError::BadRequest(format!("enabled={other:?}"))),
    };
    let builtins: Vec<String> = console
        .builtins
        .iter()
        .map(|t| t.definition().name.clone())
        .collect();
    let outcome = command::toggle(
        &console.database,
        &console.catalog,
        &builtins,
        name,
        enabled,
        &op.actor(),
    )
    .await;
    after_change(&console, &op, outcome).await
}

/// `POST /tools/approval`: set a tool's approval policy, as `tools approval`.
pub async fn set_approval(
    State(console): State<Arc<Console>>,
    Extension(op): Extension<Operator>,
    body: Bytes,
) -> Result<Response, ConsoleError> {
    let form = Form::checked(&op, &body)?;
    let level = form.need("level")?;
    let level = ApprovalLevel::from_str(level, false)
        .map_err(|_| ConsoleError::BadRequest(format!("unknown approval level {level:?}")))?;
    let actor = op.actor();
    let change = ApprovalArgs {
        name: form.need("name")?,
        level,
        reason: form.get("reason"),
        actor: &actor,
    };
    let outcome = command::set_approval(
        &console.database,
        &console.catalog,
        &console.builtins,
        change,
    )
    .await;
    after_change(&console, &op, outcome).await
}

fn arguments(a: &Value) -> String {
    serde_json::to_string(a).unwrap_or_default()
}

fn pending_row(op: &Operator, a: &Stored) -> Markup {
    html! {
        tr {
            td { code { (a.id) } }
            td { (a.subject.as_deref().unwrap_or("(anonymous)")) br; (a.client_name.as_deref().unwrap_or("")) }
            td { code { (a.tool) } }
            td { code { (arguments(&a.arguments)) } }
            td { (a.summary) }
            td { (iso(a.requested_at_ms)) }
            td { (iso(a.expires_at_ms)) }
            td {
                form method="post" action="/approvals/decide" {
                    (csrf_field(op))
                    input type="hidden" name="id" value=(a.id);
                    input name="reason" placeholder="reason" maxlength="500";
                    button type="submit" name="decision" value="approve" { "Approve" }
                    button type="submit" name="decision" value="deny" { "Deny" }
                }
            }
        }
    }
}

fn decided_row(a: &Stored) -> Markup {
    html! {
        tr {
            td { code { (a.id) } }
            td { (a.status) }
            td { (a.subject.as_deref().unwrap_or("(anonymous)")) }
            td { code { (a.tool) } }
            td { (a.decided_by.as_deref().unwrap_or("-")) }
            td { (a.decided_at_ms.map(iso).unwrap_or_default()) }
            td { (a.reason.as_deref().unwrap_or("")) }
        }
    }
}

async fn approvals_page(
    console: &Console,
    op: &Operator,
    notice: Option<&str>,
) -> Result<Markup, ConsoleError> {
    let Some(store) = &console.approvals else {
        let body = html! { p { "This database keeps no approvals." } };
        return Ok(layout("Approvals", Some(op), notice, body));
    };
    let pending = store.list(false, 200).await?;
    let all = store.list(true, 100).await?;
    let decided: Vec<&Stored> = all.iter().filter(|a| a.status != "pending").collect();
    let body = html! {
        h2 { "Pending (" (pending.len()) ")" }
        @if pending.is_empty() { p { "Nothing waits for an operator." } } @else {
            table {
                thead { tr { th { "Id" } th { "Asked by" } th { "Tool" } th { "Arguments (redacted)" }
                             th { "Summary" } th { "Asked" } th { "Expires" } th { "Decide" } } }
                tbody { @for a in &pending { (pending_row(op, a)) } }
            }
        }
        h2 { "Recently decided" }
        table {
            thead { tr { th { "Id" } th { "Status" } th { "Asked by" } th { "Tool" }
                         th { "Decided by" } th { "When" } th { "Reason" } } }
            tbody { @for a in &decided { (decided_row(a)) } }
        }
    };
    Ok(layout("Approvals", Some(op), notice, body))
}

/// `GET /approvals`.
pub async fn approvals(
    State(console): State<Arc<Console>>,
    Extension(op): Extension<Operator>,
) -> Result<Markup, ConsoleError> {
    approvals_page(&console, &op, None).await
}

/// Decides as `console:NAME`. The store refuses the call's subject as
/// actor; the console also refuses when the bare login name is the
/// subject, so "alice" cannot approve alice's call by logging in here.
async fn decide_as(
    store: &crate::approvals::Store,
    op: &Operator,
    id: &str,
    approve: bool,
    reason: Option<&str>,
) -> Result<Stored, approvals::Error> {
    let asked_by = store.show(id).await?;
    if let Some(row) = asked_by
        && row.subject.as_deref() == Some(op.name.as_str())
    {
        return Err(approvals::Error::OwnCall(op.name.clone()));
    }
    store.decide(id, approve, &op.actor(), reason).await
}

/// `POST /approvals/decide`: approve or deny, as `approvals approve|deny`;
/// the store refuses an operator's own call.
pub async fn decide(
    State(console): State<Arc<Console>>,
    Extension(op): Extension<Operator>,
    body: Bytes,
) -> Result<Response, ConsoleError> {
    let form = Form::checked(&op, &body)?;
    let id = form.need("id")?;
    let approve = match form.need("decision")? {
        "approve" => true,
        "deny" => false,
        other => return Err(ConsoleError::BadRequest(format!("decision={other:?}"))),
    };
    let Some(store) = &console.approvals else {
        return Err(ConsoleError::BadRequest(
            "this database keeps no approvals".into(),
        ));
    };
    let reason = form
        .get("reason")
        .map(crate::approvals::command::clean_reason)
        .filter(|r| !r.trim().is_empty());
    let (status, notice) = match decide_as(store, &op, id, approve, reason.as_deref()).await {
        Ok(row) => {
            let verb = if approve { "approved" } else { "denied" };
            (
                StatusCode::OK,
                format!(
                    "{} {verb}: {} for {}",
                    row.id,
                    row.tool,
                    row.subject.as_deref().unwrap_or("(anonymous)")
                ),
            )
        }
        Err(e @ approvals::Error::NotFound(_)) => (StatusCode::NOT_FOUND, e.to_string()),
        Err(e) if !e.is_store() => (StatusCode::CONFLICT, e.to_string()),
        Err(e) => return Err(ConsoleError::Approvals(e)),
    };
    let page = approvals_page(&console, &op, Some(&notice)).await?;
    Ok((status, page).into_response())
}
