//! The approval gate: a tool that needs the user's confirmation or an
//! operator's approval runs only after that yes, once, for the exact call.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcpwire_server::access::{
    Approval, ApprovalFallback, ApprovalLimits, ApprovalOptions, MemoryApprovals,
};
use mcpwire_server::client::Client;
use mcpwire_server::protocol::ProtocolVersion;
use mcpwire_server::protocol::model::InputRequest;
use mcpwire_server::{CallToolResult, Principal, Server, Tool, ToolOutcome, ToolResult};
use serde_json::{Map, Value, json};

/// A server with one tool of `approval`, counting its runs.
fn server(
    approval: Approval,
    options: ApprovalOptions,
    store: Arc<MemoryApprovals>,
) -> (Server, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let tool = Tool::builder("read-salary")
        .title("Read a salary")
        .input_schema(json!({
            "type": "object",
            "properties": { "employeeId": { "type": "string" } },
            "required": ["employeeId"]
        }))
        .approval(approval)
        .approval_summary(|_, args: Map<String, Value>| async move {
            Some(format!("read the salary of {}", args["employeeId"]))
        })
        .raw_handler(move |_, _| {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                ToolResult::Ok(ToolOutcome::from(CallToolResult::text("42")))
            }
        });
    let server = Server::builder("hr", "1")
        .tool(tool)
        .approvals(store)
        .approval_options(options)
        .build()
        .expect("server");
    (server, runs)
}

fn yes(request: InputRequest) -> impl std::future::Future<Output = Value> {
    let asked = request.params["message"].as_str().unwrap_or("").to_owned();
    async move {
        assert!(asked.contains("read the salary of \"E1\""), "{asked}");
        json!({ "action": "accept", "content": { "approve": true } })
    }
}

