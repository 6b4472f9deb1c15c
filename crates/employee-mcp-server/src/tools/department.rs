//! list-department-employees
//!
//! A large department's roster can exceed the server's result size cap, so
//! the roster pages: optional `teamId` narrows it to one team, `limit` and
//! `offset` page through it, and without a `limit` the tool returns as
//! many entries as fit in the size cap, with `nextOffset` pointing at the
//! rest. Only `departmentId` is required, as in the original tool.

use chrono::NaiveDate;
use employee_directory::{DepartmentRoster, DepartmentSummary, Directory, RosterEntry};
use mcpwire_server::access::serialized_len;
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{SharedOutput, Tool, ToolError, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::scopes;

/// Largest page a caller may ask for.
const MAX_LIMIT: u32 = 1000;

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
    /// Most employees to return (optional; by default as many as fit in one response, see `nextOffset`).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u32>,
    /// Number of employees to skip, to fetch the next page (optional, default 0; use the previous `nextOffset`).
    #[schemars(range(min = 0, max = 100000))]
    pub offset: Option<u32>,
}

/// One page of a department's active employees.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RosterPage {
    /// The department.
    pub department: DepartmentSummary,
    /// Date tenure is computed at.
    pub as_of: NaiveDate,
    /// Number of employees listed in this page.
    pub count: u32,
    /// Number of active employees matching (the whole department, or the team).
    pub total: u32,
    /// Position of the first listed employee in the full list.
    pub offset: u32,
    /// Offset of the next page; absent when this page reaches the end.
    pub next_offset: Option<u32>,
    /// Active employees, sorted by team then name (the head first).
    pub employees: Vec<RosterEntry>,
}

pub fn tool(directory: Directory, max_result_bytes: usize) -> Tool {
    Tool::builder("list-department-employees")
        .title("Department roster")
        .description(
            concat!(
                "List all active employees in a specific department with their roles, teams and tenure. Use a department id such as \"engineering\".",
                " Large departments are paged: optional teamId narrows the list to one team; limit and offset page through it. When nextOffset is present, call again with offset=nextOffset for the rest; total is the full count.",
            )
            .to_owned()
                + super::DATA_NOT_INSTRUCTIONS,
        )
        .annotations(ToolAnnotations::read_only())
        .required_scopes([scopes::DIRECTORY])
        .state((directory, max_result_bytes))
        .handler(roster)
}

async fn roster(
    (directory, max_result_bytes): (Directory, usize),
    input: Input,
) -> ToolResult<SharedOutput<RosterPage>> {
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
            list.join(", ")
        )));
    };
    let offset = input.offset.unwrap_or(0);
    let limit = input.limit.map(|l| l.min(MAX_LIMIT));
    if input.team_id.is_none() && offset == 0 && limit.is_none() {
        // The first page of the whole department, the usual call: made
        // once per kept answer.
        return super::shared(&answer, |_| {
            SharedOutput::new(&page(roster, &roster.employees, 0, None, max_result_bytes))
        });
    }
    let team_members: Vec<RosterEntry>;
    let employees = match &input.team_id {
        None => &roster.employees,
        Some(team) => {
            let teams = &roster.department.teams;
            let Some(t) = teams.iter().find(|t| {
                t.team_id.eq_ignore_ascii_case(team) || t.name.eq_ignore_ascii_case(team)
            }) else {
                let list: Vec<&str> = teams.iter().map(|t| t.team_id.as_str()).collect();
                return Err(ToolError::execution(format!(
                    "Department \"{}\" has no team \"{team}\". Its teams: {}.",
                    roster.department.department_id,
                    list.join(", ")
                )));
            };
            team_members = roster
                .employees
                .iter()
                .filter(|e| e.team_id.as_deref() == Some(t.team_id.as_str()))
                .cloned()
                .collect();
            &team_members
        }
    };
    let page = page(roster, employees, offset, limit, max_result_bytes);
    SharedOutput::new(&page).map_err(ToolError::internal)
}

/// Cuts one page out of the roster. Without a limit, the page holds as many
/// entries as fit in the result size cap (the structured result plus its
/// JSON text mirror, whose escaped quotes make it a bit larger).
fn page(
    roster: &DepartmentRoster,
    employees: &[RosterEntry],
    offset: u32,
    limit: Option<u32>,
    max_result_bytes: usize,
) -> RosterPage {
    let total = u32::try_from(employees.len()).unwrap_or(u32::MAX);
    let start = offset.min(total) as usize;
    let rest = employees[start..].iter();
    let listed: Vec<RosterEntry> = match limit {
        Some(n) => rest.take(n as usize).cloned().collect(),
        None => {
            let fixed = serialized_len(&roster.department) + 512;
            // Three bytes of response per byte of entry: the structured copy
            // and the escaped text mirror.
            let mut budget = (max_result_bytes / 3).saturating_sub(fixed);
            let mut out = Vec::new();
            for e in rest {
                let size = serialized_len(e) + 1;
                if size > budget && !out.is_empty() {
                    break;
                }
                budget = budget.saturating_sub(size);
                out.push(e.clone());
            }
            out
        }
    };
    let count = u32::try_from(listed.len()).unwrap_or(u32::MAX);
    let end = start as u32 + count;
    RosterPage {
        department: roster.department.clone(),
        as_of: roster.as_of,
        count,
        total,
        offset: start as u32,
        next_offset: (end < total).then_some(end),
        employees: listed,
    }
}
