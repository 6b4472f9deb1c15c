//! Two replicas in one process: two `Server`s on their own sockets sharing
//! one task backend and one limiter behave as one server. A task created
//! on A (its handler runs on A) is read, answered and cancelled on B; rate
//! and concurrency limits hold for A and B together.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::*;
use mcpwire_server::access::{CallLimiter, MemoryLimiter};
use mcpwire_server::protocol::model::InputRequest;
use mcpwire_server::tasks::{MemoryTasks, TaskBackend};
use mcpwire_server::{
    AccessOptions, CallToolResult, InputRequired, RateLimit, RequestContext, Server, TaskSupport,
    Tool, ToolError, ToolOutcome,
};
use serde_json::{Map, Value, json};

const EXT: &str = mcpwire_server::tasks::EXTENSION_ID;

/// What one replica's handlers saw.
#[derive(Default)]
struct Seen {
    /// Handler runs started on this replica.
    runs: AtomicUsize,
    /// A handler's token fired on this replica.
    cancelled: AtomicBool,
}

/// `wait`: sleeps `ms` unless cancelled. `ask`: asks one question, then
/// echoes the answer.
fn tools(seen: &Arc<Seen>) -> Vec<Tool> {
    let s = Arc::clone(seen);
    let wait = Tool::builder("wait")
        .task_support(TaskSupport::Optional)
        .raw_handler(move |ctx: RequestContext, args: Map<String, Value>| {
            let s = Arc::clone(&s);
            async move {
                s.runs.fetch_add(1, Ordering::SeqCst);
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(10);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    () = ctx.cancelled() => {
                        s.cancelled.store(true, Ordering::SeqCst);
                        return Err(ToolError::execution("cancelled"));
                    }
                }
                Ok::<ToolOutcome, ToolError>(CallToolResult::text(format!("waited {ms}")).into())
            }
        });
    let s = Arc::clone(seen);
    let ask = Tool::builder("ask")
        .task_support(TaskSupport::Optional)
        .raw_handler(move |ctx: RequestContext, _args: Map<String, Value>| {
            let s = Arc::clone(&s);
            async move {
                s.runs.fetch_add(1, Ordering::SeqCst);
                let name = ctx
                    .input_response("who")
                    .and_then(|a| a["content"]["name"].as_str())
                    .map(str::to_owned);
                let outcome = match name {
                    Some(n) => CallToolResult::text(format!("hello {n}")).into(),
                    None => InputRequired::new()
                        .request(
                            "who",
                            InputRequest::elicit("Who?", json!({"type": "object"})),
                        )
                        .into(),
                };
                Ok::<ToolOutcome, ToolError>(outcome)
            }
        });
    vec![wait, ask]
}

/// One replica on its own socket, sharing `backend` and `limiter`.
async fn replica(
    backend: &Arc<MemoryTasks>,
    limiter: &Arc<MemoryLimiter>,
    access: AccessOptions,
) -> (Http, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let mut b = Server::builder("replica", "1")
        .task_backend(Arc::clone(backend) as Arc<dyn TaskBackend>)
        .limiter(Arc::clone(limiter) as Arc<dyn CallLimiter>)
        .access(access);
    for t in tools(&seen) {
        b = b.tool(t);
    }
    (spawn_http(b.build().expect("builds")).await, seen)
}

async fn pair(access: AccessOptions) -> ((Http, Arc<Seen>), (Http, Arc<Seen>)) {
    let backend = Arc::new(MemoryTasks::new());
    let limiter = Arc::new(MemoryLimiter::new(1000, Duration::from_secs(60)));
    let a = replica(&backend, &limiter, access.clone()).await;
    let b = replica(&backend, &limiter, access).await;
    (a, b)
}

fn caps() -> Value {
    json!({ "elicitation": {}, "extensions": { EXT: {} } })
}

async fn create(h: &Http, tool: &str, arguments: Value) -> String {
    let body = req(
        1,
        "tools/call",
        json!({ "name": tool, "arguments": arguments, "_meta": meta_with(caps()) }),
    );
    let r = h.modern(&body).await;
    let res = &r.response()["result"];
    assert_eq!(res["resultType"], "task", "{}", r.raw);
    res["taskId"].as_str().expect("taskId").to_owned()
}

async fn task_rpc(h: &Http, method: &str, id: &str, extra: Value) -> Value {
    let mut params = extra.as_object().cloned().unwrap_or_default();
    params.insert("taskId".into(), json!(id));
    params.insert("_meta".into(), meta_with(caps()));
    let body = req(2, method, Value::Object(params));
    h.modern_plus(&body, &[("Mcp-Name", id)])
        .await
        .response()
        .clone()
}

