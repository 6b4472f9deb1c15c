//! MCP Apps views of the HR tools: self-contained HTML pages (in `views/`)
//! that hosts rendering the `io.modelcontextprotocol/ui` extension show
//! next to a tool's result. Each page is assembled at compile time from the
//! shared stylesheet and bridge script plus its own markup, style and
//! script, so it loads nothing from any origin.

use mcpwire_server::View;

/// The org chart: a team's reporting lines, or one person's manager chain
/// and direct reports (`get-team-members`, `get-employee-details`).
pub const ORG_CHART: &str = "ui://employee-directory/org-chart";
/// The sortable roster (`list-department-employees`, `search-employees-by-skill`).
pub const ROSTER: &str = "ui://employee-directory/roster";
/// The report charts (`generate-employee-report`).
pub const REPORT: &str = "ui://employee-directory/report";
/// Leave balance bars (`check-leave-balance`).
pub const LEAVE_BALANCE: &str = "ui://employee-directory/leave-balance";
/// The tenure timeline, with the career history on demand
/// (`calculate-employee-tenure`).
pub const TENURE: &str = "ui://employee-directory/tenure";

/// One page (`ui://employee-directory/NAME`): head (with a CSP that
/// forbids every outside origin, and the page's URI), the shared and own
/// styles, the body markup, then the bridge, the shared
/// scripts it names (e.g. `"timeline"`) and its own script.
macro_rules! page {
    ($name:literal $(, $shared:literal)*) => {
        concat!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; ",
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">",
            // The page's own URI, which its calls name in `_meta` (audit).
            "<meta name=\"dev.mcpwire/view\" content=\"ui://employee-directory/", $name, "\">",
            "<style>\n",
            include_str!("../views/common.css"),
            include_str!(concat!("../views/", $name, ".css")),
            "</style></head><body>\n",
            include_str!(concat!("../views/", $name, ".html")),
            "<script>\n",
            include_str!("../views/bridge.js"),
            $(include_str!(concat!("../views/", $shared, ".js")),)*
            include_str!(concat!("../views/", $name, ".js")),
            "</script></body></html>\n"
        )
    };
}

/// Every view the server registers.
pub fn all() -> Vec<View> {
    vec![
        View::html(ORG_CHART, "org-chart", page!("org-chart", "timeline"))
            .title("Org chart")
            .description("A team's reporting lines, or a person's manager chain, career timeline and direct reports; click a person to open them."),
        View::html(ROSTER, "roster", page!("roster"))
            .title("Roster")
            .description("A sortable, filterable table of a department roster or a skill search, with more rows on demand."),
        View::html(REPORT, "report", page!("report"))
            .title("Report charts")
            .description("Headcount, turnover and compensation as bar charts, each with its numbers in a table."),
        View::html(LEAVE_BALANCE, "leave-balance", page!("leave-balance"))
            .title("Leave balance")
            .description("Used, pending and remaining leave days as bars, with the numbers in a table; other leave types on demand."),
        View::html(TENURE, "tenure", page!("tenure", "timeline"))
            .title("Tenure timeline")
            .description("Time at the company on a timeline, with the career history on demand."),
    ]
}
