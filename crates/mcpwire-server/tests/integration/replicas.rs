//! Two replicas in one process sharing sessions and events through the
//! in-memory implementations of the shared traits, each on its own real
//! HTTP listener: a legacy client may hit either one for any request.

use crate::common;

use std::sync::Arc;

use common::*;
use mcpwire_server::shared::{MemoryBus, MemorySessions, Shared};
use mcpwire_server::{ServerEvent, ServerOptions};
use serde_json::json;

const VERSION: &str = "2025-06-18";

struct Pair {
    a: Http,
    b: Http,
    bus: MemoryBus,
    sessions: MemorySessions,
}

async fn pair_with(options: ServerOptions) -> Pair {
    let sessions = MemorySessions::new();
    let bus = MemoryBus::new();
    let replica = || {
        let shared = Shared::new(Arc::new(sessions.clone()), Arc::new(bus.clone()));
        builder()
            .options(options.clone())
            .request_state_key([7; 32])
            .shared(shared)
            .build()
            .expect("server builds")
    };
    let (a, b) = (spawn_http(replica()).await, spawn_http(replica()).await);
    Pair {
        a,
        b,
        bus,
        sessions,
    }
}

async fn pair() -> Pair {
    pair_with(ServerOptions::default()).await
}

fn session_headers(sid: &str) -> Vec<(String, String)> {
    vec![
        ("Mcp-Session-Id".to_owned(), sid.to_owned()),
        ("MCP-Protocol-Version".to_owned(), VERSION.to_owned()),
    ]
}

