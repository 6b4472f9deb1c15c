//! The article's three curl requests, sent verbatim: only
//! `Content-Type: application/json`, no `Accept` beyond curl's default, no
//! session, no protocol-version header.

use crate::common;

use common::{Server, TOOL_NAMES, text_json};
use serde_json::{Value, json};

const CURL: &[(&str, &str)] = &[("Content-Type", "application/json"), ("Accept", "*/*")];

const INITIALIZE: &str = r#"{
"jsonrpc": "2.0",
"id": 1,
"method": "initialize",
"params": {
"clientInfo": {
"name": "my-client",
"version": "1.0.0"
},
"capabilities": {}
}
}"#;

const TOOLS_LIST_WITH_CURSOR: &str = r#"{
"jsonrpc": "2.0",
"id": 1,
"method": "tools/list",
"params": {
"cursor": "optional-cursor-value"
}
}"#;

const TOOLS_CALL: &str = r#"{
"jsonrpc": "2.0",
"id": 2,
"method": "tools/call",
"params": {
"name": "get-employee-details",
"arguments": {
"employeeId": "AliceJohnson"
}
}
}"#;

#[tokio::test]
async fn initialize_answers_2024_11_05_with_tools_capability() {
    let server = Server::start().await;
    let reply = server.post_raw(CURL, INITIALIZE).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["jsonrpc"], "2.0");
    assert_eq!(reply.body["id"], 1);
    let result = reply.result();
    assert_eq!(result["protocolVersion"], "2024-11-05");
    assert_eq!(result["serverInfo"]["name"], "employee-mcp-server");
    assert!(result["serverInfo"]["version"].is_string(), "{result}");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    // A legacy result: no modern-only members.
    assert!(result.get("resultType").is_none(), "{result}");
    // The article's response claims resources/prompts; this server has no
    // prompts, and its only resources are the MCP Apps views (docs/views.md).
    assert!(result["capabilities"]["resources"].is_object(), "{result}");
    assert!(result["capabilities"].get("prompts").is_none(), "{result}");
}

#[tokio::test]
async fn tools_list_with_the_placeholder_cursor_is_invalid_params() {
    let server = Server::start().await;
    let reply = server.post_raw(CURL, TOOLS_LIST_WITH_CURSOR).await;
    assert_eq!(reply.body["id"], 1, "{}", reply.text);
    assert_eq!(reply.error_code(), -32602, "{}", reply.text);
    assert!(
        reply.error_message().contains("cursor"),
        "message should say what is wrong: {}",
        reply.text
    );
}

#[tokio::test]
async fn tools_list_without_cursor_has_the_articles_eight_tools() {
    let server = Server::start().await;
    let without_cursor = TOOLS_LIST_WITH_CURSOR.replace(r#""cursor": "optional-cursor-value""#, "");
    let reply = server.post_raw(CURL, without_cursor).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let tools = reply.result()["tools"].as_array().expect("tools array");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOL_NAMES);
    assert!(reply.result().get("nextCursor").is_none(), "{}", reply.text);

    // The article's required inputs, tool by tool.
    let expected: [(&str, &[&str]); 8] = [
        ("get-employee-details", &["employeeId"]),
        ("list-department-employees", &["departmentId"]),
        ("calculate-employee-tenure", &["employeeId"]),
        ("get-team-members", &["teamId"]),
        ("search-employees-by-skill", &["skill"]),
        ("get-compensation-info", &["role", "level"]),
        ("check-leave-balance", &["employeeId", "leaveType"]),
        ("generate-employee-report", &["reportType"]),
    ];
    for (tool, (name, required)) in tools.iter().zip(expected) {
        assert_eq!(tool["name"], name);
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}: {schema}");
        let mut got: Vec<&str> = schema["required"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no required list"))
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        got.sort_unstable();
        let mut want = required.to_vec();
        want.sort_unstable();
        assert_eq!(got, want, "{name}: required inputs");
        for field in required {
            assert!(
                schema["properties"][field].is_object(),
                "{name}: property {field} missing in {schema}"
            );
        }
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{name}: no description"
        );
    }
}

#[tokio::test]
async fn tools_call_get_employee_details_returns_json_text() {
    let server = Server::start().await;
    let reply = server.post_raw(CURL, TOOLS_CALL).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["id"], 2);
    let result = reply.result();
    assert_ne!(result["isError"], true, "{result}");
    assert_eq!(result["content"][0]["type"], "text");
    let details: Value = text_json(result);
    assert_eq!(details["employeeId"], "AliceJohnson");
    assert_eq!(details["name"], "Alice Johnson");
    assert_eq!(details["department"], "Engineering");
    // The header-less request is served as 2025-03-26: no structuredContent,
    // no resultType.
    assert!(result.get("structuredContent").is_none(), "{result}");
    assert!(result.get("resultType").is_none(), "{result}");
}

#[tokio::test]
async fn the_three_requests_in_sequence_on_one_server() {
    let server = Server::start().await;
    assert_eq!(
        server.post_raw(CURL, INITIALIZE).await.result()["protocolVersion"],
        "2024-11-05"
    );
    server
        .post_raw(CURL, TOOLS_LIST_WITH_CURSOR)
        .await
        .assert_error(200, -32602);
    let call = server.post_raw(CURL, TOOLS_CALL).await;
    assert_eq!(text_json(call.result())["employeeId"], "AliceJohnson");
    // John Doe, the article's sample, reports to Alice.
    let john = server
        .post_json(
            CURL,
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "get-employee-details", "arguments": {"employeeId": "JohnDoe"}}}),
        )
        .await;
    let john = text_json(john.result());
    assert_eq!(john["name"], "John Doe");
    assert_eq!(john["managerId"], "AliceJohnson");
    assert_eq!(john["team"], "Backend");
}

#[tokio::test]
async fn first_start_creates_and_seeds_the_database() {
    let db = common::TempDb::empty();
    assert!(!db.path.exists());
    let server = Server::start_on(db, &[]).await;
    let call = server.post_raw(CURL, TOOLS_CALL).await;
    assert_eq!(text_json(call.result())["employeeId"], "AliceJohnson");
    let report = server
        .call_tool(
            "generate-employee-report",
            json!({"reportType": "headcount"}),
        )
        .await;
    let total = report["structuredContent"]["totalActive"].as_u64().unwrap();
    assert!(total > 1000, "seeded company too small: {total}");
}
