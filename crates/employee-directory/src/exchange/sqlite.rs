//! Export and import on SQLite. The import stages rows in temporary tables
//! (the temp database: no lock on the directory file while files are read),
//! then applies them in one `BEGIN IMMEDIATE` transaction: readers in WAL
//! mode — running servers — keep answering from the last commit meanwhile,
//! and see the whole import at once when it commits.

use std::path::Path;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, ToSql, params_from_iter};

use super::read::{RowReader, Source};
use super::spec::{ENTITIES, Entity, Kind};
use super::sql::{self, Dialect};
use super::validate::{self, Known};
use super::value::Value;
use super::write::Export;
use super::{
    EntityCounts, ExchangeError, Format, ImportOptions, ImportReport, Mode, Problems,
    history as record,
};
use crate::error::DirectoryError;
use crate::sqlite::bulk;

/// How long the import waits for another writer (a server's audit trail)
/// to release the file before its apply transaction.
const WRITE_WAIT: Duration = Duration::from_secs(30);

fn open(path: &Path) -> Result<Connection, ExchangeError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(DirectoryError::db("open the database"))?;
    conn.busy_timeout(WRITE_WAIT)
        .map_err(DirectoryError::db("set busy timeout"))?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(DirectoryError::db("enable foreign keys"))?;
    Ok(conn)
}

fn db(context: &'static str) -> impl FnOnce(rusqlite::Error) -> ExchangeError {
    move |e| ExchangeError::Directory(DirectoryError::db(context)(e))
}

fn select(entity: &Entity) -> String {
    let cols: Vec<&str> = entity.columns.iter().map(|c| c.sql).collect();
    let keys: Vec<&str> = entity.key.iter().map(|&k| entity.columns[k].sql).collect();
    format!(
        "SELECT {} FROM {} ORDER BY {}",
        cols.join(", "),
        entity.table,
        keys.join(", ")
    )
}

fn value(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(n) => Value::Int(n),
        ValueRef::Real(x) => Value::Real(x),
        ValueRef::Text(t) | ValueRef::Blob(t) => {
            Value::Text(String::from_utf8_lossy(t).into_owned())
        }
    }
}

/// Writes every entity into `dir` from one read transaction (a consistent
/// snapshot).
pub fn export(
    path: &Path,
    dir: &Path,
    format: Format,
) -> Result<Vec<(&'static str, u64)>, ExchangeError> {
    if !path.is_file() {
        return Err(ExchangeError::io(path, std::io::ErrorKind::NotFound.into()));
    }
    let mut conn = open(path)?;
    let tx = conn.transaction().map_err(db("begin export"))?;
    let mut written = Vec::new();
    let mut export = Export::new(dir, format);
    for entity in ENTITIES {
        let (file, mut out) = export.start(entity)?;
        let mut stmt = tx.prepare(&select(entity)).map_err(db("export query"))?;
        let mut rows = stmt.query([]).map_err(db("export query"))?;
        let mut n = 0;
        let mut values = Vec::with_capacity(entity.columns.len());
        while let Some(row) = rows.next().map_err(db("export row"))? {
            values.clear();
            for i in 0..entity.columns.len() {
                values.push(value(row.get_ref(i).map_err(db("export cell"))?));
            }
            out.row(&file, entity, &values)?;
            n += 1;
        }
        export.end(out, &file)?;
        written.push((entity.name, n));
    }
    export.finish()?;
    Ok(written)
}

