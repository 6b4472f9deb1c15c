//! The legacy (initialize-based) wire, per revision: 2025-11-25, 2025-06-18,
//! 2025-03-26 and 2024-11-05, plus the session lifecycle and the header-less
//! (article-style) fallback.

mod common;

use common::{LEGACY_VERSIONS, Server, TOOL_NAMES, next_id, text_json, tool_error_text};
use serde_json::{Value, json};

/// No modern-only member anywhere at the top of a legacy result.
#[track_caller]
fn assert_legacy_result(result: &Value) {
    for key in ["resultType", "ttlMs", "cacheScope"] {
        assert!(
            result.get(key).is_none(),
            "legacy result has {key}: {result}"
        );
    }
}

#[tokio::test]
async fn initialize_echoes_every_supported_legacy_version() {
    let server = Server::start().await;
    for version in LEGACY_VERSIONS {
        let s = server.legacy(Some(version)).await;
        assert_eq!(s.version, version);
        assert_legacy_result(&s.init);
        assert_eq!(s.init["serverInfo"]["name"], "employee-mcp-server");
        assert!(s.init["capabilities"]["tools"].is_object(), "{}", s.init);
        assert!(!s.session_id.is_empty());
        assert!(
            s.session_id.bytes().all(|b| (0x21..=0x7e).contains(&b)),
            "session id must be visible ASCII: {:?}",
            s.session_id
        );
        // serverInfo.title exists only from 2025-06-18.
        let has_title = s.init["serverInfo"].get("title").is_some();
        assert_eq!(
            has_title,
            version >= "2025-06-18",
            "{version}: serverInfo {}",
            s.init["serverInfo"]
        );
    }
}

#[tokio::test]
async fn initialize_version_negotiation() {
    let server = Server::start().await;
    assert_eq!(server.legacy(None).await.version, "2024-11-05");
    assert_eq!(
        server.legacy(Some("1999-01-01")).await.version,
        "2025-11-25"
    );
    // A legacy handshake never negotiates the modern revision.
    assert_eq!(
        server.legacy(Some("2026-07-28")).await.version,
        "2025-11-25"
    );
}

#[tokio::test]
async fn session_ids_are_unique() {
    let server = Server::start().await;
    let a = server.legacy(Some("2025-06-18")).await;
    let b = server.legacy(Some("2025-06-18")).await;
    assert_ne!(a.session_id, b.session_id);
}

#[tokio::test]
async fn ping_answers_empty_object() {
    let server = Server::start().await;
    for version in LEGACY_VERSIONS {
        let s = server.legacy(Some(version)).await;
        let reply = s.request("ping", Value::Null).await;
        assert_eq!(reply.status, 200, "{version}: {}", reply.text);
        assert_eq!(reply.result(), &json!({}), "{version}");
    }
}

