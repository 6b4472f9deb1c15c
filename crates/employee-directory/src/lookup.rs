//! Backend-independent pieces of queries: input normalisation, patterns,
//! labels and the turnover arithmetic, shared so that SQLite and PostgreSQL
//! answer identically.

use chrono::NaiveDate;

use crate::model::{EmploymentType, Level, OfficeType, TurnoverReport, TurnoverRow};

/// Escapes LIKE wildcards so user input matches literally, and wraps it in
/// `%…%` (escape character: backslash).
pub(crate) fn like_pattern(input: &str) -> String {
    let mut out = String::with_capacity(input.len() + 2);
    out.push('%');
    for c in input.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// The role part of a title with a level prefix ("Senior Software Engineer"
/// -> "Software Engineer"); `None` without a known prefix.
pub(crate) fn strip_level_prefix(input: &str) -> Option<&str> {
    for prefix in Level::ALL.iter().filter_map(|l| l.title_prefix()) {
        let n = prefix.len();
        if input.len() > n + 1
            && input.is_char_boundary(n)
            && input[..n].eq_ignore_ascii_case(prefix)
            && input[n..].starts_with(' ')
        {
            return Some(input[n..].trim());
        }
    }
    None
}

/// `part` as a percentage of `whole`, one decimal.
pub(crate) fn percent(part: u32, whole: u32) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (f64::from(part) * 1000.0 / f64::from(whole)).round() / 10.0
    }
}

/// Counts a turnover query reads per group, in this order from its first
/// count column: headcount at the start and at the end of the period,
/// terminations, voluntary ones, involuntary ones, hires.
const TURNOVER_COUNTS: usize = 6;

/// One turnover row, its counts read with the backend's `count(column)`
/// from column `at` on: the rate is terminations over the average
/// headcount, in percent with one decimal.
pub(crate) fn turnover_row<E>(
    department_id: Option<String>,
    department: String,
    at: usize,
    mut count: impl FnMut(usize) -> Result<u32, E>,
) -> Result<TurnoverRow, E> {
    let mut counts = [0; TURNOVER_COUNTS];
    for (i, slot) in counts.iter_mut().enumerate() {
        *slot = count(at + i)?;
    }
    let [
        headcount_start,
        headcount_end,
        terminations,
        voluntary,
        involuntary,
        hires,
    ] = counts;
    let average = (f64::from(headcount_start) + f64::from(headcount_end)) / 2.0;
    let rate = if average > 0.0 {
        (f64::from(terminations) / average * 1000.0).round() / 10.0
    } else {
        0.0
    };
    Ok(TurnoverRow {
        department_id,
        department,
        headcount_start,
        headcount_end,
        average_headcount: average,
        terminations,
        voluntary,
        involuntary,
        hires,
        turnover_rate_percent: rate,
    })
}

/// The report over the year ending `today`: departments with the highest
/// rate first, then by name.
pub(crate) fn turnover_report(
    today: NaiveDate,
    start: NaiveDate,
    overall: TurnoverRow,
    mut by_department: Vec<TurnoverRow>,
) -> TurnoverReport {
    by_department.sort_by(|a, b| {
        b.turnover_rate_percent
            .total_cmp(&a.turnover_rate_percent)
            .then_with(|| a.department.cmp(&b.department))
    });
    TurnoverReport {
        as_of: today,
        period_start: start,
        overall,
        by_department,
    }
}

pub(crate) fn employment_label(t: EmploymentType) -> String {
    match t {
        EmploymentType::FullTime => "Full-time",
        EmploymentType::PartTime => "Part-time",
        EmploymentType::Contractor => "Contractor",
    }
    .to_string()
}

pub(crate) fn office_label(t: OfficeType) -> String {
    match t {
        OfficeType::Remote => "Remote",
        OfficeType::Hybrid => "Hybrid",
        OfficeType::OnSite => "On-site",
    }
    .to_string()
}

/// "Senior" for `senior`.
pub(crate) fn level_label(level: Level) -> String {
    let s = level.as_str();
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
