//! The Health page: this replica's readiness (the `/readyz` check), the
//! last hour of calls from the audit trail every replica writes (calls,
//! errors, refusals and p99 latency per minute, as small charts with their
//! numbers in a table), and the series this replica keeps for `/metrics`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Extension;
use axum::extract::State;
use maud::{Markup, html};
use tokio::sync::Mutex;

use super::error::ConsoleError;
use super::session::Operator;
use super::{Console, layout};
use crate::audit::{self, activity::Minute};
use crate::replicas::{Registry, Replica, SILENT_AFTER};

/// The window the charts show.
const WINDOW: Duration = Duration::from_secs(60 * 60);
/// How long one reading of the trail serves every page load: the
/// aggregate scans the hour's rows, so operators reloading cannot make
/// the database do it more than once in this time.
const FRESH_FOR: Duration = Duration::from_secs(10);
/// Chart geometry: one bar a minute.
const BAR: i64 = 10;
const HEIGHT: i64 = 60;

/// The last reading of the trail's hour, shared by every page load; the
/// lock is held while reading, so concurrent loads wait for one query.
#[derive(Default)]
pub struct ActivityCache(Mutex<Option<(Instant, Arc<Vec<Minute>>)>>);

impl ActivityCache {
    async fn read(&self, console: &Console) -> Result<Arc<Vec<Minute>>, ConsoleError> {
        let mut cached = self.0.lock().await;
        if let Some((at, minutes)) = cached.as_ref()
            && at.elapsed() < FRESH_FOR
        {
            return Ok(Arc::clone(minutes));
        }
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or_default();
        let window_ms = i64::try_from(WINDOW.as_millis()).unwrap_or(i64::MAX);
        let since_ms = now_ms.saturating_sub(window_ms);
        let database = console.database.clone();
        let minutes =
            tokio::task::spawn_blocking(move || audit::activity(&database, since_ms, now_ms))
                .await??;
        let minutes = Arc::new(minutes);
        *cached = Some((Instant::now(), Arc::clone(&minutes)));
        Ok(minutes)
    }
}

/// One bar chart of `value` per minute, scaled to its own maximum.
fn chart(id: &str, label: &str, minutes: &[Minute], value: impl Fn(&Minute) -> i64) -> Markup {
    let values: Vec<i64> = minutes.iter().map(&value).collect();
    let max = values.iter().copied().max().unwrap_or(0).max(1);
    let width = BAR * i64::try_from(values.len()).unwrap_or(0);
    html! {
        figure {
            figcaption { (label) " (most in a minute: " (max) ")" }
            svg id=(id) class="chart" role="img" aria-label=(label)
                viewBox=(format!("0 0 {width} {HEIGHT}")) width=(width) height=(HEIGHT) {
                @for (i, v) in values.iter().enumerate() {
                    @let h = (v * HEIGHT + max - 1) / max;
                    rect x=(i64::try_from(i).unwrap_or(0) * BAR) y=(HEIGHT - h)
                        width=(BAR - 2) height=(h) fill="currentColor" data-value=(v) {}
                }
            }
        }
    }
}

/// The hour as charts and, for screen readers and scripts, a table of the
/// minutes that had calls.
fn hour(minutes: &[Minute]) -> Markup {
    let total: i64 = minutes.iter().map(|m| m.calls).sum();
    let errors: i64 = minutes.iter().map(|m| m.errors).sum();
    let refused: i64 = minutes.iter().map(|m| m.refused).sum();
    let busy: Vec<&Minute> = minutes.iter().filter(|m| m.calls > 0).collect();
    html! {
        p id="hour-totals" {
            (total) " calls, " (errors) " errors, " (refused) " refused in the last hour (all replicas, from the audit trail); "
            "about " (format!("{:.2}", total as f64 / WINDOW.as_secs_f64())) " calls/s."
        }
        (chart("calls-chart", "Calls per minute", minutes, |m| m.calls))
        (chart("errors-chart", "Errors and refusals per minute", minutes, |m| m.errors + m.refused))
        (chart("p99-chart", "p99 latency per minute, ms (bucket bound)", minutes, |m| m.p99_ms().unwrap_or(0)))
        table id="hour-table" {
            thead { tr { th { "Minute (UTC)" } th { "Calls" } th { "Errors" } th { "Refused" } th { "p99 (ms)" } } }
            tbody {
                @for m in busy.iter().rev() {
                    tr {
                        td { (minute_label(m.start_ms)) }
                        td { (m.calls) } td { (m.errors) } td { (m.refused) }
                        td { @match m.p99_ms() { Some(ms) => { "≤ " (ms) }, None => "over 5000" } }
                    }
                }
            }
        }
    }
}

