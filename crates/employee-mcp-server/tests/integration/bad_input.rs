//! Hostile and malformed HTTP input. Each case is followed by a good request
//! proving the server still serves.

use crate::common;

use common::{Server, modern_body, modern_headers, next_id};
use mcpwire_server::protocol::meta;
use serde_json::json;

fn modern_list_headers() -> Vec<(String, String)> {
    modern_headers(&modern_body(0, "tools/list", json!({})))
}

fn refs(h: &[(String, String)]) -> Vec<(&str, &str)> {
    h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// Posts an oversized body and expects 413. The server may answer before
/// reading the whole body and close the connection; the client then sometimes
/// sees a reset instead of the 413, so a transport error is retried, but some
/// attempt must show the 413 and none may show another status. Returns the
/// 413's headers.
async fn expect_413(
    server: &Server,
    headers: &[(String, String)],
    body: &[u8],
) -> reqwest::header::HeaderMap {
    let mut all: Vec<(&str, &[u8])> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_bytes()))
        .collect();
    all.push(("Content-Type", b"application/json"));
    let mut transport_errors = Vec::new();
    for _ in 0..8 {
        match server.try_send("POST", &all, Some(body)).await {
            Ok(reply) => {
                assert_eq!(reply.status, 413, "{}", reply.text);
                assert!(reply.body.get("error").is_some(), "{}", reply.text);
                return reply.headers;
            }
            Err(e) => transport_errors.push(e.to_string()),
        }
    }
    panic!("never got the 413: {transport_errors:?}");
}

#[tokio::test]
async fn foreign_origin_is_403() {
    let server = Server::start().await;
    let body = modern_body(next_id(), "tools/list", json!({}));
    let reply = server
        .post_modern(&body, &[("Origin", "http://evil.example.com")])
        .await;
    assert_eq!(reply.status, 403, "{}", reply.text);
    assert!(reply.body.get("result").is_none(), "{}", reply.text);
    // Legacy initialize from a foreign origin too (DNS rebinding).
    let reply = server
        .post_json(
            &[("Origin", "http://evil.example.com")],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "x", "version": "1"}}}),
        )
        .await;
    assert_eq!(reply.status, 403, "{}", reply.text);
    assert!(reply.header("mcp-session-id").is_none());
    // A loopback origin is fine.
    let origin = format!("http://{}", server.addr);
    let reply = server
        .post_modern(&body, &[("Origin", origin.as_str())])
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    server.assert_alive().await;
}

#[tokio::test]
async fn foreign_host_is_403() {
    let server = Server::start().await;
    let body = modern_body(next_id(), "tools/list", json!({}));
    let reply = server
        .post_modern(&body, &[("Host", "evil.example.com")])
        .await;
    assert_eq!(reply.status, 403, "{}", reply.text);
    let port = server.addr.rsplit(':').next().unwrap();
    let reply = server
        .post_modern(&body, &[("Host", &format!("evil.example.com:{port}"))])
        .await;
    assert_eq!(reply.status, 403, "{}", reply.text);
    let reply = server
        .post_modern(&body, &[("Host", &format!("localhost:{port}"))])
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    server.assert_alive().await;
}

#[tokio::test]
async fn allowed_origin_and_host_flags() {
    let server = Server::start_with(&[
        "--allowed-origin",
        "https://app.example.com",
        "--allowed-host",
        "hr.internal",
    ])
    .await;
    let body = modern_body(next_id(), "tools/list", json!({}));
    let ok = server
        .post_modern(&body, &[("Origin", "https://app.example.com")])
        .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    let ok = server.post_modern(&body, &[("Host", "hr.internal")]).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    let bad = server
        .post_modern(&body, &[("Origin", "http://evil.example.com")])
        .await;
    assert_eq!(bad.status, 403, "{}", bad.text);
    server.assert_alive().await;
}

