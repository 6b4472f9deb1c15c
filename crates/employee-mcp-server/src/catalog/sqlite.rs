//! The catalogue tables in the directory's SQLite file.
//!
//! - `tool_catalog`: one row per custom tool (its checked definition as
//!   JSON) and per built-in whose state was ever changed, with its
//!   approval override (`approval`, NULL for the declared policy) and the
//!   generation its approval or enabled state last changed at
//!   (`approval_version`);
//! - `tool_catalog_changes`: who changed what, when (append-only);
//! - `tool_catalog_generation`: one counter, bumped in the same
//!   transaction as every change, which the servers poll.

use chrono::{SecondsFormat, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde::Serialize;

use super::Error;
use crate::custom::spec::ToolSpec;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tool_catalog (
    name       TEXT NOT NULL PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('builtin', 'custom')),
    enabled    INTEGER NOT NULL DEFAULT 1,
    definition TEXT,
    source     TEXT NOT NULL DEFAULT 'cli',
    updated_at TEXT NOT NULL,
    updated_by TEXT NOT NULL
    -- and ADDED_COLUMNS
);
CREATE TABLE IF NOT EXISTS tool_catalog_changes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         TEXT NOT NULL,
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    tool       TEXT NOT NULL,
    detail     TEXT
);
CREATE TABLE IF NOT EXISTS tool_catalog_generation (
    id         INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
);
INSERT OR IGNORE INTO tool_catalog_generation (id, generation) VALUES (1, 0);
";

/// Columns of `tool_catalog` added after the first release, with their
/// definitions: [`migrate`] adds them to new and older catalogues alike.
const ADDED_COLUMNS: [(&str, &str); 2] = [
    (
        "approval",
        "TEXT CHECK (approval IN ('none', 'confirm', 'operator'))",
    ),
    ("approval_version", "INTEGER NOT NULL DEFAULT 0"),
];

/// The generation being written by the transaction that bumped it: a
/// change's `approval_version`.
const CURRENT_GENERATION: &str = "(SELECT generation FROM tool_catalog_generation WHERE id = 1)";

/// One catalogue row.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    /// Tool name.
    pub name: String,
    /// `builtin` or `custom`.
    pub kind: String,
    /// Served or not.
    pub enabled: bool,
    /// A custom tool's definition (JSON of [`ToolSpec`]).
    #[serde(skip)]
    pub definition: Option<String>,
    /// `cli`, or `file:PATH` for tools loaded from `--tools-file`.
    pub source: String,
    /// Last change (RFC 3339).
    pub updated_at: String,
    /// Who made it.
    pub updated_by: String,
    /// The approval override (`none`, `confirm`, `operator`); `None`: the
    /// tool's declared policy.
    #[serde(rename = "approval_override")]
    pub approval: Option<String>,
    /// The generation at which its approval or enabled state last changed
    /// (the version of its approval policy).
    pub approval_version: i64,
}

/// Creates the tables if missing (idempotent; servers and the CLI both
/// call it).
pub fn migrate(conn: &Connection) -> Result<(), Error> {
    conn.execute_batch(SCHEMA).map_err(Error::CreateTables)?;
    add_missing_columns(conn).map_err(Error::AddColumns)
}

/// Adds [`ADDED_COLUMNS`] to a `tool_catalog` created without them.
fn add_missing_columns(conn: &Connection) -> rusqlite::Result<()> {
    let present: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('tool_catalog')")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for (column, definition) in ADDED_COLUMNS {
        if present.iter().any(|p| p == column) {
            continue;
        }
        let added = conn.execute_batch(&format!(
            "ALTER TABLE tool_catalog ADD COLUMN {column} {definition}"
        ));
        match added {
            // Another process starting at the same time added it first.
            Err(e) if e.to_string().contains("duplicate column name") => {}
            other => other?,
        }
    }
    Ok(())
}

/// The current generation: one single-row read.
pub fn generation(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT generation FROM tool_catalog_generation WHERE id = 1",
        [],
        |r| r.get(0),
    )
}

/// Every row, custom tools by name.
pub fn entries(conn: &Connection) -> rusqlite::Result<Vec<Entry>> {
    let mut stmt = conn.prepare(
        "SELECT name, kind, enabled, definition, source, updated_at, updated_by,
                approval, approval_version
         FROM tool_catalog ORDER BY kind, name",
    )?;
    stmt.query_map([], |r| {
        Ok(Entry {
            name: r.get(0)?,
            kind: r.get(1)?,
            enabled: r.get(2)?,
            definition: r.get(3)?,
            source: r.get(4)?,
            updated_at: r.get(5)?,
            updated_by: r.get(6)?,
            approval: r.get(7)?,
            approval_version: r.get(8)?,
        })
    })?
    .collect()
}

