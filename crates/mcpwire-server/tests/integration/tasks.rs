//! The tasks extension (SEP-2663): advertisement, per-request opt-in,
//! task creation, `tasks/get|update|cancel`, input rounds inside a task,
//! deferred creation after synchronous input, owner binding, headers.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;
use mcpwire_server::protocol::model::InputRequest;
use mcpwire_server::protocol::{Request, RequestId};
use mcpwire_server::{
    CallToolResult, Inbound, InputRequired, Principal, RequestContext, Server, TaskOptions,
    TaskSupport, Tool, ToolError, ToolOutcome, Wire,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

const EXT: &str = mcpwire_server::tasks::EXTENSION_ID;

fn task_caps() -> Value {
    json!({ "elicitation": {}, "extensions": { EXT: {} } })
}

/// Sleeps `ms` (default 100), then answers; sets `cancelled` if its token fires.
fn sleeper(cancelled: Arc<AtomicBool>) -> Tool {
    Tool::builder("sleeper")
        .task_support(TaskSupport::Optional)
        .raw_handler(move |ctx: RequestContext, args: Map<String, Value>| {
            let cancelled = Arc::clone(&cancelled);
            async move {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(100);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    () = ctx.cancelled() => {
                        cancelled.store(true, Ordering::SeqCst);
                        return Err(ToolError::execution("cancelled"));
                    }
                }
                let in_task = ctx.task_id().is_some();
                Ok::<ToolOutcome, ToolError>(
                    CallToolResult::text(format!("slept {ms} ms (task: {in_task})")).into(),
                )
            }
        })
}

fn task_server(cancelled: Arc<AtomicBool>) -> Server {
    Server::builder("tasks-test", "0.0.1")
        .tool(sleeper(cancelled))
        .tool(
            Tool::builder("must_task")
                .task_support(TaskSupport::Required)
                .raw_handler(
                    |_ctx: RequestContext, _args: Map<String, Value>| async move {
                        Ok::<ToolOutcome, ToolError>(CallToolResult::text("done").into())
                    },
                ),
        )
        .tool(
            Tool::builder("tool_error")
                .task_support(TaskSupport::Optional)
                .raw_handler(
                    |_ctx: RequestContext, _args: Map<String, Value>| async move {
                        Err::<ToolOutcome, ToolError>(ToolError::execution("no such record"))
                    },
                ),
        )
        .tool(
            Tool::builder("internal_error")
                .task_support(TaskSupport::Optional)
                .raw_handler(
                    |_ctx: RequestContext, _args: Map<String, Value>| async move {
                        Err::<ToolOutcome, ToolError>(ToolError::Internal("secret detail".into()))
                    },
                ),
        )
        .tool(
            Tool::builder("panics")
                .task_support(TaskSupport::Optional)
                .raw_handler(
                    |_ctx: RequestContext, _args: Map<String, Value>| async move {
                        if std::hint::black_box(true) {
                            panic!("handler bug");
                        }
                        Ok::<ToolOutcome, ToolError>(CallToolResult::text("unreachable").into())
                    },
                ),
        )
        .tool(
            Tool::builder("two_questions")
                .task_support(TaskSupport::Optional)
                .raw_handler(
                    |ctx: RequestContext, _args: Map<String, Value>| async move {
                        let name = |k: &str| {
                            ctx.input_response(k)
                                .and_then(|a| a["content"]["name"].as_str())
                                .map(str::to_owned)
                        };
                        let outcome = match (name("a"), name("b"), ctx.request_state()) {
                            (Some(a), Some(b), Some(state)) => {
                                CallToolResult::text(format!("{a}+{b} state={state}")).into()
                            }
                            _ => InputRequired::new()
                                .request("a", InputRequest::elicit("A?", json!({"type": "object"})))
                                .request("b", InputRequest::elicit("B?", json!({"type": "object"})))
                                .state(json!({ "round": 1 }))
                                .into(),
                        };
                        Ok::<ToolOutcome, ToolError>(outcome)
                    },
                ),
        )
        .tool(
            Tool::builder("ask_then_task")
                .task_support(TaskSupport::Required)
                .defer_task_creation()
                .raw_handler(
                    |ctx: RequestContext, _args: Map<String, Value>| async move {
                        let Some(name) = ctx
                            .input_response("who")
                            .and_then(|a| a["content"]["name"].as_str())
                            .map(str::to_owned)
                        else {
                            return Ok(InputRequired::new()
                                .request(
                                    "who",
                                    InputRequest::elicit("Who?", json!({"type": "object"})),
                                )
                                .into());
                        };
                        assert!(ctx.task_id().is_none());
                        assert!(ctx.start_task().await);
                        assert!(ctx.task_id().is_some());
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Ok::<ToolOutcome, ToolError>(
                            CallToolResult::text(format!("Hi {name}")).into(),
                        )
                    },
                ),
        )
        .build()
        .expect("server builds")
}