#[tokio::test]
async fn body_over_the_limit_is_413() {
    let server = Server::start_with(&["--max-body-bytes", "4096"]).await;
    let mut body = modern_body(
        next_id(),
        "tools/call",
        json!({"name": "search-employees-by-skill", "arguments": {"skill": "Rust"}}),
    );
    body["params"]["_meta"]["padding"] = json!("x".repeat(10_000));
    expect_413(&server, &modern_headers(&body), body.to_string().as_bytes()).await;
    // Just under the limit is fine.
    body["params"]["_meta"]["padding"] = json!("x".repeat(1_000));
    let reply = server.post_modern(&body, &[]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    server.assert_alive().await;
}

#[tokio::test]
async fn default_body_limit_is_enforced() {
    let server = Server::start().await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "a".repeat(3 * 1024 * 1024)
    );
    expect_413(&server, &[], big.as_bytes()).await;
    server.assert_alive().await;
}

#[tokio::test]
async fn oversized_body_413_says_connection_close() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = Server::start().await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "a".repeat(3 * 1024 * 1024)
    );
    // A keep-alive client (like reqwest's pool): no `Connection: close`.
    let mut heads = Vec::new();
    for _ in 0..8 {
        let stream = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
        let (mut rd, mut wr) = stream.into_split();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            server.addr,
            body.len()
        );
        let payload = body.clone();
        let writer = tokio::spawn(async move {
            let _ = wr.write_all(head.as_bytes()).await;
            let _ = wr.write_all(payload.as_bytes()).await;
            wr
        });
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        writer.abort();
        let text = String::from_utf8_lossy(&got).to_lowercase();
        if text.starts_with("http/1.1 413") {
            heads.push(text);
            break;
        }
    }
    let head = heads.pop().expect("never got the 413");
    assert!(head.contains("\r\nconnection: close"), "{head}");
}

#[tokio::test]
async fn batch_array_is_invalid_request() {
    let server = Server::start().await;
    let batch = json!([
        modern_body(next_id(), "tools/list", json!({})),
        modern_body(next_id(), "tools/list", json!({}))
    ]);
    let h = modern_list_headers();
    let reply = server.post_json(&refs(&h), &batch).await;
    assert_eq!(reply.error_code(), -32600, "{}", reply.text);
    assert!((400..500).contains(&reply.status), "{}", reply.text);
    // Header-less (article style) and empty batches too.
    for batch in [
        json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
        json!([]),
    ] {
        let reply = server
            .post_json(&[("Content-Type", "application/json")], &batch)
            .await;
        assert_eq!(reply.error_code(), -32600, "{batch}: {}", reply.text);
    }
    server.assert_alive().await;
}

#[tokio::test]
async fn malformed_json_is_parse_error_400() {
    let server = Server::start().await;
    let h = modern_list_headers();
    for body in [
        "{\"jsonrpc\":\"2.0\",",
        "{not json",
        "",
        "null",
        "\u{feff}garbage",
    ] {
        let reply = server.post_raw(&refs(&h), body).await;
        assert_eq!(
            reply.status, 400,
            "{body:?}: HTTP {} {}",
            reply.status, reply.text
        );
        let code = reply.error_code();
        assert!(code == -32700 || code == -32600, "{body:?}: {}", reply.text);
        assert!(
            reply.body.get("id").is_none_or(|id| id.is_null()),
            "{}",
            reply.text
        );
    }
    let reply = server.post_raw(&refs(&h), "{\"jsonrpc\":\"2.0\",").await;
    reply.assert_error(400, -32700);
    let reply = server
        .post_raw(&[("Content-Type", "application/json")], "{oops")
        .await;
    reply.assert_error(400, -32700);
    // Invalid UTF-8.
    let reply = server
        .post_raw(&refs(&h), vec![b'{', b'"', 0xff, 0xfe, b'"', b'}'])
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    server.assert_alive().await;
}

