//! Inserts the generated seed data into an empty PostgreSQL database: one
//! `INSERT … SELECT FROM unnest(arrays)` per table and batch of the
//! generator, inside the bootstrap transaction. The generator runs on a
//! blocking thread and hands its batches over a bounded channel, so a
//! company of any size is inserted in flat memory.

use chrono::NaiveDate;
use deadpool_postgres::Transaction;
use tokio_postgres::types::ToSql;

use crate::error::DirectoryError;
use crate::statements::SEED_EMPLOYEES;
use tokio::sync::mpsc;

use crate::seed::{self, SeedData, Sink};

type Params<'a> = Vec<&'a (dyn ToSql + Sync)>;

/// Seeds the database if it holds no directory rows at all (see the SQLite
/// twin); returns whether it did.
/// The caller holds the bootstrap lock, so the check and the inserts cannot
/// race another server; a failure rolls everything back.
pub(crate) async fn seed_if_empty(
    tx: &Transaction<'_>,
    demo_employees: Option<u32>,
) -> Result<bool, DirectoryError> {
    let row = tx
        .query_one(seed::ANY_ROWS_SQL, &[])
        .await
        .map_err(DirectoryError::pg("look for existing rows"))?;
    if row.get::<_, bool>(0) {
        return Ok(false);
    }
    let started = std::time::Instant::now();
    let people = generate_and_insert(tx, demo_employees).await?;
    if let Some(n) = demo_employees {
        tx.execute(SEED_EMPLOYEES, &[&n.to_string()])
            .await
            .map_err(|e| DirectoryError::Seed(e.to_string()))?;
    }
    tracing::info!(
        employees = people,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "seeded employee directory"
    );
    Ok(true)
}

/// Runs `INSERT INTO {table} ({columns}) SELECT * FROM unnest($1::t1[], …)`.
async fn insert_arrays(
    tx: &Transaction<'_>,
    table: &str,
    columns: &str,
    types: &[&str],
    params: Params<'_>,
) -> Result<(), tokio_postgres::Error> {
    let arrays: Vec<String> = types
        .iter()
        .enumerate()
        .map(|(i, t)| format!("${}::{t}[]", i + 1))
        .collect();
    let sql = format!(
        "INSERT INTO {table} ({columns}) SELECT * FROM unnest({})",
        arrays.join(", ")
    );
    tx.execute(&sql, &params).await.map(|_| ())
}

/// Batches in flight between the generator and the inserts: the
/// generator makes the next while one is inserted.
const BATCHES_IN_FLIGHT: usize = 2;

/// Hands each batch to the inserting task.
struct Sender(mpsc::Sender<SeedData>);

impl Sink for Sender {
    fn take(&mut self, batch: &mut SeedData) -> Result<(), String> {
        self.0
            .blocking_send(std::mem::take(batch))
            .map_err(|_| "the database stopped taking rows".to_string())
    }
}

/// Runs the generator on a blocking thread and inserts its batches as
/// they come; returns the number of people.
async fn generate_and_insert(
    tx: &Transaction<'_>,
    demo_employees: Option<u32>,
) -> Result<u64, DirectoryError> {
    let (send, mut batches) = mpsc::channel(BATCHES_IN_FLIGHT);
    let generator =
        tokio::task::spawn_blocking(move || seed::generate_into(demo_employees, &mut Sender(send)));
    let mut inserted = Ok(());
    while let Some(batch) = batches.recv().await {
        inserted = insert_batch(tx, &batch).await;
        if inserted.is_err() {
            break;
        }
    }
    // A failed insert stops the generator at its next batch.
    drop(batches);
    let generated = generator.await.map_err(DirectoryError::from)?;
    inserted.map_err(|e| DirectoryError::Seed(e.to_string()))?;
    let people = generated.map_err(DirectoryError::Seed)?;
    meta(tx)
        .await
        .map_err(|e| DirectoryError::Seed(e.to_string()))?;
    Ok(people)
}

/// Inserts one batch of the generator.
async fn insert_batch(tx: &Transaction<'_>, data: &SeedData) -> Result<(), tokio_postgres::Error> {
    insert_org(tx, data).await?;
    insert_people(tx, data).await?;
    insert_details(tx, data).await
}

/// Records which generator made the rows and its anchor date.
async fn meta(tx: &Transaction<'_>) -> Result<(), tokio_postgres::Error> {
    tx.execute(
        "INSERT INTO directory_meta (key, value) VALUES ('seed_version', $1), ('seed_anchor_date', $2)",
        &[&seed::SEED_VERSION, &seed::anchor_date().to_string()],
    )
    .await
    .map(|_| ())
}

