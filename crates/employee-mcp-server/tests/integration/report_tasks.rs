//! generate-employee-report with the tasks extension: answered directly
//! when the report is ready within `--report-task-grace-ms` (reports read
//! aggregates and take milliseconds), a task only when it is not; and a
//! server seeded with `--demo-employees N` serves that company.

use crate::common;

use common::{MODERN, Server, TempDb, next_id};
use mcpwire_server::protocol::meta;
use serde_json::{Value, json};

/// A report request declaring the tasks extension.
async fn report_with_tasks(server: &Server, report_type: &str) -> Value {
    let body = json!({
        "jsonrpc": "2.0",
        "id": next_id(),
        "method": "tools/call",
        "params": {
            "name": "generate-employee-report",
            "arguments": {"reportType": report_type},
            "_meta": {
                meta::PROTOCOL_VERSION: MODERN,
                meta::CLIENT_CAPABILITIES: {
                    "extensions": {mcpwire_server::tasks::EXTENSION_ID: {}}
                }
            }
        }
    });
    let reply = server
        .post_modern(&body, &[("Mcp-Name", "generate-employee-report")])
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.result().clone()
}

#[tokio::test]
async fn a_quick_report_is_answered_directly_with_the_tasks_extension() {
    let server = Server::start().await;
    for kind in ["headcount", "turnover", "compensation"] {
        let result = report_with_tasks(&server, kind).await;
        assert_eq!(result["resultType"], "complete", "{result}");
        assert!(result.get("taskId").is_none(), "{result}");
        assert_eq!(result["structuredContent"]["reportType"], kind, "{result}");
    }
}

#[tokio::test]
async fn without_a_grace_period_every_report_is_a_task() {
    let server = Server::start_with(&["--report-task-grace-ms", "0"]).await;
    let result = report_with_tasks(&server, "headcount").await;
    assert_eq!(result["resultType"], "task", "{result}");
    assert!(result["taskId"].is_string(), "{result}");
}

#[tokio::test]
async fn a_generated_company_is_served() {
    let server = Server::start_on(TempDb::empty(), &["--demo-employees", "5000"]).await;
    let report = server
        .call_tool(
            "generate-employee-report",
            json!({"reportType": "headcount"}),
        )
        .await;
    let total = report["structuredContent"]["totalActive"].as_u64().unwrap();
    // 5,000 people, about one in seven of them former employees.
    assert!((4_000..5_000).contains(&total), "{total}");
    let team = server
        .call_tool("get-team-members", json!({"teamId": "backend"}))
        .await;
    let members = team["structuredContent"]["members"].as_array().unwrap();
    assert!(
        (3..=15).contains(&members.len()),
        "{} members",
        members.len()
    );
    assert_eq!(members[0]["employeeId"], "AliceJohnson", "manager first");
}
