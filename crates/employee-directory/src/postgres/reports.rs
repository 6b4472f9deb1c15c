//! Organisation-wide reports on PostgreSQL, the same answers as
//! `crate::sqlite::reports` (averages and medians computed in `numeric`,
//! rounded half away from zero like SQLite's `ROUND`). The statements of a
//! report are pipelined.

use chrono::{Months, NaiveDate};
use deadpool_postgres::ClientWrapper;
use tokio_postgres::Row;

use super::queries::{row_opt, rows};
use super::row::{count, get};
use crate::error::DirectoryError;
use crate::lookup::{
    employment_label, level_label, office_label, percent, turnover_report, turnover_row,
};
use crate::model::{
    CompensationReport, CompensationRow, EmploymentType, HeadcountBucket, HeadcountReport, Level,
    Location, OfficeType, Report, ReportType, TurnoverReport,
};

type Result<T> = std::result::Result<T, DirectoryError>;

/// Employees employed on `$1`; a person still counts on their last day.
const EMPLOYED_ON: &str =
    "e.start_date <= $1::date AND (e.termination_date IS NULL OR e.termination_date >= $1::date)";

pub(crate) async fn report(
    c: &ClientWrapper,
    kind: ReportType,
    today: NaiveDate,
) -> Result<Report> {
    Ok(match kind {
        ReportType::Headcount => Report::Headcount(headcount(c, today).await?),
        ReportType::Turnover => Report::Turnover(turnover(c, today).await?),
        ReportType::Compensation => Report::Compensation(compensation(c, today).await?),
    })
}

async fn headcount(c: &ClientWrapper, today: NaiveDate) -> Result<HeadcountReport> {
    let total = format!("SELECT COUNT(*) FROM employees e WHERE {EMPLOYED_ON}");
    let departments = format!(
        "SELECT d.id, d.name, COUNT(e.id)
         FROM departments d LEFT JOIN employees e ON e.department_id = d.id AND {EMPLOYED_ON}
         GROUP BY d.id, d.name ORDER BY COUNT(e.id) DESC, lower(d.name)"
    );
    let locations = format!(
        "SELECT l.city, l.region, l.country, COUNT(*)
         FROM employees e JOIN locations l ON l.id = e.location_id
         WHERE {EMPLOYED_ON}
         GROUP BY l.id ORDER BY COUNT(*) DESC, l.city, l.id"
    );
    let by = |column: &str| {
        format!(
            "SELECT e.{column}, NULL::text, COUNT(*) FROM employees e WHERE {EMPLOYED_ON}
             GROUP BY 1 ORDER BY 3 DESC, 1"
        )
    };
    let (employment, office) = (by("employment_type"), by("office_type"));
    let p = &[&today as &(dyn tokio_postgres::types::ToSql + Sync)];
    let (total, departments, locations, employment, office) = tokio::try_join!(
        row_opt(c, "count headcount", &total, p),
        rows(c, "headcount breakdown", &departments, p),
        rows(c, "headcount by location", &locations, p),
        rows(c, "headcount breakdown", &employment, p),
        rows(c, "headcount breakdown", &office, p),
    )?;
    let total = match &total {
        Some(row) => count(row, 0)?,
        None => 0,
    };
    let buckets = |rows: &[Row], label: &dyn Fn(&str) -> String| -> Result<Vec<HeadcountBucket>> {
        rows.iter()
            .map(|row| {
                let key: String = get(row, 0)?;
                let name: Option<String> = get(row, 1)?;
                let headcount = count(row, 2)?;
                Ok(HeadcountBucket {
                    label: name.unwrap_or_else(|| label(&key)),
                    key,
                    headcount,
                    percent: percent(headcount, total),
                })
            })
            .collect()
    };
    let by_location = locations
        .iter()
        .map(|row| {
            let loc = Location::new(get(row, 0)?, get(row, 1)?, get(row, 2)?);
            let headcount = count(row, 3)?;
            Ok(HeadcountBucket {
                key: loc.display.clone(),
                label: loc.display,
                headcount,
                percent: percent(headcount, total),
            })
        })
        .collect::<Result<_>>()?;
    Ok(HeadcountReport {
        as_of: today,
        total_active: total,
        by_department: buckets(&departments, &|k| k.to_string())?,
        by_location,
        by_employment_type: buckets(&employment, &|k| {
            EmploymentType::parse(k).map_or_else(|| k.to_string(), employment_label)
        })?,
        by_office_type: buckets(&office, &|k| {
            OfficeType::parse(k).map_or_else(|| k.to_string(), office_label)
        })?,
    })
}

/// Turnover counts; `$1` = period start (exclusive), `$2` = end (inclusive).
const TURNOVER_AGGREGATES: &str = "
    COUNT(*) FILTER (WHERE e.start_date <= $1::date
                       AND (e.termination_date IS NULL OR e.termination_date >= $1::date)),
    COUNT(*) FILTER (WHERE e.start_date <= $2::date
                       AND (e.termination_date IS NULL OR e.termination_date >= $2::date)),
    COUNT(*) FILTER (WHERE e.termination_date > $1::date AND e.termination_date <= $2::date),
    COUNT(*) FILTER (WHERE e.termination_date > $1::date AND e.termination_date <= $2::date
                       AND e.termination_reason = 'voluntary'),
    COUNT(*) FILTER (WHERE e.termination_date > $1::date AND e.termination_date <= $2::date
                       AND e.termination_reason = 'involuntary'),
    COUNT(*) FILTER (WHERE e.start_date > $1::date AND e.start_date <= $2::date)";

