//! get-team-members

use employee_directory::{Directory, TeamRoster};
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{SharedOutput, Tool, ToolError, ToolResult};

use crate::scopes;
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of get-team-members.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    /// Team id such as "backend" (the team name also works).
    #[schemars(length(min = 1, max = 100), regex(pattern = super::ID_PATTERN))]
    pub team_id: String,
}

pub fn tool(directory: Directory) -> Tool {
    Tool::builder("get-team-members")
        .title("Team members")
        .description(
            concat!(
                "Retrieve all members of a specific team including their roles and reporting structure (manager first, each member with the id of the person they report to). Use a team id such as \"backend\".",
                " Members' email and location are included only for callers allowed to see contact details.",
            )
            .to_owned()
                + super::DATA_NOT_INSTRUCTIONS,
        )
        .annotations(ToolAnnotations::read_only())
        // Policy: the directory scope; contact fields need hr:contact.
        .required_scopes([scopes::DIRECTORY])
        .field_scope("/members/*/email", scopes::CONTACT)
        .field_scope("/members/*/location", scopes::CONTACT)
        .state(directory)
        .handler(team_members)
}

async fn team_members(directory: Directory, input: Input) -> ToolResult<SharedOutput<TeamRoster>> {
    let answer = directory
        .team_members_cached(&input.team_id)
        .await
        .map_err(super::unavailable)?;
    if let Some(found) = super::shared_found(&answer, SharedOutput::new) {
        return found;
    }
    let ids = directory.team_ids().await.map_err(super::unavailable)?;
    let list: Vec<String> = ids.into_iter().map(|(id, _)| id).collect();
    Err(ToolError::execution(format!(
        "No team \"{}\". Valid team ids: {}.",
        input.team_id,
        list.join(", ")
    )))
}