fn tcall(id: i64, name: &str, arguments: Value) -> Value {
    req(
        id,
        "tools/call",
        json!({ "name": name, "arguments": arguments, "_meta": meta_with(task_caps()) }),
    )
}

fn task_req(id: i64, method: &str, task_id: &str, extra: Value) -> Value {
    let mut params = extra.as_object().cloned().unwrap_or_default();
    params.insert("taskId".into(), json!(task_id));
    params.insert("_meta".into(), meta_with(task_caps()));
    req(id, method, Value::Object(params))
}

async fn task_rpc(h: &Http, id: i64, method: &str, task_id: &str, extra: Value) -> Reply {
    h.modern_plus(
        &task_req(id, method, task_id, extra),
        &[("Mcp-Name", task_id)],
    )
    .await
}

/// Creates a task and returns its id (asserting the `CreateTaskResult` shape).
async fn create(h: &Http, name: &str, arguments: Value) -> String {
    let r = h.modern(&tcall(1, name, arguments)).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let res = &r.response()["result"];
    assert_eq!(res["resultType"], "task", "{res}");
    assert_eq!(res["status"], "working", "{res}");
    for key in [
        "result",
        "error",
        "inputRequests",
        "requestState",
        "task",
        "ttl",
    ] {
        assert!(res.get(key).is_none(), "{key} in {res}");
    }
    assert!(res["ttlMs"].as_u64().is_some_and(|t| t > 0), "{res}");
    assert!(
        res["pollIntervalMs"].as_u64().is_some_and(|t| t > 0),
        "{res}"
    );
    for key in ["createdAt", "lastUpdatedAt"] {
        let t = res[key].as_str().expect("timestamp");
        assert!(
            t.len() >= 20 && t.ends_with('Z') && &t[10..11] == "T",
            "{t}"
        );
    }
    assert!(res["_meta"][META_SERVER_INFO].is_object(), "{res}");
    res["taskId"].as_str().expect("taskId").to_owned()
}

