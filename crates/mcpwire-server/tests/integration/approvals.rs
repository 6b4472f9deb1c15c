//! The approval gate: a tool that needs the user's confirmation or an
//! operator's approval runs only after that yes, once, for the exact call.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::{Http, Reply, WAIT, meta_with, req, spawn_http};
use mcpwire_server::InputRequired;
use mcpwire_server::access::{
    Approval, ApprovalFallback, ApprovalLimits, ApprovalOptions, AuditFuture, AuditRecord,
    AuditSink, CallOutcome, MemoryApprovals,
};
use mcpwire_server::client::Client;
use mcpwire_server::protocol::ProtocolVersion;
use mcpwire_server::protocol::model::InputRequest;
use mcpwire_server::{
    CallToolResult, Principal, Server, TaskSupport, Tool, ToolOutcome, ToolResult,
};
use serde_json::{Map, Value, json};

/// A server with one tool of `approval`, counting its runs.
fn server(
    approval: Approval,
    options: ApprovalOptions,
    store: Arc<MemoryApprovals>,
) -> (Server, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Server::builder("hr", "1")
        .tool(salary_tool(approval, TaskSupport::Forbidden, &runs))
        .approvals(store)
        .approval_options(options)
        .build()
        .expect("server");
    (server, runs)
}

/// The salary tool of `approval`, counting its runs in `runs`.
fn salary_tool(approval: Approval, tasks: TaskSupport, runs: &Arc<AtomicUsize>) -> Tool {
    let counter = Arc::clone(runs);
    Tool::builder("read-salary")
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
        .task_support(tasks)
        .raw_handler(move |_, _| {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                ToolResult::Ok(ToolOutcome::from(CallToolResult::text("42")))
            }
        })
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

/// A `confirm` tool that asks its own question ("why?") and sees its own
/// state back on the retry.
fn asking_tool(runs: &Arc<AtomicUsize>) -> Tool {
    let counter = Arc::clone(runs);
    Tool::builder("raise-salary")
        .approval(Approval::Confirm)
        .raw_handler(move |ctx: mcpwire_server::RequestContext, _| {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                let why = ctx
                    .input_response("why")
                    .and_then(|a| a["content"]["why"].as_str())
                    .map(str::to_owned);
                let state = ctx.request_state().cloned();
                ToolResult::Ok(match (why, state) {
                    (Some(why), Some(state)) if state["step"] == "asked" => {
                        CallToolResult::text(format!("raised: {why}")).into()
                    }
                    (Some(_), _) => CallToolResult::error("my state did not come back").into(),
                    (None, _) => InputRequired::new()
                        .request(
                            "why",
                            InputRequest::elicit("Why?", json!({"type": "object"})),
                        )
                        .state(json!({ "step": "asked" }))
                        .into(),
                })
            }
        })
}

