//! The client's child-process mode (`Client::child`, feature
//! `client-stdio`) against the standard test server in a real child
//! process on both wires: calls, input round trips (a legacy session's
//! server→client requests answered on stdin), progress, subscriptions,
//! list changes, close and drop, and a child that is gone.
//!
//! The child is this test binary run again as [`child_server`]: libtest's
//! own lines on stdout ("running 1 test", …) are not JSON, which the client
//! skips, so they double as a check of that. Each test is bounded by
//! [`WAIT`]: a lost response would otherwise hang it.

use std::process::Stdio;
use std::time::Duration;

use crate::common;

use common::*;
use mcpwire_server::ServerEvent;
use mcpwire_server::client::{Client, ClientError};
use mcpwire_server::protocol::ProtocolVersion;
use mcpwire_server::protocol::meta;
use mcpwire_server::transport::stdio::{self, StdioConfig};
use serde_json::{Map, Value, json};
use tokio::io::AsyncWriteExt;

/// Set in the child's environment: [`child_server`] serves only then.
const CHILD_ENV: &str = "MCPWIRE_CLIENT_STDIO_CHILD";

/// Not a test on its own: the server half of the tests below, run in a
/// child process of this binary. Serves the standard test server on
/// stdin/stdout and announces a tool list change every 100 ms (so
/// subscriptions and legacy sessions have something to receive).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "the server half of client_stdio, run only as its child process"]
async fn child_server() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let server = server();
    let announcer = server.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            announcer.notify(ServerEvent::ToolsChanged);
        }
    });
    // libtest left "test client_stdio::child_server ... " without a
    // newline: end that line so the first message starts its own.
    let mut stdout = tokio::io::stdout();
    stdout.write_all(b"\n").await.expect("write stdout");
    stdout.flush().await.expect("flush stdout");
    let stdin = tokio::io::stdin();
    let served = stdio::serve(server, StdioConfig::default(), stdin, stdout).await;
    served.expect("serve stdio");
}

/// The command that runs [`child_server`].
fn child() -> tokio::process::Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut command = tokio::process::Command::new(exe);
    command
        .args(["--exact", "client_stdio::child_server", "--ignored"])
        .args(["--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .stderr(Stdio::null());
    command
}

/// Runs a test body within a bound (a lost line would hang it).
async fn bounded(test: impl std::future::Future<Output = ()>) {
    let limit = WAIT * 3;
    let ran = tokio::time::timeout(limit, test).await;
    assert!(ran.is_ok(), "the test took over {limit:?}");
}

/// Answers elicitations with `ok: true` and sampling with a fixed text.
async fn answer(request: mcpwire_server::protocol::model::InputRequest) -> Value {
    match request.method.as_str() {
        "elicitation/create" => json!({ "action": "accept", "content": { "ok": true } }),
        _ => {
            json!({ "role": "assistant", "content": { "type": "text", "text": "a haiku" }, "model": "m" })
        }
    }
}

/// A modern and a legacy client, each with a child of its own.
async fn both_wires() -> Vec<Client> {
    let modern = Client::child(child()).on_input(answer).connect().await;
    let legacy = Client::child(child())
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
async fn tools_answer_over_a_childs_stdio_on_both_wires() {
    bounded(async {
        for client in both_wires().await {
            assert_eq!(client.session_id(), None);
            let tools = client.list_tools().await.expect("tools/list");
            assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
            let r = client.call_tool("add", json!({ "a": 2, "b": 3 })).await;
            assert_eq!(r.expect("add").structured, Some(json!({ "sum": 5 })));
            let r = client.call_tool("fail", json!({})).await.expect("fail");
            assert!(r.is_error && r.text().contains("tomorrow"), "{r:?}");
            let e = client.call_tool("nope", json!({})).await.unwrap_err();
            assert_eq!(e.code(), Some(-32602), "{e}");
            // Requests in flight at once are routed by id.
            let (a, b) = tokio::join!(
                client.call_tool("echo", json!({ "text": "one" })),
                client.call_tool("echo", json!({ "text": "two" })),
            );
            assert_eq!(
                a.expect("echo one").structured,
                Some(json!({ "text": "one", "length": 3 }))
            );
            assert_eq!(
                b.expect("echo two").structured,
                Some(json!({ "text": "two", "length": 3 }))
            );
            let status = client.close_child().await.expect("an exit status");
            assert!(status.success(), "the child failed: {status}");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn input_requests_are_answered_over_stdio_on_both_wires() {
    bounded(async {
        for client in both_wires().await {
            let r = client.call_tool("ask", json!({ "topic": "x" })).await;
            let text: Value = serde_json::from_str(&r.expect("ask").text()).expect("JSON");
            assert_eq!(text["answer"]["content"]["ok"], true, "{text}");
            assert_eq!(text["topic"], "x");
            let r = client.call_tool("sample", json!({})).await.expect("sample");
            assert!(r.text().contains("a haiku"), "{}", r.text());
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_arrives_as_notifications_before_the_result() {
    bounded(async {
        for client in both_wires().await {
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
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn subscriptions_and_legacy_list_changes_arrive_over_stdio() {
    bounded(async {
        let client = Client::child(child()).connect().await.expect("modern");
        let mut sub = client
            .listen(json!({ "toolsListChanged": true }))
            .await
            .expect("listen");
        assert_eq!(
            sub.acknowledgement()["method"],
            "notifications/subscriptions/acknowledged"
        );
        let n = tokio::time::timeout(WAIT, sub.next())
            .await
            .expect("in time");
        let n = n.expect("a notification");
        assert_eq!(n["method"], "notifications/tools/list_changed");
        assert_eq!(&n["params"]["_meta"][meta::SUBSCRIPTION_ID], sub.id());
        client.unsubscribe(sub).await;
        client
            .list_tools()
            .await
            .expect("tools/list after unsubscribing");

        let legacy = Client::child(child())
            .legacy(ProtocolVersion::V2025_06_18)
            .connect()
            .await
            .expect("legacy");
        legacy
            .open_stream()
            .await
            .expect("nothing to open on stdio");
        let n = tokio::time::timeout(WAIT, legacy.next_notification()).await;
        let n = n.expect("in time").expect("a notification");
        assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_the_client_kills_its_child() {
    bounded(async {
        let client = Client::child(child()).connect().await.expect("client");
        client.list_tools().await.expect("tools/list");
        let pid = client.child_id().expect("a running child");
        drop(client);
        let gone = tokio::time::timeout(WAIT, async {
            while std::path::Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(gone.is_ok(), "child {pid} still runs after the drop");
    })
    .await;
}

/// Whether `pid` exited and waits to be reaped (tokio reaps orphans of
/// `kill_on_drop` in the background, not at once).
fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_that_is_gone_fails_calls_instead_of_hanging() {
    bounded(async {
        let e = Client::child(tokio::process::Command::new("/nonexistent/mcp-server"))
            .connect()
            .await;
        assert!(matches!(e, Err(ClientError::Transport(_))), "{e:?}");
        // `true` exits at once: the call is refused, not left waiting.
        let client = Client::child(tokio::process::Command::new("true"))
            .connect()
            .await
            .expect("spawned");
        let e = tokio::time::timeout(WAIT, client.list_tools()).await;
        let e = e.expect("an answer in time");
        assert_eq!(e.map(|_| ()), Err(ClientError::Closed));
        // The legacy handshake fails the same way.
        let e = Client::child(tokio::process::Command::new("true"))
            .legacy(ProtocolVersion::V2025_06_18)
            .connect()
            .await;
        assert!(matches!(e, Err(ClientError::Closed)), "{e:?}");
    })
    .await;
}
