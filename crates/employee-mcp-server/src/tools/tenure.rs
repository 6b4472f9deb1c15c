//! calculate-employee-tenure

use employee_directory::{Directory, Tenure};
use mcpwire_server::access::Approval;
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{Tool, ToolResult};

use crate::scopes;
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of calculate-employee-tenure.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    /// Employee id, e.g. "AliceJohnson".
    #[schemars(length(min = 1, max = 100), regex(pattern = super::ID_PATTERN))]
    pub employee_id: String,
}

pub fn tool(directory: Directory) -> Tool {
    Tool::builder("calculate-employee-tenure")
        .title("Employee tenure")
        .description(
            "Calculate the tenure of an employee in the organization based on their start date, as of today (or their last day, for former employees): years, months, days and a readable summary.".to_owned()
                + super::DATA_NOT_INSTRUCTIONS,
        )
        .annotations(ToolAnnotations::read_only())
        // MCP Apps hosts render this view; the result itself is unchanged.
        .view(crate::views::TENURE)
        .required_scopes([scopes::DIRECTORY])
        // Approval: none. A directory look-up (names, titles, teams; contact
        // details behind hr:contact): the everyday work the scopes already
        // bound; asking every time would train people to click yes.
        .approval(Approval::None)
        .state(directory)
        .handler(tenure)
}

async fn tenure(directory: Directory, input: Input) -> ToolResult<Tenure> {
    match directory.tenure(&input.employee_id).await {
        Ok(Some(t)) => Ok(t),
        Ok(None) => Err(super::unknown_employee(&directory, &input.employee_id).await),
        Err(e) => Err(super::unavailable(e)),
    }
}
