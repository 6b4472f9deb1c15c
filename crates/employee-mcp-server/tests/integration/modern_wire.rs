//! The stateless 2026-07-28 wire: headers, `_meta`, version negotiation,
//! method routing, pagination, caching hints and `server/discover`.

use crate::common;

use common::{MODERN, Server, modern_body, modern_meta, next_id};
use mcpwire_server::protocol::meta;
use serde_json::{Value, json};

#[track_caller]
fn assert_modern_result(result: &Value) {
    assert_eq!(result["resultType"], "complete", "{result}");
    let info = &result["_meta"][meta::SERVER_INFO];
    assert_eq!(info["name"], "employee-mcp-server", "{result}");
    assert!(info["version"].is_string(), "{result}");
}

#[track_caller]
fn assert_cacheable(result: &Value) {
    let ttl = result["ttlMs"].as_u64();
    assert!(
        ttl.is_some(),
        "ttlMs must be a non-negative integer: {result}"
    );
    assert!(
        matches!(result["cacheScope"].as_str(), Some("public" | "private")),
        "{result}"
    );
}

#[tokio::test]
async fn server_discover() {
    let server = Server::start().await;
    let reply = server.modern("server/discover", json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert!(
        reply
            .header("content-type")
            .is_some_and(|c| c.starts_with("application/json")),
        "{:?}",
        reply.headers
    );
    assert!(
        reply.header("mcp-session-id").is_none(),
        "modern wire mints no session"
    );
    let result = reply.result();
    assert_modern_result(result);
    assert_cacheable(result);
    let versions: Vec<&str> = result["supportedVersions"]
        .as_array()
        .expect("supportedVersions")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(versions.contains(&MODERN), "{versions:?}");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    assert!(result["capabilities"].get("prompts").is_none(), "{result}");
    // Resources: the MCP Apps views only (docs/views.md).
    assert!(result["capabilities"]["resources"].is_object(), "{result}");
    assert!(
        result["instructions"]
            .as_str()
            .is_some_and(|i| i.contains("AliceJohnson"))
    );
}

#[tokio::test]
async fn tools_list_is_complete_cacheable_and_deterministic() {
    let server = Server::start().await;
    let first = server.modern("tools/list", json!({})).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let result = first.result();
    assert_modern_result(result);
    assert_cacheable(result);
    assert_eq!(result["tools"].as_array().unwrap().len(), 8);
    assert!(result.get("nextCursor").is_none(), "single page: {result}");
    let second = server.modern("tools/list", json!({})).await;
    assert_eq!(
        first.result()["tools"],
        second.result()["tools"],
        "same order every time"
    );
}

#[tokio::test]
async fn tools_call_result_shape() {
    let server = Server::start().await;
    let reply = server
        .modern(
            "tools/call",
            json!({"name": "calculate-employee-tenure", "arguments": {"employeeId": "JohnDoe"}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert!(reply.body["id"].is_u64());
    let result = reply.result();
    assert_modern_result(result);
    assert!(
        result.get("ttlMs").is_none(),
        "tool results carry no caching hints"
    );
    assert_eq!(result["structuredContent"]["employeeId"], "JohnDoe");
}

#[tokio::test]
async fn string_ids_are_echoed() {
    let server = Server::start().await;
    let mut body = modern_body(0, "tools/list", json!({}));
    body["id"] = json!("req-abc");
    let reply = server.post_modern(&body, &[]).await;
    assert_eq!(reply.body["id"], "req-abc", "{}", reply.text);
}

#[tokio::test]
async fn missing_meta_fields_are_invalid_params_400() {
    let server = Server::start().await;
    let cases = [
        json!(null),
        json!({}),
        json!({meta::PROTOCOL_VERSION: MODERN}),
        json!({meta::CLIENT_CAPABILITIES: {}}),
    ];
    for meta in cases {
        let mut body = modern_body(next_id(), "tools/list", json!({}));
        if meta.is_null() {
            body["params"].as_object_mut().unwrap().remove("_meta");
        } else {
            body["params"]["_meta"] = meta.clone();
        }
        let reply = server.post_modern(&body, &[]).await;
        reply.assert_error(400, -32602);
        assert_eq!(reply.body["id"], body["id"], "error keeps the id");
    }
    // clientInfo is optional: never required.
    let mut body = modern_body(next_id(), "tools/list", json!({}));
    body["params"]["_meta"][meta::CLIENT_INFO] = json!({"name": "c", "version": "1"});
    assert_eq!(server.post_modern(&body, &[]).await.status, 200);
    server.assert_alive().await;
}

/// A body, headers overriding the compliant ones, and what is wrong.
type MismatchCase<'a> = (&'a Value, Vec<(&'a str, &'a str)>, &'a str);

#[tokio::test]
async fn header_mismatches_are_32020_400() {
    let server = Server::start().await;
    let list = modern_body(next_id(), "tools/list", json!({}));
    let call = modern_body(
        next_id(),
        "tools/call",
        json!({"name": "get-employee-details", "arguments": {"employeeId": "JohnDoe"}}),
    );
    let cases: [MismatchCase; 4] = [
        (
            &list,
            vec![("Mcp-Method", "tools/call")],
            "Mcp-Method differs",
        ),
        (&list, vec![("Mcp-Method", "TOOLS/LIST")], "Mcp-Method case"),
        (
            &call,
            vec![("Mcp-Name", "get-team-members")],
            "Mcp-Name differs",
        ),
        (
            &list,
            vec![("MCP-Protocol-Version", "2025-11-25")],
            "version header != _meta",
        ),
    ];
    for (body, extra, what) in cases {
        let reply = server.post_modern(body, &extra).await;
        assert_eq!(
            (reply.status, reply.error_code()),
            (400, -32020),
            "{what}: {}",
            reply.text
        );
    }
    // Missing headers.
    for (body, missing) in [
        (&list, "Mcp-Method"),
        (&call, "Mcp-Name"),
        (&call, "Mcp-Method"),
    ] {
        let headers: Vec<(String, String)> = common::modern_headers(body)
            .into_iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case(missing))
            .collect();
        let refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let reply = server.post_json(&refs, body).await;
        assert_eq!(
            (reply.status, reply.error_code()),
            (400, -32020),
            "missing {missing}: {}",
            reply.text
        );
    }
    server.assert_alive().await;
}

#[tokio::test]
async fn header_names_are_case_insensitive_and_values_trimmed() {
    let server = Server::start().await;
    let call = modern_body(
        next_id(),
        "tools/call",
        json!({"name": "get-employee-details", "arguments": {"employeeId": "JohnDoe"}}),
    );
    let reply = server
        .post_json(
            &[
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", MODERN),
                ("MCP-METHOD", "tools/call"),
                ("mcp-name", " get-employee-details "),
            ],
            &call,
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.result()["structuredContent"]["employeeId"], "JohnDoe");
}

#[tokio::test]
async fn unsupported_version_is_32022_with_data() {
    let server = Server::start().await;
    let mut body = modern_body(next_id(), "tools/list", json!({}));
    body["params"]["_meta"][meta::PROTOCOL_VERSION] = json!("v999");
    let reply = server
        .post_modern(&body, &[("MCP-Protocol-Version", "v999")])
        .await;
    reply.assert_error(400, -32022);
    let data = &reply.body["error"]["data"];
    assert_eq!(data["requested"], "v999", "{}", reply.text);
    let supported: Vec<&str> = data["supported"]
        .as_array()
        .expect("data.supported")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(supported.contains(&MODERN), "{supported:?}");
    server.assert_alive().await;
}

#[tokio::test]
async fn removed_and_unknown_methods_are_32601_404() {
    let server = Server::start().await;
    for (method, params) in [
        ("ping", json!({})),
        (
            "initialize",
            json!({"protocolVersion": MODERN, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
        ),
        ("logging/setLevel", json!({"level": "info"})),
        ("employees/fire", json!({})),
        ("prompts/list", json!({})),
    ] {
        let reply = server.modern(method, params).await;
        assert_eq!(
            (reply.status, reply.error_code()),
            (404, -32601),
            "{method}: {}",
            reply.text
        );
    }
    server.assert_alive().await;
}

#[tokio::test]
async fn invalid_cursor_is_invalid_params() {
    let server = Server::start().await;
    for cursor in [
        "optional-cursor-value",
        "",
        "eyJvZmZzZXQiOjk5OTl9",
        "../../etc/passwd",
    ] {
        let reply = server.modern("tools/list", json!({"cursor": cursor})).await;
        assert_eq!(
            reply.error_code(),
            -32602,
            "cursor {cursor:?}: {}",
            reply.text
        );
    }
    server.assert_alive().await;
}

#[tokio::test]
async fn malformed_tools_call_params() {
    let server = Server::start().await;
    let reply = server
        .modern(
            "tools/call",
            json!({"name": "get-employee-details", "arguments": [1, 2]}),
        )
        .await;
    assert_eq!(reply.error_code(), -32602, "{}", reply.text);
    let reply = server
        .modern(
            "tools/call",
            json!({"name": "no-such-tool", "arguments": {}}),
        )
        .await;
    reply.assert_error(200, -32602);
    server.assert_alive().await;
}

#[tokio::test]
async fn notification_is_accepted_with_202() {
    let server = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": 1, "_meta": modern_meta()}});
    let reply = server.post_modern(&body, &[]).await;
    assert_eq!(reply.status, 202, "{}", reply.text);
    assert!(reply.text.is_empty(), "{}", reply.text);
    server.assert_alive().await;
}

#[tokio::test]
async fn no_handshake_and_no_state_between_requests() {
    let server = Server::start().await;
    // The very first request can be a tool call, and every request stands alone.
    let a = server
        .call_tool("get-employee-details", json!({"employeeId": "JohnDoe"}))
        .await;
    let b = server
        .call_tool("get-employee-details", json!({"employeeId": "JohnDoe"}))
        .await;
    assert_eq!(a["structuredContent"], b["structuredContent"]);
}

#[tokio::test]
async fn get_and_delete_without_session() {
    let server = Server::start().await;
    for method in ["GET", "DELETE"] {
        let reply = server
            .send(
                method,
                &[
                    ("Accept", "text/event-stream"),
                    ("MCP-Protocol-Version", MODERN),
                ],
                None,
            )
            .await;
        assert!(
            reply.status == 405 || (400..500).contains(&reply.status),
            "{method}: HTTP {} {}",
            reply.status,
            reply.text
        );
    }
    server.assert_alive().await;
}

#[tokio::test]
async fn concurrent_requests() {
    let server = Server::start().await;
    let mut tasks = Vec::new();
    // Stay under the per-client concurrency cap (8) the server may enforce.
    for i in 0..6 {
        let addr = server.addr.clone();
        tasks.push(tokio::spawn(async move {
            let id = ["AliceJohnson", "JohnDoe"][i % 2];
            let body = modern_body(
                next_id(),
                "tools/call",
                json!({"name": "calculate-employee-tenure", "arguments": {"employeeId": id}}),
            );
            let headers = common::modern_headers(&body);
            let mut raw: Vec<(&str, &[u8])> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_bytes()))
                .collect();
            raw.push(("Content-Type", b"application/json"));
            let text = body.to_string();
            let reply = common::http_request(&addr, "POST", &raw, Some(text.as_bytes()))
                .await
                .expect("HTTP exchange");
            assert_eq!(reply.status, 200, "{}", reply.text);
            assert_eq!(reply.body["id"], body["id"]);
            assert_eq!(reply.body["result"]["structuredContent"]["employeeId"], id);
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
}

/// An unsupported `MCP-Protocol-Version` is -32022 whatever else the
/// request lacks (it was -32020 "Mcp-Method is required").
#[tokio::test]
async fn unsupported_version_header_alone_is_32022() {
    let server = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "id": next_id(), "method": "tools/list"});
    let reply = server
        .post_json(
            &[
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "1999-01-01"),
            ],
            &body,
        )
        .await;
    reply.assert_error(400, -32022);
    assert_eq!(reply.body["error"]["data"]["requested"], "1999-01-01");
}
