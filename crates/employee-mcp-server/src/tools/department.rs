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
    DepartmentRoster, DepartmentSummary, Directory, RosterEntry, RosterPosition, RosterQuery,
    RosterSummary,
};
use mcpwire_server::access::Approval;
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{SharedOutput, Tool, ToolError, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::paging;
use crate::scopes;

/// Employees listed when the call gives no `limit`.
pub(crate) const DEFAULT_LIMIT: u32 = 25;

/// Largest page a caller may ask for.
pub(crate) const MAX_LIMIT: u32 = 500;

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
    /// Active employees of this page: people outside any team (the head) first, then by team id and employee id.
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
        // MCP Apps hosts render this view; the result itself is unchanged.
        .view(crate::views::ROSTER)
        .required_scopes([scopes::DIRECTORY])
        // Approval: none. A directory look-up (names, titles, teams; contact
        // details behind hr:contact): the everyday work the scopes already
        // bound; asking every time would train people to click yes.
        .approval(Approval::None)
        .state(directory)
        .handler(roster)
}

async fn roster(directory: Directory, input: Input) -> ToolResult<SharedOutput<RosterPage>> {
    let cursor = input.cursor.as_deref().map(paging::open).transpose()?;
    let after = match &cursor {
        Some((found, key)) => Some(
            RosterPosition::from_key(key)
                .ok_or_else(|| paging::unreadable(found, "department/"))?,
        ),
        None => None,
    };
    let query = RosterQuery {
        team: input.team_id.clone(),
        after,
        limit: input.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
    };
    let answer = directory
        .department_page(&input.department_id, &query)
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
    if let (Some(team), None) = (&input.team_id, &roster.team) {
        return Err(no_such_team(roster, team));
    }
    let list = list_of(roster);
    if let Some((found, _)) = &cursor {
        paging::check_list(found, &list)?;
    }
    // Made once per kept answer: every call for the same page of the same
    // unchanged directory sends the same bytes.
    super::shared_found(&answer, |roster| SharedOutput::new(&page_of(roster, &list)))
        .unwrap_or_else(|| Err(ToolError::internal("the roster vanished")))
}

/// The list a cursor of this roster page belongs to.
fn list_of(roster: &DepartmentRoster) -> String {
    let department = &roster.department.department_id;
    match &roster.team {
        None => format!("department/{department}"),
        Some(t) => format!("department/{department}/{}", t.team_id),
    }
    .to_lowercase()
}

/// The error for a team the department does not have, naming its first
/// teams.
fn no_such_team(roster: &DepartmentRoster, team: &str) -> ToolError {
    let d = &roster.department;
    let listed: Vec<&str> = d.teams.iter().map(|t| t.team_id.as_str()).collect();
    let more = (roster.team_count as usize).saturating_sub(listed.len());
    let teams = match more {
        0 => listed.join(", "),
        n => format!("{} and {n} more", listed.join(", ")),
    };
    ToolError::execution(format!(
        "Department \"{}\" has no team \"{team}\". Its teams: {teams}.",
        d.department_id
    ))
}

/// The answer for one page of `roster`.
fn page_of(roster: &DepartmentRoster, list: &str) -> RosterPage {
    let next_cursor = match roster.employees.last() {
        Some(last) if roster.more => Some(paging::encode(list, roster_key(last))),
        _ => None,
    };
    RosterPage {
        department: roster.department.clone(),
        team_count: roster.team_count,
        as_of: roster.as_of,
        total: roster.total,
        summary: roster.summary.clone(),
        count: roster.count,
        next_cursor,
        employees: roster.employees.clone(),
    }
}