/// The database's keys that the import keeps ([`validate::from_database`]).
fn load_known(conn: &Connection, sources: &[Source], mode: Mode) -> Result<Known, ExchangeError> {
    let mut known = Known::default();
    // Employees are read with their managers below.
    let kept = |e: &&Entity| {
        e.name != "employees"
            && validate::is_referenced(e)
            && validate::from_database(e.name, sources, mode)
    };
    for entity in ENTITIES.iter().filter(kept) {
        let cols: Vec<String> = entity
            .key
            .iter()
            .map(|&k| entity.columns[k].sql.to_string())
            .collect();
        let sql = format!("SELECT {} FROM {}", cols.join(", "), entity.table);
        let mut stmt = conn.prepare(&sql).map_err(db("read keys"))?;
        let mut rows = stmt.query([]).map_err(db("read keys"))?;
        while let Some(row) = rows.next().map_err(db("read keys"))? {
            let mut parts = Vec::with_capacity(entity.key.len());
            for (i, &k) in entity.key.iter().enumerate() {
                let text = match value(row.get_ref(i).map_err(db("read keys"))?) {
                    Value::Text(s) => s,
                    Value::Int(n) => n.to_string(),
                    other => format!("{other:?}"),
                };
                parts.push(validate::normalize(entity.columns[k].kind, &text));
            }
            known.insert_key(entity.name, &parts.join(validate::KEY_SEPARATOR));
        }
    }
    if !validate::from_database("employees", sources, mode) {
        return Ok(known);
    }
    let employees = count(conn, "SELECT count(*) FROM employees")?;
    known.reserve_employees(usize::try_from(employees).unwrap_or(0));
    let mut stmt = conn
        .prepare("SELECT id, manager_id FROM employees")
        .map_err(db("read managers"))?;
    let mut rows = stmt.query([]).map_err(db("read managers"))?;
    while let Some(row) = rows.next().map_err(db("read managers"))? {
        let id: String = row.get(0).map_err(db("read managers"))?;
        let manager: Option<String> = row.get(1).map_err(db("read managers"))?;
        known.insert_manager(
            &validate::normalize(Kind::Text, &id),
            manager
                .map(|m| validate::normalize(Kind::Text, &m))
                .as_deref(),
        );
    }
    Ok(known)
}

/// Validates, stages and applies the import.
pub fn import(
    path: &Path,
    sources: &[Source],
    options: &ImportOptions,
) -> Result<ImportReport, ExchangeError> {
    let mut conn = open(path)?;
    let known = load_known(&conn, sources, options.mode)?;
    let checked = validate::validate(sources, options, known)?;
    if !checked.problems.is_empty() {
        return Err(ExchangeError::Invalid(checked.problems));
    }
    let files = super::digests(sources, &checked);
    let result = stage_all(&conn, sources, options, &files)
        .and_then(|()| apply(&mut conn, sources, options, files));
    drop_stages(&conn);
    result
}

fn stage_all(
    conn: &Connection,
    sources: &[Source],
    options: &ImportOptions,
    files: &[super::FileDigest],
) -> Result<(), ExchangeError> {
    for (source, digest) in sources.iter().zip(files) {
        conn.execute_batch(&stage_ddl(conn, source.entity)?)
            .map_err(db("create staging table"))?;
        // The temp database only: no lock on the directory file.
        conn.execute_batch("BEGIN").map_err(db("begin staging"))?;
        let staged = stage_file(conn, source, options, digest);
        let end = if staged.is_ok() { "COMMIT" } else { "ROLLBACK" };
        conn.execute_batch(end).map_err(db("end staging"))?;
        staged?;
    }
    Ok(())
}

/// The staging table of `entity`, keyed like its table: each key column
/// takes the collation of the table's primary key, so the set-based
/// statements match rows as the table does and can search the stage by
/// its key (see `sql::removals`).
fn stage_ddl(conn: &Connection, entity: &Entity) -> Result<String, ExchangeError> {
    let collations = key_collations(conn, entity.table)?;
    let cols: Vec<String> = entity
        .columns
        .iter()
        .map(|c| {
            let decl = match c.kind {
                Kind::Int | Kind::Ranked(_) => "INTEGER",
                Kind::Days => "REAL",
                _ => "TEXT",
            };
            match collations.iter().find(|(name, _)| name == c.sql) {
                Some((_, coll)) => format!("{} {decl} COLLATE {coll}", c.sql),
                None => format!("{} {decl}", c.sql),
            }
        })
        .collect();
    let keys: Vec<&str> = entity.key.iter().map(|&k| entity.columns[k].sql).collect();
    Ok(format!(
        "DROP TABLE IF EXISTS temp.{s}; CREATE TEMP TABLE {s} ({}, PRIMARY KEY ({}))",
        cols.join(", "),
        keys.join(", "),
        s = sql::stage(entity)
    ))
}

/// The columns of `table`'s primary key index with their collations
/// (none for an integer primary key, which is the rowid).
fn key_collations(conn: &Connection, table: &str) -> Result<Vec<(String, String)>, ExchangeError> {
    let mut stmt = conn
        .prepare(
            "SELECT x.name, x.coll FROM pragma_index_list(?1) l, pragma_index_xinfo(l.name) x \
             WHERE l.origin = 'pk' AND x.key = 1 AND x.name IS NOT NULL",
        )
        .map_err(db("read key collations"))?;
    let rows = stmt
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(db("read key collations"))?;
    rows.collect::<Result<_, _>>()
        .map_err(db("read key collations"))
}

