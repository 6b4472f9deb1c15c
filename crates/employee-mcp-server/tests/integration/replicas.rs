//! Two replicas of the real binary sharing legacy sessions and events
//! through one PostgreSQL database (`--shared-state-url`; each replica has
//! its own copy of the seeded directory). No balancer: the test picks the
//! replica for each request, as a round-robin balancer might.

use crate::common;

use common::pg::fresh_database;
use common::*;
use serde_json::{Value, json};

const VERSION: &str = "2025-06-18";

async fn replica(shared: &str) -> Server {
    Server::start_with(&["--shared-state-url", shared]).await
}

/// The same session, addressed to another replica.
fn on<'a>(server: &'a Server, s: &LegacySession<'_>) -> LegacySession<'a> {
    LegacySession {
        server,
        session_id: s.session_id.clone(),
        version: s.version.clone(),
        init: s.init.clone(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_session_is_served_by_either_replica_and_ends_on_both() {
    let url = tokio::task::spawn_blocking(fresh_database)
        .await
        .expect("database");
    let (a, b) = (replica(&url).await, replica(&url).await);
    let on_a = a.legacy(Some(VERSION)).await;
    let on_b = on(&b, &on_a);

    let list = on_b.request("tools/list", Value::Null).await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(list.result()["tools"].as_array().map(Vec::len), Some(8));
    let details = on_b
        .call_tool(
            "get-employee-details",
            json!({ "employeeId": "AliceJohnson" }),
        )
        .await;
    assert_eq!(details["structuredContent"]["employeeId"], "AliceJohnson");

    let (status, stream_a) = SessionStream::open(&a.addr, &on_a.session_id).await;
    assert_eq!(status, 200);
    let (status, stream_b) = SessionStream::open(&b.addr, &on_a.session_id).await;
    assert_eq!(status, 200);
    let (mut stream_a, mut stream_b) = (stream_a.expect("A"), stream_b.expect("B"));

    let del = on_b.delete().await;
    assert_eq!(del.status, 204, "{}", del.text);
    assert!(stream_b.next().await.is_none(), "B's GET stream ends");
    assert!(stream_a.next().await.is_none(), "A's GET stream ends");
    let after = on_a.request("tools/list", Value::Null).await;
    assert_eq!(after.status, 404, "{}", after.text);
    assert_eq!(on_a.delete().await.status, 404);
    let (status, _) = SessionStream::open(&b.addr, &on_a.session_id).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_bound_holds_across_replicas() {
    let url = tokio::task::spawn_blocking(fresh_database)
        .await
        .expect("database");
    let a = Server::start_with(&["--shared-state-url", &url, "--max-sessions", "1"]).await;
    let b = Server::start_with(&["--shared-state-url", &url, "--max-sessions", "1"]).await;
    let first = a.legacy(Some(VERSION)).await;
    // In use (the client came back), so it is not evicted for a newcomer.
    let ping = on(&b, &first).request("ping", Value::Null).await;
    assert_eq!(ping.status, 200, "{}", ping.text);
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": VERSION, "capabilities": {}, "clientInfo": { "name": "x", "version": "1" } }
    });
    let refused = b
        .post_json(&[("Accept", "application/json, text/event-stream")], &init)
        .await;
    assert_eq!(refused.status, 429, "{}", refused.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_outage_fails_fast_and_the_bus_recovers_after_a_restart() {
    const NAME: &str = "faults-sessions";
    let url = tokio::task::spawn_blocking(|| pg_scratch("start", NAME))
        .await
        .expect("cluster");
    let (a, b) = (replica(&url).await, replica(&url).await);
    let on_a = a.legacy(Some(VERSION)).await;
    let (status, stream) = SessionStream::open(&b.addr, &on_a.session_id).await;
    assert_eq!(status, 200);
    let mut stream = stream.expect("B's stream");
    let second = a.legacy(Some(VERSION)).await;

    tokio::task::spawn_blocking(|| pg_scratch("stop", NAME))
        .await
        .expect("stop");
    // B never saw `second`: it must ask the store, which is down.
    let failed = on(&b, &second).request("tools/list", Value::Null).await;
    assert_eq!(failed.status, 200, "{}", failed.text);
    assert_eq!(failed.error_code(), -32603, "{}", failed.text);
    assert!(failed.text.contains("unavailable"), "{}", failed.text);

    tokio::task::spawn_blocking(|| pg_scratch("start", NAME))
        .await
        .expect("start");
    // Back on the bus, B tells its clients to re-read every list.
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let m = stream.next().await.expect("B's stream stays open");
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
    // And sessions are served again.
    let ok = on(&b, &second).request("tools/list", Value::Null).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert!(ok.result()["tools"].is_array(), "{}", ok.text);
    // The bus carries messages again: DELETE on A ends B's stream.
    assert_eq!(on_a.delete().await.status, 204);
    assert!(stream.next().await.is_none(), "B's stream ends");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_weak_request_state_key_file_is_refused() {
    let path = temp_path("weak-key", "txt");
    std::fs::write(&path, "0123456789abcdef").expect("write key");
    let out = std::process::Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--database"])
        .arg(TempDb::seeded().url())
        .arg("--request-state-key-file")
        .arg(&path)
        .output()
        .expect("run the binary");
    let _ = std::fs::remove_file(&path);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("at least 32"), "{stderr}");
}
