//! HTTP hardening: DNS-rebinding guards, size and depth limits, media
//! types, malformed envelopes; the server keeps serving after each.

use crate::common;

use common::*;
use mcpwire_server::transport::http::HttpConfig;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn foreign_origin_and_host_are_forbidden() {
    let h = spawn_http(server()).await;
    let body = req(1, "tools/list", json!({}));

    let r = h
        .modern_plus(&body, &[("Origin", "http://evil.example.com")])
        .await;
    assert_eq!(r.status, 403, "{}", r.raw);
    assert!(
        r.response()["error"].is_object(),
        "JSON-RPC error body: {}",
        r.raw
    );
    assert!(r.response().get("id").is_none() || r.response()["id"].is_null());
    h.assert_alive().await;

    let r = h
        .modern_plus(&body, &[("Origin", "http://localhost.evil.example.com")])
        .await;
    assert_eq!(r.status, 403, "{}", r.raw);

    let r = h.modern_plus(&body, &[("Origin", "null")]).await;
    assert_eq!(r.status, 403, "{}", r.raw);

    let r = h.modern_plus(&body, &[("Host", "evil.example.com")]).await;
    assert_eq!(r.status, 403, "{}", r.raw);
    let r = h
        .modern_plus(&body, &[("Host", "evil.example.com:8080")])
        .await;
    assert_eq!(r.status, 403, "{}", r.raw);
    h.assert_alive().await;

    // GET and DELETE are guarded too.
    let get = h
        .client
        .get(&h.url)
        .header("Origin", "http://evil.example.com")
        .send()
        .await
        .expect("GET");
    assert_eq!(get.status().as_u16(), 403);

    for ok in [
        "http://localhost",
        "http://localhost:5173",
        "http://127.0.0.1:8080",
        "http://[::1]:3000",
    ] {
        let r = h.modern_plus(&body, &[("Origin", ok)]).await;
        assert_eq!(r.status, 200, "{ok}: {}", r.raw);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn configured_origins_and_hosts_are_allowed() {
    let config = HttpConfig {
        allowed_hosts: vec!["mcp.example.com".into()],
        allowed_origins: vec!["https://app.example.com".into()],
        ..HttpConfig::default()
    };
    let h = spawn_http_with(server(), config).await;
    let body = req(1, "tools/list", json!({}));
    let r = h
        .modern_plus(
            &body,
            &[
                ("Origin", "https://app.example.com"),
                ("Host", "mcp.example.com"),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let r = h
        .modern_plus(&body, &[("Origin", "https://other.example.com")])
        .await;
    assert_eq!(r.status, 403, "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_bodies_are_413() {
    let config = HttpConfig {
        max_body_bytes: 2048,
        ..HttpConfig::default()
    };
    let h = spawn_http_with(server(), config).await;
    let big = call(1, "echo", json!({ "text": "x".repeat(4096) }));
    let r = h.modern(&big).await;
    assert_eq!(r.status, 413, "{}", r.raw);
    h.assert_alive().await;

    // Chunked (no Content-Length) is limited as well.
    let chunks: Vec<Result<String, std::io::Error>> = vec![
        Ok(big.to_string()[..1500].to_owned()),
        Ok(big.to_string()[1500..].to_owned()),
    ];
    let resp = h
        .client
        .post(&h.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", V)
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "echo")
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await;
    if let Ok(resp) = resp {
        assert_eq!(resp.status().as_u16(), 413);
    }
    h.assert_alive().await;

    // Just under the limit is fine.
    let ok = call(2, "echo", json!({ "text": "x".repeat(1024) }));
    let r = h.modern(&ok).await;
    assert_eq!(r.status, 200, "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn deep_nesting_is_400() {
    let config = HttpConfig {
        max_json_depth: 16,
        ..HttpConfig::default()
    };
    let h = spawn_http_with(server(), config).await;
    let mut deep = json!(1);
    for _ in 0..40 {
        deep = json!([deep]);
    }
    let body = call(1, "region", json!({ "x": deep }));
    let r = h.modern(&body).await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert!(r.response()["error"].is_object(), "{}", r.raw);
    h.assert_alive().await;

    // Brackets inside strings do not count.
    let body = call(2, "echo", json!({ "text": "[".repeat(100) }));
    let r = h.modern(&body).await;
    assert_eq!(r.status, 200, "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn wrong_content_type_is_415() {
    let h = spawn_http(server()).await;
    let body = req(1, "tools/list", json!({}));
    let r = h
        .modern_plus(&body, &[("content-type", "text/plain")])
        .await;
    assert_eq!(r.status, 415, "{}", r.raw);
    let r = h
        .modern_plus(
            &body,
            &[("content-type", "application/x-www-form-urlencoded")],
        )
        .await;
    assert_eq!(r.status, 415, "{}", r.raw);
    h.assert_alive().await;
    let r = h
        .modern_plus(
            &body,
            &[("content-type", "application/json; charset=utf-8")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_envelopes_are_400() {
    let h = spawn_http(server()).await;
    let headers = vec![
        ("MCP-Protocol-Version".to_owned(), V.to_owned()),
        ("Mcp-Method".to_owned(), "tools/list".to_owned()),
    ];
    let resp = h
        .client
        .post(&h.url)
        .header("content-type", "application/json")
        .header("MCP-Protocol-Version", V)
        .header("Mcp-Method", "tools/list")
        .body("{not json")
        .send()
        .await
        .expect("POST");
    let r = read_reply(resp).await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert_eq!(error_code(r.response()), Some(-32700));

    let batch = json!([req(1, "tools/list", json!({}))]);
    let r = h.post_with(&batch, &headers).await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert_eq!(error_code(r.response()), Some(-32600));

    // A JSON-RPC response on the modern wire answers nothing.
    let response = json!({ "jsonrpc": "2.0", "id": 1, "result": {} });
    let r = h.post_with(&response, &headers).await;
    assert_eq!(r.status, 400, "{}", r.raw);

    // A null id is not a valid request.
    let null_id = json!({ "jsonrpc": "2.0", "id": null, "method": "tools/list",
        "params": { "_meta": meta_with(json!({})) } });
    let r = h.post_with(&null_id, &headers).await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert_eq!(error_code(r.response()), Some(-32600));
    h.assert_alive().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn header_values_with_invalid_characters_are_rejected() {
    let h = spawn_http(server()).await;
    let send = |header_value: &str, id: u32| {
        let body = call(id, "region", json!({ "region": "Zürich" })).to_string();
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             MCP-Protocol-Version: {V}\r\nMcp-Method: tools/call\r\nMcp-Name: region\r\n\
             Mcp-Param-Region: {header_value}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    // Raw non-ASCII must be sent Base64-encoded.
    let (status, text) = raw_http(h.addr, &send("Zürich", 1)).await;
    assert_eq!(status, 400, "{text}");
    let v: serde_json::Value = serde_json::from_str(text.trim()).expect("JSON body");
    assert_eq!(error_code(&v), Some(-32020), "{v}");
    // "Zürich" in Base64.
    let (status, text) = raw_http(h.addr, &send("=?base64?WsO8cmljaA==?=", 2)).await;
    assert_eq!(status, 200, "{text}");

    // A repeated standard header is ambiguous.
    let body = req(3, "tools/list", json!({})).to_string();
    let raw = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         MCP-Protocol-Version: {V}\r\nMcp-Method: tools/list\r\nMcp-Method: tools/list\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (status, text) = raw_http(h.addr, &raw).await;
    assert_eq!(status, 400, "{text}");
    h.assert_alive().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_origin_headers_are_refused_like_two_hosts() {
    let h = spawn_http(server()).await;
    let body = req(1, "tools/list", json!({}));
    let mut headers = modern_headers(&body);
    headers.push(("Origin".to_owned(), "http://localhost".to_owned()));
    let one = h.post_with(&body, &headers).await;
    assert_eq!(one.status, 200, "{}", one.raw);
    // Both allowed, or one foreign: ambiguous either way.
    for second in ["http://localhost", "http://evil.example.com"] {
        let mut two = headers.clone();
        two.push(("Origin".to_owned(), second.to_owned()));
        let r = h.post_with(&body, &two).await;
        assert_eq!(r.status, 400, "{second}: {}", r.raw);
        assert_eq!(error_code(r.response()), Some(-32600), "{}", r.raw);
        assert!(r.raw.contains("more than one Origin header"), "{}", r.raw);
    }
    h.assert_alive().await;
}