fn stage_file(
    conn: &Connection,
    source: &Source,
    options: &ImportOptions,
    digest: &super::FileDigest,
) -> Result<(), ExchangeError> {
    let entity = source.entity;
    let mut stmt = conn
        .prepare(&sql::stage_insert(entity))
        .map_err(db("prepare staging insert"))?;
    let mut ignored = Problems::default();
    let mut reader = RowReader::open(source, options, &mut ignored)?;
    while let Some(row) = reader.next_row(entity) {
        let values = row
            .ok()
            .and_then(|r| reader.values(entity, &r))
            .ok_or_else(|| ExchangeError::Changed(source.file.clone()))?;
        stmt.execute(params_from_iter(values.iter().map(as_sql)))
            .map_err(db("stage a row"))?;
    }
    if reader.digest() != digest.sha256 {
        return Err(ExchangeError::Changed(source.file.clone()));
    }
    Ok(())
}

fn as_sql(v: &Value) -> &dyn ToSql {
    match v {
        Value::Null => &rusqlite::types::Null,
        Value::Text(s) => s,
        Value::Int(n) => n,
        Value::Real(x) => x,
    }
}

fn drop_stages(conn: &Connection) {
    for entity in ENTITIES {
        let _ = conn.execute_batch(&format!("DROP TABLE IF EXISTS temp.{}", sql::stage(entity)));
    }
}

fn count(conn: &Connection, query: &str) -> Result<u64, ExchangeError> {
    conn.query_row(query, [], |r| r.get::<_, i64>(0))
        .map(|n| n.max(0) as u64)
        .map_err(refused)
}

fn refused(e: rusqlite::Error) -> ExchangeError {
    ExchangeError::Refused(e.to_string())
}

/// One transaction: count every change first, then (unless it is a dry run
/// or there is nothing to change) upsert, delete (replace), record.
fn apply(
    conn: &mut Connection,
    sources: &[Source],
    options: &ImportOptions,
    files: Vec<super::FileDigest>,
) -> Result<ImportReport, ExchangeError> {
    // Foreign keys are checked once, before commit, instead of per row: a
    // row-by-row check with deferred violations outstanding scans the
    // employees for each new employee (manager_id's index is not usable
    // under the parent key's NOCASE). Validation has already resolved
    // every reference; nothing relies on cascades here.
    conn.pragma_update(None, "foreign_keys", false)
        .map_err(db("pause foreign keys"))?;
    let removals = match options.mode {
        Mode::Replace => sql::removals(&super::entities(sources)),
        Mode::Merge => Vec::new(),
    };
    // Counted in a read transaction: servers' audit commits do not wait
    // for the counting, and an import with nothing to change (or a dry
    // run) never takes the write lock.
    let read = conn.transaction().map_err(db("begin import"))?;
    let counts = count_changes(&read, sources, &removals)?;
    let counted_at = generation(&read)?;
    read.rollback().map_err(db("end counting"))?;
    let mut report = ImportReport {
        mode: options.mode,
        dry_run: options.dry_run,
        counts,
        files,
    };
    // Nothing to change: no write, no aggregate rebuild, no history row.
    if options.dry_run || !report.changes() {
        return Ok(report);
    }
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(db("begin import"))?;
    // Another import committed in between: count again, under the lock.
    if generation(&tx)? != counted_at {
        report.counts = count_changes(&tx, sources, &removals)?;
        if !report.changes() {
            tx.rollback().map_err(db("end the import"))?;
            return Ok(report);
        }
    }
    write_changes(&tx, sources, &removals, &report.counts)?;
    let values = record::values(options, &report);
    tx.execute(
        &format!(
            "INSERT INTO import_history ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            record::INSERT_COLUMNS
        ),
        params_from_iter(values.iter()),
    )
    .map_err(db("record the import"))?;
    tx.commit().map_err(refused)?;
    Ok(report)
}

