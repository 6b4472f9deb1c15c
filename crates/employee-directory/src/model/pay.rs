//! Compensation bands and leave balances.

use schemars::JsonSchema;
use serde::Serialize;

use super::enums::{LeaveType, Level};

/// Actual salaries paid to active employees in a band.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SalaryStats {
    /// Number of active employees in the band.
    pub employee_count: u32,
    /// Lowest actual salary; absent when nobody is in the band.
    pub min: Option<i64>,
    /// Median actual salary.
    pub median: Option<f64>,
    /// Highest actual salary.
    pub max: Option<i64>,
    /// Mean actual salary, rounded to whole units.
    pub average: Option<i64>,
}

/// Salary band for a role at a level.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompensationBand {
    /// Role, e.g. "Software Engineer".
    pub role: String,
    /// Level.
    pub level: Level,
    /// Job title for this role and level, e.g. "Senior Software Engineer".
    pub title: String,
    /// ISO currency code of all amounts (annual base salary).
    pub currency: String,
    /// Band minimum.
    pub min: i64,
    /// Band midpoint (target salary).
    pub mid: i64,
    /// Band maximum.
    pub max: i64,
    /// Actual salaries of active employees in this band.
    pub actual: SalaryStats,
}

/// Leave balance of one employee for one leave type and year.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaveBalance {
    /// Employee id.
    pub employee_id: String,
    /// Full name.
    pub name: String,
    /// Leave type.
    pub leave_type: LeaveType,
    /// Calendar year of the balance.
    pub year: i32,
    /// Days granted for the year.
    pub entitled: f64,
    /// Days already taken.
    pub used: f64,
    /// Days requested and not yet taken.
    pub pending: f64,
    /// Days still available: entitled - used - pending.
    pub remaining: f64,
    /// Unit of all amounts; always "days".
    pub unit: String,
}