#[tokio::test]
async fn a_confirmed_tool_asks_its_own_questions_without_a_second_confirmation() {
    let runs = Arc::new(AtomicUsize::new(0));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let server = Server::builder("hr", "1")
        .tool(asking_tool(&runs))
        .approvals(Arc::new(MemoryApprovals::default()))
        .build()
        .expect("server");
    for legacy in [false, true] {
        let seen = Arc::clone(&asked);
        let mut builder = Client::builder(server.clone()).on_input(move |r: InputRequest| {
            let message = r.params["message"].as_str().unwrap_or("").to_owned();
            seen.lock().expect("lock").push(message.clone());
            async move {
                if message == "Why?" {
                    json!({ "action": "accept", "content": { "why": "promotion" } })
                } else {
                    json!({ "action": "accept", "content": { "approve": true } })
                }
            }
        });
        if legacy {
            builder = builder.legacy(ProtocolVersion::LATEST_LEGACY);
        }
        let client = builder.connect().await.expect("connect");
        let reply = client
            .call_tool("raise-salary", json!({}))
            .await
            .expect("call");
        assert_eq!(reply.text(), "raised: promotion", "legacy {legacy}");
        let questions = std::mem::take(&mut *asked.lock().expect("lock"));
        assert_eq!(
            questions.len(),
            2,
            "one confirmation, one question: {questions:?}"
        );
        assert!(questions[0].contains("Allow it?"), "{questions:?}");
    }
    // 2026-07-28 by hand: the handler's round is good once.
    let client = Client::builder(server)
        .capabilities(json!({ "elicitation": {} }))
        .connect()
        .await
        .expect("connect");
    let call = || {
        json!({ "name": "raise-salary", "arguments": {} })
            .as_object()
            .cloned()
            .unwrap_or_default()
    };
    let first = client
        .request_once("tools/call", call())
        .await
        .expect("ask");
    let mut confirm = call();
    confirm.insert(
        "inputResponses".into(),
        json!({ "mcpwire.approval": { "action": "accept", "content": { "approve": true } } }),
    );
    confirm.insert("requestState".into(), first["requestState"].clone());
    let own = client
        .request_once("tools/call", confirm)
        .await
        .expect("own question");
    assert_eq!(own["resultType"], "input_required", "{own:?}");
    assert!(own["inputRequests"].get("why").is_some(), "{own:?}");
    let mut answer = call();
    answer.insert(
        "inputResponses".into(),
        json!({ "why": { "action": "accept", "content": { "why": "merit" } } }),
    );
    answer.insert("requestState".into(), own["requestState"].clone());
    let done = client
        .request_once("tools/call", answer.clone())
        .await
        .expect("served");
    assert_eq!(done["content"][0]["text"], "raised: merit", "{done:?}");
    let replay = client.request_once("tools/call", answer).await;
    assert!(
        replay.is_err(),
        "a handler round's state serves once: {replay:?}"
    );
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

const EXT: &str = mcpwire_server::tasks::EXTENSION_ID;

/// The audit rows written, in order.
#[derive(Default)]
struct Trail(Mutex<Vec<AuditRecord>>);

impl AuditSink for Trail {
    fn record(&self, record: AuditRecord) -> AuditFuture<'_> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(record);
        Box::pin(async { Ok(()) })
    }
}

impl Trail {
    fn rows(&self) -> Vec<(CallOutcome, String)> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|r| (r.outcome, r.detail.clone().unwrap_or_default()))
            .collect()
    }
}

/// A server whose salary tool of `approval` may run as a task (a short
/// synchronous `wait`, so only a task outlasts it), over HTTP.
async fn task_server(
    approval: Approval,
    options: ApprovalOptions,
    store: Arc<MemoryApprovals>,
    trail: Arc<Trail>,
) -> (Http, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Server::builder("hr", "1")
        .tool(salary_tool(approval, TaskSupport::Optional, &runs))
        .approvals(store)
        .approval_options(ApprovalOptions {
            wait: Duration::from_millis(50),
            poll: Duration::from_millis(10),
            ..options
        })
        .audit(trail)
        .build()
        .expect("server");
    (spawn_http(server).await, runs)
}

/// The client capabilities of a task-capable client that cannot elicit.
fn task_meta() -> Value {
    meta_with(json!({ "extensions": { EXT: {} } }))
}

/// Calls the salary tool for `employee` asking for a task; the result.
async fn task_call(h: &Http, employee: &str) -> Value {
    let body = req(
        1,
        "tools/call",
        json!({
            "name": "read-salary",
            "arguments": { "employeeId": employee },
            "_meta": task_meta(),
        }),
    );
    let r = h.modern(&body).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    r.response()["result"].clone()
}

async fn task_rpc(h: &Http, method: &str, task_id: &str) -> Reply {
    let body = req(
        2,
        method,
        json!({ "taskId": task_id, "_meta": task_meta() }),
    );
    h.modern_plus(&body, &[("Mcp-Name", task_id)]).await
}

