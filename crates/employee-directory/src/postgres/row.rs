//! Conversions from PostgreSQL rows to domain types.

use tokio_postgres::Row;
use tokio_postgres::types::FromSql;

use crate::error::{DirectoryError, UnavailableReason};
use crate::model::{Location, Proficiency};

type Result<T> = std::result::Result<T, DirectoryError>;

/// Column `idx` as `T`; a type mismatch means the schema is not ours.
pub(crate) fn get<'a, T: FromSql<'a>>(row: &'a Row, idx: usize) -> Result<T> {
    row.try_get(idx).map_err(|e| {
        DirectoryError::unavailable(
            UnavailableReason::NotEmployeeDatabase,
            format!("unexpected column {idx} in the employee database: {e}"),
        )
    })
}

fn bad_value(what: &str, value: &str) -> DirectoryError {
    DirectoryError::unavailable(
        UnavailableReason::NotEmployeeDatabase,
        format!("invalid {what} `{value}` in the employee database"),
    )
}

/// A text column parsed with `parse`.
pub(crate) fn parsed<T>(
    row: &Row,
    idx: usize,
    what: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<T> {
    let text: &str = get(row, idx)?;
    parse(text).ok_or_else(|| bad_value(what, text))
}

/// A nullable text column parsed with `parse`.
pub(crate) fn parsed_opt<T>(
    row: &Row,
    idx: usize,
    what: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>> {
    match get::<Option<&str>>(row, idx)? {
        None => Ok(None),
        Some(text) => parse(text).map(Some).ok_or_else(|| bad_value(what, text)),
    }
}

/// A non-negative count (bigint).
pub(crate) fn count(row: &Row, idx: usize) -> Result<u32> {
    let n: i64 = get(row, idx)?;
    Ok(u32::try_from(n).unwrap_or(0))
}

/// A proficiency rank (1-4).
pub(crate) fn proficiency(row: &Row, idx: usize) -> Result<Proficiency> {
    let rank: i64 = get(row, idx)?;
    Proficiency::from_rank(rank).ok_or_else(|| bad_value("proficiency", &rank.to_string()))
}

/// A location from (city, region, country) columns starting at `idx`.
pub(crate) fn location(row: &Row, idx: usize) -> Result<Location> {
    Ok(Location::new(
        get(row, idx)?,
        get(row, idx + 1)?,
        get(row, idx + 2)?,
    ))
}
