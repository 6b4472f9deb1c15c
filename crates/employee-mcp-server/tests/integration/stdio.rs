//! `--stdio`: one JSON-RPC message per line, only MCP on stdout, both eras,
//! clean exit when stdin closes.

use crate::common;

use common::{MODERN, StdioServer, TOOL_NAMES, modern_body, next_id, text_json};
use mcpwire_server::protocol::meta;
use serde_json::{Value, json};

fn initialize(id: u64, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
           "params": {"protocolVersion": version, "capabilities": {},
                      "clientInfo": {"name": "e2e-stdio", "version": "1.0.0"}}})
}

#[tokio::test]
async fn legacy_session_initialize_list_call() {
    let mut s = StdioServer::start();
    let init = s.request(initialize(1, "2025-06-18")).await;
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "employee-mcp-server");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    assert!(init["result"].get("resultType").is_none(), "{init}");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;

    let list = s
        .request(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOL_NAMES);
    assert!(list["result"].get("resultType").is_none());

    let call = s
        .request(
            json!({"jsonrpc": "2.0", "id": "call-3", "method": "tools/call",
                        "params": {"name": "get-employee-details",
                                   "arguments": {"employeeId": "AliceJohnson"}}}),
        )
        .await;
    let result = &call["result"];
    assert_eq!(text_json(result)["employeeId"], "AliceJohnson");
    assert_eq!(result["structuredContent"]["employeeId"], "AliceJohnson");
    assert!(result.get("resultType").is_none());

    let ping = s
        .request(json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}))
        .await;
    assert_eq!(ping["result"], json!({}));

    let (rest, status) = s.close().await;
    assert!(rest.is_empty(), "unexpected extra output: {rest:?}");
    assert!(status.success(), "exit status {status}");
}

#[tokio::test]
async fn legacy_2024_11_05_shapes() {
    let mut s = StdioServer::start();
    let init = s.request(initialize(1, "2024-11-05")).await;
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let list = s
        .request(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    for tool in list["result"]["tools"].as_array().unwrap() {
        for k in ["title", "annotations", "outputSchema"] {
            assert!(tool.get(k).is_none(), "2024-11-05 tool has {k}: {tool}");
        }
    }
    let call = s
        .request(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                        "params": {"name": "calculate-employee-tenure",
                                   "arguments": {"employeeId": "JohnDoe"}}}))
        .await;
    assert!(call["result"].get("structuredContent").is_none(), "{call}");
    assert_eq!(text_json(&call["result"])["employeeId"], "JohnDoe");
    let (_, status) = s.close().await;
    assert!(status.success(), "exit status {status}");
}