/// Polls `tasks/get` until the status is one of `want`.
async fn wait_for(h: &Http, id: &str, want: &[&str]) -> Value {
    let start = Instant::now();
    loop {
        let r = task_rpc(h, "tasks/get", id).await;
        let res = r.response()["result"].clone();
        if want.contains(&res["status"].as_str().unwrap_or("")) {
            return res;
        }
        assert!(start.elapsed() < WAIT, "task stuck: {}", r.raw);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates the waiting task; its id and the approval it waits for.
async fn waiting_task(h: &Http, store: &MemoryApprovals, employee: &str) -> (String, String) {
    let created = task_call(h, employee).await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working", "{created}");
    let pending = store.pending();
    assert_eq!(pending.len(), 1, "one approval is filed");
    let approval = pending[0].1.id.clone();
    assert_eq!(
        created["statusMessage"],
        format!("waiting for approval by an operator ({approval})"),
        "{created}"
    );
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    (id, approval)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_waits_for_the_operator_and_serves_the_call_once() {
    let store = Arc::new(MemoryApprovals::default());
    let trail = Arc::new(Trail::default());
    let options = ApprovalOptions::default();
    let (h, runs) = task_server(
        Approval::Operator,
        options,
        Arc::clone(&store),
        Arc::clone(&trail),
    )
    .await;
    let (id, approval) = waiting_task(&h, &store, "E1").await;
    // Longer than the synchronous wait: the task keeps waiting.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = task_rpc(&h, "tasks/get", &id).await;
    let seen = &r.response()["result"];
    assert_eq!(seen["status"], "working", "{seen}");
    let message = seen["statusMessage"].as_str().unwrap_or_default();
    assert!(message.contains(&approval), "{seen}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    store
        .decide(&approval, true, "olga", Some("payroll check"))
        .expect("approve");
    let done = wait_for(&h, &id, &["completed", "failed", "cancelled"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "42", "{done}");
    assert_ne!(done["result"]["isError"], true, "{done}");
    assert!(done.get("statusMessage").is_none(), "cleared: {done}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let rows = trail.rows();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].0, CallOutcome::ApprovalPending);
    assert!(
        rows[0].1.contains(&approval) && rows[0].1.contains(&id),
        "{rows:?}"
    );
    assert_eq!(rows[1].0, CallOutcome::Success);
    assert_eq!(
        rows[1].1,
        format!("approval {approval} approved by olga, served as task {id}")
    );
    // The approval served its call: the same call asks for a new one.
    let again = task_call(&h, "E1").await;
    assert_eq!(again["resultType"], "task", "{again}");
    assert_eq!(store.pending().len(), 1);
    assert_ne!(store.pending()[0].1.id, approval);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_approval_completes_the_task_with_the_refusal() {
    let store = Arc::new(MemoryApprovals::default());
    let trail = Arc::new(Trail::default());
    // A client that cannot confirm falls back to an operator.
    let options = ApprovalOptions {
        fallback: ApprovalFallback::Operator,
        ..ApprovalOptions::default()
    };
    let (h, runs) = task_server(
        Approval::Confirm,
        options,
        Arc::clone(&store),
        Arc::clone(&trail),
    )
    .await;
    let (id, approval) = waiting_task(&h, &store, "E2").await;
    store
        .decide(&approval, false, "olga", Some("not this month"))
        .expect("deny");
    let done = wait_for(&h, &id, &["completed", "failed", "cancelled"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("olga") && text.contains("denied") && text.contains("not this month"),
        "{text}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let rows = trail.rows();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[1].0, CallOutcome::ApprovalDenied, "{rows:?}");
    assert!(rows[1].1.contains(&id), "{rows:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_that_lapses_completes_the_task_with_an_error() {
    let store = Arc::new(MemoryApprovals::default());
    let options = ApprovalOptions {
        ttl: Duration::from_millis(300),
        ..ApprovalOptions::default()
    };
    let (h, runs) = task_server(
        Approval::Operator,
        options,
        Arc::clone(&store),
        Arc::default(),
    )
    .await;
    let (id, approval) = waiting_task(&h, &store, "E3").await;
    let done = wait_for(&h, &id, &["completed", "failed", "cancelled"]).await;
    assert_eq!(done["result"]["isError"], true, "{done}");
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains(&approval) && text.contains("expired"),
        "{text}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_a_task_that_waits_for_an_operator_stops_it() {
    let store = Arc::new(MemoryApprovals::default());
    let trail = Arc::new(Trail::default());
    let (h, runs) = task_server(
        Approval::Operator,
        ApprovalOptions::default(),
        Arc::clone(&store),
        Arc::clone(&trail),
    )
    .await;
    let (id, approval) = waiting_task(&h, &store, "E4").await;
    let r = task_rpc(&h, "tasks/cancel", &id).await;
    assert_eq!(
        r.response()["result"]["resultType"],
        "complete",
        "{}",
        r.raw
    );
    let done = wait_for(&h, &id, &["cancelled", "completed", "failed"]).await;
    assert_eq!(done["status"], "cancelled", "{done}");
    // An approval given after the cancel serves nothing.
    store
        .decide(&approval, true, "olga", None)
        .expect("approve");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = wait_for(&h, &id, &["cancelled", "completed", "failed"]).await;
    assert_eq!(after["status"], "cancelled", "{after}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        trail.rows().len(),
        1,
        "only the creation: {:?}",
        trail.rows()
    );
}
