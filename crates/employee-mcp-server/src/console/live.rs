//! The Live page: the newest calls and each tool's activity in the last
//! minute, server-rendered (a filter by tool and outcome is a plain GET
//! form), then, with JavaScript, new rows pushed as Server-Sent Events
//! (`/live/events`), with pause.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use maud::{Markup, html};

use super::audit_pages::{field, number, query, rows_table};
use super::error::ConsoleError;
use super::session::Operator;
use super::{Console, Form, layout};
use crate::audit::{Filter, Row};

/// Rows the Live page starts with.
const LIVE_ROWS: u32 = 50;
/// Rows the activity table is counted from, at most.
const ACTIVITY_ROWS: u32 = 1000;
/// The window "recent" activity covers.
const WINDOW: Duration = Duration::from_secs(60);
/// How often a live stream looks for new rows.
const LIVE_POLL: Duration = Duration::from_millis(500);
/// Rows a live stream reads at once; a full read is followed by the
/// next at once, so a burst is sent whole, in order.
const LIVE_BATCH: u32 = 200;

/// The filter of the page and its stream: `tool` and `outcome`.
struct LiveFilter {
    tool: Option<String>,
    outcome: Option<String>,
}

impl LiveFilter {
    fn parse(q: Option<&str>) -> (Form, LiveFilter) {
        let form = Form::parse(q.unwrap_or("").as_bytes());
        let filter = LiveFilter {
            tool: field(&form, "tool"),
            outcome: field(&form, "outcome"),
        };
        (form, filter)
    }

    fn audit(&self, limit: u32) -> Filter {
        Filter {
            tool: self.tool.clone(),
            outcome: self.outcome.clone(),
            limit,
            ..Filter::default()
        }
    }
}

/// One tool's calls in the window, and its newest call seen.
#[derive(Default)]
struct Activity {
    /// Calls per second (unix seconds): at most one entry per second of
    /// the window, however many calls a folded row counts.
    per_second: BTreeMap<i64, u64>,
    last_at: String,
    last_outcome: String,
}

impl Activity {
    fn recent(&self) -> u64 {
        self.per_second.values().sum()
    }

    /// `second:calls,…`, what console.js keeps counting from.
    fn seconds(&self) -> String {
        let pairs: Vec<String> = self
            .per_second
            .iter()
            .map(|(s, n)| format!("{s}:{n}"))
            .collect();
        pairs.join(",")
    }
}

/// Per tool: calls at or after `since_ms` (a folded row counts its calls),
/// and the newest row of each tool among `rows`.
fn activity(rows: &[Row], since_ms: i64) -> BTreeMap<String, Activity> {
    let mut by_tool: BTreeMap<String, Activity> = BTreeMap::new();
    let mut newest: BTreeMap<&str, i64> = BTreeMap::new();
    for r in rows {
        let a = by_tool.entry(r.tool.clone()).or_default();
        if r.at_unix_ms >= since_ms {
            let calls = u64::try_from(r.count.max(1)).unwrap_or(1);
            *a.per_second
                .entry(r.at_unix_ms.div_euclid(1000))
                .or_default() += calls;
        }
        let seen = newest.entry(r.tool.as_str()).or_insert(i64::MIN);
        if r.id > *seen {
            *seen = r.id;
            a.last_at.clone_from(&r.at);
            a.last_outcome.clone_from(&r.outcome);
        }
    }
    by_tool
}

fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

fn activity_table(by_tool: &BTreeMap<String, Activity>) -> Markup {
    html! {
        table {
            thead { tr { th { "Tool" } th { "Calls in the last minute" } th { "Last call" } th { "Its outcome" } } }
            tbody id="live-activity" {
                @for (tool, a) in by_tool {
                    tr data-tool=(tool) data-seconds=(a.seconds()) {
                        td { code { (tool) } }
                        td class="recent" { (a.recent()) }
                        td class="last" { (a.last_at) }
                        td class="outcome" { (a.last_outcome) }
                    }
                }
            }
        }
    }
}

fn filter_form(form: &Form) -> Markup {
    let v = |name: &str| field(form, name).unwrap_or_default();
    html! {
        form method="get" action="/live" {
            label { "Tool " input name="tool" value=(v("tool")); } " "
            label { "Outcome " input name="outcome" value=(v("outcome")) placeholder="success, tool_error…"; } " "
            button type="submit" { "Filter" } " "
            a href="/live" { "All calls" }
        }
    }
}

