//! Single-employee views: details and tenure.

use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::Serialize;

use super::enums::{
    EmploymentStatus, EmploymentType, HistoryEvent, Level, OfficeType, Proficiency,
};

/// Where an employee is based.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    /// City name, e.g. "San Francisco".
    pub city: String,
    /// State or province code where one is customary, e.g. "CA".
    pub region: Option<String>,
    /// Country name, e.g. "United States".
    pub country: String,
    /// Human-readable location, e.g. "San Francisco, CA" or "London, United Kingdom".
    pub display: String,
}

impl Location {
    /// A location with its display form: "San Francisco, CA" in the US,
    /// "Toronto, ON, Canada", "London, United Kingdom".
    pub(crate) fn new(city: String, region: Option<String>, country: String) -> Location {
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
}

/// A skill held by an employee.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmployeeSkill {
    /// Skill name, e.g. "Rust".
    pub skill: String,
    /// Skill category, e.g. "Programming Language".
    pub category: String,
    /// How well the employee masters the skill.
    pub proficiency: Proficiency,
}

/// One position in an employee's career, here or at a previous employer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// Company name ("Acme Corp" for positions held here).
    pub company: String,
    /// Job title held.
    pub title: String,
    /// Level of the position, for positions held here.
    pub level: Option<Level>,
    /// Department of the position, for positions held here.
    pub department: Option<String>,
    /// What this entry records (hire, promotion, previous employer).
    pub event: HistoryEvent,
    /// First day in the position (YYYY-MM-DD).
    pub start_date: NaiveDate,
    /// Last day in the position; absent for the current position.
    pub end_date: Option<NaiveDate>,
}

/// Full profile of one employee.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmployeeDetails {
    /// Employee id to use with other tools, e.g. "JohnDoe".
    pub employee_id: String,
    /// Full name.
    pub name: String,
    /// Given name.
    pub first_name: String,
    /// Family name.
    pub last_name: String,
    /// Job title including the level, e.g. "Senior Software Engineer".
    pub title: String,
    /// Role without the level, as used for compensation bands, e.g. "Software Engineer".
    pub role: String,
    /// Career level.
    pub level: Level,
    /// Department name.
    pub department: String,
    /// Department id to use with other tools.
    pub department_id: String,
    /// Team name; absent for the CEO and department heads.
    pub team: Option<String>,
    /// Team id to use with other tools.
    pub team_id: Option<String>,
    /// Manager's full name; absent for the CEO.
    pub manager: Option<String>,
    /// Manager's employee id.
    pub manager_id: Option<String>,
    /// Number of people reporting directly to this employee.
    pub direct_reports: u32,
    /// Work location.
    pub location: Location,
    /// Work email address.
    pub email: String,
    /// Work phone number.
    pub phone: String,
    /// Contract type.
    pub employment_type: EmploymentType,
    /// Remote, hybrid or on-site.
    pub office_type: OfficeType,
    /// First day at the company (YYYY-MM-DD).
    pub start_date: NaiveDate,
    /// Whether the employee is still with the company.
    pub status: EmploymentStatus,
    /// Last day at the company, for former employees.
    pub termination_date: Option<NaiveDate>,
    /// Skills, strongest first.
    pub skills: Vec<EmployeeSkill>,
    /// Career history, most recent first.
    pub employment_history: Vec<HistoryEntry>,
}

/// How long an employee has been (or was) with the company.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tenure {
    /// Employee id.
    pub employee_id: String,
    /// Full name.
    pub name: String,
    /// Whether the employee is still with the company.
    pub status: EmploymentStatus,
    /// First day at the company (YYYY-MM-DD).
    pub start_date: NaiveDate,
    /// Date the tenure is measured to: today, or the last day for former employees.
    pub as_of: NaiveDate,
    /// Whole years of service.
    pub years: u32,
    /// Whole months beyond the years.
    pub months: u32,
    /// Days beyond the months.
    pub days: u32,
    /// Total calendar days of service.
    pub total_days: i64,
    /// Service in fractional years (total days / 365.25), rounded to two decimals.
    pub total_years: f64,
    /// Human-readable summary, e.g. "6 years, 10 months".
    pub summary: String,
}
