//! get-employee-details

use employee_directory::{Directory, EmployeeDetails};
use mcpwire_server::access::Approval;
use mcpwire_server::protocol::model::{InputRequest, ToolAnnotations};
use mcpwire_server::{InputRequired, RequestContext, SharedOutput, Tool, ToolError, ToolResult};
use serde_json::{Value, json};

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
                " For an unknown id the closest matches are suggested; a client that supports elicitation is asked which one was meant.",
            )
            .to_owned()
                + super::DATA_NOT_INSTRUCTIONS,
        )
        .annotations(ToolAnnotations::read_only())
        // MCP Apps hosts render this view; the result itself is unchanged.
        .view(crate::views::ORG_CHART)
        // Policy: the directory scope; contact fields need hr:contact.
        .required_scopes([scopes::DIRECTORY])
        .field_scope("/email", scopes::CONTACT)
        .field_scope("/phone", scopes::CONTACT)
        .field_scope("/location", scopes::CONTACT)
        // Approval: none. A directory look-up (names, titles, teams; contact
        // details behind hr:contact): the everyday work the scopes already
        // bound; asking every time would train people to click yes.
        .approval(Approval::None)
        .state(directory)
        .handler_with_context(details)
}

/// Key of the "which employee did you mean?" question.
const PICK: &str = "employee";

/// Candidates offered when an id is unknown.
const CANDIDATES: usize = 5;

/// An unknown id is answered with "did you mean"; a client that can ask
/// its user (elicitation) gets the question instead, and the retry with
/// the user's choice returns that employee.
async fn details(
    directory: Directory,
    ctx: RequestContext,
    input: Input,
) -> ToolResult<SharedOutput<EmployeeDetails>> {
    let id = picked(&ctx).unwrap_or(&input.employee_id).to_owned();
    let answer = directory
        .employee_cached(&id)
        .await
        .map_err(super::unavailable)?;
    if let Some(found) = super::shared_found(&answer, SharedOutput::new) {
        return found;
    }
    // Asked once: a decline (or a stale choice) ends in the error.
    if ctx.input_responses().is_none() && ctx.client_supports("elicitation") {
        return Err(ask_which(&directory, &input.employee_id).await);
    }
    Err(super::unknown_employee(&directory, &input.employee_id).await)
}

/// The id the user chose, if they accepted and chose one of the ids we
/// offered (the offer comes back in the signed request state, so a client
/// cannot substitute another).
fn picked(ctx: &RequestContext) -> Option<&str> {
    let answer = ctx.input_response(PICK)?;
    if answer.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    let chosen = answer.get("content")?.get("employeeId")?.as_str()?;
    let offered = ctx.request_state()?.get("candidates")?.as_array()?;
    offered.iter().any(|c| c == chosen).then_some(chosen)
}

/// The question for the user, or the plain "not found" when nothing
/// resembles the id.
async fn ask_which(directory: &Directory, id: &str) -> ToolError {
    let suggestions = match directory.suggest_employees(id, CANDIDATES).await {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => return super::unknown_employee(directory, id).await,
        Err(e) => return super::unavailable(e),
    };
    let ids: Vec<&str> = suggestions.iter().map(|(id, _)| id.as_str()).collect();
    let listed: Vec<String> = suggestions
        .iter()
        .map(|(id, name)| format!("{id} ({name})"))
        .collect();
    let schema = json!({
        "type": "object",
        "properties": { "employeeId": {
            "type": "string",
            "title": "Employee",
            "description": "The employee you meant.",
            "enum": ids,
        } },
        "required": ["employeeId"],
    });
    let message = format!(
        "There is no employee with id \"{id}\". Which one did you mean: {}?",
        listed.join(", ")
    );
    InputRequired::new()
        .request(PICK, InputRequest::elicit(message, schema))
        .state(json!({ "candidates": ids }))
        .into()
}
