//! Organisation-wide reports.

use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::Serialize;

/// A report, tagged by `reportType`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "reportType", rename_all = "kebab-case")]
pub enum Report {
    /// Active headcount breakdowns.
    Headcount(HeadcountReport),
    /// Trailing-twelve-month turnover.
    Turnover(TurnoverReport),
    /// Salary statistics.
    Compensation(CompensationReport),
}

/// Headcount in one group.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeadcountBucket {
    /// Group key: a department id, a location, an employment or office type.
    pub key: String,
    /// Human-readable group name.
    pub label: String,
    /// Active employees in the group.
    pub headcount: u32,
    /// Share of the total active headcount, in percent (one decimal).
    pub percent: f64,
}

/// Active headcount as of a date.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeadcountReport {
    /// Date the headcount is taken at.
    pub as_of: NaiveDate,
    /// Employees employed on `asOf`.
    pub total_active: u32,
    /// By department, largest first.
    pub by_department: Vec<HeadcountBucket>,
    /// By work location, largest first.
    pub by_location: Vec<HeadcountBucket>,
    /// By contract type, largest first.
    pub by_employment_type: Vec<HeadcountBucket>,
    /// By office type, largest first.
    pub by_office_type: Vec<HeadcountBucket>,
}

/// Turnover of one department, or of the whole company.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnoverRow {
    /// Department id; absent for the company-wide row.
    pub department_id: Option<String>,
    /// Department name, or "All departments".
    pub department: String,
    /// Headcount at the start of the period.
    pub headcount_start: u32,
    /// Headcount at the end of the period.
    pub headcount_end: u32,
    /// Average of start and end headcount.
    pub average_headcount: f64,
    /// Employees whose last day fell in the period.
    pub terminations: u32,
    /// Terminations where the employee resigned.
    pub voluntary: u32,
    /// Terminations initiated by the company.
    pub involuntary: u32,
    /// Hires whose first day fell in the period.
    pub hires: u32,
    /// terminations / average headcount x 100, one decimal.
    pub turnover_rate_percent: f64,
}

/// Turnover over the twelve months ending on `asOf`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnoverReport {
    /// End of the period (today).
    pub as_of: NaiveDate,
    /// Start of the period (exclusive): one year before `asOf`.
    pub period_start: NaiveDate,
    /// Company-wide figures.
    pub overall: TurnoverRow,
    /// Per department, highest turnover rate first.
    pub by_department: Vec<TurnoverRow>,
}

/// Salary statistics of one group of active employees.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompensationRow {
    /// Group key: a department id or a level; "all" for the company.
    pub key: String,
    /// Human-readable group name.
    pub label: String,
    /// Active employees in the group.
    pub headcount: u32,
    /// Mean salary, rounded.
    pub average_salary: i64,
    /// Median salary.
    pub median_salary: f64,
    /// Lowest salary.
    pub min_salary: i64,
    /// Highest salary.
    pub max_salary: i64,
    /// Mean of salary / band midpoint (1.0 = paid exactly at midpoint), two decimals.
    pub average_compa_ratio: f64,
    /// Mean position inside the band, 0 = band minimum, 100 = band maximum, one decimal.
    pub average_band_position_percent: f64,
}

/// Salary analysis of active employees.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompensationReport {
    /// Date the population is taken at.
    pub as_of: NaiveDate,
    /// ISO currency code of all amounts (annual base salary).
    pub currency: String,
    /// Company-wide figures.
    pub overall: CompensationRow,
    /// Per department, by department name.
    pub by_department: Vec<CompensationRow>,
    /// Per level, junior to executive.
    pub by_level: Vec<CompensationRow>,
}
