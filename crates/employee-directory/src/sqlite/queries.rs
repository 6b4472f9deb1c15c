//! Lookups: employees, departments, teams, skills, bands, leave.
//!
//! Every function takes a plain connection and runs synchronously; the
//! backend wraps them in blocking tasks.

use chrono::NaiveDate;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use super::row::{CachedRow, count, date, date_opt, location, parsed, parsed_opt, proficiency};
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

/// Finds an employee's canonical id from an id (any case), a name written
/// with spaces ("alice johnson") or an email address.
pub(crate) fn resolve_employee(conn: &Connection, input: &str) -> Result<Option<String>> {
    let input = input.trim();
    if input.is_empty() {
        return Ok(None);
    }
    let by_id = |key: &str| -> Result<Option<String>> {
        conn.cached_row("SELECT id FROM employees WHERE id = ?1", [key], |r| {
            r.get(0)
        })
        .optional()
        .map_err(DirectoryError::db("resolve employee id"))
    };
    if let Some(id) = by_id(input)? {
        return Ok(Some(id));
    }
    if input.contains('@') {
        return conn
            .cached_row("SELECT id FROM employees WHERE email = ?1", [input], |r| {
                r.get(0)
            })
            .optional()
            .map_err(DirectoryError::db("resolve employee email"));
    }
    let compacted = compact(input);
    if !compacted.is_empty() && compacted != input {
        return by_id(&compacted);
    }
    Ok(None)
}

/// Finds a department id from its id, its name or a slug of its name.
pub(crate) fn resolve_department(conn: &Connection, input: &str) -> Result<Option<String>> {
    let input = input.trim();
    if input.is_empty() {
        return Ok(None);
    }
    conn.cached_row(
        "SELECT id FROM departments WHERE id = ?1 OR name = ?1 OR id = ?2 ORDER BY id LIMIT 1",
        params![input, slugify(input)],
        |r| r.get(0),
    )
    .optional()
    .map_err(DirectoryError::db("resolve department"))
}

/// Finds a team id from its id, its name, a slug of its name, or
/// `department-team` ("engineering-backend").
pub(crate) fn resolve_team(conn: &Connection, input: &str) -> Result<Option<String>> {
    let input = input.trim();
    if input.is_empty() {
        return Ok(None);
    }
    conn.cached_row(
        "SELECT id FROM teams
         WHERE id = ?1 OR name = ?1 OR id = ?2 OR (department_id || '-' || id) = ?2
         ORDER BY id LIMIT 1",
        params![input, slugify(input)],
        |r| r.get(0),
    )
    .optional()
    .map_err(DirectoryError::db("resolve team"))
}

pub(crate) fn employee(conn: &Connection, input: &str) -> Result<Option<EmployeeDetails>> {
    let Some(id) = resolve_employee(conn, input)? else {
        return Ok(None);
    };
    let details = conn
        .cached_row(concat!(employee_details_head!(), " ?1"), [&id], |row| {
            let first_name: String = row.get(1)?;
            let last_name: String = row.get(2)?;
            let role: String = row.get(3)?;
            let track: String = row.get(4)?;
            let level = parsed(row, 5, "level", Level::parse)?;
            Ok(EmployeeDetails {
                employee_id: row.get(0)?,
                name: format!("{first_name} {last_name}"),
                first_name,
                last_name,
                title: job_title(&role, &track, level),
                role,
                level,
                department: row.get(6)?,
                department_id: row.get(7)?,
                team: row.get(8)?,
                team_id: row.get(9)?,
                manager: row.get(10)?,
                manager_id: row.get(11)?,
                direct_reports: count(row, 12)?,
                location: location(row, 13)?,
                email: row.get(16)?,
                phone: row.get(17)?,
                employment_type: parsed(row, 18, "employment type", EmploymentType::parse)?,
                office_type: parsed(row, 19, "office type", OfficeType::parse)?,
                start_date: date(row, 20)?,
                status: parsed(row, 21, "status", EmploymentStatus::parse)?,
                termination_date: date_opt(row, 22)?,
                skills: Vec::new(),
                employment_history: Vec::new(),
            })
        })
        .optional()
        .map_err(DirectoryError::db("load employee"))?;
    let Some(mut details) = details else {
        return Ok(None);
    };

    let mut stmt = conn
        .prepare_cached(concat!(
            employee_skills_head!(),
            " ?1 ORDER BY es.proficiency DESC, s.name"
        ))
        .map_err(DirectoryError::db("load employee skills"))?;
    details.skills = stmt
        .query_map([&id], |row| {
            Ok(EmployeeSkill {
                skill: row.get(0)?,
                category: row.get(1)?,
                proficiency: proficiency(row, 2)?,
            })
        })
        .and_then(Iterator::collect)
        .map_err(DirectoryError::db("load employee skills"))?;

    let mut stmt = conn
        .prepare_cached(concat!(
            employment_history_head!(),
            " ?1 ",
            employment_history_order!()
        ))
        .map_err(DirectoryError::db("load employment history"))?;
    details.employment_history = stmt
        .query_map([&id], |row| {
            Ok(HistoryEntry {
                company: row.get(0)?,
                title: row.get(1)?,
                level: parsed_opt(row, 2, "level", Level::parse)?,
                department: row.get(3)?,
                event: parsed(row, 4, "history event", HistoryEvent::parse)?,
                start_date: date(row, 5)?,
                end_date: date_opt(row, 6)?,
            })
        })
        .and_then(Iterator::collect)
        .map_err(DirectoryError::db("load employment history"))?;
    Ok(Some(details))
}