/// Each replica's last report: its readiness then, or how long it has
/// been silent.
fn replicas(list: &[Replica], now_ms: i64) -> Markup {
    let silent_ms = i64::try_from(SILENT_AFTER.as_millis()).unwrap_or(i64::MAX);
    html! {
        table id="replicas" {
            thead { tr { th { "Replica" } th { "Listens on" } th { "Console" } th { "Version" } th { "Started (UTC)" } th { "State" } } }
            tbody {
                @for r in list {
                    @let age_s = (now_ms - r.seen_ms).max(0) / 1000;
                    tr data-replica=(r.id) {
                        td { code { (r.id) } }
                        td { (r.listen) }
                        td { (r.console.as_deref().unwrap_or("-")) }
                        td { (r.version) }
                        td { (minute_label(r.started_ms)) }
                        td class="state" {
                            @if now_ms - r.seen_ms > silent_ms {
                                strong { "silent" } " for " (age_s) " s (stopped without a goodbye, or cannot reach the database)"
                            } @else if r.ready {
                                strong { "ready" } " (" (age_s) " s ago)"
                            } @else {
                                strong { "not ready" } ": " (r.reason.as_deref().unwrap_or("?")) " (" (age_s) " s ago)"
                            }
                        }
                    }
                }
            }
        }
    }
}

fn minute_label(start_ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(start_ms)
        .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_default()
}

/// Series shown at most (the rest are on `/metrics`).
const MAX_SERIES: usize = 400;

/// `(series with labels, value)` of each sample in Prometheus text.
fn samples(text: &str) -> Vec<(&str, &str)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.rsplit_once(' '))
        .take(MAX_SERIES)
        .collect()
}

/// `GET /health`.
pub async fn health(
    State(console): State<Arc<Console>>,
    Extension(op): Extension<Operator>,
) -> Markup {
    let ready = console.readiness.check().await;
    let metrics = console.server.render_metrics();
    let rows = samples(&metrics);
    let hour_of_calls = console.activity.read(&console).await;
    let reported = match Registry::of(&console.database) {
        Some(registry) => registry.list().await,
        None => Ok(Vec::new()),
    };
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let body = html! {
        h2 { "This replica" }
        @match &ready {
            Ok(()) => p id="readiness" { strong { "ready" } ": the database answers and the audit writer commits." },
            Err(reason) => p id="readiness" { strong { "not ready" } ": " (reason) },
        }
        h2 { "Every replica" }
        p { "As each replica on this database last reported (every 10 s; its own readiness check)." }
        @match &reported {
            Ok(list) => (replicas(list, now_ms)),
            Err(reason) => p id="replicas" { strong { "The replicas' reports cannot be read" } ": " (reason) },
        }
        h2 { "The last hour" }
        @match &hour_of_calls {
            Ok(minutes) => (hour(minutes)),
            Err(reason) => p id="hour-totals" { strong { "The audit trail cannot be read" } ": " (reason) },
        }
        h2 { "Counters" }
        p { "As scraped from /metrics on this replica, since it started." }
        table {
            thead { tr { th { "Series" } th { "Value" } } }
            tbody { @for (series, value) in &rows { tr { td { code { (series) } } td { (value) } } } }
        }
    };
    layout("Health", Some(&op), None, body)
}

#[cfg(test)]
mod tests {
    #[test]
    fn samples_skip_comments() {
        let text = "# HELP a x\n# TYPE a counter\na{b=\"c d\"} 3\n\nz 1.5\n";
        assert_eq!(
            super::samples(text),
            vec![("a{b=\"c d\"}", "3"), ("z", "1.5")]
        );
    }
}