/// Polls `tasks/get` on `h` until the status is one of `want`.
async fn wait_for(h: &Http, id: &str, want: &[&str]) -> Value {
    let start = Instant::now();
    loop {
        let r = task_rpc(h, "tasks/get", id, json!({})).await;
        let res = r["result"].clone();
        if want.contains(&res["status"].as_str().unwrap_or("")) {
            return res;
        }
        assert!(start.elapsed() < WAIT, "task stuck: {r}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_created_on_a_is_read_and_cancelled_on_b() {
    let ((a, seen_a), (b, seen_b)) = pair(AccessOptions::default()).await;
    let id = create(&a, "wait", json!({ "ms": 60_000 })).await;
    let working = wait_for(&b, &id, &["working"]).await;
    assert_eq!(working["taskId"], id.as_str());
    assert_eq!(seen_a.runs.load(Ordering::SeqCst), 1);
    assert_eq!(seen_b.runs.load(Ordering::SeqCst), 0);

    let ack = task_rpc(&b, "tasks/cancel", &id, json!({})).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = wait_for(&a, &id, &["cancelled", "completed", "failed"]).await;
    assert_eq!(done["status"], "cancelled", "{done}");
    // A's handler saw its token fire, though the cancel went to B.
    let start = Instant::now();
    while !seen_a.cancelled.load(Ordering::SeqCst) {
        assert!(start.elapsed() < WAIT, "A's handler was never cancelled");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!seen_b.cancelled.load(Ordering::SeqCst));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_result_finished_on_a_is_fetched_on_b() {
    let ((a, _), (b, _)) = pair(AccessOptions::default()).await;
    let id = create(&a, "wait", json!({ "ms": 50 })).await;
    let done = wait_for(&b, &id, &["completed", "failed"]).await;
    assert_eq!(done["result"]["content"][0]["text"], "waited 50", "{done}");
    // Unknown ids stay unknown on every replica.
    let r = task_rpc(&b, "tasks/get", "nope", json!({})).await;
    assert_eq!(error_code(&r), Some(-32602), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn input_answered_through_b_reaches_the_runner_on_a() {
    let ((a, seen_a), (b, seen_b)) = pair(AccessOptions::default()).await;
    let id = create(&a, "ask", json!({})).await;
    let parked = wait_for(&b, &id, &["input_required"]).await;
    assert!(parked["inputRequests"]["who"].is_object(), "{parked}");
    let answer = json!({ "who": { "action": "accept", "content": { "name": "Bo" } } });
    let r = task_rpc(&b, "tasks/update", &id, json!({ "inputResponses": answer })).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let done = wait_for(&b, &id, &["completed", "failed"]).await;
    assert_eq!(done["result"]["content"][0]["text"], "hello Bo", "{done}");
    // Both rounds ran on A, where the task was created.
    assert_eq!(seen_a.runs.load(Ordering::SeqCst), 2);
    assert_eq!(seen_b.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_holds_for_both_replicas_together() {
    let mut access = AccessOptions::default();
    access.rate_limit = Some(RateLimit::new(1, 4));
    let ((a, _), (b, _)) = pair(access).await;
    let mut admitted = 0;
    let mut limited = 0;
    for i in 0..10 {
        let h = if i % 2 == 0 { &a } else { &b };
        let r = h.modern(&call(i, "wait", json!({ "ms": 1 }))).await;
        match error_code(r.response()) {
            None => admitted += 1,
            Some(-31002) => limited += 1,
            other => panic!("unexpected {other:?}: {}", r.raw),
        }
    }
    // One bucket of 4 for the pair, not 4 per replica.
    assert_eq!((admitted, limited), (4, 6));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_concurrency_cap_holds_for_both_replicas_together() {
    let mut access = AccessOptions::default();
    access.max_concurrent_calls = Some(1);
    let ((a, _), (b, _)) = pair(access).await;
    let slow_body = call(1, "wait", json!({ "ms": 1_500 }));
    let slow = a.modern(&slow_body);
    let second = async {
        // Let A's call take the slot first.
        tokio::time::sleep(Duration::from_millis(300)).await;
        b.modern(&call(2, "wait", json!({ "ms": 1 }))).await
    };
    let (first, second) = tokio::join!(slow, second);
    assert_eq!(text_of(first.response()), "waited 1500", "{}", first.raw);
    assert_eq!(
        error_code(second.response()),
        Some(-31002),
        "{}",
        second.raw
    );
    // The slot is free again once A's call finished.
    let r = b.modern(&call(3, "wait", json!({ "ms": 1 }))).await;
    assert_eq!(text_of(r.response()), "waited 1", "{}", r.raw);
}
