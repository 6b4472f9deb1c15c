//! Compensation statistics from the report aggregates (migration 5): each
//! backend reads salary counts and band sums per group, this turns them
//! into report rows, the same on both backends and the same as computing
//! them person by person.

use std::collections::BTreeMap;

use crate::model::{CompensationRow, SalaryStats};

/// The people the aggregates count wrongly for the date `at`: counted
/// (no termination date) but not started yet, as `{columns}, {minus}`, and
/// not counted (a termination date) but still employed, as
/// `{columns}, {plus}`. Standard SQL: both backends use it.
pub(crate) fn corrections(columns: &str, minus: &str, plus: &str, at: &str) -> String {
    format!(
        "SELECT {columns}, {minus} FROM employees
         WHERE termination_date IS NULL AND start_date > {at}
         UNION ALL
         SELECT {columns}, {plus} FROM employees
         WHERE termination_date >= {at} AND start_date <= {at}"
    )
}

/// A `WITH pop AS (…)` of the people employed on `at` (the backend's
/// parameter, e.g. `?1` or `$1::date`) per headcount group, as
/// (department_id, location_id, employment_type, office_type, n) rows; a
/// person still counts on their last day.
pub(crate) fn headcount_pop(at: &str) -> String {
    let columns = "department_id, location_id, employment_type, office_type";
    format!(
        "WITH pop AS (SELECT {columns}, n FROM report_headcount UNION ALL {})",
        corrections(columns, "-1", "1", at)
    )
}

/// `n` people of a group earning `salary` (`n` may be negative while a
/// group's corrections are added up; only the total counts).
pub(crate) struct SalaryCount {
    pub key: String,
    pub salary: i64,
    pub n: i64,
}

/// `n` people of a group in one salary band, earning `salary_sum` together,
/// with the band's current bounds.
pub(crate) struct BandSum {
    pub key: String,
    pub n: i64,
    pub salary_sum: i64,
    pub min: i64,
    pub mid: i64,
    pub max: i64,
}

#[derive(Default)]
struct Group {
    /// Salary -> people, ascending.
    salaries: BTreeMap<i64, i64>,
    n: i64,
    salary_sum: i128,
    compa_sum: f64,
    position_sum: f64,
}

/// One row per group with people, ordered by label (byte order, as both
/// backends' SQL ordered them); `label` names a key, `None` drops the
/// group (a department that no longer exists).
pub(crate) fn compensation_rows(
    salaries: Vec<SalaryCount>,
    bands: Vec<BandSum>,
    label: impl Fn(&str) -> Option<String>,
) -> Vec<CompensationRow> {
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for s in salaries {
        *groups
            .entry(s.key)
            .or_default()
            .salaries
            .entry(s.salary)
            .or_default() += s.n;
    }
    for b in bands {
        let g = groups.entry(b.key).or_default();
        g.n += b.n;
        g.salary_sum += i128::from(b.salary_sum);
        if b.mid != 0 {
            g.compa_sum += b.salary_sum as f64 / b.mid as f64;
        }
        g.position_sum += if b.max > b.min {
            100.0 * (b.salary_sum - b.n * b.min) as f64 / (b.max - b.min) as f64
        } else {
            50.0 * b.n as f64
        };
    }
    let mut rows: Vec<CompensationRow> = groups
        .into_iter()
        .filter(|(_, g)| g.n > 0)
        .filter_map(|(key, g)| Some((label(&key)?, key, g)))
        .map(|(label, key, g)| row(key, label, g))
        .collect();
    rows.sort_by(|a, b| a.label.cmp(&b.label).then_with(|| a.key.cmp(&b.key)));
    rows
}

fn row(key: String, label: String, g: Group) -> CompensationRow {
    let people: Vec<(i64, i64)> = g.salaries.into_iter().filter(|(_, n)| *n > 0).collect();
    let count: i64 = people.iter().map(|(_, n)| n).sum();
    let median = median(&people, count);
    let n = g.n as f64;
    CompensationRow {
        key,
        label,
        headcount: u32::try_from(count).unwrap_or(0),
        average_salary: div_round(g.salary_sum, i128::from(g.n)),
        median_salary: median,
        min_salary: people.first().map_or(0, |(s, _)| *s),
        max_salary: people.last().map_or(0, |(s, _)| *s),
        average_compa_ratio: round_half_away(g.compa_sum / n, 2),
        average_band_position_percent: round_half_away(g.position_sum / n, 1),
    }
}

/// The middle one or two salaries of `people` (`(salary, n)` by salary,
/// `count` people in all), as `ROW_NUMBER() IN ((cnt+1)/2, (cnt+2)/2)`.
fn median(people: &[(i64, i64)], count: i64) -> f64 {
    let nth = |k: i64| {
        let mut seen = 0;
        people
            .iter()
            .find(|(_, n)| {
                seen += n;
                seen >= k
            })
            .map_or(0, |(s, _)| *s)
    };
    (nth((count + 1) / 2) + nth((count + 2) / 2)) as f64 / 2.0
}

