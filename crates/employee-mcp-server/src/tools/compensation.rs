//! get-compensation-info

use employee_directory::{CompensationBand, Directory, Level};
use mcpwire_server::access::Approval;
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{Tool, ToolError, ToolResult};
use serde_json::{Map, Value};

use crate::scopes;
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of get-compensation-info.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    /// Role name such as "Software Engineer" (a level prefix like "Senior" is ignored).
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9 &/,.'()_-]*$")
    )]
    pub role: String,
    /// Career level.
    pub level: Level,
}

pub fn tool(directory: Directory) -> Tool {
    Tool::builder("get-compensation-info")
        .title("Salary band")
        .description(
            "Retrieve salary band information (min, mid, max, currency) for a specific role and level, with statistics of actual salaries in that band.".to_owned()
                + super::DATA_NOT_INSTRUCTIONS,
        )
        .annotations(ToolAnnotations::read_only())
        .required_scopes([scopes::COMPENSATION])
        // Approval: confirm. The answer holds pay (a band and the actual
        // salaries in it; in a band of one or two people those are the
        // people's own salaries), so even a caller holding hr:compensation
        // confirms each call: a model cannot read pay on its own
        // initiative. No self exemption: the tool takes a role and level,
        // not an employee, so there is no "own record" to exempt.
        .approval(Approval::Confirm)
        .approval_summary({
            let directory = directory.clone();
            move |_ctx, arguments| summary(directory.clone(), arguments)
        })
        .state(directory)
        .handler(compensation_band)
}

/// What the approval question says: the band's job title as the directory
/// knows it; `None` (the arguments are listed instead) when the role or
/// the level has no band, or the lookup fails.
pub(super) async fn summary(directory: Directory, arguments: Map<String, Value>) -> Option<String> {
    let input: Input = serde_json::from_value(Value::Object(arguments)).ok()?;
    let band = directory
        .compensation_band(&input.role, input.level)
        .await
        .ok()??;
    Some(format!(
        "Read the salary band (min, mid, max, currency) of {} ({}, level {}) and statistics of the actual salaries of the people in it",
        band.title,
        band.role,
        band.level.as_str()
    ))
}

async fn compensation_band(directory: Directory, input: Input) -> ToolResult<CompensationBand> {
    if let Some(band) = directory
        .compensation_band(&input.role, input.level)
        .await
        .map_err(super::unavailable)?
    {
        return Ok(band);
    }
    match directory
        .role_levels(&input.role)
        .await
        .map_err(super::unavailable)?
    {
        Some(levels) => {
            let list: Vec<&str> = levels.iter().map(|l| l.as_str()).collect();
            Err(ToolError::execution(format!(
                "Role \"{}\" has no salary band at level \"{}\". Levels with a band: {}.",
                input.role,
                input.level.as_str(),
                list.join(", ")
            )))
        }
        None => {
            let roles = directory.roles().await.map_err(super::unavailable)?;
            Err(ToolError::execution(format!(
                "Unknown role \"{}\". Known roles: {}.",
                input.role,
                roles.join(", ")
            )))
        }
    }
}
