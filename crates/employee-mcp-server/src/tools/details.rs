//! get-employee-details

use employee_directory::{Directory, EmployeeDetails};
use mcp_server::protocol::model::ToolAnnotations;
use mcp_server::{Tool, ToolResult};

use crate::scopes;
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of get-employee-details.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    /// Employee id, e.g. "AliceJohnson" (also accepts "Alice Johnson" or an email address).
    #[schemars(length(min = 1, max = 100), regex(pattern = super::ID_PATTERN))]
    pub employee_id: String,
}

pub fn tool(directory: Directory) -> Tool {
    Tool::builder("get-employee-details")
        .title("Employee details")
        .description(
            concat!(
                "Retrieve comprehensive details about a specific employee including contact information, role, department, team, manager, skills and employment history. Use an employee id such as AliceJohnson.",
                " Contact fields (email, phone, location) are included only for callers allowed to see contact details.",
            )
            .to_owned()
                + super::DATA_NOT_INSTRUCTIONS,
        )
        .annotations(ToolAnnotations::read_only())
        // Policy: the directory scope; contact fields need hr:contact.
        .required_scopes([scopes::DIRECTORY])
        .field_scope("/email", scopes::CONTACT)
        .field_scope("/phone", scopes::CONTACT)
        .field_scope("/location", scopes::CONTACT)
        .state(directory)
        .handler(details)
}

async fn details(directory: Directory, input: Input) -> ToolResult<EmployeeDetails> {
    match directory.employee(&input.employee_id).await {
        Ok(Some(e)) => Ok(e),
        Ok(None) => Err(super::unknown_employee(&directory, &input.employee_id).await),
        Err(e) => Err(super::unavailable(e)),
    }
}