/// `GET /live?tool=&outcome=`: the newest matching rows and the activity
/// per tool; with JavaScript, new ones as they are written.
pub async fn live(
    State(console): State<Arc<Console>>,
    Extension(op): Extension<Operator>,
    RawQuery(q): RawQuery,
) -> Result<Markup, ConsoleError> {
    let (form, filter) = LiveFilter::parse(q.as_deref());
    let rows = query(&console, filter.audit(LIVE_ROWS)).await?;
    let since_ms = now_ms().saturating_sub(i64::try_from(WINDOW.as_millis()).unwrap_or(0));
    let window = Filter {
        since_ms: Some(since_ms),
        ..filter.audit(ACTIVITY_ROWS)
    };
    let mut counted = query(&console, window).await?;
    counted.extend(rows.iter().filter(|r| r.at_unix_ms < since_ms).cloned());
    let last = rows.iter().map(|r| r.id).max().unwrap_or(0);
    let body = html! {
        (filter_form(&form))
        p id="live-status" data-after=(last)
            data-tool=(filter.tool.as_deref().unwrap_or("")) data-outcome=(filter.outcome.as_deref().unwrap_or("")) {
            "The newest " (rows.len()) " call(s); reload for newer ones (with JavaScript they appear as they happen)."
        }
        // Shown by the script: without it there is nothing to pause.
        p { button type="button" id="live-pause" hidden { "Pause" } }
        h2 { "Activity by tool" }
        (activity_table(&activity(&counted, since_ms)))
        h2 { "Calls" }
        (rows_table(&rows))
        script src="/console.js" {}
    };
    Ok(layout("Live", Some(&op), None, body))
}

/// `GET /live/events?after=ID&tool=&outcome=`: every matching row written
/// after `ID`, as one SSE `message` event each (the row as JSON). At most
/// 16 streams at once.
pub async fn events(
    State(console): State<Arc<Console>>,
    RawQuery(q): RawQuery,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ConsoleError> {
    let (form, filter) = LiveFilter::parse(q.as_deref());
    let after = number(&form, "after")?.unwrap_or(0);
    let permit = Arc::clone(&console.streams)
        .try_acquire_owned()
        .map_err(|_| ConsoleError::Busy("too many live streams are open; close one"))?;
    // `full`: the last read filled a batch, so read again without waiting.
    let state = (console, filter, after, Vec::<Event>::new(), permit, false);
    let stream = futures_util::stream::unfold(
        state,
        |(console, filter, mut after, mut queue, permit, mut full)| async move {
            loop {
                if let Some(event) = queue.pop() {
                    return Some((Ok(event), (console, filter, after, queue, permit, full)));
                }
                if !full {
                    tokio::time::sleep(LIVE_POLL).await;
                }
                let newer = Filter {
                    after_id: Some(after),
                    oldest_first: true,
                    ..filter.audit(LIVE_BATCH)
                };
                match query(&console, newer).await {
                    Ok(rows) => {
                        full = rows.len() >= LIVE_BATCH as usize;
                        (after, queue) = events_of(rows, after);
                    }
                    Err(e) => {
                        full = false;
                        tracing::debug!(error = %e, "live stream: audit query failed");
                    }
                }
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// The events for `rows`, to be popped from the end (oldest first), and
/// the new cursor.
fn events_of(mut rows: Vec<Row>, after: i64) -> (i64, Vec<Event>) {
    rows.sort_by_key(|r| std::cmp::Reverse(r.id));
    let after = rows.first().map_or(after, |r| r.id);
    let queue = rows
        .iter()
        .filter_map(|r| serde_json::to_string(r).ok())
        .map(|json| Event::default().data(json))
        .collect();
    (after, queue)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, at_unix_ms: i64, count: i64) -> Row {
        Row {
            id,
            at: format!("t{id}"),
            at_unix_ms,
            subject: None,
            client_id: None,
            client_name: None,
            remote_addr: None,
            tool: "flooded".into(),
            arguments: serde_json::Value::Null,
            outcome: "rate_limited".into(),
            detail: None,
            latency_ms: 0,
            protocol_version: "2026-07-28".into(),
            count,
            via: None,
        }
    }

    #[test]
    fn a_flood_is_one_entry_a_second_not_one_per_call() {
        let since = 1_000_000;
        // A folded row of a million refused calls, two more in the same
        // second, one in the next, one before the window.
        let rows = [
            row(1, since + 10, 1_000_000),
            row(2, since + 900, 1),
            row(3, since + 1_500, 1),
            row(4, since - 5_000, 7),
        ];
        let by_tool = activity(&rows, since);
        let a = &by_tool["flooded"];
        assert_eq!(a.recent(), 1_000_002);
        assert_eq!(a.per_second.len(), 2);
        assert_eq!(a.seconds(), "1000:1000001,1001:1");
        assert_eq!(a.last_at, "t4");
    }
}
