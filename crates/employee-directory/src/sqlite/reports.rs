//! Organisation-wide reports from the aggregates of migration 5 (kept
//! current by triggers), so a report reads a few hundred rows whatever the
//! company's size. The aggregates count everyone without a termination date;
//! the people whose dates make them differ on the report date (a start date
//! after it, a termination date on or after it) are few and read one by one
//! through the `employees_dates` index.

use chrono::{Months, NaiveDate};
use rusqlite::{Connection, params};

use super::row::{CachedRow, count};
use crate::aggregate::{self, BandSum, SalaryCount, compensation_rows, corrections};
use crate::error::DirectoryError;
use crate::lookup::{
    employment_label, level_label, office_label, percent, turnover_report, turnover_row,
};
use crate::model::{
    CompensationReport, CompensationRow, EmploymentType, HeadcountBucket, HeadcountReport, Level,
    Location, OfficeType, Report, ReportType, TurnoverReport, TurnoverRow,
};
use crate::statements::{BAND_CURRENCY, DEPARTMENT_NAMES};

type Result<T> = std::result::Result<T, DirectoryError>;

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
            &format!(
                "{} SELECT COALESCE(SUM(n), 0) FROM pop",
                aggregate::headcount_pop("?1")
            ),
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
            "{} SELECT d.id, d.name, COALESCE(SUM(p.n), 0)
             FROM departments d LEFT JOIN pop p ON p.department_id = d.id
             GROUP BY d.id ORDER BY 3 DESC, d.name",
            aggregate::headcount_pop("?1")
        ),
        &|k| k.to_string(),
    )?;

    let mut stmt = conn
        .prepare_cached(&format!(
            "{} SELECT l.city, l.region, l.country, SUM(p.n)
             FROM pop p JOIN locations l ON l.id = p.location_id
             GROUP BY l.id HAVING SUM(p.n) > 0 ORDER BY SUM(p.n) DESC, l.city, l.id",
            aggregate::headcount_pop("?1")
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
            "{} SELECT employment_type, NULL, SUM(n) FROM pop
             GROUP BY 1 HAVING SUM(n) > 0 ORDER BY 3 DESC, 1",
            aggregate::headcount_pop("?1")
        ),
        &|k| EmploymentType::parse(k).map_or_else(|| k.to_string(), employment_label),
    )?;
    let by_office_type = buckets(
        format!(
            "{} SELECT office_type, NULL, SUM(n) FROM pop
             GROUP BY 1 HAVING SUM(n) > 0 ORDER BY 3 DESC, 1",
            aggregate::headcount_pop("?1")
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
    // ?1 = period start (exclusive), ?2 = period end (inclusive). Headcount
    // at the end comes from the aggregates; at the start it is the end's
    // minus who started in the period plus who left before its last day.
    let counts = format!(
        "WITH t (department_id, hc_start, hc_end, terminations, voluntary, involuntary, hires)
         AS (SELECT department_id, n, n, 0, 0, 0, 0 FROM report_headcount
             UNION ALL {}
             UNION ALL
             SELECT department_id,
                    (CASE WHEN day < ?2 THEN ends ELSE 0 END)
                      - (CASE WHEN day > ?1 THEN starts ELSE 0 END), 0,
                    CASE WHEN day > ?1 THEN terminations ELSE 0 END,
                    CASE WHEN day > ?1 THEN voluntary ELSE 0 END,
                    CASE WHEN day > ?1 THEN involuntary ELSE 0 END,
                    CASE WHEN day > ?1 THEN hires ELSE 0 END
             FROM report_days WHERE day >= ?1 AND day <= ?2)",
        corrections(
            "department_id",
            "-1, -1, 0, 0, 0, 0",
            "1, 1, 0, 0, 0, 0",
            "?2"
        )
    );
    let sums = "COALESCE(SUM(t.hc_start), 0), COALESCE(SUM(t.hc_end), 0),
                COALESCE(SUM(t.terminations), 0), COALESCE(SUM(t.voluntary), 0),
                COALESCE(SUM(t.involuntary), 0), COALESCE(SUM(t.hires), 0)";
    let period = params![start.to_string(), today.to_string()];

    let overall = conn
        .cached_row(&format!("{counts} SELECT {sums} FROM t"), period, |row| {
            turnover_row(None, "All departments".to_string(), 0, |i| count(row, i))
        })
        .map_err(DirectoryError::db("company turnover"))?;

    let mut stmt = conn
        .prepare_cached(&format!(
            "{counts} SELECT d.id, d.name, {sums}
             FROM departments d LEFT JOIN t ON t.department_id = d.id
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

/// Salary statistics of employees employed on `as_of`, grouped by `key`
/// (a column of the aggregates, or `'all'`; internal constants, never user
/// input) and named by `label`.
fn compensation_rows_by(
    conn: &Connection,
    as_of: &str,
    key: &str,
    label: impl Fn(&str) -> Option<String>,
) -> Result<Vec<CompensationRow>> {
    let fail = DirectoryError::db("compensation report");
    let salaries = format!(
        "WITH pop AS (SELECT department_id, level, salary, n FROM report_salaries UNION ALL {})
         SELECT {key}, salary, SUM(n) FROM pop GROUP BY 1, 2 HAVING SUM(n) <> 0",
        corrections("department_id, level, salary", "-1", "1", "?1")
    );
    let salaries = conn
        .prepare_cached(&salaries)
        .and_then(|mut stmt| {
            stmt.query_map([as_of], |row| {
                Ok(SalaryCount {
                    key: row.get(0)?,
                    salary: row.get(1)?,
                    n: row.get(2)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(fail)?;
    // The band table has a `level` column too.
    let band_key = if key.starts_with('\'') {
        key.to_string()
    } else {
        format!("p.{key}")
    };
    let bands = format!(
        "WITH pop AS (SELECT department_id, role_id, level, n, salary_sum FROM report_bands
                      UNION ALL {})
         SELECT {band_key}, SUM(p.n), SUM(p.salary_sum), b.min_salary, b.mid_salary, b.max_salary
         FROM pop p JOIN compensation_bands b ON b.role_id = p.role_id AND b.level = p.level
         GROUP BY 1, p.role_id, p.level HAVING SUM(p.n) <> 0",
        corrections(
            "department_id, role_id, level",
            "-1, -salary",
            "1, salary",
            "?1"
        )
    );
    let bands = conn
        .prepare_cached(&bands)
        .and_then(|mut stmt| {
            stmt.query_map([as_of], |row| {
                Ok(BandSum {
                    key: row.get(0)?,
                    n: row.get(1)?,
                    salary_sum: row.get(2)?,
                    min: row.get(3)?,
                    mid: row.get(4)?,
                    max: row.get(5)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(DirectoryError::db("compensation report"))?;
    Ok(compensation_rows(salaries, bands, label))
}

fn compensation(conn: &Connection, today: NaiveDate) -> Result<CompensationReport> {
    let as_of = today.to_string();
    let overall =
        compensation_rows_by(conn, &as_of, "'all'", |_| Some("All employees".to_string()))?
            .pop()
            .unwrap_or(CompensationRow {
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
    let mut stmt = conn
        .prepare_cached(DEPARTMENT_NAMES)
        .map_err(DirectoryError::db("department names"))?;
    let names: std::collections::HashMap<String, String> = stmt
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .and_then(Iterator::collect)
        .map_err(DirectoryError::db("department names"))?;
    let by_department =
        compensation_rows_by(conn, &as_of, "department_id", |k| names.get(k).cloned())?;
    let mut by_level = compensation_rows_by(conn, &as_of, "level", |k| Some(k.to_string()))?;
    for row in &mut by_level {
        if let Some(level) = Level::parse(&row.key) {
            row.label = level_label(level);
        }
    }
    by_level.sort_by_key(|row| Level::parse(&row.key));
    let currency: String = conn
        .cached_row(BAND_CURRENCY, [], |row| row.get(0))
        .map_err(DirectoryError::db("band currency"))?;
    Ok(CompensationReport {
        as_of: today,
        currency,
        overall,
        by_department,
        by_level,
    })
}