async fn open_get(h: &Http, sid: &str) -> SseStream {
    let resp = h
        .client
        .get(&h.url)
        .header("accept", "text/event-stream")
        .header("Mcp-Session-Id", sid)
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status().as_u16(), 200);
    SseStream::new(resp)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_opened_on_one_replica_is_served_by_the_other() {
    let p = pair().await;
    let (sid, _) = p.a.initialize(Some(VERSION), json!({})).await;
    assert_eq!(p.sessions.len(), 1);
    assert!(p.b.server.session(&sid).is_none(), "B holds no copy yet");

    let list = raw_req(1, "tools/list", json!({}));
    let list = p.b.legacy(&list, Some(&sid), Some(VERSION)).await;
    assert_eq!(list.status, 200, "{}", list.raw);
    assert!(
        list.response()["result"]["tools"].is_array(),
        "{}",
        list.raw
    );

    let body = raw_req(
        2,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "hi" } }),
    );
    let r = p.b.legacy(&body, Some(&sid), Some(VERSION)).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(text_of(r.response()).contains("hi"), "{}", r.raw);

    // The copy on B keeps what A negotiated.
    let copy = p.b.server.session(&sid).expect("B now holds a copy");
    assert_eq!(copy.version().as_str(), VERSION);

    // Unknown ids stay 404 on both.
    let ping = raw_req(3, "ping", json!({}));
    let r = p.b.legacy(&ping, Some("nope"), Some(VERSION)).await;
    assert_eq!(r.status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_on_one_replica_ends_the_session_on_the_other() {
    let p = pair().await;
    let (sid, _) = p.a.initialize(Some(VERSION), json!({})).await;
    let mut stream = open_get(&p.a, &sid).await;

    let del = p.b.client.delete(&p.b.url).header("Mcp-Session-Id", &sid);
    let del = del.send().await.expect("DELETE");
    assert_eq!(del.status().as_u16(), 204);
    assert!(p.sessions.is_empty(), "the record is gone");

    assert!(stream.next().await.is_none(), "A's GET stream ends");
    let list = raw_req(1, "tools/list", json!({}));
    let r = p.a.legacy(&list, Some(&sid), Some(VERSION)).await;
    assert_eq!(r.status, 404);
    let del = p.a.client.delete(&p.a.url).header("Mcp-Session-Id", &sid);
    assert_eq!(del.send().await.expect("DELETE").status().as_u16(), 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn events_fan_out_but_catalogue_changes_stay_local() {
    let p = pair().await;
    let (sid, _) = p.a.initialize(Some(VERSION), json!({})).await;
    let mut on_b = open_get(&p.b, &sid).await;

    // Each replica applies catalogue changes itself: not sent on the bus.
    p.a.server.add_tool(plain_tool("only_on_a")).expect("adds");
    // An event published on A reaches B's clients, after nothing else.
    p.a.server.notify(ServerEvent::PromptsChanged);
    let m = on_b.expect_next().await;
    assert_eq!(m["method"], "notifications/prompts/list_changed", "{m}");

    // B applying the same change notifies its own clients.
    p.b.server.add_tool(plain_tool("only_on_a")).expect("adds");
    let m = on_b.expect_next().await;
    assert_eq!(m["method"], "notifications/tools/list_changed", "{m}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bus_reconnect_refreshes_every_list() {
    let p = pair().await;
    let (sid, _) = p.a.initialize(Some(VERSION), json!({})).await;
    let mut on_b = open_get(&p.b, &sid).await;
    p.bus.resync();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let m = on_b.expect_next().await;
        seen.push(m["method"].as_str().unwrap_or_default().to_owned());
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
            "notifications/tools/list_changed"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_answer_posted_to_the_other_replica_is_relayed() {
    let p = pair().await;
    let (sid, _) =
        p.a.initialize(Some(VERSION), json!({ "elicitation": {} }))
            .await;
    let headers = session_headers(&sid);
    let body = raw_req(
        7,
        "tools/call",
        json!({ "name": "ask", "arguments": { "topic": "deploy" } }),
    );
    let mut s = p.a.open_stream(&body, &headers).await;
    let ask = s.expect_next().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");

    let answer = json!({ "action": "accept", "content": { "ok": true } });
    let reply = json!({ "jsonrpc": "2.0", "id": ask["id"], "result": answer });
    let r = p.b.post_with(&reply, &headers).await;
    assert_eq!(r.status, 202, "{}", r.raw);

    let done = s.expect_next().await;
    assert_eq!(done["id"], 7, "{done}");
    let seen: serde_json::Value = serde_json::from_str(&text_of(&done)).expect("JSON text");
    assert_eq!(seen["answer"], answer, "{done}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_bound_is_cluster_wide() {
    let p = pair_with(ServerOptions {
        max_sessions: 2,
        ..ServerOptions::default()
    })
    .await;
    let (s1, _) = p.a.initialize(Some(VERSION), json!({})).await;
    let (s2, _) = p.b.initialize(Some(VERSION), json!({})).await;
    // Both in use (the client came back), so neither may be evicted.
    for (h, sid) in [(&p.b, &s1), (&p.a, &s2)] {
        let ping = raw_req(1, "ping", json!({}));
        let r = h.legacy(&ping, Some(sid), Some(VERSION)).await;
        assert_eq!(r.status, 200, "{}", r.raw);
    }
    let init = raw_req(
        0,
        "initialize",
        json!({ "protocolVersion": VERSION, "capabilities": {}, "clientInfo": { "name": "x", "version": "1" } }),
    );
    let r = p.a.post_with(&init, &[]).await;
    assert_eq!(r.status, 429, "{}", r.raw);
    assert!(r.raw.contains("Too many open sessions"), "{}", r.raw);
    assert_eq!(p.sessions.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_log_level_set_on_one_replica_is_seen_by_the_other() {
    let p = pair().await;
    let (sid, _) = p.a.initialize(Some(VERSION), json!({})).await;
    // Before setLevel: no log messages on A.
    let body = raw_req(1, "tools/call", json!({ "name": "log", "arguments": {} }));
    let before = p.a.legacy(&body, Some(&sid), Some(VERSION)).await;
    assert!(before.before_response().is_empty(), "{}", before.raw);

    let set = raw_req(2, "logging/setLevel", json!({ "level": "debug" }));
    let r = p.b.legacy(&set, Some(&sid), Some(VERSION)).await;
    assert_eq!(r.status, 200, "{}", r.raw);

    // A's copy learns the level (through the bus and the record).
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let r = p.a.legacy(&body, Some(&sid), Some(VERSION)).await;
        if r.before_response()
            .iter()
            .any(|m| m["method"] == "notifications/message")
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{}", r.raw);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_state_from_one_replica_is_accepted_by_the_other() {
    let p = pair().await;
    // A replica with its own key: what replicas without a shared key do.
    let stranger = spawn_http(server()).await;
    let caps = json!({ "elicitation": {} });
    let mut first = call(1, "ask", json!({ "topic": "deploy" }));
    first["params"]["_meta"] = meta_with(caps.clone());
    let r = p.a.modern(&first).await;
    let res = &r.response()["result"];
    assert_eq!(res["resultType"], "input_required", "{}", r.raw);
    let state = res["requestState"].clone();
    assert!(state.is_string(), "{}", r.raw);

    let answer = json!({ "action": "accept", "content": { "ok": true } });
    let mut retry = call(2, "ask", json!({ "topic": "deploy" }));
    retry["params"]["_meta"] = meta_with(caps);
    retry["params"]["inputResponses"] = json!({ "confirm": answer });
    retry["params"]["requestState"] = state;
    let r = p.b.modern(&retry).await;
    assert_eq!(
        r.response()["result"]["resultType"],
        "complete",
        "{}",
        r.raw
    );
    let seen: serde_json::Value = serde_json::from_str(&text_of(r.response())).expect("json");
    assert_eq!(seen["state"], json!({ "step": 1 }));

    let r = stranger.modern(&retry).await;
    assert!(r.response()["error"].is_object(), "{}", r.raw);
}
