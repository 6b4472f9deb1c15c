//! Source of "today" for tenure and report dates.
//!
//! Injected so tests can pin the date and get exact numbers.

use chrono::NaiveDate;

/// Supplies the current date.
pub trait Clock: Send + Sync {
    /// Today's date (no time zone; the directory works in whole days).
    fn today(&self) -> NaiveDate;
}

/// The real clock: today's date in UTC.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn today(&self) -> NaiveDate {
        chrono::Utc::now().date_naive()
    }
}

/// A clock stuck on one date, for tests and reproducible reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedClock(pub NaiveDate);

impl Clock for FixedClock {
    fn today(&self) -> NaiveDate {
        self.0
    }
}