#[tokio::test]
async fn deep_nesting_is_rejected() {
    let server = Server::start().await;
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{{"{pv}":"2026-07-28","{cc}":{{}}}},"name":"get-employee-details","arguments":{{"employeeId":{open}1{close}}}}}}}"#,
        pv = meta::PROTOCOL_VERSION,
        cc = meta::CLIENT_CAPABILITIES,
        open = "[".repeat(100),
        close = "]".repeat(100)
    );
    let reply = server
        .post_raw(
            &[
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "get-employee-details"),
            ],
            deep,
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    // Very deep (stack-overflow territory) header-less body.
    let very_deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    let reply = server
        .post_raw(&[("Content-Type", "application/json")], very_deep)
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    server.assert_alive().await;
}

#[tokio::test]
async fn invalid_envelopes() {
    let server = Server::start().await;
    let h = modern_list_headers();
    let mut cases = vec![
        json!({"jsonrpc": "1.0", "id": 1, "method": "tools/list", "params": {}}),
        json!({"id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": 42}),
        json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": null, "method": "tools/list"}),
        json!("just a string"),
    ];
    for body in &mut cases {
        if let Some(params) = body.get_mut("params") {
            params["_meta"] = common::modern_meta();
        }
        let reply = server.post_json(&refs(&h), body).await;
        assert!(
            reply.status >= 400 || reply.body.get("error").is_some(),
            "{body}: HTTP {} {}",
            reply.status,
            reply.text
        );
        assert!(reply.body.get("result").is_none(), "{body}: {}", reply.text);
    }
    // A response-shaped message from the client on the modern wire.
    let reply = server
        .post_json(&refs(&h), &json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
        .await;
    assert!((400..500).contains(&reply.status), "{}", reply.text);
    server.assert_alive().await;
}

#[tokio::test]
async fn wrong_content_type_is_rejected() {
    let server = Server::start().await;
    let body = modern_body(next_id(), "tools/list", json!({}));
    let reply = server
        .post_modern(&body, &[("Content-Type", "text/plain")])
        .await;
    assert!((400..500).contains(&reply.status), "{}", reply.text);
    assert!(reply.body.get("result").is_none());
    server.assert_alive().await;
}

#[tokio::test]
async fn header_values_with_invalid_characters() {
    let server = Server::start().await;
    let body = modern_body(
        next_id(),
        "tools/call",
        json!({"name": "get-employee-details", "arguments": {"employeeId": "JohnDoe"}}),
    );
    // Obs-text (non-ASCII) bytes in Mcp-Name.
    let headers = modern_headers(&body);
    let mut raw: Vec<(&str, &[u8])> = headers
        .iter()
        .filter(|(k, _)| k != "Mcp-Name")
        .map(|(k, v)| (k.as_str(), v.as_bytes()))
        .collect();
    raw.push(("Content-Type", b"application/json"));
    raw.push(("Mcp-Name", b"get-employee-details\xff"));
    let body = body.to_string();
    let reply = server
        .try_send("POST", &raw, Some(body.as_bytes()))
        .await
        .expect("HTTP exchange");
    reply.assert_error(400, -32020);
    server.assert_alive().await;
}

#[tokio::test]
async fn hostile_tool_arguments() {
    let server = Server::start().await;
    for id in [
        "' OR 1=1 --",
        "%",
        "_",
        "Alice%",
        "Robert'); DROP TABLE employees;--",
        "\u{0000}",
        "AliceJohnson\n",
    ] {
        let result = server
            .call_tool("get-employee-details", json!({"employeeId": id}))
            .await;
        assert_eq!(
            result["isError"], true,
            "{id:?} matched something: {result}"
        );
    }
    // LIKE wildcards inside an otherwise valid id match nothing.
    for skill in ["%", "_", "R_st"] {
        let result = server
            .call_tool("search-employees-by-skill", json!({"skill": skill}))
            .await;
        assert_eq!(result["isError"], true, "{skill:?}: {result}");
    }
    server.assert_alive().await;
}
