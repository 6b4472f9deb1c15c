//! Output types returned by [`crate::Directory`] queries.
//!
//! Every type serializes to camelCase JSON and derives a JSON Schema whose
//! descriptions come from the doc comments, so they can be handed to a
//! language model as-is.

mod employee;
mod enums;
mod org;
mod pay;
mod report;

pub use employee::{EmployeeDetails, EmployeeSkill, HistoryEntry, Location, Tenure};
pub use enums::{
    EmploymentStatus, EmploymentType, HistoryEvent, LeaveType, Level, OfficeType, Proficiency,
    ReportType, TerminationReason,
};
pub use org::{
    DepartmentRoster, DepartmentSummary, GroupCount, Health, MatchPosition, MemberPosition,
    RosterEntry, RosterPosition, RosterQuery, RosterSummary, SKILLS_LISTED, SkillMatch,
    SkillMatchKind, SkillQuery, SkillSearch, TEAMS_LISTED, TeamMember, TeamQuery, TeamRef,
    TeamRoster, TeamSummary,
};
pub use pay::{CompensationBand, LeaveBalance, SalaryStats};
pub use report::{
    CompensationReport, CompensationRow, HeadcountBucket, HeadcountReport, Report, TurnoverReport,
    TurnoverRow,
};
