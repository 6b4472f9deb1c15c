//! Inserts the generated seed data into an empty SQLite database.

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use super::bulk;
use crate::error::DirectoryError;
use crate::seed::{self, SeedData, Sink};
use crate::statements::SEED_EMPLOYEES;

/// Seeds the database if it holds no directory rows at all (a database
/// started empty and then given only some entities by an import is the
/// user's, not a demo to fill in). Returns whether it did.
///
/// Runs in one immediate transaction: the emptiness check and the inserts are
/// atomic, so concurrent openers cannot seed twice and a failure leaves the
/// database empty (and is retried on the next open).
pub(crate) fn seed_if_empty(
    conn: &mut Connection,
    demo_employees: Option<u32>,
) -> Result<bool, DirectoryError> {
    // Foreign keys are checked once, before commit, not per row: with
    // deferred violations outstanding (heads inserted before their people)
    // SQLite scans employees.manager_id for every new employee (its index
    // is unusable under the parent key's NOCASE), quadratic in N. The
    // pragma cannot change inside a transaction, hence here.
    conn.pragma_update(None, "foreign_keys", false)
        .map_err(DirectoryError::db("pause foreign keys"))?;
    let seeded = seed_in_transaction(conn, demo_employees);
    let restored = conn
        .pragma_update(None, "foreign_keys", true)
        .map_err(DirectoryError::db("restore foreign keys"));
    let seeded = seeded?;
    restored?;
    Ok(seeded)
}

fn seed_in_transaction(
    conn: &mut Connection,
    demo_employees: Option<u32>,
) -> Result<bool, DirectoryError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(DirectoryError::db("begin seed transaction"))?;
    let existing: bool = tx
        .query_row(seed::ANY_ROWS_SQL, [], |row| row.get(0))
        .map_err(DirectoryError::db("look for existing rows"))?;
    if existing {
        return Ok(false);
    }
    let started = std::time::Instant::now();
    // The whole company at once: aggregates filled once at the end, not
    // followed row by row (bulk.rs).
    let paused = bulk::pause(&tx).map_err(DirectoryError::db("pause aggregate triggers"))?;
    // Rows go in as they are made, a batch at a time, so memory stays
    // flat at any company size.
    let people = seed::generate_into(demo_employees, &mut Inserter { tx: &tx })
        .map_err(DirectoryError::Seed)?;
    meta(&tx).map_err(|e| DirectoryError::Seed(e.to_string()))?;
    paused
        .rebuild(&tx)
        .map_err(DirectoryError::db("fill the aggregates"))?;
    if let Some(n) = demo_employees {
        tx.execute(SEED_EMPLOYEES, [n.to_string()])
            .map_err(|e| DirectoryError::Seed(e.to_string()))?;
    }
    let violations: i64 = tx
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .map_err(DirectoryError::db("check foreign keys"))?;
    if violations > 0 {
        return Err(DirectoryError::Seed(format!(
            "the generated company has {violations} broken references"
        )));
    }
    tx.commit()
        .map_err(|e| DirectoryError::Seed(format!("commit failed: {e}")))?;
    tracing::info!(
        employees = people,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "seeded employee directory"
    );
    Ok(true)
}

/// Inserts each batch of the generator into the seed transaction.
struct Inserter<'a, 't> {
    tx: &'a Transaction<'t>,
}

impl Sink for Inserter<'_, '_> {
    fn take(&mut self, batch: &mut SeedData) -> Result<(), String> {
        insert(self.tx, batch).map_err(|e| e.to_string())?;
        batch.clear();
        Ok(())
    }
}

/// Inserts one batch; the statements are cached across batches.
fn insert(tx: &Transaction<'_>, data: &SeedData) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO locations (id, city, region, country) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for l in &data.locations {
        stmt.execute(params![l.id, l.city, l.region, l.country])?;
    }

    let mut stmt = tx.prepare_cached(
        "INSERT INTO departments (id, name, description, head_id) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for d in &data.departments {
        stmt.execute(params![d.id, d.name, d.description, d.head_id])?;
    }

    let mut stmt = tx.prepare_cached(
        "INSERT INTO teams (id, name, department_id, description, manager_id)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for t in &data.teams {
        stmt.execute(params![
            t.id,
            t.name,
            t.department_id,
            t.description,
            t.manager_id
        ])?;
    }

    let mut stmt = tx.prepare_cached(
        "INSERT INTO roles (id, title, track, department_id) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for r in &data.roles {
        stmt.execute(params![r.id, r.title, r.track.as_str(), r.department_id])?;
    }

    let mut stmt = tx.prepare_cached(
        "INSERT INTO compensation_bands (role_id, level, currency, min_salary, mid_salary, max_salary)
         VALUES (?1, ?2, 'USD', ?3, ?4, ?5)",
    )?;
    for b in &data.bands {
        stmt.execute(params![b.role_id, b.level.as_str(), b.min, b.mid, b.max])?;
    }

    let mut stmt =
        tx.prepare_cached("INSERT INTO skills (id, name, category) VALUES (?1, ?2, ?3)")?;
    for s in &data.skills {
        stmt.execute(params![s.id, s.name, s.category])?;
    }

    let mut stmt = tx.prepare_cached(
        "INSERT INTO employees (
             id, first_name, last_name, email, phone, role_id, level, department_id, team_id,
             manager_id, location_id, employment_type, office_type, start_date, status,
             termination_date, termination_reason, salary)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
    )?;
    for e in &data.employees {
        stmt.execute(params![
            e.id,
            e.first_name,
            e.last_name,
            e.email,
            e.phone,
            e.role_id,
            e.level.as_str(),
            e.department_id,
            e.team_id,
            e.manager_id,
            e.location_id,
            e.employment_type.as_str(),
            e.office_type.as_str(),
            e.start_date.to_string(),
            e.status.as_str(),
            e.termination_date.map(|d| d.to_string()),
            e.termination_reason.map(|r| r.as_str()),
            e.salary,
        ])?;
    }

    let mut stmt = tx.prepare_cached(
        "INSERT INTO employee_skills (employee_id, skill_id, proficiency) VALUES (?1, ?2, ?3)",
    )?;
    for s in &data.employee_skills {
        stmt.execute(params![s.employee_id, s.skill_id, s.proficiency.rank()])?;
    }

    let mut stmt = tx.prepare_cached(
        "INSERT INTO employment_history
             (employee_id, company, title, level, department_id, event, start_date, end_date)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for h in &data.history {
        stmt.execute(params![
            h.employee_id,
            h.company,
            h.title,
            h.level.map(|l| l.as_str()),
            h.department_id,
            h.event.as_str(),
            h.start_date.to_string(),
            h.end_date.map(|d| d.to_string()),
        ])?;
    }

    let mut stmt = tx.prepare_cached(
        "INSERT INTO leave_balances
             (employee_id, year, leave_type, entitled_days, used_days, pending_days)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for l in &data.leave {
        stmt.execute(params![
            l.employee_id,
            l.year,
            l.leave_type.as_str(),
            l.entitled,
            l.used,
            l.pending
        ])?;
    }

    Ok(())
}

/// Records which generator made the rows and its anchor date.
fn meta(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare("INSERT INTO directory_meta (key, value) VALUES (?1, ?2)")?;
    stmt.execute(params!["seed_version", seed::SEED_VERSION])?;
    stmt.execute(params!["seed_anchor_date", seed::anchor_date().to_string()])?;
    Ok(())
}
