//! The client's HTTP mode (`Client::http`, feature `client-http`) against
//! the standard test server on a real loopback socket, on both wires:
//! calls, `Mcp-Param-*` mirrors, input round trips (answered from SSE
//! streams on a legacy session), progress on SSE, subscriptions, the legacy
//! GET stream, session deletion, and transport errors.

use crate::common;

use common::*;
use mcpwire_server::ServerEvent;
use mcpwire_server::client::{Client, ClientError};
use mcpwire_server::protocol::ProtocolVersion;
use mcpwire_server::protocol::meta;
use mcpwire_server::protocol::model::InputRequest;
use serde_json::{Map, Value, json};

/// Answers elicitations with `ok: true` and sampling with a fixed text.
async fn answer(request: InputRequest) -> Value {
    match request.method.as_str() {
        "elicitation/create" => json!({ "action": "accept", "content": { "ok": true } }),
        _ => {
            json!({ "role": "assistant", "content": { "type": "text", "text": "a haiku" }, "model": "m" })
        }
    }
}

/// A modern and a legacy client of the server at `h`.
async fn both_wires(h: &Http) -> Vec<Client> {
    let modern = Client::http(&h.url).on_input(answer).connect().await;
    let legacy = Client::http(&h.url)
        .on_input(answer)
        .legacy(ProtocolVersion::V2025_06_18)
        .connect()
        .await;
    vec![
        modern.expect("modern client"),
        legacy.expect("legacy client"),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_answer_over_http_on_both_wires() {
    let h = spawn_http(server()).await;
    for client in both_wires(&h).await {
        let names: Vec<String> = client
            .list_tools()
            .await
            .expect("tools/list")
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert!(names.contains(&"echo".to_owned()), "{names:?}");
        let r = client.call_tool("add", json!({ "a": 2, "b": 3 })).await;
        assert_eq!(r.expect("add").structured, Some(json!({ "sum": 5 })));
        let r = client.call_tool("fail", json!({})).await.expect("fail");
        assert!(r.is_error && r.text().contains("tomorrow"), "{r:?}");
        let e = client.call_tool("nope", json!({})).await.unwrap_err();
        assert_eq!(e.code(), Some(-32602), "{e}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_client_holds_a_session_and_deletes_it_on_close() {
    let h = spawn_http(server()).await;
    let modern = Client::http(&h.url).connect().await.expect("modern");
    assert_eq!(modern.session_id(), None);
    let legacy = Client::http(&h.url)
        .legacy(ProtocolVersion::V2025_06_18)
        .connect()
        .await
        .expect("legacy");
    let sid = legacy
        .session_id()
        .expect("Mcp-Session-Id after initialize");
    let list = raw_req(1, "tools/list", json!({}));
    let r = h.legacy(&list, Some(&sid), Some("2025-06-18")).await;
    assert_eq!(r.status, 200, "the session is live: {}", r.raw);
    legacy.close().await;
    let r = h.legacy(&list, Some(&sid), Some("2025-06-18")).await;
    assert_eq!(r.status, 404, "close deleted the session: {}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn input_requests_are_answered_over_http_on_both_wires() {
    let h = spawn_http(server()).await;
    for client in both_wires(&h).await {
        let r = client.call_tool("ask", json!({ "topic": "x" })).await;
        let text: Value = serde_json::from_str(&r.expect("ask").text()).expect("JSON");
        assert_eq!(text["answer"]["content"]["ok"], true, "{text}");
        assert_eq!(text["topic"], "x");
        let r = client.call_tool("sample", json!({})).await.expect("sample");
        assert!(r.text().contains("a haiku"), "{}", r.text());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_arguments_are_mirrored_into_mcp_param_headers() {
    let h = spawn_http(server()).await;
    let client = Client::http(&h.url).connect().await.expect("client");
    // The server checks each mirror against the body (-32020 when one is
    // missing or wrong); the client learns the mirrors from tools/list on
    // the first refusal. Non-ASCII goes as =?base64?…?=.
    for region in ["eu-west", "Zoë", " padded "] {
        let args = json!({ "region": region, "count": 3 });
        let r = client.call_tool("region", args.clone()).await;
        let echoed: Value = serde_json::from_str(&r.expect("region").text()).expect("JSON");
        assert_eq!(echoed, args);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_streamed_on_sse_arrives_as_notifications() {
    let h = spawn_http(server()).await;
    for client in both_wires(&h).await {
        let mut params = Map::new();
        params.insert("name".into(), json!("progress"));
        params.insert("arguments".into(), json!({}));
        params.insert("_meta".into(), json!({ meta::PROGRESS_TOKEN: "p1" }));
        let r = client.request("tools/call", params).await.expect("call");
        assert_eq!(r["content"][0]["text"], "done", "{r:?}");
        let progress: Vec<f64> = client
            .take_notifications()
            .await
            .iter()
            .filter(|n| n["method"] == "notifications/progress")
            .filter_map(|n| n["params"]["progress"].as_f64())
            .collect();
        assert_eq!(progress, vec![1.0, 2.0, 3.0]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn listen_keeps_its_stream_open_over_http() {
    let h = spawn_http(server()).await;
    let client = Client::http(&h.url).connect().await.expect("client");
    let mut sub = client
        .listen(json!({ "toolsListChanged": true }))
        .await
        .expect("listen");
    assert_eq!(
        sub.acknowledgement()["method"],
        "notifications/subscriptions/acknowledged"
    );
    h.server.notify(ServerEvent::ToolsChanged);
    let n = tokio::time::timeout(WAIT, sub.next())
        .await
        .expect("in time");
    let n = n.expect("a notification");
    assert_eq!(n["method"], "notifications/tools/list_changed");
    assert_eq!(&n["params"]["_meta"][meta::SUBSCRIPTION_ID], sub.id());
    client.unsubscribe(sub).await;
    // The client still works after its subscription closed.
    client.list_tools().await.expect("tools/list");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_legacy_get_stream_delivers_list_changes() {
    let h = spawn_http(server()).await;
    let client = Client::http(&h.url)
        .legacy(ProtocolVersion::V2025_06_18)
        .connect()
        .await
        .expect("legacy");
    client.open_stream().await.expect("GET stream");
    // The stream may attach just after the answer: announce until seen.
    let seen = tokio::time::timeout(WAIT, async {
        loop {
            h.server.notify(ServerEvent::ToolsChanged);
            let wait = tokio::time::sleep(std::time::Duration::from_millis(200));
            tokio::select! {
                n = client.next_notification() => {
                    if n.as_ref().map(|n| n["method"].clone())
                        == Some(json!("notifications/tools/list_changed")) {
                        return;
                    }
                }
                () = wait => {}
            }
        }
    })
    .await;
    assert!(seen.is_ok(), "no tools/list_changed on the GET stream");
    // A modern client has no GET stream.
    let modern = Client::http(&h.url).connect().await.expect("modern");
    let e = modern.open_stream().await.unwrap_err();
    assert!(matches!(e, ClientError::Unsupported(_)), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn transport_failures_are_errors_not_panics() {
    // Nothing listens on a port just released.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let client = Client::http(&format!("http://{addr}/mcp")).connect().await;
    let e = client.expect("connect sends nothing").list_tools().await;
    assert!(matches!(e, Err(ClientError::Transport(_))), "{e:?}");
    let e = Client::http("https://example.com/mcp").connect().await;
    assert!(matches!(e, Err(ClientError::Unsupported(_))), "{e:?}");
    let e = Client::http("http://127.0.0.1/mcp")
        .header("bad header", "x")
        .connect()
        .await;
    assert!(matches!(e, Err(ClientError::Transport(_))), "{e:?}");
    // A non-JSON-RPC answer (a 404 page) is reported with its status.
    let h = spawn_http(server()).await;
    let wrong = h.url.replace("/mcp", "/elsewhere");
    let client = Client::http(&wrong).connect().await.expect("client");
    let e = client.list_tools().await;
    assert!(
        matches!(e, Err(ClientError::Http { status: 404, .. })),
        "{e:?}"
    );
}