/// Locations, departments, teams, roles, bands, skills.
async fn insert_org(tx: &Transaction<'_>, data: &SeedData) -> Result<(), tokio_postgres::Error> {
    let l = &data.locations;
    let id: Vec<i64> = l.iter().map(|x| x.id).collect();
    let city: Vec<&str> = l.iter().map(|x| x.city).collect();
    let region: Vec<Option<&str>> = l.iter().map(|x| x.region).collect();
    let country: Vec<&str> = l.iter().map(|x| x.country).collect();
    insert_arrays(
        tx,
        "locations",
        "id, city, region, country",
        &["bigint", "text", "text", "text"],
        vec![&id, &city, &region, &country],
    )
    .await?;

    let d = &data.departments;
    let id: Vec<&str> = d.iter().map(|x| x.id).collect();
    let name: Vec<&str> = d.iter().map(|x| x.name).collect();
    let desc: Vec<&str> = d.iter().map(|x| x.description).collect();
    let head: Vec<&str> = d.iter().map(|x| x.head_id.as_str()).collect();
    insert_arrays(
        tx,
        "departments",
        "id, name, description, head_id",
        &["text", "text", "text", "text"],
        vec![&id, &name, &desc, &head],
    )
    .await?;

    let t = &data.teams;
    let id: Vec<&str> = t.iter().map(|x| x.id.as_str()).collect();
    let name: Vec<&str> = t.iter().map(|x| x.name.as_str()).collect();
    let dept: Vec<&str> = t.iter().map(|x| x.department_id).collect();
    let desc: Vec<&str> = t.iter().map(|x| x.description).collect();
    let manager: Vec<&str> = t.iter().map(|x| x.manager_id.as_str()).collect();
    insert_arrays(
        tx,
        "teams",
        "id, name, department_id, description, manager_id",
        &["text", "text", "text", "text", "text"],
        vec![&id, &name, &dept, &desc, &manager],
    )
    .await?;

    let r = &data.roles;
    let id: Vec<i64> = r.iter().map(|x| x.id).collect();
    let title: Vec<&str> = r.iter().map(|x| x.title).collect();
    let track: Vec<&str> = r.iter().map(|x| x.track.as_str()).collect();
    let dept: Vec<&str> = r.iter().map(|x| x.department_id).collect();
    insert_arrays(
        tx,
        "roles",
        "id, title, track, department_id",
        &["bigint", "text", "text", "text"],
        vec![&id, &title, &track, &dept],
    )
    .await?;

    let b = &data.bands;
    let role: Vec<i64> = b.iter().map(|x| x.role_id).collect();
    let level: Vec<&str> = b.iter().map(|x| x.level.as_str()).collect();
    let min: Vec<i64> = b.iter().map(|x| x.min).collect();
    let mid: Vec<i64> = b.iter().map(|x| x.mid).collect();
    let max: Vec<i64> = b.iter().map(|x| x.max).collect();
    insert_arrays(
        tx,
        "compensation_bands",
        "role_id, level, min_salary, mid_salary, max_salary",
        &["bigint", "text", "bigint", "bigint", "bigint"],
        vec![&role, &level, &min, &mid, &max],
    )
    .await?;

    let s = &data.skills;
    let id: Vec<i64> = s.iter().map(|x| x.id).collect();
    let name: Vec<&str> = s.iter().map(|x| x.name).collect();
    let category: Vec<&str> = s.iter().map(|x| x.category).collect();
    insert_arrays(
        tx,
        "skills",
        "id, name, category",
        &["bigint", "text", "text"],
        vec![&id, &name, &category],
    )
    .await
}

