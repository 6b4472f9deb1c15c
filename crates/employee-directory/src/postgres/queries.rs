//! Lookups on PostgreSQL, the same answers as `crate::sqlite::queries`.
//!
//! Case-insensitive matching mirrors SQLite's `NOCASE` (ASCII only): the
//! input is ASCII-lowercased here and compared with `lower(column)` (columns
//! use the "C" collation, whose `lower()` folds ASCII only); `NOCASE`
//! orderings become `ORDER BY lower(column)`. The id lookup is a subquery
//! inside each statement, and the statements of one call are pipelined, so
//! most calls take one round trip.

use chrono::{Datelike, NaiveDate};
use deadpool_postgres::ClientWrapper;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::row::{count, get, location, parsed, parsed_opt, proficiency};
use crate::aggregate;
use crate::error::DirectoryError;
use crate::ids::{compact, slugify};
use crate::lookup::{like_pattern, strip_level_prefix};
use crate::model::{
    CompensationBand, EmployeeDetails, EmployeeSkill, EmploymentStatus, EmploymentType, Health,
    HistoryEntry, HistoryEvent, LeaveBalance, LeaveType, Level, OfficeType, Tenure,
};
use crate::seed::job_title;
use crate::statements::{
    employee_details_head, employee_skills_head, employment_history_head, employment_history_order,
    leave_balance_head, tenure_head,
};
use crate::tenure;

type Result<T> = std::result::Result<T, DirectoryError>;
type Params<'a> = [&'a (dyn ToSql + Sync)];

/// Runs a cached prepared statement and returns its rows.
pub(crate) async fn rows(
    c: &ClientWrapper,
    context: &'static str,
    sql: &str,
    params: &Params<'_>,
) -> Result<Vec<Row>> {
    let stmt = c
        .prepare_cached(sql)
        .await
        .map_err(DirectoryError::pg(context))?;
    c.query(&stmt, params)
        .await
        .map_err(DirectoryError::pg(context))
}

/// Like [`rows`], at most one row.
pub(crate) async fn row_opt(
    c: &ClientWrapper,
    context: &'static str,
    sql: &str,
    params: &Params<'_>,
) -> Result<Option<Row>> {
    Ok(rows(c, context, sql, params).await?.into_iter().next())
}

/// The employee id for `$1` (input, ASCII-lowercased), `$2` (whether it is
/// an email address) and `$3` (the input without spaces or punctuation,
/// lowercased): an exact id match first, then the email or compacted id.
macro_rules! employee_id {
    () => {
        "(SELECT r.id FROM employees r
      WHERE lower(r.id) = $1::text
         OR ($2::bool AND lower(r.email) = $1::text)
         OR (NOT $2::bool AND lower(r.id) = $3::text)
      ORDER BY lower(r.id) = $1::text DESC LIMIT 1)"
    };
}

/// Parameters of [`employee_id!`]; `None` for empty input.
fn employee_key(input: &str) -> Option<(String, bool, String)> {
    let input = input.trim();
    // PostgreSQL text cannot hold NUL; no stored id contains one.
    if input.is_empty() || input.contains('\0') {
        return None;
    }
    let by_email = input.contains('@');
    Some((
        input.to_ascii_lowercase(),
        by_email,
        compact(input).to_ascii_lowercase(),
    ))
}

/// A department id for `$1` (lowercased id or name) or `$2` (slug).
macro_rules! department_id {
    () => {
        "(SELECT r.id FROM departments r
      WHERE lower(r.id) = $1::text OR lower(r.name) = $1::text OR lower(r.id) = $2::text
      ORDER BY lower(r.id) LIMIT 1)"
    };
}
pub(crate) use department_id;

/// A team id for `$1` (lowercased id or name) or `$2` (slug, or
/// `department-team`).
macro_rules! team_id {
    () => {
        "(SELECT r.id FROM teams r
      WHERE lower(r.id) = $1::text OR lower(r.name) = $1::text OR lower(r.id) = $2::text
         OR (r.department_id || '-' || r.id) = $2::text
      ORDER BY lower(r.id) LIMIT 1)"
    };
}
pub(crate) use team_id;

