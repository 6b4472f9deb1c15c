//! The set-based statements of an import, from the entity table, in either
//! dialect: rows are first staged in a temporary table `stage_<table>`,
//! then counted against the table (added, unchanged, updated), upserted,
//! and in replace mode the rows absent from the stage deleted.

use super::spec::{EMPLOYEE_DEPENDENTS, Entity};

/// Which SQL dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// The staging table of `entity`.
pub fn stage(entity: &Entity) -> String {
    format!("stage_{}", entity.table)
}

fn columns(entity: &Entity) -> String {
    let names: Vec<&str> = entity.columns.iter().map(|c| c.sql).collect();
    names.join(", ")
}

/// `t.k = s.k AND …` over the key.
fn key_match(entity: &Entity, t: &str, s: &str) -> String {
    let parts: Vec<String> = entity
        .key
        .iter()
        .map(|&k| {
            let c = entity.columns[k].sql;
            format!("{t}.{c} = {s}.{c}")
        })
        .collect();
    parts.join(" AND ")
}

fn same(dialect: Dialect, a: &str, b: &str) -> String {
    match dialect {
        Dialect::Sqlite => format!("{a} IS {b}"),
        Dialect::Postgres => format!("{a} IS NOT DISTINCT FROM {b}"),
    }
}

fn differ(dialect: Dialect, a: &str, b: &str) -> String {
    match dialect {
        Dialect::Sqlite => format!("{a} IS NOT {b}"),
        Dialect::Postgres => format!("{a} IS DISTINCT FROM {b}"),
    }
}

/// Inserts one staged row (SQLite; PostgreSQL uses COPY).
pub fn stage_insert(entity: &Entity) -> String {
    let marks: Vec<String> = (1..=entity.columns.len())
        .map(|i| format!("?{i}"))
        .collect();
    format!(
        "INSERT INTO temp.{} ({}) VALUES ({})",
        stage(entity),
        columns(entity),
        marks.join(", ")
    )
}

/// Rows of the stage not yet in the table.
pub fn count_added(entity: &Entity) -> String {
    format!(
        "SELECT count(*) FROM {s} s WHERE NOT EXISTS (SELECT 1 FROM {t} t WHERE {m})",
        s = stage(entity),
        t = entity.table,
        m = key_match(entity, "t", "s")
    )
}

/// Rows of the stage identical to the table's.
pub fn count_unchanged(entity: &Entity, dialect: Dialect) -> String {
    let mut conds = vec![key_match(entity, "t", "s")];
    for c in entity.non_key() {
        let name = entity.columns[c].sql;
        conds.push(same(dialect, &format!("t.{name}"), &format!("s.{name}")));
    }
    format!(
        "SELECT count(*) FROM {s} s JOIN {t} t ON {on}",
        s = stage(entity),
        t = entity.table,
        on = conds.join(" AND ")
    )
}

/// Inserts new rows and updates changed ones.
pub fn upsert(entity: &Entity, dialect: Dialect) -> String {
    let keys: Vec<&str> = entity.key.iter().map(|&k| entity.columns[k].sql).collect();
    let sets: Vec<String> = entity
        .non_key()
        .map(|c| {
            let n = entity.columns[c].sql;
            format!("{n} = excluded.{n}")
        })
        .collect();
    let changed: Vec<String> = entity
        .non_key()
        .map(|c| {
            let n = entity.columns[c].sql;
            differ(
                dialect,
                &format!("{}.{n}", entity.table),
                &format!("excluded.{n}"),
            )
        })
        .collect();
    format!(
        "INSERT INTO {t} ({cols}) SELECT {cols} FROM {s} WHERE true \
         ON CONFLICT ({keys}) DO UPDATE SET {sets} WHERE {changed}",
        t = entity.table,
        cols = columns(entity),
        s = stage(entity),
        keys = keys.join(", "),
        sets = sets.join(", "),
        changed = changed.join(" OR ")
    )
}

/// `WHERE NOT EXISTS` of a table row `t` in the stage. The stage is on the
/// left of each `=`, so the comparison takes the stage's collation (made
/// the table key's) and the stage's primary key answers it: with the table
/// on the left, SQLite compares under the table column's collation, cannot
/// use a stage index declared otherwise, and scans the stage for every
/// row of the table.
fn absent_from_stage(entity: &Entity, t: &str) -> String {
    format!(
        "NOT EXISTS (SELECT 1 FROM {s} s WHERE {m})",
        s = stage(entity),
        m = key_match(entity, "s", t)
    )
}

/// How many of the table's rows are not in the stage.
pub fn count_absent(entity: &Entity) -> String {
    format!(
        "SELECT count(*) FROM {t} WHERE {cond}",
        t = entity.table,
        cond = absent_from_stage(entity, entity.table)
    )
}

/// Deletes the table's rows that are not in the stage.
pub fn delete_absent(entity: &Entity) -> String {
    format!(
        "DELETE FROM {t} WHERE {cond}",
        t = entity.table,
        cond = absent_from_stage(entity, entity.table)
    )
}

/// The condition "this employee id is being removed" (replace mode, with
/// an employees stage), for `column` of another table.
pub fn employee_removed(column: &str) -> String {
    format!(
        "{column} IN (SELECT e.id FROM employees e \
         WHERE NOT EXISTS (SELECT 1 FROM stage_employees s WHERE s.id = e.id))"
    )
}

/// One statement of replace mode, with the count that predicts its effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    /// The entity whose rows it removes (its `removed` count).
    pub entity: &'static str,
    /// `SELECT count(*)` of the rows it removes; `None` for a clean-up that
    /// removes no row (a reference set to NULL).
    pub count: Option<String>,
    /// The statement.
    pub apply: String,
}

/// Replace mode's statements, in order, for the entities that have a file
/// (`present`, in apply order): rows absent from their entity's file go,
/// dependents first; with the employees file, the rows of dependents that
/// have no file go with their employee, and heads and team managers that
/// leave are cleared where departments or teams have no file. Run every
/// `count` before any change: none depends on another statement's effect.
pub fn removals(present: &[&'static Entity]) -> Vec<Removal> {
    let has = |name: &str| present.iter().any(|e| e.name == name);
    let mut out = Vec::new();
    for entity in present.iter().rev() {
        if entity.name == "employees" {
            for dep in EMPLOYEE_DEPENDENTS.iter().filter(|d| !has(d)) {
                let cond = employee_removed("employee_id");
                out.push(Removal {
                    entity: dep,
                    count: Some(format!("SELECT count(*) FROM {dep} WHERE {cond}")),
                    apply: format!("DELETE FROM {dep} WHERE {cond}"),
                });
            }
            for (table, column) in [("departments", "head_id"), ("teams", "manager_id")] {
                if !has(table) {
                    out.push(Removal {
                        entity: table,
                        count: None,
                        apply: format!(
                            "UPDATE {table} SET {column} = NULL WHERE {}",
                            employee_removed(column)
                        ),
                    });
                }
            }
        }
        out.push(Removal {
            entity: entity.name,
            count: Some(count_absent(entity)),
            apply: delete_absent(entity),
        });
    }
    out
}
