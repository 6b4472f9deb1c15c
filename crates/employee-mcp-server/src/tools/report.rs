//! generate-employee-report

use std::time::Duration;

use employee_directory::{Directory, Report, ReportType};
use mcpwire_server::access::Approval;
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{SharedOutput, TaskSupport, Tool, ToolResult};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::scopes;

/// Arguments of generate-employee-report.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    /// Which report: headcount, turnover or compensation.
    pub report_type: ReportType,
}

/// The compensation report reveals salary statistics: it needs the
/// compensation scope on top of the reports scope.
const COMPENSATION_REPORT: &[&str] = &[scopes::REPORTS, scopes::COMPENSATION];

/// Default of how long a task call runs before it becomes a task: half the
/// poll interval clients are told (500 ms), so a report that is ready
/// answers at once, and a slow one costs the client at most this before
/// its first poll.
pub const TASK_GRACE: Duration = Duration::from_millis(250);

pub fn tool(directory: Directory, task_grace: Duration) -> Tool {
    // The report is a tagged union; an explicit object root keeps the
    // output schema usable by 2025 clients, which require one.
    let mut output = schemars::schema_for!(Report).to_value();
    if let Some(o) = output.as_object_mut() {
        o.remove("title");
        o.insert("type".into(), "object".into());
    }
    let builder = Tool::builder("generate-employee-report")
        .title("Workforce report")
        .description(
            concat!(
                "Generate organisation-wide employee reports: headcount (by department, location, employment and office type), turnover (trailing twelve months, by department) and compensation analysis (salary statistics and band positions by department and level).",
                " The compensation report needs compensation access as well as report access.",
            )
            .to_owned()
                + super::DATA_NOT_INSTRUCTIONS,
        )
        .annotations(ToolAnnotations::read_only())
        // MCP Apps hosts render this view; the result itself is unchanged.
        .view(crate::views::REPORT)
        // Policy: hr:reports grants the tool; reportType "compensation"
        // needs hr:compensation as well (see `COMPENSATION_REPORT`).
        .required_scopes([scopes::REPORTS])
        .argument_scopes(
            "reportType",
            serde_json::json!(ReportType::Compensation.as_str()),
            COMPENSATION_REPORT.iter().copied(),
        )
        // Approval: none for headcount and turnover (aggregates of no one's
        // pay); confirm for the compensation report, which holds salary
        // statistics by department and level (a small department's figures
        // come close to single salaries), as get-compensation-info does.
        .argument_approval(
            "reportType",
            serde_json::json!(ReportType::Compensation.as_str()),
            Approval::Confirm,
        )
        .approval_summary(|_ctx, arguments| async move { summary(&arguments) })
        // Report's own schema with an object root: every report holds.
        .output_schema_of_type(output)
        // A client that speaks the tasks extension gets a task only if the
        // report is still running after the grace period (reports read
        // aggregates and take milliseconds; see docs/protocol.md, "Extensions").
        .task_support(TaskSupport::Optional);
    // Zero grace: a task from the start, as before the grace existed (a
    // zero-length race against a millisecond report would be a coin toss).
    let builder = if task_grace.is_zero() {
        builder
    } else {
        builder.task_after(task_grace)
    };
    builder.state(directory).handler(report)
}

/// What the approval question says: for the compensation report, what it
/// reveals; `None` (the arguments are listed) for the others, which are
/// asked about only if an operator requires approval for every report.
pub(super) fn summary(arguments: &Map<String, Value>) -> Option<String> {
    let kind: ReportType = serde_json::from_value(arguments.get("reportType")?.clone()).ok()?;
    (kind == ReportType::Compensation).then(|| {
        "Generate the compensation report: salary statistics (min, median, max, average) and band positions of the whole organisation, by department and level".to_owned()
    })
}

async fn report(directory: Directory, input: Input) -> ToolResult<SharedOutput<Report>> {
    let answer = directory
        .report_cached(input.report_type)
        .await
        .map_err(super::unavailable)?;
    super::shared(&answer, SharedOutput::new)
}
