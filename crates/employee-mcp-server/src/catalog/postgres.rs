//! The catalogue tables on PostgreSQL: the same three tables as
//! [`super::sqlite`] on SQLite, for the built-in part (enable, disable,
//! approval overrides, history) and the custom SQL tools.

use deadpool_postgres::Pool;

use super::Error;
use super::sqlite::{ApprovalChange, Change, Entry, now};
use crate::custom::spec::ToolSpec;

/// Serialises concurrent `CREATE … IF NOT EXISTS` of replicas and the CLI
/// starting together (PostgreSQL 15 refuses `_` in numeric literals).
const MIGRATION: &str = "
SELECT pg_advisory_xact_lock(7402117010);
CREATE TABLE IF NOT EXISTS tool_catalog (
    name       TEXT NOT NULL PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('builtin', 'custom')),
    enabled    BOOLEAN NOT NULL DEFAULT TRUE,
    definition TEXT,
    source     TEXT NOT NULL DEFAULT 'cli',
    updated_at TEXT NOT NULL,
    updated_by TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tool_catalog_changes (
    id         BIGSERIAL PRIMARY KEY,
    at         TEXT NOT NULL,
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    tool       TEXT NOT NULL,
    detail     TEXT
);
CREATE TABLE IF NOT EXISTS tool_catalog_generation (
    id         INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    generation BIGINT NOT NULL
);
INSERT INTO tool_catalog_generation (id, generation) VALUES (1, 0)
    ON CONFLICT (id) DO NOTHING;
ALTER TABLE tool_catalog ADD COLUMN IF NOT EXISTS approval TEXT
    CHECK (approval IN ('none', 'confirm', 'operator'));
ALTER TABLE tool_catalog ADD COLUMN IF NOT EXISTS approval_version BIGINT NOT NULL DEFAULT 0;
";

/// The generation being written by the transaction that bumped it: a
/// change's `approval_version`.
const CURRENT_GENERATION: &str = "(SELECT generation FROM tool_catalog_generation WHERE id = 1)";

fn failed(what: &'static str) -> impl Fn(tokio_postgres::Error) -> Error {
    move |source| Error::Postgres { what, source }
}

async fn client(pool: &Pool) -> Result<deadpool_postgres::Object, Error> {
    pool.get().await.map_err(Error::Unreachable)
}

/// Creates the tables if missing (idempotent, under an advisory lock).
pub async fn migrate(pool: &Pool) -> Result<(), Error> {
    let mut c = client(pool).await?;
    let f = failed("creating the tables");
    let tx = c.transaction().await.map_err(&f)?;
    tx.batch_execute(MIGRATION).await.map_err(&f)?;
    tx.commit().await.map_err(&f)
}

/// The current generation: one single-row read.
pub async fn generation(pool: &Pool) -> Result<i64, Error> {
    let c = client(pool).await?;
    let row = c
        .query_one(
            "SELECT generation FROM tool_catalog_generation WHERE id = 1",
            &[],
        )
        .await
        .map_err(failed("reading the generation"))?;
    row.try_get(0).map_err(failed("reading the generation"))
}

/// Every row, by kind and name.
pub async fn entries(pool: &Pool) -> Result<Vec<Entry>, Error> {
    let c = client(pool).await?;
    let rows = c
        .query(
            "SELECT name, kind, enabled, definition, source, updated_at, updated_by,
                    approval, approval_version
             FROM tool_catalog ORDER BY kind, name",
            &[],
        )
        .await
        .map_err(failed("reading the tools"))?;
    rows.iter()
        .map(|r| {
            Ok(Entry {
                name: r.try_get(0)?,
                kind: r.try_get(1)?,
                enabled: r.try_get(2)?,
                definition: r.try_get(3)?,
                source: r.try_get(4)?,
                updated_at: r.try_get(5)?,
                updated_by: r.try_get(6)?,
                approval: r.try_get(7)?,
                approval_version: r.try_get(8)?,
            })
        })
        .collect::<Result<_, tokio_postgres::Error>>()
        .map_err(failed("reading the tools"))
}

