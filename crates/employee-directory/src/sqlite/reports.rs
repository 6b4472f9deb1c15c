//! Organisation-wide reports, computed with SQL aggregates.

use chrono::{Months, NaiveDate};
use rusqlite::{Connection, params};

use super::row::{CachedRow, count};
use crate::error::DirectoryError;
use crate::lookup::{
    employment_label, level_label, office_label, percent, turnover_report, turnover_row,
};
use crate::model::{
    CompensationReport, CompensationRow, EmploymentType, HeadcountBucket, HeadcountReport, Level,
    Location, OfficeType, Report, ReportType, TurnoverReport, TurnoverRow,
};

type Result<T> = std::result::Result<T, DirectoryError>;

/// Employees employed on `?1` (a YYYY-MM-DD date); a person still counts on
/// their last day.
const EMPLOYED_ON: &str =
    "e.start_date <= ?1 AND (e.termination_date IS NULL OR e.termination_date >= ?1)";

pub(crate) fn report(conn: &Connection, kind: ReportType, today: NaiveDate) -> Result<Report> {
    Ok(match kind {
        ReportType::Headcount => Report::Headcount(headcount(conn, today)?),
        ReportType::Turnover => Report::Turnover(turnover(conn, today)?),
        ReportType::Compensation => Report::Compensation(compensation(conn, today)?),
    })
}

fn headcount(conn: &Connection, today: NaiveDate) -> Result<HeadcountReport> {
    let as_of = today.to_string();
    let total: u32 = conn
        .cached_row(
            &format!("SELECT COUNT(*) FROM employees e WHERE {EMPLOYED_ON}"),
            [&as_of],
            |row| count(row, 0),
        )
        .map_err(DirectoryError::db("count headcount"))?;

    // (key, label, headcount) rows from a grouped query.
    let buckets = |sql: String, label: &dyn Fn(&str) -> String| -> Result<Vec<HeadcountBucket>> {
        let mut stmt = conn
            .prepare_cached(&sql)
            .map_err(DirectoryError::db("headcount breakdown"))?;
        let rows: Vec<(String, Option<String>, u32)> = stmt
            .query_map([&as_of], |row| {
                Ok((row.get(0)?, row.get(1)?, count(row, 2)?))
            })
            .and_then(Iterator::collect)
            .map_err(DirectoryError::db("headcount breakdown"))?;
        Ok(rows
            .into_iter()
            .map(|(key, name, headcount)| HeadcountBucket {
                label: name.unwrap_or_else(|| label(&key)),
                key,
                headcount,
                percent: percent(headcount, total),
            })
            .collect())
    };

    let by_department = buckets(
        format!(
            "SELECT d.id, d.name, COUNT(e.id)
             FROM departments d LEFT JOIN employees e ON e.department_id = d.id AND {EMPLOYED_ON}
             GROUP BY d.id ORDER BY COUNT(e.id) DESC, d.name"
        ),
        &|k| k.to_string(),
    )?;

    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT l.city, l.region, l.country, COUNT(*)
             FROM employees e JOIN locations l ON l.id = e.location_id
             WHERE {EMPLOYED_ON}
             GROUP BY l.id ORDER BY COUNT(*) DESC, l.city, l.id"
        ))
        .map_err(DirectoryError::db("headcount by location"))?;
    let by_location = stmt
        .query_map([&as_of], |row| {
            let loc = Location::new(row.get(0)?, row.get(1)?, row.get(2)?);
            let headcount = count(row, 3)?;
            Ok(HeadcountBucket {
                key: loc.display.clone(),
                label: loc.display,
                headcount,
                percent: percent(headcount, total),
            })
        })
        .and_then(Iterator::collect)
        .map_err(DirectoryError::db("headcount by location"))?;

    let by_employment_type = buckets(
        format!(
            "SELECT e.employment_type, NULL, COUNT(*) FROM employees e WHERE {EMPLOYED_ON}
             GROUP BY 1 ORDER BY 3 DESC, 1"
        ),
        &|k| EmploymentType::parse(k).map_or_else(|| k.to_string(), employment_label),
    )?;
    let by_office_type = buckets(
        format!(
            "SELECT e.office_type, NULL, COUNT(*) FROM employees e WHERE {EMPLOYED_ON}
             GROUP BY 1 ORDER BY 3 DESC, 1"
        ),
        &|k| OfficeType::parse(k).map_or_else(|| k.to_string(), office_label),
    )?;

    Ok(HeadcountReport {
        as_of: today,
        total_active: total,
        by_department,
        by_location,
        by_employment_type,
        by_office_type,
    })
}

