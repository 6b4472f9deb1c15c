//! check-leave-balance

use employee_directory::{Directory, LeaveBalance, LeaveType};
use mcpwire_server::access::Approval;
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{Tool, ToolResult};
use serde_json::{Map, Value};

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
        // MCP Apps hosts render this view; the result itself is unchanged.
        .view(crate::views::LEAVE_BALANCE)
        // Policy: hr:leave for anyone's balance; without it, a caller whose
        // token names them as this employee may read their own.
        .required_scopes([scopes::LEAVE])
        .self_access("employeeId")
        // Approval: none. Reading other people's balances already needs
        // hr:leave, and a balance is days, not pay or health. One's own
        // balance is self-service: it stays free of approval even if an
        // operator requires approval for this tool (`tools approval`).
        .approval(Approval::None)
        .approval_exempts_self()
        .approval_summary({
            let directory = directory.clone();
            move |_ctx, arguments| summary(directory.clone(), arguments)
        })
        .state(directory)
        .handler(leave_balance)
}

/// What the approval question says (when an operator requires one): whose
/// balance, by name; `None` (the arguments are listed) when the employee
/// is unknown or the lookup fails.
pub(super) async fn summary(directory: Directory, arguments: Map<String, Value>) -> Option<String> {
    let input: Input = serde_json::from_value(Value::Object(arguments)).ok()?;
    let person = super::person(&directory, &input.employee_id).await?;
    Some(format!(
        "Read the {} leave balance of {person}",
        input.leave_type.as_str()
    ))
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
