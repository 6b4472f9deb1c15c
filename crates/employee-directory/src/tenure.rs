//! Calendar arithmetic for tenure (years / months / days of service).

use chrono::{Months, NaiveDate};

use crate::model::{EmploymentStatus, Tenure};

/// A calendar difference between two dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub years: u32,
    pub months: u32,
    pub days: u32,
    pub total_days: i64,
}

/// Calendar difference from `start` to `end`; zero if `end` is before `start`.
///
/// Whole months are counted like a person would ("15 Jan to 14 Feb" is 0
/// months 30 days, "15 Jan to 15 Feb" is 1 month); when the start day does not
/// exist in the end month (31st), chrono clamps to the month's last day.
pub(crate) fn span(start: NaiveDate, end: NaiveDate) -> Span {
    if end <= start {
        return Span {
            years: 0,
            months: 0,
            days: 0,
            total_days: 0,
        };
    }
    let total_days = (end - start).num_days();
    let mut months = months_between(start, end);
    // The estimate can overshoot by one when `end`'s day is before `start`'s.
    let mut anchor = add_months(start, months);
    while months > 0 && anchor > end {
        months -= 1;
        anchor = add_months(start, months);
    }
    let days = (end - anchor).num_days();
    Span {
        years: months / 12,
        months: months % 12,
        days: u32::try_from(days).unwrap_or(0),
        total_days,
    }
}

fn months_between(start: NaiveDate, end: NaiveDate) -> u32 {
    use chrono::Datelike;
    let months = (end.year() - start.year()) * 12 + end.month() as i32 - start.month() as i32;
    u32::try_from(months).unwrap_or(0)
}

fn add_months(date: NaiveDate, months: u32) -> NaiveDate {
    date.checked_add_months(Months::new(months))
        .unwrap_or(NaiveDate::MAX)
}

/// "6 years, 10 months"; "3 months, 4 days" under a year; "12 days" under a month.
pub(crate) fn summary(span: &Span) -> String {
    fn unit(n: u32, word: &str) -> String {
        if n == 1 {
            format!("1 {word}")
        } else {
            format!("{n} {word}s")
        }
    }
    match (span.years, span.months) {
        (0, 0) => unit(span.days, "day"),
        (0, m) if span.days > 0 => format!("{}, {}", unit(m, "month"), unit(span.days, "day")),
        (0, m) => unit(m, "month"),
        (y, 0) => unit(y, "year"),
        (y, m) => format!("{}, {}", unit(y, "year"), unit(m, "month")),
    }
}

/// The tenure answer for an employee who started on `start` and, if they
/// left, whose last day was `end`; both backends read the row, this builds
/// the answer.
pub(crate) fn of(
    employee_id: String,
    name: String,
    status: EmploymentStatus,
    (start, end): (NaiveDate, Option<NaiveDate>),
    today: NaiveDate,
) -> Tenure {
    // Former employees' tenure stops at their last day.
    let as_of = end.map_or(today, |end| end.min(today));
    let span = span(start, as_of);
    Tenure {
        employee_id,
        name,
        status,
        start_date: start,
        as_of,
        years: span.years,
        months: span.months,
        days: span.days,
        total_days: span.total_days,
        total_years: (span.total_days as f64 / 365.25 * 100.0).round() / 100.0,
        summary: summary(&span),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    #[test]
    fn exact_spans() {
        let s = span(d(2020, 1, 15), d(2026, 11, 30));
        assert_eq!((s.years, s.months, s.days), (6, 10, 15));
        assert_eq!(summary(&s), "6 years, 10 months");

        let s = span(d(2020, 1, 15), d(2020, 2, 14));
        assert_eq!((s.years, s.months, s.days), (0, 0, 30));
        assert_eq!(summary(&s), "30 days");

        let s = span(d(2020, 1, 15), d(2021, 1, 15));
        assert_eq!((s.years, s.months, s.days, s.total_days), (1, 0, 0, 366));
        assert_eq!(summary(&s), "1 year");

        let s = span(d(2024, 1, 31), d(2024, 3, 1));
        assert_eq!((s.months, s.days), (1, 1));
        assert_eq!(summary(&s), "1 month, 1 day");
    }

    #[test]
    fn end_before_start_is_zero() {
        let s = span(d(2025, 1, 1), d(2024, 1, 1));
        assert_eq!(s.total_days, 0);
        assert_eq!(summary(&s), "0 days");
    }
}
