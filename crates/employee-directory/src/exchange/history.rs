//! The import history: one row per import that changed the database
//! (who, when, mode, the files' digests and the counts per entity), kept in
//! the `import_history` table (migration 4) and written in the import's own
//! transaction.

use serde::Serialize;

use super::{ImportOptions, ImportReport};

/// One recorded import.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportRecord {
    /// Sequence number.
    pub id: i64,
    /// When it committed (RFC 3339, UTC).
    pub imported_at: String,
    /// Who ran it.
    pub actor: String,
    /// `merge` or `replace`.
    pub mode: String,
    /// `csv` or `jsonl`.
    pub format: String,
    /// The directory imported from.
    pub source: String,
    /// Files: name, rows, sha256.
    pub files: serde_json::Value,
    /// Counts per entity: added, updated, unchanged, removed.
    pub counts: serde_json::Value,
}

/// The columns of `import_history` in insert order.
pub const INSERT_COLUMNS: &str = "imported_at, actor, mode, format, source, files, counts";

/// The values recorded for `report`.
pub fn values(options: &ImportOptions, report: &ImportReport) -> [String; 7] {
    let files = serde_json::to_string(&report.files).unwrap_or_default();
    let counts: serde_json::Map<String, serde_json::Value> = report
        .counts
        .iter()
        .map(|c| {
            let v = serde_json::json!({
                "added": c.added, "updated": c.updated,
                "unchanged": c.unchanged, "removed": c.removed,
            });
            (c.entity.to_string(), v)
        })
        .collect();
    [
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        options.actor.clone(),
        report.mode.as_str().to_string(),
        options.format.extension().to_string(),
        options.dir.display().to_string(),
        files,
        serde_json::Value::Object(counts).to_string(),
    ]
}

/// Builds a record from its stored columns.
pub fn record(id: i64, cols: [String; 7]) -> ImportRecord {
    let [imported_at, actor, mode, format, source, files, counts] = cols;
    ImportRecord {
        id,
        imported_at,
        actor,
        mode,
        format,
        source,
        files: serde_json::from_str(&files).unwrap_or(serde_json::Value::Null),
        counts: serde_json::from_str(&counts).unwrap_or(serde_json::Value::Null),
    }
}