/// The employees table.
async fn insert_people(tx: &Transaction<'_>, data: &SeedData) -> Result<(), tokio_postgres::Error> {
    let e = &data.employees;
    let id: Vec<&str> = e.iter().map(|x| x.id.as_str()).collect();
    let first: Vec<&str> = e.iter().map(|x| x.first_name.as_str()).collect();
    let last: Vec<&str> = e.iter().map(|x| x.last_name.as_str()).collect();
    let email: Vec<&str> = e.iter().map(|x| x.email.as_str()).collect();
    let phone: Vec<&str> = e.iter().map(|x| x.phone.as_str()).collect();
    let role: Vec<i64> = e.iter().map(|x| x.role_id).collect();
    let level: Vec<&str> = e.iter().map(|x| x.level.as_str()).collect();
    let dept: Vec<&str> = e.iter().map(|x| x.department_id).collect();
    let team: Vec<Option<&str>> = e.iter().map(|x| x.team_id.as_deref()).collect();
    let manager: Vec<Option<&str>> = e.iter().map(|x| x.manager_id.as_deref()).collect();
    let location: Vec<i64> = e.iter().map(|x| x.location_id).collect();
    let employment: Vec<&str> = e.iter().map(|x| x.employment_type.as_str()).collect();
    let office: Vec<&str> = e.iter().map(|x| x.office_type.as_str()).collect();
    let start: Vec<NaiveDate> = e.iter().map(|x| x.start_date).collect();
    let status: Vec<&str> = e.iter().map(|x| x.status.as_str()).collect();
    let end: Vec<Option<NaiveDate>> = e.iter().map(|x| x.termination_date).collect();
    let reason: Vec<Option<&str>> = e
        .iter()
        .map(|x| x.termination_reason.map(|r| r.as_str()))
        .collect();
    let salary: Vec<i64> = e.iter().map(|x| x.salary).collect();
    insert_arrays(
        tx,
        "employees",
        "id, first_name, last_name, email, phone, role_id, level, department_id, team_id, \
         manager_id, location_id, employment_type, office_type, start_date, status, \
         termination_date, termination_reason, salary",
        &[
            "text", "text", "text", "text", "text", "bigint", "text", "text", "text", "text",
            "bigint", "text", "text", "date", "text", "date", "text", "bigint",
        ],
        vec![
            &id,
            &first,
            &last,
            &email,
            &phone,
            &role,
            &level,
            &dept,
            &team,
            &manager,
            &location,
            &employment,
            &office,
            &start,
            &status,
            &end,
            &reason,
            &salary,
        ],
    )
    .await
}

/// Skills of employees, employment history, leave balances.
async fn insert_details(
    tx: &Transaction<'_>,
    data: &SeedData,
) -> Result<(), tokio_postgres::Error> {
    let s = &data.employee_skills;
    let employee: Vec<&str> = s.iter().map(|x| x.employee_id.as_str()).collect();
    let skill: Vec<i64> = s.iter().map(|x| x.skill_id).collect();
    let rank: Vec<i64> = s.iter().map(|x| i64::from(x.proficiency.rank())).collect();
    insert_arrays(
        tx,
        "employee_skills",
        "employee_id, skill_id, proficiency",
        &["text", "bigint", "bigint"],
        vec![&employee, &skill, &rank],
    )
    .await?;

    // Ids in insertion order, as SQLite's rowids: history is ordered by them.
    let h = &data.history;
    let id: Vec<i64> = (1..=h.len() as i64).collect();
    let employee: Vec<&str> = h.iter().map(|x| x.employee_id.as_str()).collect();
    let company: Vec<&str> = h.iter().map(|x| x.company.as_str()).collect();
    let title: Vec<&str> = h.iter().map(|x| x.title.as_str()).collect();
    let level: Vec<Option<&str>> = h.iter().map(|x| x.level.map(|l| l.as_str())).collect();
    let dept: Vec<Option<&str>> = h.iter().map(|x| x.department_id).collect();
    let event: Vec<&str> = h.iter().map(|x| x.event.as_str()).collect();
    let start: Vec<NaiveDate> = h.iter().map(|x| x.start_date).collect();
    let end: Vec<Option<NaiveDate>> = h.iter().map(|x| x.end_date).collect();
    insert_arrays(
        tx,
        "employment_history",
        "id, employee_id, company, title, level, department_id, event, start_date, end_date",
        &[
            "bigint", "text", "text", "text", "text", "text", "text", "date", "date",
        ],
        vec![
            &id, &employee, &company, &title, &level, &dept, &event, &start, &end,
        ],
    )
    .await?;

    let l = &data.leave;
    let employee: Vec<&str> = l.iter().map(|x| x.employee_id.as_str()).collect();
    let year: Vec<i32> = l.iter().map(|x| x.year).collect();
    let kind: Vec<&str> = l.iter().map(|x| x.leave_type.as_str()).collect();
    let entitled: Vec<f64> = l.iter().map(|x| x.entitled).collect();
    let used: Vec<f64> = l.iter().map(|x| x.used).collect();
    let pending: Vec<f64> = l.iter().map(|x| x.pending).collect();
    insert_arrays(
        tx,
        "leave_balances",
        "employee_id, year, leave_type, entitled_days, used_days, pending_days",
        &["text", "integer", "text", "float8", "float8", "float8"],
        vec![&employee, &year, &kind, &entitled, &used, &pending],
    )
    .await
}
