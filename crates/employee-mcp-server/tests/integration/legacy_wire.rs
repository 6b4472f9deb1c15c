//! The legacy (initialize-based) wire, per revision: 2025-11-25, 2025-06-18,
//! 2025-03-26 and 2024-11-05, plus the session lifecycle and the header-less
//! (article-style) fallback.

use crate::common;

use common::{
    LEGACY_VERSIONS, Server, TOOL_NAMES, call, next_id, rpc, rpc_error, text_json, tool_error_text,
};
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
    let a = server.legacy_client("2025-06-18").await;
    let b = server.legacy_client("2025-06-18").await;
    let (a, b) = (a.session_id(), b.session_id());
    assert!(a.is_some(), "no Mcp-Session-Id on initialize");
    assert_ne!(a, b);
}

#[tokio::test]
async fn ping_answers_empty_object() {
    let server = Server::start().await;
    for version in LEGACY_VERSIONS {
        let s = server.legacy_client(version).await;
        let reply = rpc(&s, "ping", Value::Null).await;
        assert_eq!(reply.map(Value::Object), Ok(json!({})), "{version}");
    }
}

#[tokio::test]
async fn tools_list_shape_per_revision() {
    let server = Server::start().await;
    for version in LEGACY_VERSIONS {
        let s = server.legacy_client(version).await;
        let result = rpc(&s, "tools/list", json!({})).await;
        let result = Value::Object(result.unwrap_or_else(|e| panic!("{version}: {e}")));
        assert_legacy_result(&result);
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
        let s = server.legacy_client(version).await;
        let result = call(&s, "get-employee-details", json!({"employeeId": "JohnDoe"})).await;
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
        let report = call(
            &s,
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
        let s = server.legacy_client(version).await;
        let result = call(&s, "get-team-members", json!({"teamId": "nope"})).await;
        assert_legacy_result(&result);
        assert!(tool_error_text(&result).contains("backend"), "{version}");
        let result = call(
            &s,
            "get-team-members",
            json!({"teamId": "backend", "extra": true}),
        )
        .await;
        assert!(tool_error_text(&result).contains("extra"), "{version}");
        let args = json!({"name": "no-such-tool", "arguments": {}});
        assert_eq!(rpc_error(&s, "tools/call", args).await, -32602, "{version}");
    }
}

#[tokio::test]
async fn invalid_cursor_and_unknown_methods() {
    let server = Server::start().await;
    for version in LEGACY_VERSIONS {
        let s = server.legacy_client(version).await;
        let cursor = json!({"cursor": "optional-cursor-value"});
        let code = rpc_error(&s, "tools/list", cursor).await;
        assert_eq!(code, -32602, "{version}");
        for method in ["server/discover", "prompts/list", "employees/fire"] {
            let code = rpc_error(&s, method, json!({})).await;
            assert_eq!(code, -32601, "{version} {method}");
            // Legacy never sees the modern-only codes.
            assert!(
                !(-32099..=-32020).contains(&code),
                "{version} {method}: {code}"
            );
        }
        // Still serving this session afterwards.
        let ping = rpc(&s, "ping", Value::Null).await;
        assert_eq!(ping.map(Value::Object), Ok(json!({})));
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

/// A batch is bounded in messages: a small body of tiny requests must not
/// ask for thousands of results in one answer.
#[tokio::test]
async fn batch_over_the_limit_is_refused() {
    let server = Server::start_with(&["--max-batch-items", "3"]).await;
    let s = server.legacy(Some("2025-03-26")).await;
    let headers = [
        ("Accept", "application/json, text/event-stream"),
        ("Mcp-Session-Id", s.session_id.as_str()),
        ("MCP-Protocol-Version", "2025-03-26"),
    ];
    let batch = |n: u64| -> Value {
        (0..n)
            .map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}))
            .collect()
    };
    let reply = server.post_json(&headers, &batch(4)).await;
    reply.assert_error(400, -32600);
    assert!(
        reply.error_message().contains("at most 3"),
        "{}",
        reply.text
    );
    let reply = server.post_json(&headers, &batch(3)).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body.as_array().map(Vec::len), Some(3));
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

// ---- hardening: bounded session state ----