fn turnover(conn: &Connection, today: NaiveDate) -> Result<TurnoverReport> {
    let start = today.checked_sub_months(Months::new(12)).unwrap_or(today);
    // ?1 = period start (exclusive), ?2 = period end (inclusive).
    let aggregates = "
        COALESCE(SUM(e.start_date <= ?1 AND (e.termination_date IS NULL OR e.termination_date >= ?1)), 0),
        COALESCE(SUM(e.start_date <= ?2 AND (e.termination_date IS NULL OR e.termination_date >= ?2)), 0),
        COALESCE(SUM(e.termination_date > ?1 AND e.termination_date <= ?2), 0),
        COALESCE(SUM(e.termination_date > ?1 AND e.termination_date <= ?2
                     AND e.termination_reason = 'voluntary'), 0),
        COALESCE(SUM(e.termination_date > ?1 AND e.termination_date <= ?2
                     AND e.termination_reason = 'involuntary'), 0),
        COALESCE(SUM(e.start_date > ?1 AND e.start_date <= ?2), 0)";
    let period = params![start.to_string(), today.to_string()];

    let overall = conn
        .cached_row(
            &format!("SELECT {aggregates} FROM employees e"),
            period,
            |row| turnover_row(None, "All departments".to_string(), 0, |i| count(row, i)),
        )
        .map_err(DirectoryError::db("company turnover"))?;

    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT d.id, d.name, {aggregates}
             FROM departments d LEFT JOIN employees e ON e.department_id = d.id
             GROUP BY d.id"
        ))
        .map_err(DirectoryError::db("department turnover"))?;
    let by_department: Vec<TurnoverRow> = stmt
        .query_map(period, |row| {
            turnover_row(Some(row.get(0)?), row.get(1)?, 2, |i| count(row, i))
        })
        .and_then(Iterator::collect)
        .map_err(DirectoryError::db("department turnover"))?;
    Ok(turnover_report(today, start, overall, by_department))
}

/// Salary statistics of employees employed on `as_of`, grouped by the SQL
/// expression `key` and labelled by `label` (internal constants, never user
/// input); `join` adds tables the expressions need.
fn compensation_rows(
    conn: &Connection,
    as_of: &str,
    key: &str,
    label: &str,
    join: &str,
) -> Result<Vec<CompensationRow>> {
    let sql = format!(
        "WITH pop AS (
             SELECT {key} AS k, {label} AS label, e.salary,
                    b.min_salary, b.mid_salary, b.max_salary
             FROM employees e
             JOIN compensation_bands b ON b.role_id = e.role_id AND b.level = e.level
             {join}
             WHERE {EMPLOYED_ON}),
         ranked AS (
             SELECT k, salary,
                    ROW_NUMBER() OVER (PARTITION BY k ORDER BY salary) AS rn,
                    COUNT(*) OVER (PARTITION BY k) AS cnt
             FROM pop),
         medians AS (
             SELECT k, AVG(salary) AS median FROM ranked
             WHERE rn IN ((cnt + 1) / 2, (cnt + 2) / 2) GROUP BY k)
         SELECT p.k, MIN(p.label), COUNT(*), ROUND(AVG(p.salary)), m.median,
                MIN(p.salary), MAX(p.salary),
                ROUND(AVG(CAST(p.salary AS REAL) / p.mid_salary), 2),
                ROUND(AVG(CASE WHEN p.max_salary > p.min_salary
                               THEN 100.0 * (p.salary - p.min_salary) / (p.max_salary - p.min_salary)
                               ELSE 50.0 END), 1)
         FROM pop p JOIN medians m ON m.k = p.k
         GROUP BY p.k
         ORDER BY MIN(p.label)"
    );
    let mut stmt = conn
        .prepare_cached(&sql)
        .map_err(DirectoryError::db("compensation report"))?;
    stmt.query_map([as_of], |row| {
        Ok(CompensationRow {
            key: row.get(0)?,
            label: row.get(1)?,
            headcount: count(row, 2)?,
            average_salary: row.get::<_, f64>(3)? as i64,
            median_salary: row.get(4)?,
            min_salary: row.get(5)?,
            max_salary: row.get(6)?,
            average_compa_ratio: row.get(7)?,
            average_band_position_percent: row.get(8)?,
        })
    })
    .and_then(Iterator::collect)
    .map_err(DirectoryError::db("compensation report"))
}

fn compensation(conn: &Connection, today: NaiveDate) -> Result<CompensationReport> {
    let as_of = today.to_string();
    let mut overall = compensation_rows(conn, &as_of, "'all'", "'All employees'", "")?;
    let overall = overall.pop().unwrap_or(CompensationRow {
        key: "all".to_string(),
        label: "All employees".to_string(),
        headcount: 0,
        average_salary: 0,
        median_salary: 0.0,
        min_salary: 0,
        max_salary: 0,
        average_compa_ratio: 0.0,
        average_band_position_percent: 0.0,
    });
    let by_department = compensation_rows(
        conn,
        &as_of,
        "e.department_id",
        "d.name",
        "JOIN departments d ON d.id = e.department_id",
    )?;
    let mut by_level = compensation_rows(conn, &as_of, "e.level", "e.level", "")?;
    for row in &mut by_level {
        if let Some(level) = Level::parse(&row.key) {
            row.label = level_label(level);
        }
    }
    by_level.sort_by_key(|row| Level::parse(&row.key));
    let currency: String = conn
        .cached_row(
            "SELECT COALESCE(MIN(currency), 'USD') FROM compensation_bands",
            [],
            |row| row.get(0),
        )
        .map_err(DirectoryError::db("band currency"))?;
    Ok(CompensationReport {
        as_of: today,
        currency,
        overall,
        by_department,
        by_level,
    })
}