pub(super) fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn record(
    tx: &Transaction<'_>,
    actor: &str,
    action: &str,
    tool: &str,
    detail: Option<&str>,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO tool_catalog_changes (at, actor, action, tool, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![now(), actor, action, tool, detail],
    )?;
    Ok(())
}

fn bump(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE tool_catalog_generation SET generation = generation + 1 WHERE id = 1",
        [],
    )?;
    Ok(())
}

/// Enables or disables `name` (`builtin` says which kind it is). `Ok(false)`
/// when it already was in that state.
pub fn set_enabled(
    conn: &mut Connection,
    name: &str,
    builtin: bool,
    enabled: bool,
    actor: &str,
) -> rusqlite::Result<bool> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let current: Option<bool> = tx
        .query_row(
            "SELECT enabled FROM tool_catalog WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .optional()?;
    if current.unwrap_or(true) == enabled && (current.is_some() || builtin) {
        return Ok(false);
    }
    let kind = if builtin { "builtin" } else { "custom" };
    // Bumped first, so the row takes the new generation as its approval
    // version: answers given before a disable are void after the enable.
    bump(&tx)?;
    tx.execute(
        &format!(
            "INSERT INTO tool_catalog (name, kind, enabled, updated_at, updated_by, approval_version)
             VALUES (?1, ?2, ?3, ?4, ?5, {CURRENT_GENERATION})
             ON CONFLICT (name) DO UPDATE SET enabled = ?3, updated_at = ?4, updated_by = ?5,
                 approval_version = excluded.approval_version"
        ),
        params![name, kind, enabled, now(), actor],
    )?;
    let action = if enabled { "enable" } else { "disable" };
    record(&tx, actor, action, name, None)?;
    tx.commit()?;
    Ok(true)
}

/// What [`set_approval`] found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalChange {
    /// The override before (`None`: the declared policy).
    pub previous: Option<String>,
    /// Whether anything changed (`false`: it already was so; nothing is
    /// recorded then).
    pub changed: bool,
}

/// Sets the approval override of `name` (`None` clears it back to the
/// declared policy); `builtin` says which kind it is. `detail(previous)`
/// words the change for the history. The change, its record and the
/// generation bump (the tool's new approval version) are one transaction.
pub fn set_approval(
    conn: &mut Connection,
    name: &str,
    builtin: bool,
    approval: Option<&str>,
    actor: &str,
    detail: impl FnOnce(Option<&str>) -> String,
) -> rusqlite::Result<ApprovalChange> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let current: Option<Option<String>> = tx
        .query_row(
            "SELECT approval FROM tool_catalog WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .optional()?;
    let previous = current.clone().flatten();
    if previous.as_deref() == approval {
        return Ok(ApprovalChange {
            previous,
            changed: false,
        });
    }
    let kind = if builtin { "builtin" } else { "custom" };
    bump(&tx)?;
    tx.execute(
        &format!(
            "INSERT INTO tool_catalog (name, kind, enabled, updated_at, updated_by, approval, approval_version)
             VALUES (?1, ?2, 1, ?3, ?4, ?5, {CURRENT_GENERATION})
             ON CONFLICT (name) DO UPDATE SET updated_at = ?3, updated_by = ?4, approval = ?5,
                 approval_version = excluded.approval_version"
        ),
        params![name, kind, now(), actor, approval],
    )?;
    record(
        &tx,
        actor,
        "approval",
        name,
        Some(&detail(previous.as_deref())),
    )?;
    tx.commit()?;
    Ok(ApprovalChange {
        previous,
        changed: true,
    })
}

/// Stores checked custom tools from `source`. With `sync`, the source's
/// other tools are removed (a `--tools-file` edit); unchanged definitions
/// are left alone. Returns whether anything changed.
pub fn put_custom(
    conn: &mut Connection,
    specs: &[ToolSpec],
    source: &str,
    sync: bool,
    actor: &str,
    max_custom: usize,
) -> Result<bool, Error> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(Error::Update)?;
    // Bumped first, so a changed definition takes the new generation as
    // its approval version; nothing is committed unless something changed.
    bump(&tx).map_err(Error::Update)?;
    let mut changed = false;
    if sync {
        changed |= remove_others(&tx, specs, source, actor).map_err(Error::Update)?;
    }
    for spec in specs {
        changed |= put_one(&tx, spec, source, sync, actor)?;
    }
    let count: i64 = tx
        .query_row(
            "SELECT count(*) FROM tool_catalog WHERE kind = 'custom'",
            [],
            |r| r.get(0),
        )
        .map_err(Error::Update)?;
    if usize::try_from(count).unwrap_or(usize::MAX) > max_custom {
        return Err(Error::TooMany {
            count,
            max: max_custom,
        });
    }
    if changed {
        tx.commit().map_err(Error::Update)?;
    }
    Ok(changed)
}