fn args(id: &str) -> Map<String, Value> {
    json!({ "name": "read-salary", "arguments": { "employeeId": id } })
        .as_object()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn confirm_runs_once_after_a_yes_on_both_wires() {
    let store = Arc::new(MemoryApprovals::default());
    let (server, runs) = server(Approval::Confirm, ApprovalOptions::default(), store);
    let modern = Client::builder(server.clone())
        .on_input(yes)
        .connect()
        .await
        .expect("connect");
    let reply = modern
        .call_tool("read-salary", json!({ "employeeId": "E1" }))
        .await
        .expect("call");
    assert!(!reply.is_error, "{}", reply.text());
    assert_eq!(reply.text(), "42");
    let legacy = Client::builder(server)
        .on_input(yes)
        .legacy(ProtocolVersion::LATEST_LEGACY)
        .connect()
        .await
        .expect("connect");
    let reply = legacy
        .call_tool("read-salary", json!({ "employeeId": "E1" }))
        .await
        .expect("call");
    assert_eq!(reply.text(), "42");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_declined_confirmation_does_not_run() {
    let store = Arc::new(MemoryApprovals::default());
    let (server, runs) = server(Approval::Confirm, ApprovalOptions::default(), store);
    let no = |_| async { json!({ "action": "decline" }) };
    for client in [
        Client::builder(server.clone()).on_input(no).connect().await,
        Client::builder(server.clone())
            .on_input(no)
            .legacy(ProtocolVersion::LATEST_LEGACY)
            .connect()
            .await,
    ] {
        let reply = client
            .expect("connect")
            .call_tool("read-salary", json!({ "employeeId": "E1" }))
            .await
            .expect("call");
        assert!(
            reply.is_error && reply.text().contains("declined"),
            "{}",
            reply.text()
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_confirmation_is_good_once_and_for_the_same_arguments_only() {
    let store = Arc::new(MemoryApprovals::default());
    let (server, runs) = server(Approval::Confirm, ApprovalOptions::default(), store);
    let client = Client::builder(server)
        .on_input(yes)
        .connect()
        .await
        .expect("connect");
    let asked = client
        .request_once("tools/call", args("E1"))
        .await
        .expect("ask");
    assert_eq!(asked["resultType"], "input_required");
    let mut retry = args("E1");
    retry.insert(
        "inputResponses".into(),
        json!({ "mcpwire.approval": { "action": "accept", "content": { "approve": true } } }),
    );
    retry.insert("requestState".into(), asked["requestState"].clone());
    let served = client
        .request_once("tools/call", retry.clone())
        .await
        .expect("served");
    assert_ne!(served.get("isError"), Some(&json!(true)), "{served:?}");
    let replay = client.request_once("tools/call", retry.clone()).await;
    assert!(replay.is_err(), "a replayed yes is refused: {replay:?}");
    let mut swapped = retry.clone();
    swapped.insert("arguments".into(), json!({ "employeeId": "E2" }));
    let swap = client.request_once("tools/call", swapped).await;
    assert!(swap.is_err(), "a yes for E1 does not read E2: {swap:?}");
    let mut forged = retry;
    forged.insert("requestState".into(), json!("e30.AAAA"));
    assert!(client.request_once("tools/call", forged).await.is_err());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_client_that_cannot_confirm_gets_the_fallback() {
    let store = Arc::new(MemoryApprovals::default());
    let (denying, runs) = server(Approval::Confirm, ApprovalOptions::default(), store);
    let mute = Client::builder(denying).connect().await.expect("connect");
    let reply = mute
        .call_tool("read-salary", json!({ "employeeId": "E1" }))
        .await
        .expect("call");
    assert!(
        reply.is_error && reply.text().contains("cannot ask"),
        "{}",
        reply.text()
    );
    let store = Arc::new(MemoryApprovals::default());
    let options = ApprovalOptions {
        wait: Duration::from_millis(50),
        fallback: ApprovalFallback::Operator,
        ..ApprovalOptions::default()
    };
    let (asking, _) = server(Approval::Confirm, options, Arc::clone(&store));
    let mute = Client::builder(asking).connect().await.expect("connect");
    let reply = mute
        .call_tool("read-salary", json!({ "employeeId": "E1" }))
        .await
        .expect("call");
    assert!(reply.text().contains("approval apr-"), "{}", reply.text());
    assert_eq!(store.pending().len(), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_operator_approves_the_exact_call_once_and_never_their_own() {
    let store = Arc::new(MemoryApprovals::new(ApprovalLimits {
        max_pending_per_subject: 2,
        ..ApprovalLimits::default()
    }));
    let options = ApprovalOptions {
        wait: Duration::from_millis(100),
        poll: Duration::from_millis(10),
        ..ApprovalOptions::default()
    };
    let (server, runs) = server(Approval::Operator, options, Arc::clone(&store));
    let client = Client::builder(server)
        .extension(Principal::new("ann"))
        .connect()
        .await
        .expect("connect");
    let call = || client.call_tool("read-salary", json!({ "employeeId": "E1" }));
    let waiting = call().await.expect("call");
    assert!(
        waiting.is_error && waiting.text().contains("retry the same call"),
        "{}",
        waiting.text()
    );
    let pending = store.pending();
    assert_eq!(pending.len(), 1);
    let (asked, ticket) = &pending[0];
    assert_eq!(asked.subject.as_deref(), Some("ann"));
    assert!(
        store.decide(&ticket.id, true, "ann", None).is_err(),
        "no self-approval"
    );
    store
        .decide(&ticket.id, true, "olga", Some("payroll check"))
        .expect("approve");
    let served = call().await.expect("retry");
    assert_eq!(served.text(), "42");
    let again = call().await.expect("again");
    assert!(again.is_error, "an approval serves one call");
    let other = client
        .call_tool("read-salary", json!({ "employeeId": "E2" }))
        .await
        .expect("other");
    assert!(other.is_error);
    let flood = client
        .call_tool("read-salary", json!({ "employeeId": "E3" }))
        .await
        .expect("flood");
    assert!(flood.text().contains("limit"), "{}", flood.text());
    let denied_id = store.pending()[0].1.id.clone();
    store
        .decide(&denied_id, false, "olga", Some("no"))
        .expect("deny");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
