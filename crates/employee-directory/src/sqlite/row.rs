//! Conversions from SQLite columns to domain types.

use chrono::NaiveDate;
use rusqlite::Row;
use rusqlite::types::Type;

use crate::model::Location;

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
    let text: String = row.get(idx)?;
    parse(&text).ok_or_else(|| bad_value(idx, what, &text))
}

/// Reads a nullable text column and parses it with `parse`.
pub(crate) fn parsed_opt<T>(
    row: &Row<'_>,
    idx: usize,
    what: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> rusqlite::Result<Option<T>> {
    let text: Option<String> = row.get(idx)?;
    match text {
        None => Ok(None),
        Some(text) => parse(&text)
            .map(Some)
            .ok_or_else(|| bad_value(idx, what, &text)),
    }
}

/// Parses an ISO date (YYYY-MM-DD).
pub(crate) fn parse_date(text: &str) -> Option<NaiveDate> {
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
    Ok(make_location(city, region, country))
}

/// "San Francisco, CA" in the US, "Toronto, ON, Canada", "London, United Kingdom".
pub(crate) fn make_location(city: String, region: Option<String>, country: String) -> Location {
    let display = match &region {
        Some(r) if country == "United States" => format!("{city}, {r}"),
        Some(r) => format!("{city}, {r}, {country}"),
        None if city == country => city.clone(),
        None => format!("{city}, {country}"),
    };
    Location {
        city,
        region,
        country,
        display,
    }
}
