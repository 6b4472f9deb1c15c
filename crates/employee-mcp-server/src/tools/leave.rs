//! check-leave-balance

use employee_directory::{Directory, LeaveBalance, LeaveType};
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{Tool, ToolResult};

use crate::scopes;
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of check-leave-balance.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    /// Employee id, e.g. "AliceJohnson".
    #[schemars(length(min = 1, max = 100), regex(pattern = super::ID_PATTERN))]
    pub employee_id: String,
    /// Kind of leave.
    pub leave_type: LeaveType,
}

pub fn tool(directory: Directory) -> Tool {
    Tool::builder("check-leave-balance")
        .title("Leave balance")
        .description(
            concat!(
                "Check remaining leave balance for an employee and leave type for the current year: days entitled, used, pending approval and remaining.",
                " Employees may always check their own balance; other people's balances need HR leave access.",
            )
            .to_owned()
                + super::DATA_NOT_INSTRUCTIONS,
        )
        .annotations(ToolAnnotations::read_only())
        // Policy: hr:leave for anyone's balance; without it, a caller whose
        // token names them as this employee may read their own.
        .required_scopes([scopes::LEAVE])
        .self_access("employeeId")
        .state(directory)
        .handler(leave_balance)
}

async fn leave_balance(directory: Directory, input: Input) -> ToolResult<LeaveBalance> {
    match directory
        .leave_balance(&input.employee_id, input.leave_type)
        .await
    {
        Ok(Some(b)) => Ok(b),
        Ok(None) => Err(super::unknown_employee(&directory, &input.employee_id).await),
        Err(e) => Err(super::unavailable(e)),
    }
}
