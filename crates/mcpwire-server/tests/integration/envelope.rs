//! The engine's front door, [`Server::accept`], under hostile input: a
//! property-based fuzz of the envelope (every input answered, never a
//! panic, every answer one JSON-RPC message), and panic isolation of a
//! request on every transport.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{builder, call, req, spawn_http, spawn_stdio};
use mcpwire_server::engine::{Accepted, MessageLimits, Origin};
use mcpwire_server::{Reply, Server, Tool, ToolOutcome};
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const LIMITS: MessageLimits = MessageLimits::new(64 * 1024, 32);

fn panicking_tool() -> Tool {
    Tool::builder("explode")
        .description("Panics.")
        .raw_handler(|_ctx, _args| async move {
            if std::hint::black_box(true) {
                panic!("boom");
            }
            Ok(ToolOutcome::Complete(mcpwire_server::CallToolResult::text(
                "never",
            )))
        })
}

fn server() -> Server {
    builder()
        .tool(panicking_tool())
        .build()
        .expect("server builds")
}

/// Feeds one message through the engine as Streamable HTTP and as a
/// stream connection would, and checks the answer's shape.
async fn exercise(server: &Server, bytes: &[u8]) {
    let headers = http::HeaderMap::new();
    let origin = Origin {
        headers: Some(&headers),
        connection: None,
        extensions: Arc::new(http::Extensions::new()),
        limits: LIMITS,
    };
    match server.accept(bytes, origin).await {
        Accepted::Answer(a) => {
            let v: Value = serde_json::from_str(&a.response.to_json()).expect("answer is JSON");
            assert_eq!(v["jsonrpc"], "2.0");
            assert!(v.get("error").is_some() || v.get("result").is_some(), "{v}");
        }
        Accepted::Taken => {}
        Accepted::Request(p) => {
            let reply = tokio::time::timeout(
                Duration::from_secs(5),
                p.serve(None, CancellationToken::new()),
            )
            .await
            .expect("request answered in time");
            if let Reply::Response(r) = reply {
                let v: Value = serde_json::from_str(&r.to_json()).expect("response is JSON");
                assert_eq!(v["jsonrpc"], "2.0");
            }
        }
        _ => panic!("a kind of acceptance this test does not know"),
    }
}

/// Valid-looking messages to mutate.
fn seeds() -> Vec<Vec<u8>> {
    [
        req(1, "tools/list", json!({})),
        call(2, "echo", json!({ "text": "hi" })),
        call(3, "add", json!({ "a": 1, "b": 2 })),
        req(4, "server/discover", json!({})),
        json!({"jsonrpc": "2.0", "id": 5, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}),
        json!([{"jsonrpc": "2.0", "id": 6, "method": "ping"}]),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
    ]
    .iter()
    .map(|v| v.to_string().into_bytes())
    .collect()
}

fn mutated() -> impl Strategy<Value = Vec<u8>> {
    let seeds = seeds();
    (
        0..seeds.len(),
        proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 0..8),
    )
        .prop_map(move |(i, edits)| {
            let mut b = seeds[i].clone();
            for (at, byte, op) in edits {
                let at = if b.is_empty() { 0 } else { at % b.len() };
                match op {
                    0 if !b.is_empty() => b[at] = byte,
                    1 => b.insert(at, byte),
                    _ if !b.is_empty() => {
                        b.remove(at);
                    }
                    _ => b.push(byte),
                }
            }
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn mutated_messages_are_always_answered(bytes in mutated()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        let server = server();
        rt.block_on(exercise(&server, &bytes));
    }

    #[test]
    fn arbitrary_bytes_are_always_answered(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        let server = server();
        rt.block_on(exercise(&server, &bytes));
    }
}

#[tokio::test]
async fn a_panicking_handler_is_isolated_on_http_framing() {
    let server = server();
    let body = call(7, "explode", json!({})).to_string();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "mcp-protocol-version",
        http::HeaderValue::from_static("2026-07-28"),
    );
    headers.insert("mcp-method", http::HeaderValue::from_static("tools/call"));
    headers.insert("mcp-name", http::HeaderValue::from_static("explode"));
    let origin = Origin {
        headers: Some(&headers),
        connection: None,
        extensions: Arc::new(http::Extensions::new()),
        limits: LIMITS,
    };
    let Accepted::Request(p) = server.accept(body.as_bytes(), origin).await else {
        panic!("a request");
    };
    let Reply::Response(r) = p.serve(None, CancellationToken::new()).await else {
        panic!("a response");
    };
    let v: Value = serde_json::from_str(&r.to_json()).expect("json");
    assert_eq!(v["id"], 7);
    assert_eq!(v["error"]["code"], -32603, "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panicking_handler_is_isolated_on_http() {
    // The handler runs in the connection's own task: its panic must not
    // take that task (or the server) down.
    let h = spawn_http(server()).await;
    let r = h.modern(&call(5, "explode", json!({}))).await;
    assert_eq!(r.response()["id"], 5);
    assert_eq!(r.response()["error"]["code"], -32603, "{}", r.raw);
    let r = h.modern(&call(6, "add", json!({ "a": 1, "b": 2 }))).await;
    assert!(r.response().get("result").is_some(), "{}", r.raw);
}

#[tokio::test]
async fn a_panicking_handler_is_isolated_on_stdio() {
    let mut s = spawn_stdio(server());
    s.send(&call(8, "explode", json!({}))).await;
    let reply = s.recv().await;
    assert_eq!(reply["id"], 8);
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    s.send(&call(9, "add", json!({ "a": 1, "b": 2 }))).await;
    let reply = s.recv().await;
    assert_eq!(reply["id"], 9);
    assert!(reply.get("result").is_some(), "{reply}");
}
