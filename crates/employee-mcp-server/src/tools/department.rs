//! list-department-employees

use employee_directory::{DepartmentRoster, Directory};
use mcp_server::protocol::model::ToolAnnotations;
use mcp_server::{RequestContext, Tool, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of list-department-employees.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    /// Department id such as "engineering" (the department name also works).
    #[schemars(length(min = 1, max = 100), regex(pattern = super::ID_PATTERN))]
    pub department_id: String,
}

pub fn tool(directory: Directory) -> Tool {
    Tool::builder("list-department-employees")
        .title("Department roster")
        .description(
            "List all active employees in a specific department with their roles, teams and tenure. Use a department id such as \"engineering\".",
        )
        .annotations(ToolAnnotations::read_only())
        .handler(move |_ctx: RequestContext, input: Input| {
            let directory = directory.clone();
            async move {
                match directory.department_employees(&input.department_id).await {
                    Ok(Some(r)) => Ok::<DepartmentRoster, ToolError>(r),
                    Ok(None) => {
                        let ids = directory.department_ids().await.map_err(super::unavailable)?;
                        let list: Vec<String> = ids.into_iter().map(|(id, _)| id).collect();
                        Err(ToolError::execution(format!(
                            "No department \"{}\". Valid department ids: {}.",
                            input.department_id,
                            list.join(", ")
                        )))
                    }
                    Err(e) => Err(super::unavailable(e)),
                }
            }
        })
}