/// Removes the custom tools of `source` that `specs` no longer names;
/// returns whether there were any.
fn remove_others(
    tx: &Transaction<'_>,
    specs: &[ToolSpec],
    source: &str,
    actor: &str,
) -> rusqlite::Result<bool> {
    let names: Vec<String> = tx
        .prepare("SELECT name FROM tool_catalog WHERE kind = 'custom' AND source = ?1")?
        .query_map([source], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut removed = false;
    for name in names
        .iter()
        .filter(|n| !specs.iter().any(|s| &s.name == *n))
    {
        tx.execute("DELETE FROM tool_catalog WHERE name = ?1", [name])?;
        record(tx, actor, "remove", name, Some(source))?;
        removed = true;
    }
    Ok(removed)
}

/// Adds or updates one custom tool; returns whether it changed. A name
/// held by a built-in or by another source is refused.
fn put_one(
    tx: &Transaction<'_>,
    spec: &ToolSpec,
    source: &str,
    sync: bool,
    actor: &str,
) -> Result<bool, Error> {
    let json = serde_json::to_string(spec)?;
    let existing: Option<(String, Option<String>, String)> = tx
        .query_row(
            "SELECT kind, definition, source FROM tool_catalog WHERE name = ?1",
            [&spec.name],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
        .map_err(Error::Update)?;
    match existing {
        // The same source re-syncing: unchanged definitions stay as they
        // are, changed ones are updated below.
        Some((_, def, src)) if src == source && sync && def.as_deref() == Some(json.as_str()) => {
            return Ok(false);
        }
        Some((_, _, src)) if src == source && sync => {}
        Some((kind, _, src)) => {
            return Err(Error::NameTaken {
                name: spec.name.clone(),
                kind,
                owner: src,
            });
        }
        None => {}
    }
    // A new definition may declare another approval: a new policy version.
    tx.execute(
        &format!(
            "INSERT INTO tool_catalog (name, kind, enabled, definition, source, updated_at, updated_by, approval_version)
             VALUES (?1, 'custom', 1, ?2, ?3, ?4, ?5, {CURRENT_GENERATION})
             ON CONFLICT (name) DO UPDATE SET definition = ?2, updated_at = ?4, updated_by = ?5,
                 approval_version = excluded.approval_version"
        ),
        params![spec.name, json, source, now(), actor],
    )
    .map_err(Error::Update)?;
    record(tx, actor, "add", &spec.name, Some(source)).map_err(Error::Update)?;
    Ok(true)
}

/// Removes a custom tool; `Ok(false)` if there is none by that name.
pub fn remove_custom(conn: &mut Connection, name: &str, actor: &str) -> rusqlite::Result<bool> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let n = tx.execute(
        "DELETE FROM tool_catalog WHERE name = ?1 AND kind = 'custom'",
        [name],
    )?;
    if n == 0 {
        return Ok(false);
    }
    record(&tx, actor, "remove", name, None)?;
    bump(&tx)?;
    tx.commit()?;
    Ok(true)
}

/// One recorded change.
#[derive(Debug, Serialize)]
pub struct Change {
    /// When (RFC 3339).
    pub at: String,
    /// Who.
    pub actor: String,
    /// `enable`, `disable`, `add`, `remove`, `approval`.
    pub action: String,
    /// Which tool.
    pub tool: String,
    /// Where it came from, for file syncs; the new and old policy, and
    /// the reason, for approval changes.
    pub detail: Option<String>,
}

/// The newest `limit` changes, oldest first.
pub fn changes(conn: &Connection, limit: u32) -> rusqlite::Result<Vec<Change>> {
    let mut stmt = conn.prepare(
        "SELECT at, actor, action, tool, detail FROM
           (SELECT * FROM tool_catalog_changes ORDER BY id DESC LIMIT ?1) ORDER BY id",
    )?;
    stmt.query_map([limit], |r| {
        Ok(Change {
            at: r.get(0)?,
            actor: r.get(1)?,
            action: r.get(2)?,
            tool: r.get(3)?,
            detail: r.get(4)?,
        })
    })?
    .collect()
}
