//! Dates as HR files bring them: `YYYY-MM-DD`, and what a spreadsheet
//! writes back (`YYYY/MM/DD`, `YYYY.MM.DD`). Day-and-month-first forms
//! such as `01/02/2025` read two ways, so they are refused unless the
//! import names their format (`--date-format %d/%m/%Y`).

use std::fmt::Write as _;

use chrono::NaiveDate;
use chrono::format::{Item, StrftimeItems};

use super::spec::Kind;
use super::value::{self, Value};

/// Year-first forms, accepted without a format (the year cannot be
/// mistaken for a day or a month).
const YEAR_FIRST: &[&str] = &["%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d"];

/// Parses `text` as a value of `kind`: dates as [`parse`] reads them (in
/// `format` too), every other kind as [`value::parse`]. The import parses
/// cells through here.
pub fn parse_value(kind: Kind, text: &str, format: Option<&str>) -> Result<Value, String> {
    match kind {
        Kind::Date => parse(text, format).map(Value::Text),
        _ => value::parse(kind, text),
    }
}

/// The date `text` names, as `YYYY-MM-DD`: in `format` if given, else (or
/// failing that) in a year-first form; the error says what to do.
pub fn parse(text: &str, format: Option<&str>) -> Result<String, String> {
    let trimmed = text.trim();
    // chrono's %Y takes any number of digits: `01.02.25` is not year 1.
    let year_first = trimmed.len() > 4
        && trimmed.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && matches!(trimmed.as_bytes()[4], b'-' | b'/' | b'.');
    let defaults = YEAR_FIRST.iter().copied().filter(|_| year_first);
    for f in format.into_iter().chain(defaults) {
        if let Ok(d) = NaiveDate::parse_from_str(trimmed, f) {
            return Ok(d.format("%Y-%m-%d").to_string());
        }
    }
    if let Some(f) = format {
        return Err(format!("{text:?} is not a date ({f}, or YYYY-MM-DD)"));
    }
    match day_month_first(trimmed) {
        Some((sep, year)) => Err(format!(
            "{text:?} is ambiguous (day/month or month/day?); pass --date-format \
             %d{sep}%m{sep}{year} (or %m{sep}%d{sep}{year}), or format the column as yyyy-mm-dd"
        )),
        None => Err(format!("{text:?} is not a date (YYYY-MM-DD)")),
    }
}

/// For `D/M/Y`-like text (1–2 digits, 1–2 digits, a 2- or 4-digit year,
/// one separator of `/`, `.` or `-`): the separator and the year's
/// format (`%Y` or `%y`).
fn day_month_first(text: &str) -> Option<(char, &'static str)> {
    let sep = text.chars().find(|c| matches!(c, '/' | '.' | '-'))?;
    let parts: Vec<&str> = text.split(sep).collect();
    let digits =
        |s: &str, lens: &[usize]| lens.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit());
    match parts.as_slice() {
        [a, b, y] if digits(a, &[1, 2]) && digits(b, &[1, 2]) && digits(y, &[2, 4]) => {
            Some((sep, if y.len() == 4 { "%Y" } else { "%y" }))
        }
        _ => None,
    }
}

/// Checks a `--date-format`: valid chrono items that name a whole date
/// (a date written in it reads back the same).
pub fn check_format(format: &str) -> Result<(), String> {
    if StrftimeItems::new(format).any(|i| matches!(i, Item::Error)) {
        return Err(format!(
            "--date-format {format:?} is not a valid format (use chrono's %d, %m, %Y, e.g. %d/%m/%Y)"
        ));
    }
    // Day 31 and month 12 tell the two apart; a format without one of
    // year, month and day (or with a time) cannot write or read it back.
    let probe = NaiveDate::from_ymd_opt(2025, 12, 31);
    let mut written = String::new();
    let round_trips = probe.is_some_and(|d| {
        write!(written, "{}", d.format(format)).is_ok()
            && NaiveDate::parse_from_str(&written, format).ok() == Some(d)
    });
    if !round_trips {
        return Err(format!(
            "--date-format {format:?} does not describe a date (it needs the day, month and \
             year, e.g. %d/%m/%Y)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn year_first_forms_are_dates() {
        for text in ["2025-02-01", "2025/02/01", "2025.02.01", " 2025/2/1 "] {
            assert_eq!(parse(text, None).as_deref(), Ok("2025-02-01"), "{text}");
        }
        assert!(parse("2025/02/30", None).is_err());
    }

    #[test]
    fn day_month_forms_need_a_format() {
        let err = parse("01/02/2025", None).unwrap_err();
        assert!(
            err.contains("--date-format %d/%m/%Y (or %m/%d/%Y)"),
            "{err}"
        );
        let err = parse("01.02.25", None).unwrap_err();
        assert!(err.contains("--date-format %d.%m.%y"), "{err}");
        assert_eq!(
            parse("01/02/2025", Some("%d/%m/%Y")).as_deref(),
            Ok("2025-02-01")
        );
        assert_eq!(
            parse("2025-02-01", Some("%d/%m/%Y")).as_deref(),
            Ok("2025-02-01")
        );
        assert_eq!(
            parse("2021-02-30", None),
            Err("\"2021-02-30\" is not a date (YYYY-MM-DD)".to_string())
        );
    }

    #[test]
    fn formats_are_checked() {
        assert!(check_format("%d/%m/%Y").is_ok());
        assert!(check_format("%m/%d/%y").is_ok());
        assert!(check_format("%d/%m").is_err());
        assert!(check_format("%H:%M").is_err());
        assert!(check_format("%Q").is_err());
        assert!(check_format("").is_err());
    }
}
