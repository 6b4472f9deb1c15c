//! get-team-members
//!
//! Leads with counts over the whole team (by level and location), then one
//! page of members (`limit`, `cursor`; see [`super::paging`]), so even a
//! team of thousands answers in a few kilobytes.

use employee_directory::page_order::member_key;
use employee_directory::{
    Directory, MemberPosition, RosterSummary, TeamMember, TeamQuery, TeamRoster, TeamSummary,
};
use mcpwire_server::access::Approval;
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{SharedOutput, Tool, ToolError, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::paging;
use crate::scopes;

/// Members listed when the call gives no `limit`.
pub(crate) const DEFAULT_LIMIT: u32 = 20;

/// Largest page a caller may ask for.
pub(crate) const MAX_LIMIT: u32 = 250;

/// Arguments of get-team-members.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    /// Team id such as "backend" (the team name also works).
    #[schemars(length(min = 1, max = 100), regex(pattern = super::ID_PATTERN))]
    pub team_id: String,
    /// Most members to list (optional; default 20, at most 250).
    #[schemars(range(min = 1, max = 250))]
    pub limit: Option<u32>,
    /// The `nextCursor` of the previous page, to list the next one (optional; omit for the first page).
    #[schemars(length(min = 1, max = 2048))]
    pub cursor: Option<String>,
}

/// Counts over a team and one page of its active members.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TeamPage {
    /// The team.
    pub team: TeamSummary,
    /// Number of active members, manager included.
    pub total: u32,
    /// Counts by level and location over the whole team (not only this page).
    pub summary: RosterSummary,
    /// Number of members listed in this page.
    pub count: u32,
    /// Pass as `cursor` to list the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Members of this page: the manager first, then by level (highest first) and name.
    pub members: Vec<TeamMember>,
}

pub fn tool(directory: Directory) -> Tool {
    Tool::builder("get-team-members")
        .title("Team members")
        .description(
            concat!(
                "Retrieve members of a specific team including their roles and reporting structure (manager first, each member with the id of the person they report to). Use a team id such as \"backend\".",
                " The answer leads with counts over the whole team by level and location, then lists one page of members: 20 by default, limit up to 250; when nextCursor is present, call again with the same teamId and cursor=nextCursor for the next page.",
                " Members' email and location are included only for callers allowed to see contact details.",
            )
            .to_owned()
                + super::DATA_NOT_INSTRUCTIONS,
        )
        .annotations(ToolAnnotations::read_only())
        // MCP Apps hosts render this view; the result itself is unchanged.
        .view(crate::views::ORG_CHART)
        // Policy: the directory scope; contact fields need hr:contact.
        .required_scopes([scopes::DIRECTORY])
        .field_scope("/members/*/email", scopes::CONTACT)
        .field_scope("/members/*/location", scopes::CONTACT)
        // Approval: none. A directory look-up (names, titles, teams; contact
        // details behind hr:contact): the everyday work the scopes already
        // bound; asking every time would train people to click yes.
        .approval(Approval::None)
        .state(directory)
        .handler(team_members)
}

async fn team_members(directory: Directory, input: Input) -> ToolResult<SharedOutput<TeamPage>> {
    let cursor = input.cursor.as_deref().map(paging::open).transpose()?;
    let after = match &cursor {
        Some((found, key)) => {
            Some(MemberPosition::from_key(key).ok_or_else(|| paging::unreadable(found, "team/"))?)
        }
        None => None,
    };
    let query = TeamQuery {
        after,
        limit: input.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
    };
    let answer = directory
        .team_page(&input.team_id, &query)
        .await
        .map_err(super::unavailable)?;
    let Some(roster) = answer.get() else {
        let ids = directory.team_ids().await.map_err(super::unavailable)?;
        let list: Vec<String> = ids.into_iter().map(|(id, _)| id).collect();
        return Err(ToolError::execution(format!(
            "No team \"{}\". Valid team ids: {}.",
            input.team_id,
            super::some_of(&list, super::IDS_LISTED)
        )));
    };
    let list = format!("team/{}", roster.team.team_id.to_lowercase());
    if let Some((found, _)) = &cursor {
        paging::check_list(found, &list)?;
    }
    // Made once per kept answer: every call for the same page of the same
    // unchanged directory sends the same bytes.
    super::shared_found(&answer, |roster| SharedOutput::new(&page_of(roster, &list)))
        .unwrap_or_else(|| Err(ToolError::internal("the team vanished")))
}

/// The answer for one page of `roster`.
fn page_of(roster: &TeamRoster, list: &str) -> TeamPage {
    let next_cursor = match roster.members.last() {
        Some(last) if roster.more => Some(paging::encode(list, member_key(last))),
        _ => None,
    };
    TeamPage {
        team: roster.team.clone(),
        total: roster.count,
        summary: roster.summary.clone(),
        count: u32::try_from(roster.members.len()).unwrap_or(u32::MAX),
        next_cursor,
        members: roster.members.clone(),
    }
}
