//! get-compensation-info

use employee_directory::{CompensationBand, Directory, Level};
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{Tool, ToolError, ToolResult};

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
        .state(directory)
        .handler(compensation_band)
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
