//! The Health page: this replica's readiness (the `/readyz` check) and
//! the series the server already keeps for `/metrics`.

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use maud::{Markup, html};

use super::session::Operator;
use super::{Console, layout};

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
    let body = html! {
        h2 { "This replica" }
        @match &ready {
            Ok(()) => p id="readiness" { strong { "ready" } ": the database answers and the audit writer commits." },
            Err(reason) => p id="readiness" { strong { "not ready" } ": " (reason) },
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