pub(crate) fn tenure(conn: &Connection, input: &str, today: NaiveDate) -> Result<Option<Tenure>> {
    let Some(id) = resolve_employee(conn, input)? else {
        return Ok(None);
    };
    conn.cached_row(concat!(tenure_head!(), " ?1"), [&id], |row| {
        Ok(tenure::of(
            row.get(0)?,
            row.get(1)?,
            parsed(row, 2, "status", EmploymentStatus::parse)?,
            (date(row, 3)?, date_opt(row, 4)?),
            today,
        ))
    })
    .optional()
    .map_err(DirectoryError::db("load tenure"))
}

/// Finds a role id and canonical title; "Senior Software Engineer" is
/// understood as "Software Engineer".
fn resolve_role(conn: &Connection, input: &str) -> Result<Option<(i64, String, String)>> {
    let find = |title: &str| -> Result<Option<(i64, String, String)>> {
        conn.cached_row(
            "SELECT id, title, track FROM roles WHERE title = ?1",
            [title],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()
        .map_err(DirectoryError::db("resolve role"))
    };
    let input = input.trim();
    if let Some(found) = find(input)? {
        return Ok(Some(found));
    }
    match strip_level_prefix(input) {
        Some(role) => find(role),
        None => Ok(None),
    }
}

pub(crate) fn compensation_band(
    conn: &Connection,
    role: &str,
    level: Level,
) -> Result<Option<CompensationBand>> {
    let Some((role_id, role, track)) = resolve_role(conn, role)? else {
        return Ok(None);
    };
    let band = conn
        .cached_row(
            "SELECT currency, min_salary, mid_salary, max_salary
             FROM compensation_bands WHERE role_id = ?1 AND level = ?2",
            params![role_id, level.as_str()],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, i64>(3)?,
                ))
            },
        )
        .optional()
        .map_err(DirectoryError::db("load compensation band"))?;
    let Some((currency, min, mid, max)) = band else {
        return Ok(None);
    };
    let mut stmt = conn
        .prepare_cached(
            "SELECT salary, n FROM band_salaries WHERE role_id = ?1 AND level = ?2 AND n > 0",
        )
        .map_err(DirectoryError::db("load salary statistics"))?;
    let people: Vec<(i64, i64)> = stmt
        .query_map(params![role_id, level.as_str()], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .and_then(Iterator::collect)
        .map_err(DirectoryError::db("load salary statistics"))?;
    let actual = aggregate::salary_stats(people);
    Ok(Some(CompensationBand {
        title: job_title(&role, &track, level),
        role,
        level,
        currency,
        min,
        mid,
        max,
        actual,
    }))
}

/// Levels that have a band for `role`; `None` if the role is unknown.
pub(crate) fn role_levels(conn: &Connection, role: &str) -> Result<Option<Vec<Level>>> {
    let Some((role_id, _, _)) = resolve_role(conn, role)? else {
        return Ok(None);
    };
    let mut stmt = conn
        .prepare_cached("SELECT level FROM compensation_bands WHERE role_id = ?1")
        .map_err(DirectoryError::db("load role levels"))?;
    let mut levels: Vec<Level> = stmt
        .query_map([role_id], |row| parsed(row, 0, "level", Level::parse))
        .and_then(Iterator::collect)
        .map_err(DirectoryError::db("load role levels"))?;
    levels.sort();
    Ok(Some(levels))
}