/// Parameters of [`department_id!`] and [`team_id!`]; `None` for empty input.
pub(crate) fn org_key(input: &str) -> Option<(String, String)> {
    let input = input.trim();
    (!input.is_empty() && !input.contains('\0'))
        .then(|| (input.to_ascii_lowercase(), slugify(input)))
}

pub(crate) async fn employee(c: &ClientWrapper, input: &str) -> Result<Option<EmployeeDetails>> {
    let Some((key, by_email, compacted)) = employee_key(input) else {
        return Ok(None);
    };
    let p: &Params = &[&key, &by_email, &compacted];
    let main = concat!(employee_details_head!(), " ", employee_id!());
    // lower(): SQLite's NOCASE order of skill names.
    let skills = concat!(
        employee_skills_head!(),
        " ",
        employee_id!(),
        " ORDER BY es.proficiency DESC, lower(s.name)"
    );
    let history = concat!(
        employment_history_head!(),
        " ",
        employee_id!(),
        " ",
        employment_history_order!()
    );
    let (main, skills, history) = tokio::try_join!(
        row_opt(c, "load employee", main, p),
        rows(c, "load employee skills", skills, p),
        rows(c, "load employment history", history, p),
    )?;
    let Some(row) = main else {
        return Ok(None);
    };
    let first_name: String = get(&row, 1)?;
    let last_name: String = get(&row, 2)?;
    let role: String = get(&row, 3)?;
    let track: String = get(&row, 4)?;
    let level = parsed(&row, 5, "level", Level::parse)?;
    Ok(Some(EmployeeDetails {
        employee_id: get(&row, 0)?,
        name: format!("{first_name} {last_name}"),
        first_name,
        last_name,
        title: job_title(&role, &track, level),
        role,
        level,
        department: get(&row, 6)?,
        department_id: get(&row, 7)?,
        team: get(&row, 8)?,
        team_id: get(&row, 9)?,
        manager: get(&row, 10)?,
        manager_id: get(&row, 11)?,
        direct_reports: count(&row, 12)?,
        location: location(&row, 13)?,
        email: get(&row, 16)?,
        phone: get(&row, 17)?,
        employment_type: parsed(&row, 18, "employment type", EmploymentType::parse)?,
        office_type: parsed(&row, 19, "office type", OfficeType::parse)?,
        start_date: get(&row, 20)?,
        status: parsed(&row, 21, "status", EmploymentStatus::parse)?,
        termination_date: get(&row, 22)?,
        skills: skills
            .iter()
            .map(|r| {
                Ok(EmployeeSkill {
                    skill: get(r, 0)?,
                    category: get(r, 1)?,
                    proficiency: proficiency(r, 2)?,
                })
            })
            .collect::<Result<_>>()?,
        employment_history: history
            .iter()
            .map(|r| {
                Ok(HistoryEntry {
                    company: get(r, 0)?,
                    title: get(r, 1)?,
                    level: parsed_opt(r, 2, "level", Level::parse)?,
                    department: get(r, 3)?,
                    event: parsed(r, 4, "history event", HistoryEvent::parse)?,
                    start_date: get(r, 5)?,
                    end_date: get(r, 6)?,
                })
            })
            .collect::<Result<_>>()?,
    }))
}

pub(crate) async fn tenure(
    c: &ClientWrapper,
    input: &str,
    today: NaiveDate,
) -> Result<Option<Tenure>> {
    let Some((key, by_email, compacted)) = employee_key(input) else {
        return Ok(None);
    };
    let sql = concat!(tenure_head!(), " ", employee_id!());
    let Some(row) = row_opt(c, "load tenure", sql, &[&key, &by_email, &compacted]).await? else {
        return Ok(None);
    };
    Ok(Some(tenure::of(
        get(&row, 0)?,
        get(&row, 1)?,
        parsed(&row, 2, "status", EmploymentStatus::parse)?,
        (get(&row, 3)?, get(&row, 4)?),
        today,
    )))
}

