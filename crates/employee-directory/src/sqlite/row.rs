//! Conversions from SQLite columns to domain types.

use chrono::NaiveDate;
use rusqlite::types::Type;
use rusqlite::{Connection, Params, Row};

use crate::model::Location;

/// Single-row queries through the connection's statement cache.
///
/// `Connection::query_row` parses and plans its SQL on every call, which
/// cost more than running the query itself; a cached statement is only
/// reset and rebound.
pub(crate) trait CachedRow {
    /// Like [`Connection::query_row`], with a cached prepared statement.
    fn cached_row<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> rusqlite::Result<T>;
}

impl CachedRow for Connection {
    fn cached_row<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}

/// Error for a column whose text is not a valid value.
fn bad_value(idx: usize, what: &str, value: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        idx,
        Type::Text,
        format!("invalid {what} `{value}` in database").into(),
    )
}

/// Reads a text column and parses it with `parse`.
pub(crate) fn parsed<T>(
    row: &Row<'_>,
    idx: usize,
    what: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> rusqlite::Result<T> {
    // Borrowed, not copied into a String: enums and dates are parsed on
    // every row.
    let text = row.get_ref(idx)?.as_str().map_err(|e| not_text(idx, e))?;
    parse(text).ok_or_else(|| bad_value(idx, what, text))
}

/// Reads a nullable text column and parses it with `parse`.
pub(crate) fn parsed_opt<T>(
    row: &Row<'_>,
    idx: usize,
    what: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> rusqlite::Result<Option<T>> {
    let text = row
        .get_ref(idx)?
        .as_str_or_null()
        .map_err(|e| not_text(idx, e))?;
    match text {
        None => Ok(None),
        Some(text) => parse(text)
            .map(Some)
            .ok_or_else(|| bad_value(idx, what, text)),
    }
}

/// Error for a column that should hold text but holds another type.
fn not_text(idx: usize, error: rusqlite::types::FromSqlError) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(error))
}

/// Parses an ISO date (YYYY-MM-DD).
pub(crate) fn parse_date(text: &str) -> Option<NaiveDate> {
    // The stored form is always exactly YYYY-MM-DD: read it directly, as
    // chrono's format parser is slow enough to show up in roster queries.
    // Anything else goes through chrono, which accepts the same inputs.
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    if b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && let (Some(y), Some(m), Some(d)) = (digits(0..4), digits(5..7), digits(8..10))
    {
        return NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, m, d);
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()
}

/// Reads a YYYY-MM-DD column.
pub(crate) fn date(row: &Row<'_>, idx: usize) -> rusqlite::Result<NaiveDate> {
    parsed(row, idx, "date", parse_date)
}

/// Reads a nullable YYYY-MM-DD column.
pub(crate) fn date_opt(row: &Row<'_>, idx: usize) -> rusqlite::Result<Option<NaiveDate>> {
    parsed_opt(row, idx, "date", parse_date)
}

/// Reads a non-negative count.
pub(crate) fn count(row: &Row<'_>, idx: usize) -> rusqlite::Result<u32> {
    let n: i64 = row.get(idx)?;
    Ok(u32::try_from(n).unwrap_or(0))
}

/// Builds a location from (city, region, country) columns starting at `idx`.
pub(crate) fn location(row: &Row<'_>, idx: usize) -> rusqlite::Result<Location> {
    let city: String = row.get(idx)?;
    let region: Option<String> = row.get(idx + 1)?;
    let country: String = row.get(idx + 2)?;
    Ok(Location::new(city, region, country))
}

/// Reads a proficiency stored as its rank (1..4).
pub(crate) fn proficiency(
    row: &rusqlite::Row<'_>,
    idx: usize,
) -> rusqlite::Result<crate::model::Proficiency> {
    let rank: i64 = row.get(idx)?;
    crate::model::Proficiency::from_rank(rank).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            idx,
            rusqlite::types::Type::Integer,
            format!("invalid proficiency {rank} in database").into(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::parse_date;
    use chrono::NaiveDate;

    /// The hand-written fast path must accept and reject exactly what
    /// chrono's `%Y-%m-%d` does.
    #[test]
    fn parse_date_agrees_with_chrono() {
        let chrono = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok();
        for s in [
            "2026-10-01",
            "2024-02-29",
            "2023-02-29",
            "2026-13-01",
            "2026-00-10",
            "2026-1-01",
            "2026-01-1",
            "0999-01-01",
            "2026/10/01",
            "2026-10-0a",
            "",
            "20261001",
        ] {
            assert_eq!(parse_date(s), chrono(s), "{s:?}");
        }
    }
}