/// The directory's change counter (bumped by every commit that changes it).
fn generation(tx: &Connection) -> Result<i64, ExchangeError> {
    tx.query_row("SELECT n FROM directory_generation WHERE id = 1", [], |r| {
        r.get(0)
    })
    .map_err(db("read the change counter"))
}

/// Added, updated, unchanged per file, and what replace mode removes.
fn count_changes(
    tx: &Connection,
    sources: &[Source],
    removals: &[sql::Removal],
) -> Result<Vec<EntityCounts>, ExchangeError> {
    let mut counts: Vec<EntityCounts> = Vec::new();
    for source in sources {
        let entity = source.entity;
        let staged = count(tx, &format!("SELECT count(*) FROM {}", sql::stage(entity)))?;
        let added = count(tx, &sql::count_added(entity))?;
        let unchanged = count(tx, &sql::count_unchanged(entity, Dialect::Sqlite))?;
        counts.push(EntityCounts {
            entity: entity.name,
            added,
            updated: staged.saturating_sub(added + unchanged),
            unchanged,
            removed: 0,
        });
    }
    for removal in removals {
        if let Some(query) = &removal.count {
            super::add_removed(&mut counts, removal.entity, count(tx, query)?);
        }
    }
    Ok(counts)
}

/// Upserts, replace mode's removals and the aggregates, then the foreign
/// key check.
fn write_changes(
    tx: &Connection,
    sources: &[Source],
    removals: &[sql::Removal],
    counts: &[EntityCounts],
) -> Result<(), ExchangeError> {
    let paused = if bulk_write(tx, counts)? {
        Some(bulk::pause(tx).map_err(db("pause aggregate triggers"))?)
    } else {
        None
    };
    for source in sources {
        tx.execute(&sql::upsert(source.entity, Dialect::Sqlite), [])
            .map_err(refused)?;
    }
    for removal in removals {
        tx.execute(&removal.apply, []).map_err(refused)?;
    }
    if let Some(paused) = paused {
        paused.rebuild(tx).map_err(db("rebuild the aggregates"))?;
    }
    check_foreign_keys(tx)
}

/// Whether the import rewrites enough of the people to pause the aggregate
/// triggers and rebuild the aggregates once (`bulk::worth_it`), in either
/// mode: the counts say how many rows of people change.
fn bulk_write(tx: &Connection, counts: &[EntityCounts]) -> Result<bool, ExchangeError> {
    let changed: u64 = counts
        .iter()
        .filter(|c| matches!(c.entity, "employees" | "employee_skills"))
        .map(|c| c.added + c.updated + c.removed)
        .sum();
    if changed == 0 {
        return Ok(false);
    }
    let existing = count(tx, "SELECT count(*) FROM employees")?
        + count(tx, "SELECT count(*) FROM employee_skills")?;
    Ok(bulk::worth_it(changed, existing))
}

/// Refuses the import if any row refers to a missing one (a case the
/// validation does not see, e.g. a removed skill still held in the database).
fn check_foreign_keys(tx: &Connection) -> Result<(), ExchangeError> {
    let mut stmt = tx
        .prepare("PRAGMA foreign_key_check")
        .map_err(db("check foreign keys"))?;
    let mut rows = stmt.query([]).map_err(db("check foreign keys"))?;
    if let Some(row) = rows.next().map_err(db("check foreign keys"))? {
        let table: String = row.get(0).map_err(db("check foreign keys"))?;
        let parent: String = row.get(2).map_err(db("check foreign keys"))?;
        return Err(ExchangeError::Refused(format!(
            "a row of {table} would refer to a missing row of {parent}"
        )));
    }
    Ok(())
}

/// The newest `limit` imports, oldest first.
/// Rows per entity table ([`super::row_counts`]).
pub fn row_counts(path: &Path) -> Result<Vec<i64>, ExchangeError> {
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let conn = open(path)?;
    let n = super::spec::ENTITIES.len();
    conn.query_row(&super::row_counts_sql(), [], |r| {
        (0..n).map(|i| r.get::<_, i64>(i)).collect()
    })
    .map_err(db("count the directory's rows"))
}

