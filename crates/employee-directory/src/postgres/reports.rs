//! Organisation-wide reports on PostgreSQL from the aggregates of
//! migration 5, the same answers as `crate::sqlite::reports` (see there for
//! how the aggregates and the per-person corrections add up). Headcount
//! and turnover are counted in SQL; compensation statistics are computed in
//! `crate::aggregate` from salary counts and band sums. The statements of
//! a report are pipelined.

use std::collections::HashMap;

use chrono::{Months, NaiveDate};
use deadpool_postgres::ClientWrapper;
use tokio_postgres::Row;

use super::queries::{row_opt, rows};
use super::row::{count, get};
use crate::aggregate::{self, BandSum, SalaryCount, compensation_rows, corrections};
use crate::error::DirectoryError;
use crate::lookup::{
    employment_label, level_label, office_label, percent, turnover_report, turnover_row,
};
use crate::model::{
    CompensationReport, CompensationRow, EmploymentType, HeadcountBucket, HeadcountReport, Level,
    Location, OfficeType, Report, ReportType, TurnoverReport,
};
use crate::statements::{BAND_CURRENCY, DEPARTMENT_NAMES};

type Result<T> = std::result::Result<T, DirectoryError>;

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
    let pop = aggregate::headcount_pop("$1::date");
    let total = format!("{pop} SELECT COALESCE(SUM(n), 0)::bigint FROM pop");
    let departments = format!(
        "{pop} SELECT d.id, d.name, COALESCE(SUM(p.n), 0)::bigint
         FROM departments d LEFT JOIN pop p ON p.department_id = d.id
         GROUP BY d.id, d.name ORDER BY 3 DESC, lower(d.name)"
    );
    let locations = format!(
        "{pop} SELECT l.city, l.region, l.country, SUM(p.n)::bigint
         FROM pop p JOIN locations l ON l.id = p.location_id
         GROUP BY l.id HAVING SUM(p.n) > 0 ORDER BY SUM(p.n) DESC, l.city, l.id"
    );
    let by = |column: &str| {
        format!(
            "{pop} SELECT {column}, NULL::text, SUM(n)::bigint FROM pop
             GROUP BY 1 HAVING SUM(n) > 0 ORDER BY 3 DESC, 1"
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

async fn turnover(c: &ClientWrapper, today: NaiveDate) -> Result<TurnoverReport> {
    let start = today.checked_sub_months(Months::new(12)).unwrap_or(today);
    // $1 = period start (exclusive), $2 = period end (inclusive); see the
    // SQLite twin for how the start headcount is derived.
    let counts = format!(
        "WITH t (department_id, hc_start, hc_end, terminations, voluntary, involuntary, hires)
         AS (SELECT department_id, n, n, 0, 0, 0, 0 FROM report_headcount
             UNION ALL {}
             UNION ALL
             SELECT department_id,
                    (CASE WHEN day < $2::date THEN ends ELSE 0 END)
                      - (CASE WHEN day > $1::date THEN starts ELSE 0 END), 0,
                    CASE WHEN day > $1::date THEN terminations ELSE 0 END,
                    CASE WHEN day > $1::date THEN voluntary ELSE 0 END,
                    CASE WHEN day > $1::date THEN involuntary ELSE 0 END,
                    CASE WHEN day > $1::date THEN hires ELSE 0 END
             FROM report_days WHERE day >= $1::date AND day <= $2::date)",
        corrections(
            "department_id",
            "-1, -1, 0, 0, 0, 0",
            "1, 1, 0, 0, 0, 0",
            "$2::date"
        )
    );
    let sums = "COALESCE(SUM(t.hc_start), 0)::bigint, COALESCE(SUM(t.hc_end), 0)::bigint,
                COALESCE(SUM(t.terminations), 0)::bigint, COALESCE(SUM(t.voluntary), 0)::bigint,
                COALESCE(SUM(t.involuntary), 0)::bigint, COALESCE(SUM(t.hires), 0)::bigint";
    let overall = format!("{counts} SELECT {sums} FROM t");
    let departments = format!(
        "{counts} SELECT d.id, d.name, {sums}
         FROM departments d LEFT JOIN t ON t.department_id = d.id
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

/// Salary counts and band sums of employees employed on `$1`, grouped by
/// `key` (a column of the aggregates, or `'all'`; internal constants).
fn compensation_sql(key: &str) -> (String, String) {
    let salaries = format!(
        "WITH pop AS (SELECT department_id, level, salary, n FROM report_salaries UNION ALL {})
         SELECT ({key})::text, salary, SUM(n)::bigint FROM pop GROUP BY 1, 2 HAVING SUM(n) <> 0",
        corrections("department_id, level, salary", "-1", "1", "$1::date")
    );
    let band_key = if key.starts_with('\'') {
        key.to_string()
    } else {
        format!("p.{key}")
    };
    let bands = format!(
        "WITH pop AS (SELECT department_id, role_id, level, n, salary_sum FROM report_bands
                      UNION ALL {})
         SELECT ({band_key})::text, SUM(p.n)::bigint, SUM(p.salary_sum)::bigint,
                b.min_salary, b.mid_salary, b.max_salary
         FROM pop p JOIN compensation_bands b ON b.role_id = p.role_id AND b.level = p.level
         GROUP BY 1, p.role_id, p.level, b.min_salary, b.mid_salary, b.max_salary
         HAVING SUM(p.n) <> 0",
        corrections(
            "department_id, role_id, level",
            "-1, -salary",
            "1, salary",
            "$1::date"
        )
    );
    (salaries, bands)
}

fn salary_counts(rows: &[Row]) -> Result<Vec<SalaryCount>> {
    rows.iter()
        .map(|row| {
            Ok(SalaryCount {
                key: get(row, 0)?,
                salary: get(row, 1)?,
                n: get(row, 2)?,
            })
        })
        .collect()
}

fn band_sums(rows: &[Row]) -> Result<Vec<BandSum>> {
    rows.iter()
        .map(|row| {
            Ok(BandSum {
                key: get(row, 0)?,
                n: get(row, 1)?,
                salary_sum: get(row, 2)?,
                min: get(row, 3)?,
                mid: get(row, 4)?,
                max: get(row, 5)?,
            })
        })
        .collect()
}

async fn compensation(c: &ClientWrapper, today: NaiveDate) -> Result<CompensationReport> {
    let (all_s, all_b) = compensation_sql("'all'");
    let (dept_s, dept_b) = compensation_sql("department_id");
    let (level_s, level_b) = compensation_sql("level");
    let p = &[&today as &(dyn tokio_postgres::types::ToSql + Sync)];
    let ctx = "compensation report";
    let (all_s, all_b, dept_s, dept_b, level_s, level_b, names, currency) = tokio::try_join!(
        rows(c, ctx, &all_s, p),
        rows(c, ctx, &all_b, p),
        rows(c, ctx, &dept_s, p),
        rows(c, ctx, &dept_b, p),
        rows(c, ctx, &level_s, p),
        rows(c, ctx, &level_b, p),
        rows(c, "department names", DEPARTMENT_NAMES, &[]),
        row_opt(c, "band currency", BAND_CURRENCY, &[]),
    )?;
    let names: HashMap<String, String> = names
        .iter()
        .map(|row| Ok((get(row, 0)?, get(row, 1)?)))
        .collect::<Result<_>>()?;
    let overall = compensation_rows(salary_counts(&all_s)?, band_sums(&all_b)?, |_| {
        Some("All employees".to_string())
    })
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
    let by_department = compensation_rows(salary_counts(&dept_s)?, band_sums(&dept_b)?, |k| {
        names.get(k).cloned()
    });
    let mut by_level = compensation_rows(salary_counts(&level_s)?, band_sums(&level_b)?, |k| {
        Some(k.to_string())
    });
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