/// Enables or disables `name`; `Ok(false)` when it already was in that
/// state. The change, its record and the generation bump are one
/// transaction.
pub async fn set_enabled(
    pool: &Pool,
    name: &str,
    builtin: bool,
    enabled: bool,
    actor: &str,
) -> Result<bool, Error> {
    let mut c = client(pool).await?;
    let f = failed("changing a tool");
    let tx = c.transaction().await.map_err(&f)?;
    // Locking the counter row serialises concurrent changes, so the
    // "already in that state" check below cannot race.
    tx.execute(
        "SELECT generation FROM tool_catalog_generation WHERE id = 1 FOR UPDATE",
        &[],
    )
    .await
    .map_err(&f)?;
    let current: Option<bool> = tx
        .query_opt("SELECT enabled FROM tool_catalog WHERE name = $1", &[&name])
        .await
        .map_err(&f)?
        .map(|r| r.try_get(0))
        .transpose()
        .map_err(&f)?;
    if current.unwrap_or(true) == enabled && (current.is_some() || builtin) {
        return Ok(false);
    }
    let kind = if builtin { "builtin" } else { "custom" };
    let at = now();
    // Bumped first, so the row takes the new generation as its approval
    // version: answers given before a disable are void after the enable.
    lock_and_bump(&tx).await.map_err(&f)?;
    tx.execute(
        &format!(
            "INSERT INTO tool_catalog (name, kind, enabled, updated_at, updated_by, approval_version)
             VALUES ($1, $2, $3, $4, $5, {CURRENT_GENERATION})
             ON CONFLICT (name) DO UPDATE SET enabled = $3, updated_at = $4, updated_by = $5,
                 approval_version = excluded.approval_version"
        ),
        &[&name, &kind, &enabled, &at, &actor],
    )
    .await
    .map_err(&f)?;
    let action = if enabled { "enable" } else { "disable" };
    record(&tx, actor, action, name, None).await.map_err(&f)?;
    tx.commit().await.map_err(&f)?;
    Ok(true)
}

/// Sets the approval override of `name`, as [`super::sqlite::set_approval`]
/// does on SQLite: one transaction, serialised on the generation row.
pub async fn set_approval(
    pool: &Pool,
    name: &str,
    builtin: bool,
    approval: Option<&str>,
    actor: &str,
    detail: impl FnOnce(Option<&str>) -> String,
) -> Result<ApprovalChange, Error> {
    let mut c = client(pool).await?;
    let f = failed("changing a tool's approval");
    let tx = c.transaction().await.map_err(&f)?;
    // Bumping first takes the row lock that serialises catalogue changes
    // (so the check below cannot race) and gives the new version; nothing
    // is committed unless the override changes.
    lock_and_bump(&tx).await.map_err(&f)?;
    let current: Option<Option<String>> = tx
        .query_opt(
            "SELECT approval FROM tool_catalog WHERE name = $1",
            &[&name],
        )
        .await
        .map_err(&f)?
        .map(|r| r.try_get(0))
        .transpose()
        .map_err(&f)?;
    let previous = current.flatten();
    if previous.as_deref() == approval {
        return Ok(ApprovalChange {
            previous,
            changed: false,
        });
    }
    let kind = if builtin { "builtin" } else { "custom" };
    tx.execute(
        &format!(
            "INSERT INTO tool_catalog (name, kind, enabled, updated_at, updated_by, approval, approval_version)
             VALUES ($1, $2, TRUE, $3, $4, $5, {CURRENT_GENERATION})
             ON CONFLICT (name) DO UPDATE SET updated_at = $3, updated_by = $4, approval = $5,
                 approval_version = excluded.approval_version"
        ),
        &[&name, &kind, &now(), &actor, &approval],
    )
    .await
    .map_err(&f)?;
    let detail = detail(previous.as_deref());
    record(&tx, actor, "approval", name, Some(&detail))
        .await
        .map_err(&f)?;
    tx.commit().await.map_err(&f)?;
    Ok(ApprovalChange {
        previous,
        changed: true,
    })
}

/// The newest `limit` changes, oldest first.
pub async fn changes(pool: &Pool, limit: u32) -> Result<Vec<Change>, Error> {
    let c = client(pool).await?;
    let rows = c
        .query(
            "SELECT at, actor, action, tool, detail FROM
               (SELECT * FROM tool_catalog_changes ORDER BY id DESC LIMIT $1) AS newest
             ORDER BY id",
            &[&i64::from(limit)],
        )
        .await
        .map_err(failed("reading the history"))?;
    rows.iter()
        .map(|r| {
            Ok(Change {
                at: r.try_get(0)?,
                actor: r.try_get(1)?,
                action: r.try_get(2)?,
                tool: r.try_get(3)?,
                detail: r.try_get(4)?,
            })
        })
        .collect::<Result<_, tokio_postgres::Error>>()
        .map_err(failed("reading the history"))
}

async fn record(
    tx: &deadpool_postgres::Transaction<'_>,
    actor: &str,
    action: &str,
    tool: &str,
    detail: Option<&str>,
) -> Result<(), tokio_postgres::Error> {
    tx.execute(
        "INSERT INTO tool_catalog_changes (at, actor, action, tool, detail) VALUES ($1, $2, $3, $4, $5)",
        &[&now(), &actor, &action, &tool, &detail],
    )
    .await
    .map(drop)
}

async fn lock_and_bump(
    tx: &deadpool_postgres::Transaction<'_>,
) -> Result<(), tokio_postgres::Error> {
    tx.execute(
        "UPDATE tool_catalog_generation SET generation = generation + 1 WHERE id = 1",
        &[],
    )
    .await
    .map(drop)
}