pub(crate) fn leave_balance(
    conn: &Connection,
    input: &str,
    leave_type: LeaveType,
    today: NaiveDate,
) -> Result<Option<LeaveBalance>> {
    use chrono::Datelike;
    let Some(id) = resolve_employee(conn, input)? else {
        return Ok(None);
    };
    // Prefer the current year; fall back to the latest recorded year (former
    // employees, or a clock past the last seeded year).
    conn.cached_row(
        concat!(
            leave_balance_head!(),
            " ?1 AND b.leave_type = ?2
             ORDER BY b.year = ?3 DESC, b.year DESC LIMIT 1"
        ),
        params![id, leave_type.as_str(), today.year()],
        |row| {
            let entitled: f64 = row.get(3)?;
            let used: f64 = row.get(4)?;
            let pending: f64 = row.get(5)?;
            Ok(LeaveBalance {
                employee_id: row.get(0)?,
                name: row.get(1)?,
                leave_type,
                year: row.get(2)?,
                entitled,
                used,
                pending,
                remaining: entitled - used - pending,
                unit: "days".to_string(),
            })
        },
    )
    .optional()
    .map_err(DirectoryError::db("load leave balance"))
}

/// `(id, name)` pairs from a two-column query.
pub(crate) fn pairs(conn: &Connection, sql: &str) -> Result<Vec<(String, String)>> {
    let mut stmt = conn
        .prepare_cached(sql)
        .map_err(DirectoryError::db("list ids"))?;
    stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .and_then(Iterator::collect)
        .map_err(DirectoryError::db("list ids"))
}

/// Values of a one-column query.
pub(crate) fn strings(conn: &Connection, sql: &str) -> Result<Vec<String>> {
    let mut stmt = conn
        .prepare_cached(sql)
        .map_err(DirectoryError::db("list values"))?;
    stmt.query_map([], |row| row.get(0))
        .and_then(Iterator::collect)
        .map_err(DirectoryError::db("list values"))
}

/// Employees whose name or id resembles `query`, best match first.
pub(crate) fn suggest_employees(
    conn: &Connection,
    query: &str,
    limit: u32,
) -> Result<Vec<(String, String)>> {
    let words: Vec<&str> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .take(5)
        .collect();
    let whole = compact(query);
    if words.is_empty() && whole.is_empty() {
        return Ok(Vec::new());
    }
    // Score: 4 when the whole query is part of the id, then per word 3 for an
    // exact first/last name, 2 for a name prefix, 1 for a substring.
    let mut score = vec!["(e.id LIKE ?1 ESCAPE '\\') * 4".to_string()];
    let mut args = vec![like_pattern(&whole)];
    for word in &words {
        let (exact, prefix, contains) = (args.len() + 1, args.len() + 2, args.len() + 3);
        score.push(format!(
            "CASE WHEN e.first_name = ?{exact} COLLATE NOCASE
                    OR e.last_name = ?{exact} COLLATE NOCASE THEN 3
                  WHEN e.first_name LIKE ?{prefix} ESCAPE '\\'
                    OR e.last_name LIKE ?{prefix} ESCAPE '\\' THEN 2
                  WHEN (e.first_name || ' ' || e.last_name) LIKE ?{contains} ESCAPE '\\' THEN 1
                  ELSE 0 END"
        ));
        let contains_pattern = like_pattern(word);
        // "%word%" without the leading "%" is the prefix pattern.
        args.push((*word).to_string());
        args.push(contains_pattern[1..].to_string());
        args.push(contains_pattern);
    }
    let sql = format!(
        "SELECT id, name FROM (
             SELECT e.id AS id, e.first_name || ' ' || e.last_name AS name,
                    {} AS score, e.status = 'active' AS active, e.last_name, e.first_name
             FROM employees e)
         WHERE score > 0
         ORDER BY score DESC, active DESC, last_name, first_name, id
         LIMIT {limit}",
        score.join(" + ")
    );
    let mut stmt = conn
        .prepare_cached(&sql)
        .map_err(DirectoryError::db("suggest employees"))?;
    stmt.query_map(params_from_iter(&args), |row| {
        Ok((row.get(0)?, row.get(1)?))
    })
    .and_then(Iterator::collect)
    .map_err(DirectoryError::db("suggest employees"))
}

/// Adapter for [`super::pool::Pool::run`], which hands out `&mut Connection`.
pub(crate) fn health_mut(conn: &mut Connection) -> Result<Health> {
    health(conn)
}

pub(crate) fn health(conn: &Connection) -> Result<Health> {
    let schema_version = super::migrate::current_version(conn)?;
    conn.cached_row(
        "SELECT COALESCE(SUM(status = 'active'), 0), COUNT(*) FROM employees",
        [],
        |row| {
            Ok(Health {
                backend: "sqlite".to_string(),
                schema_version,
                active_employees: count(row, 0)?,
                total_employees: count(row, 1)?,
            })
        },
    )
    .map_err(DirectoryError::db("health check"))
}
