//! Organisation views: departments, teams, skill search, health.

use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::Serialize;

use super::employee::Location;
use super::enums::{EmploymentType, Level, OfficeType, Proficiency};

/// A team, by id and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TeamRef {
    /// Team id to use with other tools, e.g. "backend".
    pub team_id: String,
    /// Team name, e.g. "Backend".
    pub name: String,
}

/// Department facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DepartmentSummary {
    /// Department id to use with other tools, e.g. "engineering".
    pub department_id: String,
    /// Department name, e.g. "Engineering".
    pub name: String,
    /// What the department does.
    pub description: String,
    /// Department head's full name.
    pub head: Option<String>,
    /// Department head's employee id.
    pub head_id: Option<String>,
    /// Teams in the department.
    pub teams: Vec<TeamRef>,
}

/// One employee in a department roster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RosterEntry {
    /// Employee id.
    pub employee_id: String,
    /// Full name.
    pub name: String,
    /// Job title, e.g. "Senior Software Engineer".
    pub title: String,
    /// Career level.
    pub level: Level,
    /// Team name; absent for the department head.
    pub team: Option<String>,
    /// Team id.
    pub team_id: Option<String>,
    /// First day at the company.
    pub start_date: NaiveDate,
    /// Whole years of service as of `asOf`.
    pub tenure_years: u32,
    /// Whole months beyond `tenureYears`.
    pub tenure_months: u32,
}

/// How many people of a roster share one value (a team, a level, a
/// location).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupCount {
    /// The shared value: a team name ("No team" for people outside any
    /// team), a level ("senior") or a location ("Berlin, Germany").
    pub value: String,
    /// Number of active employees with it.
    pub count: u32,
}

/// Counts over a whole roster, so questions such as "how many engineers are
/// in Berlin" need no paging. Each list is largest first, then by value,
/// with at most 25 entries: past that the smallest groups are summed into
/// a last entry "N other values".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RosterSummary {
    /// Active employees per team.
    pub by_team: Vec<GroupCount>,
    /// Active employees per career level.
    pub by_level: Vec<GroupCount>,
    /// Active employees per work location ("City, Country").
    pub by_location: Vec<GroupCount>,
}

/// Where a roster page starts: after this row (see
/// [`crate::page_order`]). Any value is a valid position, so a position
/// taken from a client cannot make a query fail.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RosterPosition {
    /// The row's team id; `None` for people outside any team (they come
    /// first).
    pub team_id: Option<String>,
    /// The row's employee id, ASCII-lowercased (ids are unique ignoring
    /// case, and both backends order them so).
    pub employee_id: String,
}

/// Which page of a department roster to read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RosterQuery {
    /// Only this team of the department (id or name, any case).
    pub team: Option<String>,
    /// Rows after this position; `None` for the first page.
    pub after: Option<RosterPosition>,
    /// Most rows in the page.
    pub limit: u32,
}

impl RosterQuery {
    /// The first `limit` rows of the whole department.
    pub fn first(limit: u32) -> RosterQuery {
        RosterQuery {
            team: None,
            after: None,
            limit,
        }
    }
}

/// Teams a roster answer names (by id): a department of a 100,000-person
/// company has thousands; `teamCount` says how many there are.
pub const TEAMS_LISTED: u32 = 50;

/// Active employees of one department: counts over all of them and one
/// page of rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DepartmentRoster {
    /// The department; `teams` lists its first 50 teams by id.
    pub department: DepartmentSummary,
    /// Number of teams in the department.
    pub team_count: u32,
    /// The team the page is narrowed to; absent for the whole department,
    /// and when the team asked for is not one of the department's.
    pub team: Option<TeamRef>,
    /// Date tenure is computed at.
    pub as_of: NaiveDate,
    /// Active employees in the list (the department, or the team).
    pub total: u32,
    /// Number of active employees in this page.
    pub count: u32,
    /// Counts by team, level and location over the whole department.
    pub summary: RosterSummary,
    /// True when rows follow this page.
    pub more: bool,
    /// This page's rows: the people outside any team (the head) first, then
    /// by team id and employee id (see [`crate::page_order`]).
    pub employees: Vec<RosterEntry>,
}

/// Team facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TeamSummary {
    /// Team id to use with other tools.
    pub team_id: String,
    /// Team name.
    pub name: String,
    /// What the team works on.
    pub description: String,
    /// Department name.
    pub department: String,
    /// Department id.
    pub department_id: String,
    /// Team manager's full name.
    pub manager: Option<String>,
    /// Team manager's employee id.
    pub manager_id: Option<String>,
}

