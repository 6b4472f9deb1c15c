//! Large writes without per-row aggregate upkeep. The aggregates (reports,
//! roster counts, band salaries, skill counts) follow each row through
//! triggers: a few index writes per changed employee, right for a hire, but
//! most of the time of an import that changes 100,000 of them. A bulk write
//! drops those triggers inside its own transaction, writes, rebuilds every
//! aggregate from the rows once, and creates the triggers again before it
//! commits. SQLite's schema changes are transactional: other connections
//! see the old triggers and rows until the commit, and the new ones after;
//! a failure rolls the drop back with everything else.

use rusqlite::Connection;

/// The triggers that keep an aggregate (migrations 0005, 0008, 0009, 0010);
/// the skill index's stay (skills are few).
const AGGREGATE_TRIGGERS: &[&str] = &[
    "employees_report_insert",
    "employees_report_delete",
    "employees_report_update",
    "employees_roster_insert",
    "employees_roster_delete",
    "employees_roster_update",
    "employee_skills_count_insert",
    "employee_skills_count_delete",
    "employee_skills_count_update",
    "employees_skill_count_status",
    "employees_skill_count_delete",
    "employees_band_insert",
    "employees_band_delete",
    "employees_band_update",
];

/// Empties every aggregate and fills it from the rows.
const REBUILD: &str = include_str!("aggregates.sql");

/// The smallest write worth the rebuild: below it the triggers cost less
/// than reading the whole directory once.
const BULK_ROWS: u64 = 1_000;

/// Whether a write of `changed` rows into a directory of `existing` rows is
/// cheaper as a bulk write: when it touches a tenth of the directory or
/// more (the triggers' cost grows with the rows written, the rebuild's with
/// the directory).
pub(crate) fn worth_it(changed: u64, existing: u64) -> bool {
    changed >= BULK_ROWS && changed.saturating_mul(10) >= existing
}

/// The aggregate triggers, dropped for the rest of the transaction.
#[must_use = "rebuild() restores the aggregates and their triggers"]
pub(crate) struct Paused {
    /// Each dropped trigger's name and `CREATE TRIGGER` statement, as the
    /// schema stored it.
    creates: Vec<(String, String)>,
}

/// Drops the aggregate triggers, and the generation counter's (one bump
/// at the end stands for every row's). Call inside a write transaction,
/// and end with [`Paused::rebuild`] before committing.
pub(crate) fn pause(tx: &Connection) -> rusqlite::Result<Paused> {
    let mut creates = Vec::with_capacity(AGGREGATE_TRIGGERS.len());
    let mut stmt =
        tx.prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?1")?;
    for name in AGGREGATE_TRIGGERS {
        let sql: String = stmt.query_row([name], |row| row.get(0))?;
        creates.push(((*name).to_owned(), sql));
    }
    drop(stmt);
    let mut stmt = tx.prepare(
        "SELECT name, sql FROM sqlite_master \
         WHERE type = 'trigger' AND name LIKE '%\\_generation' ESCAPE '\\'",
    )?;
    let counters = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    for counter in counters {
        creates.push(counter?);
    }
    drop(stmt);
    for (name, _) in &creates {
        tx.execute_batch(&format!("DROP TRIGGER \"{name}\""))?;
    }
    Ok(Paused { creates })
}

impl Paused {
    /// Rebuilds every aggregate from the rows, restores the triggers and
    /// bumps the generation once.
    pub(crate) fn rebuild(self, tx: &Connection) -> rusqlite::Result<()> {
        tx.execute_batch(REBUILD)?;
        for (_, create) in &self.creates {
            tx.execute_batch(create)?;
        }
        tx.execute_batch("UPDATE directory_generation SET n = n + 1 WHERE id = 1")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_only_for_a_large_share_of_the_directory() {
        assert!(!worth_it(999, 0));
        assert!(worth_it(1_000, 0));
        assert!(worth_it(10_000, 100_000));
        assert!(!worth_it(9_999, 100_000));
        assert!(!worth_it(5_000, 1_000_000));
    }
}
