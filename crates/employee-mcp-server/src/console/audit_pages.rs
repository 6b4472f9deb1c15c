//! The Audit pages (search with a cursor, a row's detail, CSV and JSON
//! Lines export), read through `audit::query`.

use std::sync::Arc;
use std::time::SystemTime;

use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use super::error::ConsoleError;
use super::session::Operator;
use super::{Console, Form, layout};
use crate::audit::{self, Filter, Row};

/// Rows a search page shows by default, and at most.
const PAGE_ROWS: u32 = 100;
const MAX_PAGE_ROWS: u32 = 1000;
/// Rows an export holds at most.
const MAX_EXPORT_ROWS: u32 = 10_000;

/// A search as the form sends it (also the export links' query).
struct Search {
    form: Form,
    filter: Filter,
}

pub(super) fn field(form: &Form, name: &str) -> Option<String> {
    form.get(name)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

pub(super) fn number(form: &Form, name: &str) -> Result<Option<i64>, ConsoleError> {
    field(form, name)
        .map(|v| {
            v.parse::<i64>()
                .map_err(|_| ConsoleError::BadRequest(format!("{name} must be a number")))
        })
        .transpose()
}

impl Search {
    fn parse(query: Option<&str>, max: u32) -> Result<Search, ConsoleError> {
        let form = Form::parse(query.unwrap_or("").as_bytes());
        let now = SystemTime::now();
        let time = |name: &str| {
            field(&form, name)
                .map(|t| audit::parse_time(&t, now).map_err(ConsoleError::BadRequest))
                .transpose()
        };
        let limit = number(&form, "limit")?.map_or(PAGE_ROWS, |n| {
            u32::try_from(n.clamp(1, i64::from(max))).unwrap_or(max)
        });
        let filter = Filter {
            since_ms: time("since")?,
            until_ms: time("until")?,
            tool: field(&form, "tool"),
            subject: field(&form, "subject"),
            outcome: field(&form, "outcome"),
            before_id: number(&form, "before")?,
            after_id: None,
            limit,
            oldest_first: false,
        };
        Ok(Search { form, filter })
    }

    /// The query string of this search, with `before` replaced.
    fn query(&self, before: Option<i64>) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for name in ["since", "until", "tool", "subject", "outcome", "limit"] {
            if let Some(v) = field(&self.form, name) {
                q.append_pair(name, &v);
            }
        }
        if let Some(b) = before {
            q.append_pair("before", &b.to_string());
        }
        q.finish()
    }
}

/// `audit::query` off the async threads (it blocks on SQLite or its own
/// PostgreSQL runtime).
pub(super) async fn query(console: &Console, filter: Filter) -> Result<Vec<Row>, ConsoleError> {
    let database = console.database.clone();
    Ok(tokio::task::spawn_blocking(move || audit::query(&database, &filter)).await??)
}

fn arguments(row: &Row) -> String {
    serde_json::to_string(&row.arguments).unwrap_or_default()
}

pub(super) fn rows_table(rows: &[Row]) -> Markup {
    html! {
        table {
            thead { tr { th { "Id" } th { "When" } th { "Tool" } th { "Subject" } th { "Client" }
                         th { "Outcome" } th { "Latency" } th { "Arguments (redacted)" } } }
            tbody id="live-rows" {
                @for r in rows.iter().rev() {
                    tr {
                        td { a href={ "/audit/row?id=" (r.id) } { (r.id) } }
                        td { (r.at) }
                        td { code { (r.tool) } }
                        td { (r.subject.as_deref().unwrap_or("-")) }
                        td {
                            (r.client_name.as_deref().or(r.client_id.as_deref()).unwrap_or("-"))
                            @if let Some(view) = &r.via { br; small { "from the view " code { (view) } } }
                        }
                        td { (r.outcome) @if r.count > 1 { " ×" (r.count) } }
                        td { (r.latency_ms) " ms" }
                        td { code { (arguments(r)) } }
                    }
                }
            }
        }
    }
}

fn search_form(s: &Search) -> Markup {
    let v = |name: &str| field(&s.form, name).unwrap_or_default();
    html! {
        form method="get" action="/audit" {
            label { "Since " input name="since" value=(v("since")) placeholder="1h or RFC 3339"; } " "
            label { "Until " input name="until" value=(v("until")); } " "
            label { "Tool " input name="tool" value=(v("tool")); } " "
            label { "Subject " input name="subject" value=(v("subject")); } " "
            label { "Outcome " input name="outcome" value=(v("outcome")) placeholder="success, tool_error…"; } " "
            label { "Rows " input name="limit" value=(v("limit")) size="5"; } " "
            button type="submit" { "Search" }
        }
    }
}

