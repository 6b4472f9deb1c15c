//! generate-employee-report

use employee_directory::{Directory, Report, ReportType};
use mcp_server::protocol::model::ToolAnnotations;
use mcp_server::{RequestContext, Tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of generate-employee-report.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    /// Which report: headcount, turnover or compensation.
    pub report_type: ReportType,
}

pub fn tool(directory: Directory) -> Tool {
    // The report is a tagged union; an explicit object root keeps the
    // output schema usable by 2025 clients, which require one.
    let mut output = schemars::schema_for!(Report).to_value();
    if let Some(o) = output.as_object_mut() {
        o.remove("title");
        o.insert("type".into(), "object".into());
    }
    Tool::builder("generate-employee-report")
        .title("Workforce report")
        .description(
            "Generate organisation-wide employee reports: headcount (by department, location, employment and office type), turnover (trailing twelve months, by department) and compensation analysis (salary statistics and band positions by department and level).",
        )
        .annotations(ToolAnnotations::read_only())
        .output_schema(output)
        .handler(move |_ctx: RequestContext, input: Input| {
            let directory = directory.clone();
            async move {
                directory
                    .report(input.report_type)
                    .await
                    .map_err(super::unavailable)
            }
        })
}