/// A band's actual-salary statistics from its `(salary, n)` rows of
/// `band_salaries` (any order; rows with n = 0 are skipped): the same
/// figures as SQL's COUNT, MIN, MAX, ROUND(AVG) and the middle rows.
pub(crate) fn salary_stats(mut people: Vec<(i64, i64)>) -> SalaryStats {
    people.retain(|(_, n)| *n > 0);
    people.sort_unstable();
    let count: i64 = people.iter().map(|(_, n)| n).sum();
    if count == 0 {
        return SalaryStats {
            employee_count: 0,
            min: None,
            median: None,
            max: None,
            average: None,
        };
    }
    let sum: i128 = people
        .iter()
        .map(|(s, n)| i128::from(*s) * i128::from(*n))
        .sum();
    SalaryStats {
        employee_count: u32::try_from(count).unwrap_or(u32::MAX),
        min: people.first().map(|(s, _)| *s),
        median: Some(median(&people, count)),
        max: people.last().map(|(s, _)| *s),
        average: Some(div_round(sum, i128::from(count))),
    }
}

/// `sum / n` rounded half away from zero, exactly (as `ROUND(AVG(x))`).
fn div_round(sum: i128, n: i128) -> i64 {
    if n == 0 {
        return 0;
    }
    let (abs, sign) = if sum < 0 { (-sum, -1) } else { (sum, 1) };
    let rounded = (2 * abs + n) / (2 * n);
    i64::try_from(sign * rounded).unwrap_or(i64::MAX)
}

/// Rounds half away from zero to `digits` decimals, like SQL's `ROUND`.
/// The sums arrive in another order than a per-person `AVG` adds them, so
/// the last bits may differ; snapping at 1e-6 of the last digit first
/// keeps a value that is exactly on a half from falling below it.
pub(crate) fn round_half_away(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    let snapped = (x * scale * 1e6).round() / 1e6;
    snapped.round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    fn salaries(key: &str, list: &[(i64, i64)]) -> Vec<SalaryCount> {
        list.iter()
            .map(|&(salary, n)| SalaryCount {
                key: key.to_string(),
                salary,
                n,
            })
            .collect()
    }

    fn band(key: &str, n: i64, salary_sum: i64) -> BandSum {
        BandSum {
            key: key.to_string(),
            n,
            salary_sum,
            min: 80,
            mid: 100,
            max: 120,
        }
    }

    #[test]
    fn band_statistics_from_salary_counts() {
        // 90, 100, 100, 130 and an emptied 70: as COUNT, MIN, median,
        // MAX and ROUND(AVG) over the four people.
        let s = salary_stats(vec![(100, 2), (130, 1), (70, 0), (90, 1)]);
        assert_eq!(s.employee_count, 4);
        assert_eq!((s.min, s.max), (Some(90), Some(130)));
        assert_eq!(s.median, Some(100.0));
        assert_eq!(s.average, Some(105));
        let odd = salary_stats(vec![(1, 1), (2, 1), (4, 1)]);
        assert_eq!((odd.median, odd.average), (Some(2.0), Some(2)));
        let none = salary_stats(vec![(100, 0)]);
        assert_eq!(none.employee_count, 0);
        assert!(none.min.is_none() && none.median.is_none() && none.average.is_none());
    }

    #[test]
    fn medians_min_max_and_corrections() {
        // 90, 100, 100, 130 (one 110 taken out again): median 100.
        let s = salaries("x", &[(90, 1), (100, 2), (130, 1), (110, 1), (110, -1)]);
        let rows = compensation_rows(s, vec![band("x", 4, 420)], |k| Some(k.to_string()));
        let r = &rows[0];
        assert_eq!((r.headcount, r.min_salary, r.max_salary), (4, 90, 130));
        assert_eq!(r.median_salary, 100.0);
        assert_eq!(r.average_salary, 105);
        assert_eq!(r.average_compa_ratio, 1.05);
        assert_eq!(r.average_band_position_percent, 62.5);
        // Even count with different middles: the mean of both.
        let s = salaries("y", &[(90, 1), (101, 1)]);
        let rows = compensation_rows(s, vec![band("y", 2, 191)], |k| Some(k.to_string()));
        assert_eq!(rows[0].median_salary, 95.5);
        assert_eq!(rows[0].average_salary, 96);
    }

    #[test]
    fn empty_and_unknown_groups_are_dropped() {
        let s = salaries("gone", &[(90, 1)]);
        let rows = compensation_rows(s, vec![band("gone", 1, 90)], |_| None);
        assert!(rows.is_empty());
        let s = salaries("x", &[(90, 1), (90, -1)]);
        let rows = compensation_rows(s, vec![band("x", 0, 0)], |k| Some(k.to_string()));
        assert!(rows.is_empty());
    }

    #[test]
    fn rounding_is_half_away_from_zero() {
        assert_eq!(round_half_away(1.005, 2), 1.01);
        assert_eq!(round_half_away(62.25, 1), 62.3);
        assert_eq!(round_half_away(1.0049, 2), 1.0);
        assert_eq!(div_round(5, 2), 3);
        assert_eq!(div_round(-5, 2), -3);
    }
}
