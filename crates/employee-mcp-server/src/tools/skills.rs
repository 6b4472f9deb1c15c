//! search-employees-by-skill

use employee_directory::{Directory, SkillSearch};
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{SharedOutput, Tool, ToolError, ToolResult};

use crate::scopes;
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of search-employees-by-skill.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    /// A skill such as "Rust" or "Negotiation"; matched case-insensitively, exact name first, otherwise as a substring.
    #[schemars(
        length(min = 1, max = 60),
        regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9 .+#/&'_-]*$")
    )]
    pub skill: String,
}

pub fn tool(directory: Directory) -> Tool {
    Tool::builder("search-employees-by-skill")
        .title("Find employees by skill")
        .description(
            "Find active employees with specific technical or professional skills, strongest proficiency first (at most 100 matches; `total` and `truncated` say whether there are more).".to_owned()
                + super::DATA_NOT_INSTRUCTIONS,
        )
        .annotations(ToolAnnotations::read_only())
        .required_scopes([scopes::DIRECTORY])
        .state(directory)
        .handler(search)
}

async fn search(directory: Directory, input: Input) -> ToolResult<SharedOutput<SkillSearch>> {
    let answer = directory
        .search_by_skill_cached(&input.skill)
        .await
        .map_err(super::unavailable)?;
    if answer.matches.is_empty() {
        let skills = directory.skills().await.map_err(super::unavailable)?;
        return Err(ToolError::execution(format!(
            "No employee has a skill matching \"{}\". Known skills: {}.",
            input.skill,
            skills.join(", ")
        )));
    }
    super::shared(&answer, SharedOutput::new)
}