/// A role id for `$1` (lowercased title), else `$2` (the title without a
/// level prefix, or NULL).
const ROLE: &str = "(SELECT r.id FROM roles r
      WHERE lower(r.title) = $1::text OR lower(r.title) = $2::text
      ORDER BY lower(r.title) = $1::text DESC LIMIT 1)";

/// Parameters of [`ROLE`]; `None` if no role can match.
fn role_key(input: &str) -> Option<(String, Option<String>)> {
    let input = input.trim();
    if input.contains('\0') {
        return None;
    }
    Some((
        input.to_ascii_lowercase(),
        strip_level_prefix(input).map(str::to_ascii_lowercase),
    ))
}

pub(crate) async fn compensation_band(
    c: &ClientWrapper,
    role: &str,
    level: Level,
) -> Result<Option<CompensationBand>> {
    let Some((key, stripped)) = role_key(role) else {
        return Ok(None);
    };
    let level_text = level.as_str();
    let p: &Params = &[&key, &stripped, &level_text];
    let band = format!(
        "SELECT r.title, r.track, b.currency, b.min_salary, b.mid_salary, b.max_salary
         FROM roles r JOIN compensation_bands b ON b.role_id = r.id AND b.level = $3::text
         WHERE r.id = {ROLE}"
    );
    let stats = format!(
        "SELECT salary, n FROM band_salaries
         WHERE role_id = {ROLE} AND level = $3::text AND n > 0"
    );
    let (band, stats) = tokio::try_join!(
        row_opt(c, "load compensation band", &band, p),
        rows(c, "load salary statistics", &stats, p),
    )?;
    let Some(band) = band else {
        return Ok(None);
    };
    let people: Vec<(i64, i64)> = stats
        .iter()
        .map(|r| Ok((get(r, 0)?, get(r, 1)?)))
        .collect::<Result<_>>()?;
    let role: String = get(&band, 0)?;
    let track: String = get(&band, 1)?;
    Ok(Some(CompensationBand {
        title: job_title(&role, &track, level),
        role,
        level,
        currency: get(&band, 2)?,
        min: get(&band, 3)?,
        mid: get(&band, 4)?,
        max: get(&band, 5)?,
        actual: aggregate::salary_stats(people),
    }))
}

/// Levels that have a band for `role`; `None` if the role is unknown.
pub(crate) async fn role_levels(c: &ClientWrapper, role: &str) -> Result<Option<Vec<Level>>> {
    let Some((key, stripped)) = role_key(role) else {
        return Ok(None);
    };
    let sql = format!(
        "SELECT b.level FROM roles r LEFT JOIN compensation_bands b ON b.role_id = r.id
         WHERE r.id = {ROLE}"
    );
    let found = rows(c, "load role levels", &sql, &[&key, &stripped]).await?;
    if found.is_empty() {
        return Ok(None);
    }
    let mut levels = Vec::new();
    for row in &found {
        if let Some(level) = parsed_opt(row, 0, "level", Level::parse)? {
            levels.push(level);
        }
    }
    levels.sort();
    Ok(Some(levels))
}

pub(crate) async fn leave_balance(
    c: &ClientWrapper,
    input: &str,
    leave_type: LeaveType,
    today: NaiveDate,
) -> Result<Option<LeaveBalance>> {
    let Some((key, by_email, compacted)) = employee_key(input) else {
        return Ok(None);
    };
    // Prefer the current year; fall back to the latest recorded year.
    let sql = concat!(
        leave_balance_head!(),
        " ",
        employee_id!(),
        " AND b.leave_type = $4::text
         ORDER BY b.year = $5::integer DESC, b.year DESC LIMIT 1"
    );
    let kind = leave_type.as_str();
    let year = today.year();
    let p: &Params = &[&key, &by_email, &compacted, &kind, &year];
    let Some(row) = row_opt(c, "load leave balance", sql, p).await? else {
        return Ok(None);
    };
    let entitled: f64 = get(&row, 3)?;
    let used: f64 = get(&row, 4)?;
    let pending: f64 = get(&row, 5)?;
    Ok(Some(LeaveBalance {
        employee_id: get(&row, 0)?,
        name: get(&row, 1)?,
        leave_type,
        year: get(&row, 2)?,
        entitled,
        used,
        pending,
        remaining: entitled - used - pending,
        unit: "days".to_string(),
    }))
}