async fn turnover(c: &ClientWrapper, today: NaiveDate) -> Result<TurnoverReport> {
    let start = today.checked_sub_months(Months::new(12)).unwrap_or(today);
    let overall = format!("SELECT {TURNOVER_AGGREGATES} FROM employees e");
    let departments = format!(
        "SELECT d.id, d.name, {TURNOVER_AGGREGATES}
         FROM departments d LEFT JOIN employees e ON e.department_id = d.id
         GROUP BY d.id, d.name"
    );
    let p = &[&start as &(dyn tokio_postgres::types::ToSql + Sync), &today];
    let (overall, departments) = tokio::try_join!(
        row_opt(c, "company turnover", &overall, p),
        rows(c, "department turnover", &departments, p),
    )?;
    let Some(overall) = overall else {
        return Err(DirectoryError::unavailable(
            crate::error::UnavailableReason::NotEmployeeDatabase,
            "the turnover aggregate returned no row".to_string(),
        ));
    };
    let overall = turnover_row(None, "All departments".to_string(), 0, |i| {
        count(&overall, i)
    })?;
    let by_department = departments
        .iter()
        .map(|row| turnover_row(Some(get(row, 0)?), get(row, 1)?, 2, |i| count(row, i)))
        .collect::<Result<Vec<_>>>()?;
    Ok(turnover_report(today, start, overall, by_department))
}

/// Salary statistics of employees employed on `$1`, grouped by the SQL
/// expression `key` and labelled by `label` (internal constants, never user
/// input); `join` adds tables the expressions need.
fn compensation_sql(key: &str, label: &str, join: &str) -> String {
    format!(
        "WITH pop AS (
             SELECT ({key})::text AS k, ({label})::text AS label, e.salary,
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
         SELECT p.k, MIN(p.label COLLATE \"C\"), COUNT(*), ROUND(AVG(p.salary))::float8,
                MIN(m.median)::float8, MIN(p.salary), MAX(p.salary),
                ROUND(AVG(p.salary::numeric / p.mid_salary), 2)::float8,
                ROUND(AVG(CASE WHEN p.max_salary > p.min_salary
                               THEN 100.0 * (p.salary - p.min_salary) / (p.max_salary - p.min_salary)
                               ELSE 50.0 END), 1)::float8
         FROM pop p JOIN medians m ON m.k = p.k
         GROUP BY p.k
         ORDER BY MIN(p.label COLLATE \"C\")"
    )
}

fn compensation_row(row: &Row) -> Result<CompensationRow> {
    Ok(CompensationRow {
        key: get(row, 0)?,
        label: get(row, 1)?,
        headcount: count(row, 2)?,
        average_salary: get::<f64>(row, 3)? as i64,
        median_salary: get(row, 4)?,
        min_salary: get(row, 5)?,
        max_salary: get(row, 6)?,
        average_compa_ratio: get(row, 7)?,
        average_band_position_percent: get(row, 8)?,
    })
}

async fn compensation(c: &ClientWrapper, today: NaiveDate) -> Result<CompensationReport> {
    let overall = compensation_sql("'all'", "'All employees'", "");
    let departments = compensation_sql(
        "e.department_id",
        "d.name",
        "JOIN departments d ON d.id = e.department_id",
    );
    let levels = compensation_sql("e.level", "e.level", "");
    let p = &[&today as &(dyn tokio_postgres::types::ToSql + Sync)];
    let (overall, departments, levels, currency) = tokio::try_join!(
        rows(c, "compensation report", &overall, p),
        rows(c, "compensation report", &departments, p),
        rows(c, "compensation report", &levels, p),
        row_opt(
            c,
            "band currency",
            "SELECT COALESCE(MIN(currency), 'USD') FROM compensation_bands",
            &[]
        ),
    )?;
    let overall = match overall.first() {
        Some(row) => compensation_row(row)?,
        None => CompensationRow {
            key: "all".to_string(),
            label: "All employees".to_string(),
            headcount: 0,
            average_salary: 0,
            median_salary: 0.0,
            min_salary: 0,
            max_salary: 0,
            average_compa_ratio: 0.0,
            average_band_position_percent: 0.0,
        },
    };
    let by_department = departments
        .iter()
        .map(compensation_row)
        .collect::<Result<Vec<_>>>()?;
    let mut by_level = levels
        .iter()
        .map(compensation_row)
        .collect::<Result<Vec<_>>>()?;
    for row in &mut by_level {
        if let Some(level) = Level::parse(&row.key) {
            row.label = level_label(level);
        }
    }
    by_level.sort_by_key(|row| Level::parse(&row.key));
    let currency = match &currency {
        Some(row) => get(row, 0)?,
        None => "USD".to_string(),
    };
    Ok(CompensationReport {
        as_of: today,
        currency,
        overall,
        by_department,
        by_level,
    })
}