fn init_body(capabilities: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": next_id(), "method": "initialize",
           "params": {"protocolVersion": "2025-06-18", "capabilities": capabilities,
                      "clientInfo": {"name": "flood", "version": "1"}}})
}

/// A flood of fresh `initialize` calls cannot push out a session in use.
#[tokio::test]
async fn initialize_flood_does_not_evict_a_session_in_use() {
    let server =
        Server::start_with(&["--max-sessions", "10", "--initialize-per-minute", "0"]).await;
    let mine = server.legacy(Some("2025-06-18")).await;
    let list = mine.request("tools/list", Value::Null).await;
    assert_eq!(list.status, 200, "{}", list.text);
    for _ in 0..200 {
        let r = server
            .post_json(&[("Accept", "application/json")], &init_body(json!({})))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let again = mine.request("tools/list", Value::Null).await;
    assert_eq!(
        again.status, 200,
        "session evicted by a flood: {}",
        again.text
    );
}

/// A session idle past `--session-idle-timeout-secs` is gone (404), even
/// when the table is far from full.
#[tokio::test]
async fn idle_session_expires() {
    let server = Server::start_with(&["--session-idle-timeout-secs", "1"]).await;
    let s = server.legacy(Some("2025-06-18")).await;
    assert_eq!(s.request("ping", Value::Null).await.status, 200);
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let reply = s.request("ping", Value::Null).await;
    assert_eq!(reply.status, 404, "{}", reply.text);
}

/// `initialize` is rate-limited per client.
#[tokio::test]
async fn initialize_is_rate_limited_per_client() {
    let server = Server::start_with(&["--initialize-per-minute", "10"]).await;
    let mut limited = 0;
    for _ in 0..10 {
        let r = server
            .post_json(&[("Accept", "application/json")], &init_body(json!({})))
            .await;
        if r.status == 429 {
            assert!(r.header("retry-after").is_some());
            limited += 1;
        } else {
            assert_eq!(r.status, 200, "{}", r.text);
        }
    }
    assert!(
        limited >= 5,
        "only {limited} of 10 initialize calls limited"
    );
    server.assert_alive().await;
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A session keeps a bounded part of the client's `capabilities`: 80
/// sessions opened with ~900 KB of capabilities each hold a few MB (they
/// used to keep ~16 MB each).
#[tokio::test]
async fn huge_capabilities_are_not_kept_per_session() {
    let server = Server::start_with(&["--initialize-per-minute", "0"]).await;
    let blob = "x".repeat(450 * 1024);
    let caps = json!({ "sampling": { "blob": blob }, "junk": { "blob": blob.clone() } });
    let body = serde_json::to_vec(&init_body(caps)).expect("json");
    let before = rss_kib(server.pid());
    for _ in 0..80 {
        let r = server
            .post_raw(&[("Accept", "application/json")], body.clone())
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let grown_mib = rss_kib(server.pid()).saturating_sub(before) / 1024;
    assert!(
        grown_mib < 100,
        "server grew {grown_mib} MiB for 80 sessions"
    );
    server.assert_alive().await;
}

// ---- the 2024-11-05 HTTP+SSE transport ----

/// Reads SSE events (`event`, `data`) from a raw HTTP/1.1 response stream.
struct SseReader {
    reader: tokio::io::BufReader<tokio::net::TcpStream>,
}

impl SseReader {
    async fn open(addr: &str) -> SseReader {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let head =
            format!("GET /sse HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
        stream.write_all(head.as_bytes()).await.expect("write");
        let mut reader = tokio::io::BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).await.expect("status line");
        assert!(status.contains(" 200 "), "{status}");
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).await.expect("header");
            if line == "\r\n" {
                break;
            }
        }
        SseReader { reader }
    }

    /// The next event (chunked framing lines are skipped: they never
    /// start with `event:` or `data:`).
    async fn next(&mut self) -> (String, String) {
        use tokio::io::AsyncBufReadExt;
        let (mut event, mut data) = (String::new(), String::new());
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(common::TIMEOUT, self.reader.read_line(&mut line))
                .await
                .expect("timed out waiting for an SSE event")
                .expect("read");
            assert!(n > 0, "stream ended");
            let line = line.trim_end();
            if let Some(e) = line.strip_prefix("event:") {
                event = e.trim().to_owned();
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push_str(d.trim_start());
            } else if line.is_empty() && !data.is_empty() {
                return (event, data);
            }
        }
    }

    /// The next `message` event, as JSON.
    async fn message(&mut self) -> Value {
        loop {
            let (event, data) = self.next().await;
            if event == "message" {
                return serde_json::from_str(&data).expect("JSON message");
            }
        }
    }
}

