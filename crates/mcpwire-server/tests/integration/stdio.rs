//! The stdio transport over in-memory pipes: both eras in one process,
//! framing errors, cancellation, subscriptions and EOF.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn modern_requests_work_without_a_handshake() {
    let mut io = spawn_stdio(server());
    let r = io.request(&req(1, "server/discover", json!({}))).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert!(r["result"]["supportedVersions"].is_array());
    assert_eq!(
        r["result"]["_meta"][META_SERVER_INFO]["name"],
        "test-server"
    );

    let r = io
        .request(&call("c1", "echo", json!({ "text": "hi" })))
        .await;
    assert_eq!(r["id"], "c1");
    assert_eq!(r["result"]["structuredContent"]["text"], "hi", "{r}");

    // Missing _meta → -32602; unsupported version → -32022; removed methods → -32601.
    let r = io.request(&raw_req(2, "tools/list", json!({}))).await;
    assert_eq!(error_code(&r), Some(-32602), "{r}");
    let r = io
        .request(&raw_req(
            3,
            "tools/list",
            json!({ "_meta": { META_VERSION: "v999.0.0", META_CAPS: {} } }),
        ))
        .await;
    assert_eq!(error_code(&r), Some(-32022), "{r}");
    assert_eq!(r["error"]["data"]["requested"], "v999.0.0");
    let r = io
        .request(&req(4, "logging/setLevel", json!({ "level": "info" })))
        .await;
    assert_eq!(error_code(&r), Some(-32601), "{r}");

    io.close_stdin();
    assert!(io.drain().await.is_empty());
    io.join().await.expect("serve returns Ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_and_modern_side_by_side() {
    let mut io = spawn_stdio(server());
    // Legacy clients may ping before initialize.
    let r = io.request(&raw_req(0, "ping", json!({}))).await;
    assert_eq!(r["result"], json!({}), "{r}");

    let r = io
        .request(&raw_req(
            1,
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "old", "version": "1" } }),
        ))
        .await;
    assert_eq!(r["result"]["protocolVersion"], "2025-06-18", "{r}");
    io.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;

    let legacy = io.request(&raw_req(2, "tools/list", json!({}))).await;
    let res = &legacy["result"];
    assert!(res["tools"].is_array(), "{legacy}");
    assert!(
        res.get("resultType").is_none() && res.get("ttlMs").is_none(),
        "{legacy}"
    );

    let modern = io.request(&req(3, "tools/list", json!({}))).await;
    assert_eq!(modern["result"]["resultType"], "complete", "{modern}");
    assert!(modern["result"]["ttlMs"].is_u64());

    let r = io.request(&raw_req(4, "ping", json!({}))).await;
    assert_eq!(r["result"], json!({}));

    // Legacy sessions get list changes unsolicited, without subscriptionId.
    io.server.add_tool(plain_tool("late")).expect("add");
    let n = io.recv().await;
    assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");
    assert!(n["params"]["_meta"].get(META_SUB).is_none(), "{n}");

    io.close_stdin();
    io.drain().await;
    io.join().await.expect("serve returns Ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_lines_and_batches_are_rejected() {
    let mut io = spawn_stdio(server());
    io.send_line("{not json").await;
    let r = io.recv().await;
    assert_eq!(error_code(&r), Some(-32700), "{r}");
    assert!(r["id"].is_null(), "{r}");

    io.send_line(
        &json!([
            req(1, "tools/list", json!({})),
            req(2, "tools/list", json!({}))
        ])
        .to_string(),
    )
    .await;
    let r = io.recv().await;
    assert_eq!(error_code(&r), Some(-32600), "{r}");

    io.send_line(r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#)
        .await;
    let r = io.recv().await;
    assert_eq!(error_code(&r), Some(-32600), "null id: {r}");

    // Blank lines are ignored and the connection keeps serving.
    io.send_line("").await;
    let r = io.request(&req(5, "tools/list", json!({}))).await;
    assert!(r["result"]["tools"].is_array(), "{r}");

    io.close_stdin();
    io.drain().await;
    io.join().await.expect("serve returns Ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelled_requests_get_no_response() {
    let mut io = spawn_stdio(server());
    io.send(&call(7, "slow", json!({ "ms": 8000 }))).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    io.send(&json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": { "requestId": 7, "reason": "user gave up" }
    }))
    .await;
    let r = io.request(&req(8, "tools/list", json!({}))).await;
    assert!(r["result"].is_object(), "{r}");

    // EOF: serve must not wait the 8 s for the cancelled call, and no
    // response for it may appear.
    let started = std::time::Instant::now();
    io.close_stdin();
    let rest = io.drain().await;
    io.join().await.expect("serve returns Ok");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "cancelled call was not stopped"
    );
    assert!(
        rest.iter().all(|m| m["id"] != json!(7)),
        "no response for a cancelled request: {rest:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn eof_waits_for_in_flight_requests() {
    let mut io = spawn_stdio(server());
    io.send(&call(1, "slow", json!({ "ms": 300 }))).await;
    io.send(&call(2, "echo", json!({ "text": "z" }))).await;
    io.close_stdin();
    let rest = io.drain().await;
    io.join().await.expect("serve returns Ok");
    let ids: Vec<&Value> = rest.iter().map(|m| &m["id"]).collect();
    assert!(ids.contains(&&json!(1)), "slow call finished: {rest:?}");
    assert!(ids.contains(&&json!(2)), "{rest:?}");
    let slow = rest.iter().find(|m| m["id"] == 1).expect("slow response");
    assert_eq!(text_of(slow), "slept");
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_and_logs_are_interleaved_before_the_response() {
    let mut io = spawn_stdio(server());
    let mut body = call(1, "progress", json!({}));
    body["params"]["_meta"]["progressToken"] = json!("tok");
    io.send(&body).await;
    let (before, resp) = io.recv_response(&json!(1)).await;
    assert_eq!(text_of(&resp), "done");
    assert!(!before.is_empty());
    assert!(
        before
            .iter()
            .all(|n| n["method"] == "notifications/progress"
                && n["params"]["progressToken"] == "tok"),
        "{before:?}"
    );

    let mut body = call(2, "log", json!({}));
    body["params"]["_meta"][META_LOG] = json!("error");
    io.send(&body).await;
    let (before, resp) = io.recv_response(&json!(2)).await;
    assert_eq!(text_of(&resp), "logged");
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["params"]["level"], "error");

    io.close_stdin();
    io.drain().await;
    io.join().await.expect("serve returns Ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn listen_over_stdio() {
    let mut io = spawn_stdio(server());
    let body = req(
        "sub-9",
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    io.send(&body).await;
    let ack = io.recv().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(ack["params"]["_meta"][META_SUB], "sub-9");

    io.server.add_tool(plain_tool("late")).expect("add");
    let n = io.recv().await;
    assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");
    assert_eq!(n["params"]["_meta"][META_SUB], "sub-9");

    // A prompts-only listener receives no tool notification.
    let body = req(
        5,
        "subscriptions/listen",
        json!({ "notifications": { "promptsListChanged": true } }),
    );
    io.send(&body).await;
    let ack = io.recv().await;
    assert_eq!(ack["params"]["_meta"][META_SUB], 5, "{ack}");
    io.server.add_tool(plain_tool("later")).expect("add");
    let n = io.recv().await;
    assert_eq!(
        n["params"]["_meta"][META_SUB], "sub-9",
        "only the tools listener: {n}"
    );
    assert!(
        io.recv_within(Duration::from_millis(300)).await.is_err(),
        "nothing for the prompts-only listener"
    );

    io.server.shutdown();
    let mut finals = Vec::new();
    for _ in 0..4 {
        finals.push(io.recv().await);
    }
    for id in [json!("sub-9"), json!(5)] {
        let pos = finals
            .iter()
            .position(|m| m["id"] == id && m.get("result").is_some())
            .unwrap_or_else(|| panic!("final result for {id}: {finals:?}"));
        assert_eq!(finals[pos]["result"]["resultType"], "complete");
        let cancel = finals
            .iter()
            .position(|m| {
                m["method"] == "notifications/cancelled" && m["params"]["requestId"] == id
            })
            .unwrap_or_else(|| panic!("cancelled for {id}: {finals:?}"));
        assert!(
            pos < cancel,
            "result before notifications/cancelled: {finals:?}"
        );
    }
    io.close_stdin();
    io.drain().await;
    io.join().await.expect("serve returns Ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn eof_ends_open_subscriptions() {
    let mut io = spawn_stdio(server());
    io.send(&req(
        1,
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    ))
    .await;
    let ack = io.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    io.close_stdin();
    io.drain().await;
    io.join()
        .await
        .expect("serve returns Ok at EOF with a listener open");
}

#[tokio::test(flavor = "multi_thread")]
async fn modern_mrtr_over_stdio() {
    let mut io = spawn_stdio(server());
    let mut first = call(1, "ask", json!({}));
    first["params"]["_meta"] = meta_with(json!({ "elicitation": {} }));
    let r = io.request(&first).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let state = r["result"]["requestState"].clone();
    let mut retry = call(2, "ask", json!({}));
    retry["params"]["_meta"] = meta_with(json!({ "elicitation": {} }));
    retry["params"]["inputResponses"] = json!({ "confirm": { "action": "decline" } });
    retry["params"]["requestState"] = state;
    let r = io.request(&retry).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let seen: Value = serde_json::from_str(&text_of(&r)).expect("JSON text");
    assert_eq!(seen["answer"]["action"], "decline");

    let r = io.request(&call(3, "sample", json!({}))).await;
    assert_eq!(error_code(&r), Some(-32021), "{r}");
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"],
        json!({ "sampling": {} })
    );
    io.close_stdin();
    io.drain().await;
    io.join().await.expect("serve returns Ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_mrtr_bridge_over_stdio() {
    let mut io = spawn_stdio(server());
    io.request(&raw_req(
        1,
        "initialize",
        json!({ "protocolVersion": "2025-06-18", "capabilities": { "elicitation": {} } }),
    ))
    .await;
    io.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    io.send(&raw_req(
        2,
        "tools/call",
        json!({ "name": "ask", "arguments": {} }),
    ))
    .await;
    let ask = io.recv().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let answer = json!({ "action": "accept", "content": { "ok": true } });
    io.send(&json!({ "jsonrpc": "2.0", "id": ask["id"], "result": answer }))
        .await;
    let (_, r) = io.recv_response(&json!(2)).await;
    let seen: Value = serde_json::from_str(&text_of(&r)).expect("JSON text");
    assert_eq!(seen["answer"], answer, "{r}");
    assert!(r["result"].get("resultType").is_none());
    io.close_stdin();
    io.drain().await;
    io.join().await.expect("serve returns Ok");
}

/// A client that keeps sending requests gets at most
/// `engine::MAX_IN_FLIGHT` of them running; the rest are answered at once
/// with -31002, and the connection keeps serving.
#[tokio::test]
async fn requests_in_flight_per_connection_are_bounded() {
    let max = mcpwire_server::engine::MAX_IN_FLIGHT;
    let mut s = spawn_stdio(server());
    for id in 0..max + 5 {
        s.send(&call(id, "slow", json!({ "ms": 1500 }))).await;
    }
    let mut limited = 0;
    let mut answered = 0;
    while answered < max + 5 {
        let m = s.recv().await;
        if m.get("id").is_none() {
            continue;
        }
        answered += 1;
        if error_code(&m) == Some(-31002) {
            limited += 1;
        }
    }
    assert_eq!(limited, 5, "over the bound are refused at once");
    s.send(&call("after", "add", json!({ "a": 1, "b": 2 })))
        .await;
    let (_, reply) = s.recv_response(&json!("after")).await;
    assert!(reply.get("result").is_some(), "{reply}");
}