/// Polls `tasks/get` until the status is one of `want`.
async fn wait_for(h: &Http, id: &str, want: &[&str]) -> Value {
    let start = Instant::now();
    loop {
        let r = task_rpc(h, 9, "tasks/get", id, json!({})).await;
        let res = r.response()["result"].clone();
        assert_eq!(res["resultType"], "complete", "{}", r.raw);
        if want.contains(&res["status"].as_str().unwrap_or("")) {
            return res;
        }
        assert!(start.elapsed() < WAIT, "task stuck: {res}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_extension_is_advertised_on_the_modern_wire_only() {
    let h = spawn_http(task_server(Arc::default())).await;
    let r = h.modern(&req(1, "server/discover", json!({}))).await;
    let caps = &r.response()["result"]["capabilities"];
    assert_eq!(caps["extensions"][EXT], json!({}), "{caps}");
    assert!(caps.get("tasks").is_none());
    let (_, init) = h.initialize(Some("2025-11-25"), json!({})).await;
    assert!(
        init["result"]["capabilities"].get("extensions").is_none(),
        "{init}"
    );

    // A server without task tools advertises nothing and keeps -32601.
    let plain = spawn_http(server()).await;
    let r = plain.modern(&req(1, "server/discover", json!({}))).await;
    assert!(
        r.response()["result"]["capabilities"]
            .get("extensions")
            .is_none()
    );
    let r = task_rpc(&plain, 2, "tasks/get", "x", json!({})).await;
    assert_eq!(error_code(r.response()), Some(-32601), "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_extension_calls_are_synchronous_and_task_methods_refused() {
    let h = spawn_http(task_server(Arc::default())).await;
    let r = h.modern(&call(1, "sleeper", json!({ "ms": 1 }))).await;
    let res = &r.response()["result"];
    assert_eq!(res["resultType"], "complete", "{res}");
    assert!(res.get("taskId").is_none());
    assert_eq!(text_of(r.response()), "slept 1 ms (task: false)");

    let r = h.modern(&call(2, "must_task", json!({}))).await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert_eq!(error_code(r.response()), Some(-32021), "{}", r.raw);
    assert_eq!(
        r.response()["error"]["data"]["requiredCapabilities"],
        json!({ "extensions": { EXT: {} } })
    );

    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let body = req(3, method, json!({ "taskId": "t", "inputResponses": {} }));
        let r = h.modern_plus(&body, &[("Mcp-Name", "t")]).await;
        assert_eq!(
            error_code(r.response()),
            Some(-32021),
            "{method}: {}",
            r.raw
        );
    }
    // Legacy `tasks/result` and `tasks/list` do not exist.
    for method in ["tasks/result", "tasks/list"] {
        let r = h.modern(&task_req(4, method, "t", json!({}))).await;
        assert_eq!(
            error_code(r.response()),
            Some(-32601),
            "{method}: {}",
            r.raw
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_runs_in_the_background_and_inlines_its_result() {
    let h = spawn_http(task_server(Arc::default())).await;
    let id = create(&h, "sleeper", json!({ "ms": 300 })).await;
    // Readable immediately (durable create), still working.
    let r = task_rpc(&h, 2, "tasks/get", &id, json!({})).await;
    let res = &r.response()["result"];
    assert_eq!(res["taskId"], id.as_str());
    assert_eq!(res["status"], "working", "{res}");
    assert!(res.get("result").is_none() && res.get("requestState").is_none());

    let done = wait_for(&h, &id, &["completed", "failed", "cancelled"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"],
        "slept 300 ms (task: true)"
    );
    assert_eq!(done["result"]["resultType"], "complete");
    assert!(done["result"].get("_meta").is_none(), "{done}");
    // Still readable afterwards.
    let again = wait_for(&h, &id, &["completed"]).await;
    assert_eq!(again["taskId"], id.as_str());
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_errors_complete_and_protocol_errors_fail() {
    let h = spawn_http(task_server(Arc::default())).await;
    let id = create(&h, "tool_error", json!({})).await;
    let done = wait_for(&h, &id, &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true);

    for tool in ["internal_error", "panics"] {
        let id = create(&h, tool, json!({})).await;
        let done = wait_for(&h, &id, &["completed", "failed"]).await;
        assert_eq!(done["status"], "failed", "{tool}: {done}");
        assert_eq!(done["error"]["code"], -32603, "{done}");
        assert!(done["error"]["message"].is_string());
        assert!(!done.to_string().contains("secret detail"), "{done}");
        assert!(done.get("result").is_none());
    }
    h.assert_alive().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_stops_the_handler_and_is_idempotent() {
    let cancelled = Arc::new(AtomicBool::new(false));
    let h = spawn_http(task_server(Arc::clone(&cancelled))).await;
    let id = create(&h, "sleeper", json!({ "ms": 60_000 })).await;
    let r = task_rpc(&h, 2, "tasks/cancel", &id, json!({})).await;
    let ack = &r.response()["result"];
    assert_eq!(ack["resultType"], "complete", "{ack}");
    assert!(ack.get("taskId").is_none() && ack.get("status").is_none());
    let done = wait_for(&h, &id, &["cancelled", "completed", "failed"]).await;
    assert_eq!(done["status"], "cancelled", "{done}");
    let start = Instant::now();
    while !cancelled.load(Ordering::SeqCst) {
        assert!(start.elapsed() < WAIT, "the handler's token never fired");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Again on the terminal task: the same empty ack.
    let r = task_rpc(&h, 3, "tasks/cancel", &id, json!({})).await;
    assert_eq!(
        r.response()["result"]["resultType"],
        "complete",
        "{}",
        r.raw
    );
    // Unknown ids: -32602, for every method.
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let r = task_rpc(&h, 4, method, "nope", json!({ "inputResponses": {} })).await;
        assert_eq!(
            error_code(r.response()),
            Some(-32602),
            "{method}: {}",
            r.raw
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn input_rounds_inside_a_task_accept_partial_answers() {
    let h = spawn_http(task_server(Arc::default())).await;
    let id = create(&h, "two_questions", json!({})).await;
    let parked = wait_for(&h, &id, &["input_required"]).await;
    let keys: Vec<&String> = parked["inputRequests"]
        .as_object()
        .expect("map")
        .keys()
        .collect();
    assert_eq!(keys, ["a", "b"], "{parked}");
    assert_eq!(parked["inputRequests"]["a"]["method"], "elicitation/create");
    assert!(parked.get("requestState").is_none());

    let answer = |n: &str| json!({ "action": "accept", "content": { "name": n } });
    let r = task_rpc(
        &h,
        2,
        "tasks/update",
        &id,
        json!({ "inputResponses": { "a": answer("A"), "zzz": answer("ignored") } }),
    )
    .await;
    let ack = &r.response()["result"];
    assert_eq!(ack["resultType"], "complete", "{}", r.raw);
    assert!(ack.get("status").is_none());
    let still = wait_for(&h, &id, &["input_required"]).await;
    let keys: Vec<&String> = still["inputRequests"]
        .as_object()
        .expect("map")
        .keys()
        .collect();
    assert_eq!(keys, ["b"], "{still}");

    let r = task_rpc(
        &h,
        3,
        "tasks/update",
        &id,
        json!({ "inputResponses": { "b": answer("B") } }),
    )
    .await;
    assert_eq!(
        r.response()["result"]["resultType"],
        "complete",
        "{}",
        r.raw
    );
    let done = wait_for(&h, &id, &["completed", "failed"]).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "A+B state={\"round\":1}",
        "{done}"
    );

    // A malformed update is invalid params.
    let r = task_rpc(&h, 4, "tasks/update", &id, json!({ "inputResponses": 5 })).await;
    assert_eq!(error_code(r.response()), Some(-32602), "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn deferred_creation_gathers_input_synchronously_first() {
    let h = spawn_http(task_server(Arc::default())).await;
    let r = h.modern(&tcall(1, "ask_then_task", json!({}))).await;
    let round1 = &r.response()["result"];
    assert_eq!(round1["resultType"], "input_required", "{round1}");
    assert!(round1.get("taskId").is_none());
    let state = round1["requestState"].as_str().expect("requestState");

    let body = req(
        2,
        "tools/call",
        json!({
            "name": "ask_then_task",
            "arguments": {},
            "inputResponses": { "who": { "action": "accept", "content": { "name": "Zed" } } },
            "requestState": state,
            "_meta": meta_with(task_caps()),
        }),
    );
    let r = h.modern(&body).await;
    let round2 = &r.response()["result"];
    assert_eq!(round2["resultType"], "task", "{round2}");
    assert!(round2.get("requestState").is_none() && round2.get("inputRequests").is_none());
    let id = round2["taskId"].as_str().expect("taskId");
    let done = wait_for(&h, id, &["completed", "failed"]).await;
    assert_eq!(done["result"]["content"][0]["text"], "Hi Zed", "{done}");
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_name_must_mirror_the_task_id() {
    let h = spawn_http(task_server(Arc::default())).await;
    let id = create(&h, "sleeper", json!({ "ms": 10 })).await;
    let body = task_req(2, "tasks/get", &id, json!({}));
    let r = h.modern_plus(&body, &[("Mcp-Name", "someone-else")]).await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert_eq!(error_code(r.response()), Some(-32020), "{}", r.raw);
    let r = h.modern(&body).await;
    assert_eq!(
        error_code(r.response()),
        Some(-32020),
        "missing Mcp-Name: {}",
        r.raw
    );
    let r = h.modern_plus(&body, &[("Mcp-Name", &id)]).await;
    assert_eq!(r.response()["result"]["taskId"], id.as_str(), "{}", r.raw);
}

/// Calls the engine directly as `subject`.
async fn as_principal(server: &Server, subject: &str, body: &Value) -> Value {
    let mut ext = http::Extensions::new();
    ext.insert(Principal::new(subject));
    let params = body["params"].as_object().cloned().unwrap_or_default();
    let inbound = Inbound {
        request: Request {
            id: RequestId::from_value(&body["id"]).expect("id"),
            method: body["method"].as_str().expect("method").to_owned(),
            params,
        },
        wire: Wire::Modern,
        outbound: None,
        cancel: CancellationToken::new(),
        extensions: Arc::new(ext),
    };
    match server.handle(inbound).await {
        mcpwire_server::Reply::Response(r) => serde_json::from_str(&r.to_json()).expect("json"),
        _ => panic!("expected a response"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_belong_to_the_principal_that_created_them() {
    let mut options = TaskOptions::default();
    options.ttl = Duration::from_secs(5);
    options.poll_interval = Duration::from_millis(100);
    options.max_tasks = 8;
    let server = Server::builder("t", "1")
        .tasks(options)
        .tool(sleeper(Arc::default()))
        .build()
        .expect("builds");
    let created = as_principal(
        &server,
        "alice",
        &tcall(1, "sleeper", json!({ "ms": 10_000 })),
    )
    .await;
    assert_eq!(created["result"]["ttlMs"], 5000, "{created}");
    assert_eq!(created["result"]["pollIntervalMs"], 100);
    let id = created["result"]["taskId"].as_str().expect("taskId");
    for method in ["tasks/get", "tasks/cancel"] {
        let r = as_principal(&server, "mallory", &task_req(2, method, id, json!({}))).await;
        assert_eq!(error_code(&r), Some(-32602), "{method}: {r}");
    }
    let r = as_principal(&server, "alice", &task_req(3, "tasks/get", id, json!({}))).await;
    assert_eq!(r["result"]["status"], "working", "{r}");
    let r = as_principal(
        &server,
        "alice",
        &task_req(4, "tasks/cancel", id, json!({})),
    )
    .await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
}