/// POSTs one message to the endpoint the stream named; returns the status.
async fn post_message(addr: &str, endpoint: &str, body: &Value) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = serde_json::to_vec(body).expect("json");
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST {endpoint} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(&body).await.expect("write body");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Open HTTP+SSE streams are bounded by `--max-sessions`; one more is
/// refused with 429, and a slot frees when a stream closes.
#[tokio::test]
async fn http_sse_streams_are_bounded() {
    let server = Server::start_with(&["--max-sessions", "2"]).await;
    let first = SseReader::open(&server.addr).await;
    let _second = SseReader::open(&server.addr).await;
    let refused = common::http_get(&server.addr, "/sse").await;
    assert!(refused.starts_with("HTTP/1.1 429"), "{refused}");
    drop(first);
    let deadline = std::time::Instant::now() + common::TIMEOUT;
    loop {
        let again = common::http_get(&server.addr, "/sse").await;
        if again.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "slot never freed: {again}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn http_sse_transport_serves_the_whole_flow() {
    let server = Server::start().await;
    let addr = server.addr.clone();
    let mut sse = SseReader::open(&addr).await;
    let (event, endpoint) = sse.next().await;
    assert_eq!(event, "endpoint");
    assert!(endpoint.starts_with("/messages?sessionId="), "{endpoint}");

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                   "clientInfo": {"name": "sse-client", "version": "1"}}});
    assert_eq!(post_message(&addr, &endpoint, &init).await, 202);
    let reply = sse.message().await;
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["protocolVersion"], "2024-11-05");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post_message(&addr, &endpoint, &note).await, 202);

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(post_message(&addr, &endpoint, &list).await, 202);
    let reply = sse.message().await;
    assert_eq!(
        reply["result"]["tools"].as_array().map(Vec::len),
        Some(TOOL_NAMES.len()),
        "{reply}"
    );
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "get-employee-details", "arguments": {"employeeId": "AliceJohnson"}}});
    assert_eq!(post_message(&addr, &endpoint, &call).await, 202);
    let reply = sse.message().await;
    assert_eq!(reply["id"], 3);
    assert_eq!(text_json(&reply["result"])["employeeId"], "AliceJohnson");

    // Bad JSON is answered on the stream; the stream goes on.
    let status = post_message(&addr, &endpoint, &json!("not a message")).await;
    assert_eq!(status, 202);
    let reply = sse.message().await;
    assert_eq!(reply["error"]["code"], -32600, "{reply}");

    // An unknown stream id is 404.
    let status = post_message(&addr, "/messages?sessionId=nope", &list).await;
    assert_eq!(status, 404);
}

/// GET and DELETE with a repeated `Mcp-Session-Id` are bad requests (400
/// and a JSON-RPC error), not a method the endpoint does not allow (405).
#[tokio::test]
async fn a_repeated_session_id_on_get_or_delete_is_a_bad_request() {
    let server = Server::start().await;
    for method in ["GET", "DELETE"] {
        let headers: [(&str, &[u8]); 3] = [
            ("Accept", b"text/event-stream"),
            ("Mcp-Session-Id", b"one"),
            ("Mcp-Session-Id", b"two"),
        ];
        let reply = common::http_request(&server.addr, method, &headers, None)
            .await
            .expect("request");
        assert_eq!(reply.status, 400, "{method}: {}", reply.text);
        assert!(reply.text.contains("\"error\""), "{method}: {}", reply.text);
    }
    let alone: [(&str, &[u8]); 1] = [("Accept", b"text/event-stream")];
    let reply = common::http_request(&server.addr, "DELETE", &alone, None)
        .await
        .expect("request");
    assert_eq!(reply.status, 405, "{}", reply.text);
}
