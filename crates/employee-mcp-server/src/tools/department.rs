//! list-department-employees
//!
//! A department can hold tens of thousands of people, so the answer leads
//! with counts over the whole department (by team, level and location) and
//! lists one page of employees: `limit` (default small enough that the
//! answer stays under 32 KB) and `cursor` page through it, optional
//! `teamId` narrows the list to one team. Only `departmentId` is required,
//! as in the original tool.

use chrono::NaiveDate;
use employee_directory::page_order::roster_key;
use employee_directory::{
    DepartmentRoster, DepartmentSummary, Directory, RosterEntry, RosterSummary,
};
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{SharedOutput, Tool, ToolError, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::paging::{self, Page};
use crate::scopes;

/// Employees listed when the call gives no `limit`.
pub(crate) const DEFAULT_LIMIT: u32 = 25;

/// Largest page a caller may ask for.
pub(crate) const MAX_LIMIT: u32 = 500;

/// Teams an answer names: a department of 100,000 people has thousands
/// (170 KB of names), so the answer lists the first ones by id and says how
/// many there are; the summary counts people by team.
pub(crate) const TEAMS_LISTED: usize = super::IDS_LISTED;

/// Arguments of list-department-employees.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    /// Department id such as "engineering" (the department name also works).
    #[schemars(length(min = 1, max = 100), regex(pattern = super::ID_PATTERN))]
    pub department_id: String,
    /// Only this team of the department, e.g. "backend" (optional).
    #[schemars(length(min = 1, max = 100), regex(pattern = super::ID_PATTERN))]
    pub team_id: Option<String>,
    /// Most employees to list (optional; default 25, at most 500).
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    /// The `nextCursor` of the previous page, to list the next one (optional; omit for the first page).
    #[schemars(length(min = 1, max = 2048))]
    pub cursor: Option<String>,
}

/// Counts over a department and one page of its active employees.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RosterPage {
    /// The department; its `teams` lists at most 50 teams (by id).
    pub department: DepartmentSummary,
    /// Number of teams in the department (more than `department.teams` lists
    /// when it has over 50; `teamId` narrows the roster to any of them).
    pub team_count: u32,
    /// Date tenure is computed at.
    pub as_of: NaiveDate,
    /// Number of active employees matching (the whole department, or the team).
    pub total: u32,
    /// Counts by team, level and location over the whole department (not only this page).
    pub summary: RosterSummary,
    /// Number of employees listed in this page.
    pub count: u32,
    /// Pass as `cursor` to list the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Active employees of this page: the head first, then by team and name.
    pub employees: Vec<RosterEntry>,
}

pub fn tool(directory: Directory) -> Tool {
    Tool::builder("list-department-employees")
        .title("Department roster")
        .description(
            concat!(
                "List active employees in a specific department with their roles, teams and tenure. Use a department id such as \"engineering\".",
                " The answer leads with counts over the whole department by team, level and location (use them for \"how many\" questions instead of paging), then lists one page of employees: 25 by default, limit up to 500.",
                " When nextCursor is present, call again with the same arguments and cursor=nextCursor for the next page; total is the full count. Optional teamId narrows the list to one team.",
            )
            .to_owned()
                + super::DATA_NOT_INSTRUCTIONS,
        )
        .annotations(ToolAnnotations::read_only())
        .required_scopes([scopes::DIRECTORY])
        .state(directory)
        .handler(roster)
}

async fn roster(directory: Directory, input: Input) -> ToolResult<SharedOutput<RosterPage>> {
    let answer = directory
        .department_employees_cached(&input.department_id)
        .await
        .map_err(super::unavailable)?;
    let Some(roster) = answer.get() else {
        let ids = directory
            .department_ids()
            .await
            .map_err(super::unavailable)?;
        let list: Vec<String> = ids.into_iter().map(|(id, _)| id).collect();
        return Err(ToolError::execution(format!(
            "No department \"{}\". Valid department ids: {}.",
            input.department_id,
            super::some_of(&list, super::IDS_LISTED)
        )));
    };
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
    let department_id = &roster.department.department_id;
    let team_members: Vec<RosterEntry>;
    let (employees, list) = match &input.team_id {
        None => (&roster.employees, format!("department/{department_id}")),
        Some(team) => {
            let teams = &roster.department.teams;
            let Some(t) = teams.iter().find(|t| {
                t.team_id.eq_ignore_ascii_case(team) || t.name.eq_ignore_ascii_case(team)
            }) else {
                let list: Vec<&str> = teams.iter().map(|t| t.team_id.as_str()).collect();
                return Err(ToolError::execution(format!(
                    "Department \"{department_id}\" has no team \"{team}\". Its teams: {}.",
                    super::some_of(&list, TEAMS_LISTED)
                )));
            };
            team_members = roster
                .employees
                .iter()
                .filter(|e| e.team_id.as_deref() == Some(t.team_id.as_str()))
                .cloned()
                .collect();
            (
                &team_members,
                format!("department/{department_id}/{}", t.team_id),
            )
        }
    };
    let list = list.to_lowercase();
    let total = u32::try_from(employees.len()).unwrap_or(u32::MAX);
    if input.team_id.is_none() && input.cursor.is_none() && input.limit.is_none() {
        // The usual call, the first page at the default size: made once
        // per kept answer.
        return super::shared(&answer, |_| {
            let page = paging::first_page(&roster.employees, roster_key, &list, limit);
            SharedOutput::new(&page_of(roster, total, page))
        });
    }
    let page = paging::page(employees, roster_key, &list, input.cursor.as_deref(), limit)?;
    SharedOutput::new(&page_of(roster, total, page)).map_err(ToolError::internal)
}

/// The answer for one page of `roster` (whose list holds `total` rows).
fn page_of(roster: &DepartmentRoster, total: u32, page: Page<'_, RosterEntry>) -> RosterPage {
    let listed = roster.department.teams.len().min(TEAMS_LISTED);
    let d = &roster.department;
    let department = DepartmentSummary {
        department_id: d.department_id.clone(),
        name: d.name.clone(),
        description: d.description.clone(),
        head: d.head.clone(),
        head_id: d.head_id.clone(),
        teams: d.teams[..listed].to_vec(),
    };
    RosterPage {
        team_count: u32::try_from(roster.department.teams.len()).unwrap_or(u32::MAX),
        department,
        as_of: roster.as_of,
        total,
        summary: roster.summary.clone(),
        count: u32::try_from(page.rows.len()).unwrap_or(u32::MAX),
        next_cursor: page.next_cursor,
        employees: page.rows.to_vec(),
    }
}