/// `(id, name)` pairs from a two-column query.
pub(crate) async fn pairs(c: &ClientWrapper, sql: &str) -> Result<Vec<(String, String)>> {
    rows(c, "list ids", sql, &[])
        .await?
        .iter()
        .map(|r| Ok((get(r, 0)?, get(r, 1)?)))
        .collect()
}

/// Values of a one-column query.
pub(crate) async fn strings(c: &ClientWrapper, sql: &str) -> Result<Vec<String>> {
    rows(c, "list values", sql, &[])
        .await?
        .iter()
        .map(|r| get(r, 0))
        .collect()
}

/// Employees whose name or id resembles `query`, best match first (same
/// scoring as the SQLite backend).
pub(crate) async fn suggest_employees(
    c: &ClientWrapper,
    query: &str,
    limit: u32,
) -> Result<Vec<(String, String)>> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .take(5)
        .map(str::to_ascii_lowercase)
        .collect();
    let whole = compact(query).to_ascii_lowercase();
    if words.is_empty() && whole.is_empty() {
        return Ok(Vec::new());
    }
    let mut score =
        vec!["CASE WHEN lower(e.id) LIKE $1::text ESCAPE '\\' THEN 4 ELSE 0 END".to_string()];
    let mut args = vec![like_pattern(&whole)];
    for word in &words {
        let (exact, prefix, contains) = (args.len() + 1, args.len() + 2, args.len() + 3);
        score.push(format!(
            "CASE WHEN lower(e.first_name) = ${exact}::text
                    OR lower(e.last_name) = ${exact}::text THEN 3
                  WHEN lower(e.first_name) LIKE ${prefix}::text ESCAPE '\\'
                    OR lower(e.last_name) LIKE ${prefix}::text ESCAPE '\\' THEN 2
                  WHEN lower(e.first_name || ' ' || e.last_name) LIKE ${contains}::text
                    ESCAPE '\\' THEN 1
                  ELSE 0 END"
        ));
        let contains_pattern = like_pattern(word);
        args.push(word.clone());
        args.push(contains_pattern[1..].to_string());
        args.push(contains_pattern);
    }
    let limit = i64::from(limit);
    let sql = format!(
        "SELECT id, name FROM (
             SELECT e.id AS id, e.first_name || ' ' || e.last_name AS name,
                    {} AS score, e.status = 'active' AS active, e.last_name, e.first_name
             FROM employees e) s
         WHERE score > 0
         ORDER BY score DESC, active DESC, last_name, first_name, lower(id)
         LIMIT ${}::bigint",
        score.join(" + "),
        args.len() + 1
    );
    let mut params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as _).collect();
    params.push(&limit);
    rows(c, "suggest employees", &sql, &params)
        .await?
        .iter()
        .map(|r| Ok((get(r, 0)?, get(r, 1)?)))
        .collect()
}

pub(crate) async fn health(c: &ClientWrapper) -> Result<Health> {
    let row = row_opt(
        c,
        "health check",
        "SELECT (SELECT MAX(version) FROM schema_migrations),
                COUNT(*) FILTER (WHERE status = 'active'), COUNT(*)
         FROM employees",
        &[],
    )
    .await?;
    let Some(row) = row else {
        return Err(DirectoryError::unavailable(
            crate::error::UnavailableReason::NotEmployeeDatabase,
            "the health check returned no row".to_string(),
        ));
    };
    Ok(Health {
        backend: "postgres".to_string(),
        schema_version: get::<Option<i32>>(&row, 0)?
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(0),
        active_employees: count(&row, 1)?,
        total_employees: count(&row, 2)?,
    })
}