#[tokio::test]
async fn tools_list_shape_per_revision() {
    let server = Server::start().await;
    for version in LEGACY_VERSIONS {
        let s = server.legacy(Some(version)).await;
        let reply = s.request("tools/list", json!({})).await;
        assert_eq!(reply.status, 200, "{version}: {}", reply.text);
        let result = reply.result();
        assert_legacy_result(result);
        let tools = result["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, TOOL_NAMES, "{version}");
        for tool in tools {
            let name = tool["name"].as_str().unwrap();
            assert!(tool["description"].is_string(), "{version} {name}");
            assert_eq!(tool["inputSchema"]["type"], "object", "{version} {name}");
            let has = |k: &str| tool.get(k).is_some();
            match version {
                "2024-11-05" => {
                    for k in [
                        "title",
                        "annotations",
                        "outputSchema",
                        "_meta",
                        "icons",
                        "execution",
                    ] {
                        assert!(!has(k), "{version} {name} has {k}");
                    }
                }
                "2025-03-26" => {
                    assert!(has("annotations"), "{version} {name}");
                    for k in ["title", "outputSchema", "_meta", "icons", "execution"] {
                        assert!(!has(k), "{version} {name} has {k}");
                    }
                }
                _ => {
                    assert!(has("title") && has("annotations"), "{version} {name}");
                    // 2025 clients need an object-rooted outputSchema.
                    assert_eq!(tool["outputSchema"]["type"], "object", "{version} {name}");
                }
            }
        }
    }
}

#[tokio::test]
async fn tools_call_shape_per_revision() {
    let server = Server::start().await;
    for version in LEGACY_VERSIONS {
        let s = server.legacy(Some(version)).await;
        let result = s
            .call_tool("get-employee-details", json!({"employeeId": "JohnDoe"}))
            .await;
        assert_legacy_result(&result);
        assert_ne!(result["isError"], true, "{version}: {result}");
        assert!(
            result.get("_meta").is_none() || version >= "2025-06-18",
            "{version}: {result}"
        );
        let text = text_json(&result);
        assert_eq!(text["employeeId"], "JohnDoe", "{version}");
        if version >= "2025-06-18" {
            assert_eq!(result["structuredContent"], text, "{version}");
        } else {
            assert!(
                result.get("structuredContent").is_none(),
                "{version}: {result}"
            );
        }
        // Every tool works on every revision, including the union-typed report.
        let report = s
            .call_tool(
                "generate-employee-report",
                json!({"reportType": "turnover"}),
            )
            .await;
        assert_ne!(report["isError"], true, "{version}: {report}");
        assert_eq!(text_json(&report)["reportType"], "turnover");
    }
}

#[tokio::test]
async fn tool_errors_per_revision() {
    let server = Server::start().await;
    for version in LEGACY_VERSIONS {
        let s = server.legacy(Some(version)).await;
        let result = s
            .call_tool("get-team-members", json!({"teamId": "nope"}))
            .await;
        assert_legacy_result(&result);
        assert!(tool_error_text(&result).contains("backend"), "{version}");
        let result = s
            .call_tool(
                "get-team-members",
                json!({"teamId": "backend", "extra": true}),
            )
            .await;
        assert!(tool_error_text(&result).contains("extra"), "{version}");
        let reply = s
            .request(
                "tools/call",
                json!({"name": "no-such-tool", "arguments": {}}),
            )
            .await;
        assert_eq!(reply.error_code(), -32602, "{version}: {}", reply.text);
    }
}

#[tokio::test]
async fn invalid_cursor_and_unknown_methods() {
    let server = Server::start().await;
    for version in LEGACY_VERSIONS {
        let s = server.legacy(Some(version)).await;
        let reply = s
            .request("tools/list", json!({"cursor": "optional-cursor-value"}))
            .await;
        assert_eq!(reply.error_code(), -32602, "{version}: {}", reply.text);
        for method in [
            "server/discover",
            "resources/list",
            "prompts/list",
            "employees/fire",
        ] {
            let reply = s.request(method, json!({})).await;
            assert_eq!(
                reply.error_code(),
                -32601,
                "{version} {method}: {}",
                reply.text
            );
            // Legacy never sees the modern-only codes.
            assert!(reply.error_code() > -32020 || reply.error_code() < -32099);
        }
        // Still serving this session afterwards.
        assert_eq!(s.request("ping", Value::Null).await.result(), &json!({}));
    }
}

#[tokio::test]
async fn delete_ends_the_session() {
    let server = Server::start().await;
    for version in LEGACY_VERSIONS {
        let s = server.legacy(Some(version)).await;
        assert_eq!(s.request("ping", Value::Null).await.status, 200);
        let deleted = s.delete().await;
        assert!(
            (200..300).contains(&deleted.status),
            "{version}: DELETE got HTTP {} {}",
            deleted.status,
            deleted.text
        );
        let after = s.request("ping", Value::Null).await;
        assert_eq!(after.status, 404, "{version}: {}", after.text);
        let after = s.request("tools/list", json!({})).await;
        assert_eq!(after.status, 404, "{version}: {}", after.text);
        // A second DELETE does not resurrect it.
        let again = s.delete().await;
        assert!(again.status == 404 || (200..300).contains(&again.status));
        assert_eq!(s.request("ping", Value::Null).await.status, 404);
    }
    // Other sessions and new ones still work.
    let fresh = server.legacy(Some("2025-11-25")).await;
    assert_eq!(fresh.request("ping", Value::Null).await.status, 200);
    server.assert_alive().await;
}

#[tokio::test]
async fn deleting_one_session_leaves_others() {
    let server = Server::start().await;
    let a = server.legacy(Some("2025-06-18")).await;
    let b = server.legacy(Some("2025-06-18")).await;
    assert!((200..300).contains(&a.delete().await.status));
    assert_eq!(a.request("ping", Value::Null).await.status, 404);
    assert_eq!(b.request("ping", Value::Null).await.status, 200);
}

#[tokio::test]
async fn unknown_session_id_is_404() {
    let server = Server::start().await;
    let reply = server
        .post_json(
            &[
                ("Mcp-Session-Id", "no-such-session"),
                ("MCP-Protocol-Version", "2025-06-18"),
            ],
            &json!({"jsonrpc": "2.0", "id": next_id(), "method": "tools/list"}),
        )
        .await;
    assert_eq!(reply.status, 404, "{}", reply.text);
    server.assert_alive().await;
}

#[tokio::test]
async fn headerless_requests_are_served_as_2025_03_26() {
    let server = Server::start().await;
    let headers = [("Content-Type", "application/json")];
    let ping = server
        .post_json(
            &headers,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        )
        .await;
    assert_eq!(ping.result(), &json!({}));
    let list = server
        .post_json(
            &headers,
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .await;
    let tools = list.result()["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 8);
    assert_legacy_result(list.result());
    // 2025-03-26 shape: annotations, no title or outputSchema.
    assert!(tools[0].get("annotations").is_some(), "{}", tools[0]);
    assert!(tools[0].get("outputSchema").is_none(), "{}", tools[0]);
    let call = server
        .post_json(
            &headers,
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "check-leave-balance",
                               "arguments": {"employeeId": "JohnDoe", "leaveType": "annual"}}}),
        )
        .await;
    let result = call.result();
    assert_legacy_result(result);
    assert!(result.get("structuredContent").is_none(), "{result}");
    assert_eq!(text_json(result)["employeeId"], "JohnDoe");
}