pub fn history(path: &Path, limit: u32) -> Result<Vec<super::ImportRecord>, ExchangeError> {
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let conn = open(path)?;
    // A file of an older schema (or not a directory) has had no import.
    let recorded: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'import_history')",
            [],
            |r| r.get(0),
        )
        .map_err(db("read import history"))?;
    if !recorded {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT id, {} FROM (SELECT * FROM import_history ORDER BY id DESC LIMIT ?1) ORDER BY id",
        record::INSERT_COLUMNS
    );
    let mut stmt = conn.prepare(&sql).map_err(db("read import history"))?;
    let rows = stmt
        .query_map([limit], |r| {
            Ok(record::record(
                r.get(0)?,
                [
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                ],
            ))
        })
        .map_err(db("read import history"))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(db("read import history"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::spec;

    /// A migrated, empty directory in memory with a stage for every entity.
    fn staged() -> Connection {
        let mut conn = Connection::open_in_memory().expect("open");
        crate::sqlite::migrate::migrate(&mut conn).expect("migrate");
        // As `apply` runs them.
        conn.pragma_update(None, "foreign_keys", false)
            .expect("pause foreign keys");
        for entity in ENTITIES {
            conn.execute_batch(&stage_ddl(&conn, entity).expect("stage ddl"))
                .expect("create stage");
        }
        conn
    }

    /// The first loop of `query`'s plan that reads a whole table once per
    /// row of another: a full scan inside a correlated subquery, or a scan
    /// nested in a join under another scan.
    fn per_row_scan(conn: &Connection, query: &str) -> Option<String> {
        let mut stmt = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {query}"))
            .unwrap_or_else(|e| panic!("{query}: {e}"));
        let nodes: Vec<(i64, i64, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(3)?)))
            .expect("plan")
            .collect::<Result<_, _>>()
            .expect("plan rows");
        let detail = |id: i64| nodes.iter().find(|n| n.0 == id);
        let is_scan = |d: &str| d.starts_with("SCAN ") && !d.starts_with("SCAN CONSTANT");
        for (id, parent, text) in &nodes {
            if !is_scan(text) {
                continue;
            }
            let mut up = *parent;
            while let Some((_, next, above)) = detail(up) {
                if above.starts_with("CORRELATED") {
                    return Some(format!("{text} (in {above})"));
                }
                up = *next;
            }
            let earlier_scan = nodes
                .iter()
                .any(|(i, p, d)| p == parent && i < id && is_scan(d));
            if earlier_scan {
                return Some(format!("{text} (nested in a scan)"));
            }
        }
        None
    }

    /// Every statement an import runs after staging, for `present` files.
    fn statements(present: &[&'static Entity], mode: Mode) -> Vec<String> {
        let mut out = Vec::new();
        for entity in present {
            out.push(sql::count_added(entity));
            out.push(sql::count_unchanged(entity, Dialect::Sqlite));
            out.push(sql::upsert(entity, Dialect::Sqlite));
        }
        if mode == Mode::Replace {
            for removal in sql::removals(present) {
                out.extend(removal.count);
                out.push(removal.apply);
            }
        }
        out
    }

    #[test]
    fn no_import_statement_scans_a_table_per_row_of_another() {
        let conn = staged();
        let all: Vec<&'static Entity> = ENTITIES.iter().collect();
        let people_only = vec![spec::entity("employees").expect("employees")];
        for present in [all, people_only] {
            for mode in [Mode::Merge, Mode::Replace] {
                for query in statements(&present, mode) {
                    if let Some(scan) = per_row_scan(&conn, &query) {
                        panic!("{query}\nscans per row: {scan}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_plan_check_sees_a_scan_per_row() {
        // The replace delete as it was: the table on the left of `=` takes
        // employee_id's BINARY collation, which the stage's index does not
        // serve, so the stage is scanned for every row of the table.
        let conn = staged();
        let old = "DELETE FROM employee_skills WHERE NOT EXISTS (SELECT 1 FROM \
                   stage_employee_skills s WHERE employee_skills.employee_id = s.employee_id \
                   AND employee_skills.skill_id = s.skill_id)";
        conn.execute_batch(
            "DROP TABLE temp.stage_employee_skills; CREATE TEMP TABLE stage_employee_skills \
             (employee_id TEXT COLLATE NOCASE, skill_id INTEGER, proficiency INTEGER, \
             PRIMARY KEY (employee_id, skill_id))",
        )
        .expect("old stage");
        assert!(per_row_scan(&conn, old).is_some());
        let join = "SELECT count(*) FROM employees a, employees b WHERE a.first_name < b.last_name";
        assert!(per_row_scan(&conn, join).is_some());
    }
}