#[tokio::test]
async fn modern_requests_without_initialize() {
    let mut s = StdioServer::start();
    // Dual-era clients probe with server/discover first.
    let discover = s
        .request(modern_body(next_id(), "server/discover", json!({})))
        .await;
    let result = &discover["result"];
    assert_eq!(result["resultType"], "complete", "{discover}");
    assert!(
        result["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!(MODERN))
    );
    assert!(result["ttlMs"].is_u64() && result["cacheScope"].is_string());

    let call = s
        .request(modern_body(
            next_id(),
            "tools/call",
            json!({"name": "get-team-members", "arguments": {"teamId": "backend"}}),
        ))
        .await;
    let result = &call["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["_meta"][meta::SERVER_INFO]["name"],
        "employee-mcp-server"
    );
    assert_eq!(text_json(result), result["structuredContent"]);
    assert_eq!(
        result["structuredContent"]["members"][0]["employeeId"],
        "AliceJohnson"
    );

    // Modern errors on stdio: no headers, same codes.
    let mut no_meta = modern_body(next_id(), "tools/list", json!({}));
    no_meta["params"].as_object_mut().unwrap().remove("_meta");
    let _ = &no_meta;
    let mut bad_version = modern_body(next_id(), "tools/list", json!({}));
    bad_version["params"]["_meta"][meta::PROTOCOL_VERSION] = json!("v999");
    let reply = s.request(bad_version).await;
    assert_eq!(reply["error"]["code"], -32022, "{reply}");
    assert_eq!(reply["error"]["data"]["requested"], "v999");
    let reply = s.request(modern_body(next_id(), "ping", json!({}))).await;
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    let reply = s
        .request(modern_body(
            next_id(),
            "tools/call",
            json!({"name": "nope", "arguments": {}}),
        ))
        .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let reply = s
        .request(modern_body(
            next_id(),
            "tools/call",
            json!({"name": "check-leave-balance",
                   "arguments": {"employeeId": "JohnDoe", "leaveType": "vacation"}}),
        ))
        .await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");

    let (rest, status) = s.close().await;
    assert!(rest.is_empty(), "{rest:?}");
    assert!(status.success(), "exit status {status}");
}

#[tokio::test]
async fn both_eras_on_one_process() {
    let mut s = StdioServer::start();
    s.request(initialize(1, "2025-11-25")).await;
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let modern = s
        .request(modern_body(
            next_id(),
            "tools/call",
            json!({"name": "calculate-employee-tenure", "arguments": {"employeeId": "JohnDoe"}}),
        ))
        .await;
    assert_eq!(modern["result"]["resultType"], "complete", "{modern}");
    let legacy = s
        .request(json!({"jsonrpc": "2.0", "id": "L", "method": "tools/call",
                        "params": {"name": "calculate-employee-tenure",
                                   "arguments": {"employeeId": "JohnDoe"}}}))
        .await;
    assert!(legacy["result"].get("resultType").is_none(), "{legacy}");
    assert_eq!(
        legacy["result"]["structuredContent"],
        modern["result"]["structuredContent"]
    );
    let (_, status) = s.close().await;
    assert!(status.success());
}

#[tokio::test]
async fn malformed_lines_get_errors_and_the_process_keeps_going() {
    let mut s = StdioServer::start();
    s.send_line("{\"jsonrpc\":\"2.0\",").await;
    let err = s.recv().await;
    assert_eq!(err["error"]["code"], -32700, "{err}");
    assert!(err.get("id").is_none_or(Value::is_null), "{err}");

    s.send_line("this is not json").await;
    assert_eq!(s.recv().await["error"]["code"], -32700);

    s.send_line("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]")
        .await;
    assert_eq!(s.recv().await["error"]["code"], -32600);

    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    s.send_line(&deep).await;
    let err = s.recv().await;
    assert!(err.get("error").is_some(), "{err}");

    // Still serving.
    let call = s
        .request(modern_body(
            next_id(),
            "tools/call",
            json!({"name": "get-employee-details", "arguments": {"employeeId": "JohnDoe"}}),
        ))
        .await;
    assert_eq!(call["result"]["structuredContent"]["employeeId"], "JohnDoe");
    let (rest, status) = s.close().await;
    assert!(rest.is_empty(), "{rest:?}");
    assert!(status.success(), "exit status {status}");
}

#[tokio::test]
async fn notifications_and_blank_lines_produce_no_output() {
    let mut s = StdioServer::start();
    s.send_line("").await;
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 99}}),
    )
    .await;
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let ping_id = next_id();
    let reply = s
        .request(modern_body(ping_id, "tools/list", json!({})))
        .await;
    assert_eq!(reply["id"], ping_id);
    let (rest, status) = s.close().await;
    assert!(rest.is_empty(), "responses to notifications: {rest:?}");
    assert!(status.success());
}

#[tokio::test]
async fn many_pipelined_requests_all_answered() {
    let mut s = StdioServer::start();
    // Stay under the per-client concurrency cap (8) the server may enforce.
    let ids: Vec<u64> = (0..6).map(|_| next_id()).collect();
    for (i, id) in ids.iter().enumerate() {
        let employee = ["AliceJohnson", "JohnDoe"][i % 2];
        s.send(&modern_body(
            *id,
            "tools/call",
            json!({"name": "calculate-employee-tenure", "arguments": {"employeeId": employee}}),
        ))
        .await;
    }
    for (i, id) in ids.iter().enumerate() {
        let reply = s.recv_id(&json!(id)).await;
        let employee = ["AliceJohnson", "JohnDoe"][i % 2];
        assert_eq!(reply["result"]["structuredContent"]["employeeId"], employee);
    }
    let (rest, status) = s.close().await;
    assert!(rest.is_empty(), "{rest:?}");
    assert!(status.success());
}