#[tokio::test]
async fn sessionless_requests_with_a_legacy_version_header() {
    let server = Server::start().await;
    for version in ["2025-11-25", "2025-06-18"] {
        let call = server
            .post_json(
                &[("MCP-Protocol-Version", version)],
                &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "calculate-employee-tenure",
                                   "arguments": {"employeeId": "JohnDoe"}}}),
            )
            .await;
        let result = call.result();
        assert_legacy_result(result);
        assert_eq!(
            result["structuredContent"]["employeeId"], "JohnDoe",
            "{version}"
        );
    }
}

#[tokio::test]
async fn legacy_notifications_are_accepted() {
    let server = Server::start().await;
    let s = server.legacy(Some("2025-11-25")).await;
    let reply = s
        .notify(
            "notifications/cancelled",
            json!({"requestId": 12345, "reason": "test"}),
        )
        .await;
    assert_eq!(reply.status, 202, "{}", reply.text);
    assert_eq!(s.request("ping", Value::Null).await.status, 200);
}

#[tokio::test]
async fn batch_in_a_2025_03_26_session() {
    let server = Server::start().await;
    let s = server.legacy(Some("2025-03-26")).await;
    let reply = server
        .post_json(
            &[
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", s.session_id.as_str()),
                ("MCP-Protocol-Version", "2025-03-26"),
            ],
            &json!([
                {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            ]),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let responses = reply.body.as_array().expect("batch response array");
    assert_eq!(responses.len(), 2, "{}", reply.text);
}

#[tokio::test]
async fn invalid_version_header_in_a_legacy_session() {
    let server = Server::start().await;
    let s = server.legacy(Some("2025-06-18")).await;
    let reply = server
        .post_json(
            &[
                ("Mcp-Session-Id", s.session_id.as_str()),
                ("MCP-Protocol-Version", "bogus"),
            ],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    // Legacy has no -32020; the message must not talk about modern headers.
    assert!(
        !reply.error_message().contains("Mcp-Method"),
        "legacy client told to send a modern header: {}",
        reply.text
    );
}