/// `GET /audit`: the newest rows matching the search; "older" pages on
/// with the smallest id shown.
pub async fn search(
    State(console): State<Arc<Console>>,
    Extension(op): Extension<Operator>,
    RawQuery(q): RawQuery,
) -> Result<Markup, ConsoleError> {
    let s = Search::parse(q.as_deref(), MAX_PAGE_ROWS)?;
    let rows = query(&console, s.filter.clone()).await?;
    let oldest = rows.iter().map(|r| r.id).min();
    let full = rows.len() >= s.filter.limit as usize;
    let body = html! {
        (search_form(&s))
        p {
            a href={ "/audit.csv?" (s.query(s.filter.before_id)) } { "Export CSV" } " · "
            a href={ "/audit.jsonl?" (s.query(s.filter.before_id)) } { "Export JSON Lines" }
        }
        p { (rows.len()) " row(s), newest first." }
        (rows_table(&rows))
        @if let (Some(id), true) = (oldest, full) {
            p { a href={ "/audit?" (s.query(Some(id))) } { "Older rows →" } }
        }
    };
    Ok(layout("Audit", Some(&op), None, body))
}

/// `GET /audit/row?id=N`: one row, every field.
pub async fn row(
    State(console): State<Arc<Console>>,
    Extension(op): Extension<Operator>,
    RawQuery(q): RawQuery,
) -> Result<Markup, ConsoleError> {
    let form = Form::parse(q.as_deref().unwrap_or("").as_bytes());
    let id = number(&form, "id")?.ok_or_else(|| ConsoleError::BadRequest("give an id".into()))?;
    let filter = Filter {
        before_id: Some(id.saturating_add(1)),
        after_id: Some(id.saturating_sub(1)),
        limit: 1,
        ..Filter::default()
    };
    let rows = query(&console, filter).await?;
    let Some(r) = rows.first() else {
        return Err(ConsoleError::BadRequest(format!("no audit row {id}")));
    };
    let pretty = serde_json::to_string_pretty(r).unwrap_or_default();
    let body = html! { pre { (pretty) } p { a href="/audit" { "← Audit" } } };
    Ok(layout(&format!("Audit row {id}"), Some(&op), None, body))
}

/// A CSV cell a spreadsheet will not evaluate (the rule `export` writes
/// cells by), then quoted.
fn csv_cell(text: &str) -> String {
    let text = employee_directory::exchange::guard_formula(text);
    format!("\"{}\"", text.replace('"', "\"\""))
}

fn csv_line(r: &Row) -> String {
    let cells = [
        r.id.to_string(),
        r.at.clone(),
        r.tool.clone(),
        r.subject.clone().unwrap_or_default(),
        r.client_id.clone().unwrap_or_default(),
        r.client_name.clone().unwrap_or_default(),
        r.outcome.clone(),
        r.detail.clone().unwrap_or_default(),
        r.latency_ms.to_string(),
        r.count.to_string(),
        r.via.clone().unwrap_or_default(),
        arguments(r),
    ];
    let cells: Vec<String> = cells.iter().map(|c| csv_cell(c)).collect();
    cells.join(",") + "\r\n"
}

fn attachment(kind: &'static str, name: &'static str, body: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CONTENT_DISPOSITION, name),
        ],
        body,
    )
        .into_response()
}

/// `GET /audit.csv?…`: the search as CSV, formula cells neutralised.
pub async fn csv(
    State(console): State<Arc<Console>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ConsoleError> {
    let s = Search::parse(q.as_deref(), MAX_EXPORT_ROWS)?;
    let rows = query(&console, s.filter).await?;
    let mut out = String::from(
        "id,at,tool,subject,client_id,client_name,outcome,detail,latency_ms,count,via,arguments\r\n",
    );
    for r in &rows {
        out.push_str(&csv_line(r));
    }
    let name = "attachment; filename=\"audit.csv\"";
    Ok(attachment("text/csv; charset=utf-8", name, out))
}

/// `GET /audit.jsonl?…`: the search as JSON Lines, as `audit --json`.
pub async fn jsonl(
    State(console): State<Arc<Console>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ConsoleError> {
    let s = Search::parse(q.as_deref(), MAX_EXPORT_ROWS)?;
    let rows = query(&console, s.filter).await?;
    let mut out = String::new();
    for r in &rows {
        out.push_str(&serde_json::to_string(r)?);
        out.push('\n');
    }
    let name = "attachment; filename=\"audit.jsonl\"";
    Ok(attachment("application/jsonl; charset=utf-8", name, out))
}

#[cfg(test)]
mod tests {
    use super::csv_cell;

    #[test]
    fn formula_cells_are_neutralised_and_quoted() {
        assert_eq!(csv_cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_cell("+1"), "\"'+1\"");
        assert_eq!(csv_cell("'=1"), "\"''=1\"");
        assert_eq!(csv_cell("plain"), "\"plain\"");
    }
}