#[tokio::test]
async fn closing_stdin_with_requests_in_flight_still_answers_them() {
    let mut s = StdioServer::start();
    let id = next_id();
    s.send(&modern_body(
        id,
        "tools/call",
        json!({"name": "generate-employee-report", "arguments": {"reportType": "compensation"}}),
    ))
    .await;
    let (rest, status) = s.close().await;
    assert!(status.success(), "exit status {status}");
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["id"], id);
    assert_eq!(
        rest[0]["result"]["structuredContent"]["reportType"],
        "compensation"
    );
}

#[tokio::test]
async fn immediate_eof_exits_zero() {
    let s = StdioServer::start();
    let (rest, status) = s.close().await;
    assert!(rest.is_empty(), "{rest:?}");
    assert!(status.success(), "exit status {status}");
}

// ---- hardening: the stdio server never drops a request ----

/// One line of invalid UTF-8 gets one parse error; reading goes on.
#[tokio::test]
async fn invalid_utf8_line_is_answered_and_reading_goes_on() {
    let mut s = StdioServer::start();
    s.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}\n")
        .await;
    let err = s.recv().await;
    assert_eq!(err["error"]["code"], -32700, "{err}");
    let id = next_id();
    let reply = s.request(modern_body(id, "tools/list", json!({}))).await;
    assert!(reply["result"]["tools"].is_array(), "{reply}");
    let (_, status) = s.close().await;
    assert!(status.success());
}

/// A line over the size limit gets one error, without being buffered;
/// the next line is served.
#[tokio::test]
async fn oversize_line_is_answered_and_reading_goes_on() {
    let mut s = StdioServer::start_with(&["--max-body-bytes", "2048"]);
    let mut big = vec![b'x'; 1 << 20];
    big.push(b'\n');
    s.send_raw(&big).await;
    let err = s.recv().await;
    assert_eq!(err["error"]["code"], -32600, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("2048"),
        "{err}"
    );
    let id = next_id();
    let reply = s.request(modern_body(id, "tools/list", json!({}))).await;
    assert!(reply["result"]["tools"].is_array(), "{reply}");
    let (_, status) = s.close().await;
    assert!(status.success());
}

/// `initialize`, `notifications/initialized` and `tools/list` written in
/// one go: `tools/list` always sees the session (it was routed before the
/// session existed in 4-16 of 30 runs).
#[tokio::test]
async fn pipelined_lifecycle_is_served_in_order() {
    for run in 0..50 {
        let mut s = StdioServer::start();
        let burst = format!(
            "{}\n{}\n{}\n",
            initialize(1, "2025-06-18"),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        );
        s.send_raw(burst.as_bytes()).await;
        let list = s.recv_id(&json!(2)).await;
        assert_eq!(
            list["result"]["tools"].as_array().map(Vec::len),
            Some(TOOL_NAMES.len()),
            "run {run}: {list}"
        );
        let init = s.recv_id(&json!(1)).await;
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "run {run}");
        let (_, status) = s.close().await;
        assert!(status.success(), "run {run}");
    }
}

/// The reader went away (stdout closed) while stdin stays open: the server
/// stops instead of running on.
#[tokio::test]
async fn closed_stdout_stops_the_server() {
    use std::process::Stdio;
    use tokio::io::AsyncWriteExt;
    let db = common::TempDb::seeded();
    let mut child = tokio::process::Command::new(common::BIN)
        .args(["--stdio", "--database", &db.url()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    drop(child.stdout.take());
    // Something to answer, so the server writes and finds stdout closed.
    for id in 0..3 {
        let line = format!("{}\n", modern_body(id, "tools/list", json!({})));
        if stdin.write_all(line.as_bytes()).await.is_err() {
            break;
        }
        let _ = stdin.flush().await;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait())
        .await
        .expect("server still running 10 s after stdout closed")
        .expect("wait");
    drop(stdin);
    assert!(status.code().is_some(), "killed by a signal: {status}");
}