/// One member of a team.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TeamMember {
    /// Employee id.
    pub employee_id: String,
    /// Full name.
    pub name: String,
    /// Job title, e.g. "Senior Software Engineer".
    pub title: String,
    /// Role without level, e.g. "Software Engineer".
    pub role: String,
    /// Career level.
    pub level: Level,
    /// True for the team manager.
    pub is_manager: bool,
    /// Employee id of the person this member reports to.
    pub manager_id: Option<String>,
    /// Name of the person this member reports to.
    pub manager: Option<String>,
    /// Work email address.
    pub email: String,
    /// Contract type.
    pub employment_type: EmploymentType,
    /// Remote, hybrid or on-site.
    pub office_type: OfficeType,
    /// Work location.
    pub location: Location,
    /// First day at the company.
    pub start_date: NaiveDate,
}

/// Active members of a team and who they report to: counts over the
/// whole team and one page of members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TeamRoster {
    /// The team.
    pub team: TeamSummary,
    /// Number of active members, manager included.
    pub count: u32,
    /// Counts by team, level and location over the whole team.
    pub summary: RosterSummary,
    /// Members of the page, the manager first, then by level (highest
    /// first) and name.
    pub members: Vec<TeamMember>,
    /// Whether members follow this page.
    pub more: bool,
}

/// Where a team page starts: after this member (see
/// [`crate::page_order::member_key`]). Any value is a valid position.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MemberPosition {
    /// The row is the team's manager (who comes first).
    pub manager: bool,
    /// The level's rank, 1 for the highest level (as the key sorts).
    pub rank: u8,
    /// The full name, ASCII-lowercased.
    pub name: String,
    /// The employee id, ASCII-lowercased.
    pub employee_id: String,
}

/// Which page of a team to read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TeamQuery {
    /// Members after this position; `None` for the first page.
    pub after: Option<MemberPosition>,
    /// Most members in the page.
    pub limit: u32,
}

impl TeamQuery {
    /// The first `limit` members.
    pub fn first(limit: u32) -> TeamQuery {
        TeamQuery { after: None, limit }
    }
}

/// How a skill search matched: the best kind among the matched skills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SkillMatchKind {
    /// The query equals a skill name (ignoring case).
    Exact,
    /// The query is part of one or more skill names (none equal to it).
    Partial,
    /// No skill matched.
    None,
}

/// An employee holding a searched skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillMatch {
    /// Employee id.
    pub employee_id: String,
    /// Full name.
    pub name: String,
    /// Job title.
    pub title: String,
    /// Department name.
    pub department: String,
    /// Department id.
    pub department_id: String,
    /// Team name.
    pub team: Option<String>,
    /// Team id.
    pub team_id: Option<String>,
    /// The matched skill.
    pub skill: String,
    /// Proficiency in the matched skill.
    pub proficiency: Proficiency,
}

/// Where a skill-search page starts: after this match (see
/// [`crate::page_order::match_key`]). Any value is a valid position.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MatchPosition {
    /// The matched skill's name, ASCII-lowercased.
    pub skill: String,
    /// The match's proficiency rank (1 beginner .. 4 expert).
    pub proficiency: u8,
    /// The employee id, ASCII-lowercased.
    pub employee_id: String,
}

/// Which page of a skill search to read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SkillQuery {
    /// The text searched for in skill names.
    pub skill: String,
    /// Matches after this position; `None` for the first page.
    pub after: Option<MatchPosition>,
    /// Most matches in the page.
    pub limit: u32,
}

/// Matched skill names an answer lists: a one-letter query matches most
/// of a large company's skills; `matchedSkillCount` says how many.
pub const SKILLS_LISTED: u32 = 50;

/// Result of searching active employees by skill: counts over every match
/// and one page of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillSearch {
    /// The skill searched for, as given.
    pub query: String,
    /// Whether the match was exact, partial or absent.
    pub match_kind: SkillMatchKind,
    /// Skill names that matched the query, in rank order (the first 50).
    pub matched_skills: Vec<String>,
    /// Number of skill names that matched the query.
    pub matched_skill_count: u32,
    /// Number of matches (active employees with a matched skill, once per
    /// skill) over all pages.
    pub total: u32,
    /// True when more matches follow `matches`.
    pub truncated: bool,
    /// Matches ranked: the skill equal to the query first, then skills
    /// starting with it, then skills containing it, each skill by name;
    /// within a skill the strongest first, then by employee id.
    pub matches: Vec<SkillMatch>,
}

/// Health and size of the directory database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// Database backend, e.g. "sqlite".
    pub backend: String,
    /// Highest applied schema migration.
    pub schema_version: u32,
    /// Number of active employees.
    pub active_employees: u32,
    /// Number of employee records, former employees included.
    pub total_employees: u32,
}
