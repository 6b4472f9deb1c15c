//! Legacy clients (2024-11-05 … 2025-11-25) over Streamable HTTP:
//! initialize and sessions, per-revision shapes, ping, logging, the MRTR
//! bridge (server→client requests on the POST's stream), the GET stream
//! and session teardown.

use crate::common;

use common::*;
use serde_json::{Value, json};

const LEGACY: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

fn visible_ascii(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// The MCP-Protocol-Version header a client of `v` sends after initialize.
fn header_for(v: &str) -> Option<&str> {
    (v >= "2025-06-18").then_some(v)
}

#[tokio::test(flavor = "multi_thread")]
async fn initialize_negotiates_and_mints_a_session() {
    let h = spawn_http(server()).await;
    for v in LEGACY {
        let (sid, resp) = h.initialize(Some(v), json!({})).await;
        assert!(visible_ascii(&sid), "session id {sid:?}");
        let res = &resp["result"];
        assert_eq!(res["protocolVersion"], v, "{resp}");
        assert!(res["capabilities"]["tools"].is_object(), "{resp}");
        assert_eq!(res["serverInfo"]["name"], "test-server");
        assert!(res.get("resultType").is_none(), "{resp}");
    }
    // No version → the oldest; an unknown one → the newest legacy.
    let (_, resp) = h.initialize(None, json!({})).await;
    assert_eq!(resp["result"]["protocolVersion"], "2024-11-05");
    let (_, resp) = h.initialize(Some("2099-01-01"), json!({})).await;
    assert_eq!(resp["result"]["protocolVersion"], "2025-11-25");
    // Never the modern revision in an InitializeResult.
    let (_, resp) = h.initialize(Some(V), json!({})).await;
    assert_eq!(resp["result"]["protocolVersion"], "2025-11-25");

    // Two sessions get different ids.
    let (a, _) = h.initialize(Some("2025-06-18"), json!({})).await;
    let (b, _) = h.initialize(Some("2025-06-18"), json!({})).await;
    assert_ne!(a, b);
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_results_have_no_modern_fields() {
    let h = spawn_http(server()).await;
    for v in LEGACY {
        let (sid, _) = h.initialize(Some(v), json!({})).await;
        let r = h
            .legacy(
                &raw_req(1, "tools/list", json!({})),
                Some(&sid),
                header_for(v),
            )
            .await;
        assert_eq!(r.status, 200, "{v}: {}", r.raw);
        let res = &r.response()["result"];
        assert!(res["tools"].is_array(), "{v}: {}", r.raw);
        for field in ["resultType", "ttlMs", "cacheScope", "_meta"] {
            assert!(res.get(field).is_none(), "{v}: {field} in {res}");
        }
        let r = h
            .legacy(
                &raw_req(
                    2,
                    "tools/call",
                    json!({ "name": "echo", "arguments": { "text": "x" } }),
                ),
                Some(&sid),
                header_for(v),
            )
            .await;
        let res = &r.response()["result"];
        assert!(res.get("resultType").is_none(), "{v}: {res}");
        let text: Value = serde_json::from_str(&text_of(r.response())).expect("JSON text");
        assert_eq!(text, json!({ "text": "x", "length": 1 }), "{v}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_shapes_follow_the_negotiated_revision() {
    let h = spawn_http(server()).await;
    let echo_in = |v: &str, r: &Reply| -> Value {
        r.response()["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{v}: {}", r.raw))
            .iter()
            .find(|t| t["name"] == "echo")
            .cloned()
            .expect("echo listed")
    };
    let call_echo = raw_req(
        2,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "hi" } }),
    );

    let (sid, _) = h.initialize(Some("2024-11-05"), json!({})).await;
    let r = h
        .legacy(&raw_req(1, "tools/list", json!({})), Some(&sid), None)
        .await;
    let t = echo_in("2024-11-05", &r);
    for f in ["title", "annotations", "outputSchema"] {
        assert!(t.get(f).is_none(), "2024-11-05 has no {f}: {t}");
    }
    assert!(t["inputSchema"].is_object());
    let r = h.legacy(&call_echo, Some(&sid), None).await;
    assert!(
        r.response()["result"].get("structuredContent").is_none(),
        "{}",
        r.raw
    );

    let (sid, _) = h.initialize(Some("2025-03-26"), json!({})).await;
    let r = h
        .legacy(&raw_req(1, "tools/list", json!({})), Some(&sid), None)
        .await;
    let t = echo_in("2025-03-26", &r);
    assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
    assert!(t.get("title").is_none(), "{t}");
    assert!(t.get("outputSchema").is_none(), "{t}");
    let r = h.legacy(&call_echo, Some(&sid), None).await;
    assert!(
        r.response()["result"].get("structuredContent").is_none(),
        "{}",
        r.raw
    );

    let (sid, _) = h.initialize(Some("2025-06-18"), json!({})).await;
    let r = h
        .legacy(
            &raw_req(1, "tools/list", json!({})),
            Some(&sid),
            Some("2025-06-18"),
        )
        .await;
    let t = echo_in("2025-06-18", &r);
    assert_eq!(t["title"], "Echo", "{t}");
    assert_eq!(t["outputSchema"]["type"], "object", "{t}");
    assert!(t["annotations"].is_object(), "{t}");
    let r = h.legacy(&call_echo, Some(&sid), Some("2025-06-18")).await;
    assert_eq!(
        r.response()["result"]["structuredContent"],
        json!({ "text": "hi", "length": 2 }),
        "{}",
        r.raw
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ping_answers_an_empty_result() {
    let h = spawn_http(server()).await;
    let (sid, _) = h.initialize(Some("2025-06-18"), json!({})).await;
    let r = h
        .legacy(
            &raw_req("p", "ping", json!({})),
            Some(&sid),
            Some("2025-06-18"),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.response()["id"], "p");
    assert_eq!(r.response()["result"], json!({}));
}

#[tokio::test(flavor = "multi_thread")]
async fn set_level_then_logs_arrive_on_the_post_stream() {
    let h = spawn_http(server()).await;
    let (sid, init) = h.initialize(Some("2025-06-18"), json!({})).await;
    assert!(
        init["result"]["capabilities"]["logging"].is_object(),
        "{init}"
    );

    let r = h
        .legacy(
            &raw_req(1, "logging/setLevel", json!({ "level": "info" })),
            Some(&sid),
            Some("2025-06-18"),
        )
        .await;
    assert_eq!(r.response()["result"], json!({}), "{}", r.raw);

    let r = h
        .legacy(
            &raw_req(2, "tools/call", json!({ "name": "log", "arguments": {} })),
            Some(&sid),
            Some("2025-06-18"),
        )
        .await;
    assert!(r.is_sse(), "{}", r.raw);
    let levels: Vec<&str> = r
        .before_response()
        .iter()
        .map(|n| {
            assert_eq!(n["method"], "notifications/message", "{n}");
            n["params"]["level"].as_str().expect("level")
        })
        .collect();
    assert_eq!(levels, ["info", "warning", "error"]);
    assert_eq!(r.response()["id"], 2);
    assert_eq!(text_of(r.response()), "logged");

    let r = h
        .legacy(
            &raw_req(3, "logging/setLevel", json!({ "level": "loud" })),
            Some(&sid),
            Some("2025-06-18"),
        )
        .await;
    assert_eq!(error_code(r.response()), Some(-32602), "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_ends_the_session() {
    let h = spawn_http(server()).await;
    let (sid, _) = h.initialize(Some("2025-06-18"), json!({})).await;
    let del = h
        .client
        .delete(&h.url)
        .header("Mcp-Session-Id", &sid)
        .send()
        .await
        .expect("DELETE");
    assert_eq!(del.status().as_u16(), 204);
    let r = h
        .legacy(
            &raw_req(1, "tools/list", json!({})),
            Some(&sid),
            Some("2025-06-18"),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.raw);
    let del = h
        .client
        .delete(&h.url)
        .header("Mcp-Session-Id", &sid)
        .send()
        .await
        .expect("DELETE");
    assert_eq!(del.status().as_u16(), 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_session_is_404() {
    let h = spawn_http(server()).await;
    let r = h
        .legacy(
            &raw_req(1, "tools/list", json!({})),
            Some("no-such-session"),
            Some("2025-06-18"),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.raw);
    let get = h
        .client
        .get(&h.url)
        .header("accept", "text/event-stream")
        .header("Mcp-Session-Id", "no-such-session")
        .send()
        .await
        .expect("GET");
    assert_eq!(get.status().as_u16(), 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn mrtr_bridge_elicits_over_the_post_stream() {
    let h = spawn_http(server()).await;
    let (sid, _) = h
        .initialize(Some("2025-06-18"), json!({ "elicitation": {} }))
        .await;
    let headers = vec![
        ("Mcp-Session-Id".to_owned(), sid.clone()),
        ("MCP-Protocol-Version".to_owned(), "2025-06-18".to_owned()),
    ];
    let body = raw_req(
        7,
        "tools/call",
        json!({ "name": "ask", "arguments": { "topic": "deploy" } }),
    );
    let mut s = h.open_stream(&body, &headers).await;
    assert!(
        s.content_type.starts_with("text/event-stream"),
        "{}",
        s.content_type
    );
    let ask = s.expect_next().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "Proceed?");
    let peer_id = ask["id"].clone();
    assert!(peer_id.is_string() || peer_id.is_number(), "{ask}");

    let answer = json!({ "action": "accept", "content": { "ok": true } });
    let reply = json!({ "jsonrpc": "2.0", "id": peer_id, "result": answer });
    let r = h.post_with(&reply, &headers).await;
    assert_eq!(r.status, 202, "{}", r.raw);

    let done = s.expect_next().await;
    assert_eq!(done["id"], 7, "{done}");
    let res = &done["result"];
    assert!(
        res.get("resultType").is_none(),
        "never input_required to legacy: {done}"
    );
    assert!(
        res.get("isError").is_none() || res["isError"] == false,
        "{done}"
    );
    let seen: Value = serde_json::from_str(&text_of(&done)).expect("JSON text");
    assert_eq!(seen["answer"], answer);
    assert_eq!(seen["state"], json!({ "step": 1 }));
    assert_eq!(seen["topic"], "deploy");
    assert!(s.next().await.is_none(), "stream ends after the result");

    // A response nobody waits for is refused.
    let r = h.post_with(&reply, &headers).await;
    assert_eq!(r.status, 400, "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn mrtr_bridge_without_the_capability_is_a_tool_error() {
    let h = spawn_http(server()).await;
    let (sid, _) = h.initialize(Some("2025-06-18"), json!({})).await;
    let r = h
        .legacy(
            &raw_req(1, "tools/call", json!({ "name": "ask", "arguments": {} })),
            Some(&sid),
            Some("2025-06-18"),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(is_error_result(r.response()), "{}", r.raw);
    assert!(r.response()["result"].get("resultType").is_none());
    assert!(text_of(r.response()).contains("elicitation"), "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn get_stream_carries_list_changed() {
    let h = spawn_http(server()).await;
    let (sid, _) = h.initialize(Some("2025-06-18"), json!({})).await;
    let resp = h
        .client
        .get(&h.url)
        .header("accept", "text/event-stream")
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", "2025-06-18")
        .send()
        .await
        .expect("GET");
    let mut s = SseStream::new(resp);
    assert_eq!(s.status, 200);
    assert!(s.content_type.starts_with("text/event-stream"));
    h.server.add_tool(plain_tool("late")).expect("add");
    let n = s.expect_next().await;
    assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");
    assert!(n.get("id").is_none());
    assert!(
        n["params"]["_meta"].get(META_SUB).is_none(),
        "no subscriptionId on legacy: {n}"
    );

    // DELETE ends the stream.
    h.client
        .delete(&h.url)
        .header("Mcp-Session-Id", &sid)
        .send()
        .await
        .expect("DELETE");
    assert!(s.next().await.is_none(), "GET stream ends with the session");
}

#[tokio::test(flavor = "multi_thread")]
async fn modern_and_legacy_side_by_side() {
    let h = spawn_http(server()).await;
    let (sid, _) = h.initialize(Some("2025-11-25"), json!({})).await;
    let legacy = h
        .legacy(
            &raw_req(1, "tools/list", json!({})),
            Some(&sid),
            Some("2025-11-25"),
        )
        .await;
    assert!(legacy.response()["result"].get("resultType").is_none());
    let modern = h.modern(&req(2, "tools/list", json!({}))).await;
    assert_eq!(modern.response()["result"]["resultType"], "complete");
    assert!(modern.session_id.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn notifications_cancelled_stops_a_legacy_request() {
    let (tool, fired, _flag) = cancel_probe("probe", false);
    let s = mcpwire_server::Server::builder("c", "1")
        .tool(tool)
        .build()
        .expect("builds");
    let h = std::sync::Arc::new(spawn_http(s).await);
    let (sid, _) = h.initialize(Some("2025-06-18"), json!({})).await;
    let headers = vec![
        ("Mcp-Session-Id".to_owned(), sid.clone()),
        ("MCP-Protocol-Version".to_owned(), "2025-06-18".to_owned()),
    ];
    let body = raw_req(
        41,
        "tools/call",
        json!({ "name": "probe", "arguments": {} }),
    );
    let pending = {
        let h = std::sync::Arc::clone(&h);
        let headers = headers.clone();
        tokio::spawn(async move { h.post_with(&body, &headers).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let cancel = json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": { "requestId": 41, "reason": "user gave up" }
    });
    let r = h.post_with(&cancel, &headers).await;
    assert_eq!(r.status, 202, "{}", r.raw);
    tokio::time::timeout(WAIT, fired)
        .await
        .expect("handler sees the cancellation")
        .expect("signal");
    let r = tokio::time::timeout(WAIT, pending)
        .await
        .expect("the cancelled POST completes")
        .expect("task");
    assert!(
        r.messages.iter().all(|m| m.get("result").is_none()),
        "no result for a cancelled request: {}",
        r.raw
    );
}

/// A request inside a 2025-03-26 batch is found by its id like a lone
/// request, so `notifications/cancelled` stops it.
#[tokio::test(flavor = "multi_thread")]
async fn notifications_cancelled_stops_a_request_inside_a_batch() {
    let (tool, fired, _flag) = cancel_probe("probe", false);
    let s = mcpwire_server::Server::builder("c", "1")
        .tool(tool)
        .build()
        .expect("builds");
    let h = std::sync::Arc::new(spawn_http(s).await);
    let (sid, _) = h.initialize(Some("2025-03-26"), json!({})).await;
    let headers = vec![
        ("Mcp-Session-Id".to_owned(), sid.clone()),
        ("MCP-Protocol-Version".to_owned(), "2025-03-26".to_owned()),
    ];
    let body = json!([raw_req(
        77,
        "tools/call",
        json!({ "name": "probe", "arguments": {} }),
    )]);
    let pending = {
        let h = std::sync::Arc::clone(&h);
        let headers = headers.clone();
        tokio::spawn(async move { h.post_with(&body, &headers).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let cancel = json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": { "requestId": 77, "reason": "user gave up" }
    });
    let r = h.post_with(&cancel, &headers).await;
    assert_eq!(r.status, 202, "{}", r.raw);
    tokio::time::timeout(WAIT, fired)
        .await
        .expect("the batched handler sees the cancellation")
        .expect("signal");
    let r = tokio::time::timeout(WAIT, pending)
        .await
        .expect("the batch's POST completes")
        .expect("task");
    assert!(!r.raw.contains("\"result\""), "no result for it: {}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_disconnect_is_not_a_cancellation() {
    let (tool, _fired, flag) = cancel_probe("probe", false);
    let s = mcpwire_server::Server::builder("c", "1")
        .tool(tool)
        .build()
        .expect("builds");
    let h = spawn_http(s).await;
    let (sid, _) = h.initialize(Some("2025-06-18"), json!({})).await;
    let headers = vec![
        ("Mcp-Session-Id".to_owned(), sid.clone()),
        ("MCP-Protocol-Version".to_owned(), "2025-06-18".to_owned()),
    ];
    let body = raw_req(1, "tools/call", json!({ "name": "probe", "arguments": {} }));
    let pending = h.post_builder(&body, &headers).send();
    let _ = tokio::time::timeout(std::time::Duration::from_millis(300), pending).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        !flag.load(std::sync::atomic::Ordering::SeqCst),
        "legacy HTTP: a disconnect SHOULD NOT be read as cancellation"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_version_header_other_than_the_sessions_is_refused() {
    let h = spawn_http(server()).await;
    let (sid, _) = h.initialize(Some("2025-06-18"), json!({})).await;
    let list = raw_req(2, "tools/list", json!({}));
    let r = h.legacy(&list, Some(&sid), Some("2025-03-26")).await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert_eq!(error_code(r.response()), Some(-32600), "{}", r.raw);
    assert!(r.raw.contains("negotiated \\\"2025-06-18\\\""), "{}", r.raw);
    // Notifications and the GET stream are held to it as well.
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let n = h.legacy(&note, Some(&sid), Some("2025-11-25")).await;
    assert_eq!(n.status, 400, "{}", n.raw);
    let get = h
        .client
        .get(&h.url)
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", "2025-03-26")
        .send()
        .await
        .expect("GET");
    assert_eq!(get.status().as_u16(), 400);
    // The negotiated version, or no header, is served.
    let ok = h.legacy(&list, Some(&sid), Some("2025-06-18")).await;
    assert_eq!(ok.status, 200, "{}", ok.raw);
    let ok = h.legacy(&list, Some(&sid), None).await;
    assert_eq!(ok.status, 200, "{}", ok.raw);
}
