//! The Directory page: the rows each entity has now, and the imports
//! recorded in the database (who, when, mode, the files with their
//! digests, the counts per entity), newest first, as `import --history`
//! lists them.

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use employee_directory::exchange::{self, ImportRecord};
use maud::{Markup, html};
use serde_json::Value;

use super::error::ConsoleError;
use super::session::Operator;
use super::{Console, layout};

/// Imports the page shows.
const HISTORY_ROWS: u32 = 100;

fn number(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}

/// Each entity's changes: added, updated, unchanged, removed.
fn counts(record: &ImportRecord) -> Markup {
    let entities = record.counts.as_object().cloned().unwrap_or_default();
    html! {
        table class="counts" {
            thead { tr { th { "Entity" } th { "Added" } th { "Updated" } th { "Unchanged" } th { "Removed" } } }
            tbody {
                @for (entity, c) in &entities {
                    tr data-entity=(entity) {
                        td { (entity) }
                        td { (number(c, "added")) } td { (number(c, "updated")) }
                        td { (number(c, "unchanged")) } td { (number(c, "removed")) }
                    }
                }
            }
        }
    }
}

/// The files read: name, rows, SHA-256.
fn files(record: &ImportRecord) -> Markup {
    let list = record.files.as_array().cloned().unwrap_or_default();
    html! {
        ul class="files" {
            @for f in &list {
                li {
                    code { (f["file"].as_str().unwrap_or("?")) } ", " (number(f, "rows")) " rows, sha256 "
                    code class="sha256" { (f["sha256"].as_str().unwrap_or("?")) }
                }
            }
        }
    }
}

fn import_row(record: &ImportRecord) -> Markup {
    html! {
        tr class="import" {
            td { (record.id) }
            td { (record.imported_at) }
            td { (record.actor) }
            td { (record.mode) " (" (record.format) ")" }
            td { code { (record.source) } (files(record)) }
            td { (counts(record)) }
        }
    }
}

/// `GET /directory`: the import history, newest first.
pub async fn directory(
    State(console): State<Arc<Console>>,
    Extension(op): Extension<Operator>,
) -> Result<Markup, ConsoleError> {
    let mut records = exchange::history(console.database.as_str(), HISTORY_ROWS).await?;
    records.reverse();
    let now = exchange::row_counts(console.database.as_str()).await?;
    let body = html! {
        h2 { "Now" }
        table id="row-counts" {
            thead { tr { th { "Entity" } th { "Rows" } } }
            tbody { @for (entity, rows) in &now { tr data-entity=(entity) { td { (entity) } td { (rows) } } } }
        }
        h2 { "Imports" }
        p { "The imports that changed the directory (" code { "import DIR" } "), newest first: an import that changed nothing is not recorded." }
        @if records.is_empty() { p { "No import is recorded." } } @else {
            table {
                thead { tr { th { "#" } th { "When" } th { "Who" } th { "Mode" } th { "Files" } th { "Counts per entity" } } }
                tbody id="imports" { @for r in &records { (import_row(r)) } }
            }
        }
    };
    Ok(layout("Directory", Some(&op), None, body))
}