/// Stores checked custom tools from `source`, as [`super::sqlite::put_custom`]
/// does on SQLite: one transaction, serialised on the generation row.
pub async fn put_custom(
    pool: &Pool,
    specs: &[ToolSpec],
    source: &str,
    sync: bool,
    actor: &str,
    max_custom: usize,
) -> Result<bool, Error> {
    let mut c = client(pool).await?;
    let f = failed("adding custom tools");
    let tx = c.transaction().await.map_err(&f)?;
    // Bumping first takes the row lock that serialises catalogue changes;
    // nothing is committed unless something changed.
    lock_and_bump(&tx).await.map_err(&f)?;
    let mut changed = sync
        && remove_dropped(&tx, specs, source, actor)
            .await
            .map_err(&f)?;
    for spec in specs {
        changed |= upsert(&tx, spec, source, sync, actor).await?;
    }
    let count: i64 = tx
        .query_one(
            "SELECT count(*) FROM tool_catalog WHERE kind = 'custom'",
            &[],
        )
        .await
        .map_err(&f)?
        .get(0);
    if usize::try_from(count).unwrap_or(usize::MAX) > max_custom {
        return Err(Error::TooMany {
            count,
            max: max_custom,
        });
    }
    if changed {
        tx.commit().await.map_err(&f)?;
    }
    Ok(changed)
}

/// A `--tools-file` sync: removes the source's tools the file no longer
/// has. Whether any was removed.
async fn remove_dropped(
    tx: &deadpool_postgres::Transaction<'_>,
    specs: &[ToolSpec],
    source: &str,
    actor: &str,
) -> Result<bool, tokio_postgres::Error> {
    let rows = tx
        .query(
            "SELECT name FROM tool_catalog WHERE kind = 'custom' AND source = $1",
            &[&source],
        )
        .await?;
    let mut changed = false;
    let names = rows
        .iter()
        .map(|r| r.try_get::<_, String>(0))
        .collect::<Result<Vec<_>, _>>()?;
    for name in names {
        if specs.iter().any(|s| s.name == name) {
            continue;
        }
        tx.execute("DELETE FROM tool_catalog WHERE name = $1", &[&name])
            .await?;
        record(tx, actor, "remove", &name, Some(source)).await?;
        changed = true;
    }
    Ok(changed)
}

/// Inserts or updates one definition; an unchanged definition of the same
/// source re-syncing is left alone, a name taken by another source or a
/// built-in is refused. Whether it changed.
async fn upsert(
    tx: &deadpool_postgres::Transaction<'_>,
    spec: &ToolSpec,
    source: &str,
    sync: bool,
    actor: &str,
) -> Result<bool, Error> {
    let f = failed("adding custom tools");
    let json = serde_json::to_string(spec)?;
    let existing = tx
        .query_opt(
            "SELECT kind, definition, source FROM tool_catalog WHERE name = $1",
            &[&spec.name],
        )
        .await
        .map_err(&f)?;
    if let Some(row) = existing {
        let (kind, def, src): (String, Option<String>, String) = (
            row.try_get(0).map_err(&f)?,
            row.try_get(1).map_err(&f)?,
            row.try_get(2).map_err(&f)?,
        );
        if src != source || !sync {
            return Err(Error::NameTaken {
                name: spec.name.clone(),
                kind,
                owner: src,
            });
        }
        if def.as_deref() == Some(json.as_str()) {
            return Ok(false);
        }
    }
    // A new definition may declare another approval: a new policy version
    // (the generation, bumped at the start of the transaction).
    tx.execute(
        &format!(
            "INSERT INTO tool_catalog (name, kind, enabled, definition, source, updated_at, updated_by, approval_version)
             VALUES ($1, 'custom', TRUE, $2, $3, $4, $5, {CURRENT_GENERATION})
             ON CONFLICT (name) DO UPDATE SET definition = $2, updated_at = $4, updated_by = $5,
                 approval_version = excluded.approval_version"
        ),
        &[&spec.name, &json, &source, &now(), &actor],
    )
    .await
    .map_err(&f)?;
    record(tx, actor, "add", &spec.name, Some(source))
        .await
        .map_err(&f)?;
    Ok(true)
}

/// Removes a custom tool; `Ok(false)` if there is none by that name.
pub async fn remove_custom(pool: &Pool, name: &str, actor: &str) -> Result<bool, Error> {
    let mut c = client(pool).await?;
    let f = failed("removing a custom tool");
    let tx = c.transaction().await.map_err(&f)?;
    let n = tx
        .execute(
            "DELETE FROM tool_catalog WHERE name = $1 AND kind = 'custom'",
            &[&name],
        )
        .await
        .map_err(&f)?;
    if n == 0 {
        return Ok(false);
    }
    record(&tx, actor, "remove", name, None).await.map_err(&f)?;
    lock_and_bump(&tx).await.map_err(&f)?;
    tx.commit().await.map_err(&f)?;
    Ok(true)
}
