//! The cluster as one server: PostgreSQL, three replicas of the real binary
//! and nginx (round robin, no stickiness), started by `scripts/cluster` as an
//! operator would. Every test talks HTTP on loopback, through the balancer
//! or to one replica directly, and checks that the replicas behave as one:
//! sessions, streams, the tool catalogue, tasks, rate limits, the audit
//! trail, and faults (a replica killed, PostgreSQL restarted) under load.

use crate::common;

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::{Cluster, Database, EventStream};
use common::{
    LegacySession, MODERN, Reply, Server, TOOL_NAMES, details_asking, modern_body, modern_headers,
    next_id, pick,
};
use mcpwire_server::protocol::meta;
use serde_json::{Value, json};

/// Realistic arguments for every tool, in `TOOL_NAMES` order.
fn arguments(tool: &str) -> Value {
    match tool {
        "get-employee-details" | "calculate-employee-tenure" => {
            json!({"employeeId": "AliceJohnson"})
        }
        "list-department-employees" => json!({"departmentId": "engineering"}),
        "get-team-members" => json!({"teamId": "backend"}),
        "search-employees-by-skill" => json!({"skill": "rust"}),
        "get-compensation-info" => json!({"role": "Software Engineer", "level": "senior"}),
        "check-leave-balance" => json!({"employeeId": "AliceJohnson", "leaveType": "annual"}),
        "generate-employee-report" => json!({"reportType": "headcount"}),
        other => panic!("no arguments for {other}"),
    }
}

/// Server flags that lift the per-caller limits for load tests (all load
/// comes from one forwarded address).
const LIFTED: [&str; 6] = [
    "--rate-limit-per-minute",
    "1000000",
    "--rate-limit-burst",
    "1000000",
    "--max-concurrent-calls",
    "10000",
];

/// A modern `tools/call` as a forwarded client `xff` (nginx appends its
/// own hop; the replicas trust nginx and key the caller by `xff`).
async fn call_as(server: &Server, xff: &str, tool: &str, arguments: Value) -> Reply {
    let body = modern_body(
        next_id(),
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    );
    server.post_modern(&body, &[("X-Forwarded-For", xff)]).await
}

/// The same session, addressed to another endpoint.
fn on<'a>(session: &LegacySession<'_>, server: &'a Server) -> LegacySession<'a> {
    LegacySession {
        server,
        session_id: session.session_id.clone(),
        version: session.version.clone(),
        init: session.init.clone(),
    }
}

/// Upstream addresses nginx used, from its access log.
fn upstreams_used(cluster: &Cluster) -> BTreeSet<String> {
    cluster
        .access_log()
        .lines()
        .filter_map(|l| l.split("upstream=").nth(1))
        .filter_map(|u| u.split_whitespace().next())
        .flat_map(|u| u.split(", "))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_tool_answers_through_the_balancer_on_both_wires() {
    let cluster = Cluster::start(3, &LIFTED);
    // Clients that confirm nothing, on a company that turned the default
    // approvals off: every replica applies it within a poll.
    for tool in common::GATED_TOOLS {
        cluster.tools(&["approval", tool, "none"]);
    }
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let session = cluster.balancer.legacy(Some("2025-11-25")).await;
    for tool in TOOL_NAMES {
        let args = arguments(tool);
        let direct = cluster.replicas[0].call_tool(tool, args.clone()).await;
        assert_ne!(direct["isError"], true, "{tool}: {direct}");
        assert!(direct["structuredContent"].is_object(), "{tool}: {direct}");
        // Three calls: round robin puts one on each replica.
        for _ in 0..3 {
            let via = cluster.balancer.call_tool(tool, args.clone()).await;
            assert_eq!(
                via["structuredContent"], direct["structuredContent"],
                "{tool}"
            );
        }
        let legacy = session.call_tool(tool, args).await;
        assert_eq!(
            legacy["structuredContent"], direct["structuredContent"],
            "{tool}"
        );
    }
    let expected: BTreeSet<String> = cluster.replicas.iter().map(|r| r.addr.clone()).collect();
    assert_eq!(
        upstreams_used(&cluster),
        expected,
        "nginx did not spread the calls"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_session_is_served_by_every_replica_and_deleted_everywhere() {
    let cluster = Cluster::start(3, &[]);
    let session = cluster.balancer.legacy(Some("2025-11-25")).await;
    for (i, replica) in cluster.replicas.iter().enumerate() {
        let here = on(&session, replica);
        let list = here.request("tools/list", json!({})).await;
        assert_eq!(list.status, 200, "replica {i}: {}", list.text);
        assert_eq!(list.result()["tools"].as_array().map(Vec::len), Some(8));
        let result = here
            .call_tool("get-employee-details", json!({"employeeId": "JohnDoe"}))
            .await;
        assert_eq!(
            result["structuredContent"]["employeeId"], "JohnDoe",
            "replica {i}"
        );
        assert_eq!(
            here.request("ping", Value::Null).await.status,
            200,
            "replica {i}"
        );
    }
    // The session's GET stream lives on the third replica.
    let mut stream = EventStream::open(
        &cluster.replicas[2].addr,
        "GET",
        &[
            ("Accept", "text/event-stream"),
            ("Mcp-Session-Id", &session.session_id),
            ("MCP-Protocol-Version", &session.version),
        ],
        None,
    )
    .await;
    // DELETE on the second replica ends it on all of them.
    let deleted = on(&session, &cluster.replicas[1]).delete().await;
    assert!(
        (200..300).contains(&deleted.status),
        "DELETE: {} {}",
        deleted.status,
        deleted.text
    );
    // The other replicas learn of it over LISTEN/NOTIFY: within a second.
    for (i, replica) in cluster.replicas.iter().enumerate() {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let after = on(&session, replica).request("ping", Value::Null).await;
            if after.status == 404 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "replica {i} still serves a deleted session after 1 s: {} {}",
                after.status,
                after.text
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert_eq!(session.request("ping", Value::Null).await.status, 404);
    // The GET stream on another replica ends (generous bound).
    let end = tokio::time::timeout(Duration::from_secs(10), async {
        while stream.next_message().await.is_some() {}
    })
    .await;
    assert!(
        end.is_ok(),
        "the GET stream of a deleted session stayed open"
    );
}

/// A `subscriptions/listen` stream for tool-list changes at `addr`.
async fn listen(addr: &str) -> EventStream {
    let body = modern_body(
        next_id(),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let headers = modern_headers(&body);
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let bytes = serde_json::to_vec(&body).expect("json");
    let mut stream = EventStream::open(addr, "POST", &headers, Some(&bytes)).await;
    stream
        .expect_method("notifications/subscriptions/acknowledged", common::TIMEOUT)
        .await;
    stream
}

/// Names in `tools/list` of one endpoint.
async fn tool_names(server: &Server) -> BTreeSet<String> {
    server.tool_names().await.into_iter().collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_disable_reaches_listeners_on_every_replica_within_a_second() {
    let cluster = Cluster::start(3, &[]);
    let mut streams = vec![listen(&cluster.balancer.addr).await];
    for replica in &cluster.replicas {
        streams.push(listen(&replica.addr).await);
    }
    for (action, present) in [("disable", false), ("enable", true)] {
        cluster.tools(&[action, "get-team-members"]);
        // The feature's promise: every replica applies a change within 1 s.
        for (i, stream) in streams.iter_mut().enumerate() {
            let note = stream.next_within(Duration::from_secs(1)).await;
            assert_eq!(
                note.as_ref().map(|n| &n["method"]),
                Some(&json!("notifications/tools/list_changed")),
                "{action}: stream {i} (0 = through nginx) got {note:?}"
            );
        }
        for replica in &cluster.replicas {
            let names = tool_names(replica).await;
            assert_eq!(
                names.contains("get-team-members"),
                present,
                "{action}: {names:?}"
            );
            assert_eq!(names.len(), if present { 8 } else { 7 });
        }
    }
    let back = cluster
        .balancer
        .call_tool("get-team-members", json!({"teamId": "backend"}))
        .await;
    assert_ne!(back["isError"], true, "{back}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_disabled_tool_is_refused_by_every_replica() {
    let cluster = Cluster::start(3, &[]);
    cluster.tools(&["disable", "get-compensation-info"]);
    let deadline = Instant::now() + common::TIMEOUT;
    for replica in &cluster.replicas {
        while tool_names(replica).await.contains("get-compensation-info") {
            assert!(
                Instant::now() < deadline,
                "replica {} never applied the change",
                replica.addr
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let refused = replica
            .rpc(
                "tools/call",
                json!({"name": "get-compensation-info", "arguments": arguments("get-compensation-info")}),
            )
            .await
            .expect_err("a disabled tool is not called");
        assert_eq!(refused.code(), Some(-32602), "{refused}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_asked_by_one_replica_is_answered_on_any_other() {
    let cluster = Cluster::start(3, &[]);
    let expected = cluster.replicas[0]
        .call_tool(
            "get-employee-details",
            json!({"employeeId": "AliceJohnson"}),
        )
        .await;
    // Round 1 on replica 0 signs the offer into requestState with the
    // cluster's key; round 2 lands elsewhere, directly and through nginx.
    let round1 = details_asking(&cluster.replicas[0], "Alice Jonson", json!({})).await;
    assert_eq!(round1["resultType"], "input_required", "{round1}");
    let answer = pick(&round1, "accept", "AliceJohnson");
    for server in [&cluster.replicas[1], &cluster.replicas[2]] {
        let done = details_asking(server, "Alice Jonson", answer.clone()).await;
        assert_eq!(
            done["structuredContent"], expected["structuredContent"],
            "round 2 on {}: {done}",
            server.addr
        );
    }
    for _ in 0..3 {
        let done = details_asking(&cluster.balancer, "Alice Jonson", answer.clone()).await;
        assert_eq!(
            done["structuredContent"], expected["structuredContent"],
            "{done}"
        );
    }
}

/// Client capabilities declaring the tasks extension.
fn task_meta() -> Value {
    json!({
        meta::PROTOCOL_VERSION: MODERN,
        meta::CLIENT_CAPABILITIES: {
            "extensions": {mcpwire_server::tasks::EXTENSION_ID: {}}
        }
    })
}

/// A modern request with the tasks extension declared.
async fn task_request(server: &Server, method: &str, mut params: Value, name: &str) -> Reply {
    params["_meta"] = task_meta();
    let body = json!({"jsonrpc": "2.0", "id": next_id(), "method": method, "params": params});
    server.post_modern(&body, &[("Mcp-Name", name)]).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_created_on_one_replica_is_polled_on_the_others() {
    // No grace: every report called with the extension becomes a task.
    let cluster = Cluster::start(3, &["--report-task-grace-ms", "0"]);
    let args = json!({"reportType": "turnover"});
    let expected = cluster.replicas[0]
        .call_tool("generate-employee-report", args.clone())
        .await;
    let created = task_request(
        &cluster.replicas[0],
        "tools/call",
        json!({"name": "generate-employee-report", "arguments": args}),
        "generate-employee-report",
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.text);
    assert_eq!(
        created.result()["resultType"],
        "task",
        "no task: {}",
        created.text
    );
    let id = created.result()["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let deadline = Instant::now() + common::TIMEOUT;
    let mut polls = 0;
    let done = loop {
        // Alternate between the two replicas that did not create it.
        let replica = &cluster.replicas[1 + polls % 2];
        polls += 1;
        let got = task_request(replica, "tasks/get", json!({"taskId": id}), &id).await;
        assert_eq!(
            got.status, 200,
            "tasks/get on {}: {}",
            replica.addr, got.text
        );
        let result = got.result().clone();
        if result["status"] != "working" {
            break result;
        }
        assert!(Instant::now() < deadline, "task stuck: {result}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        expected["structuredContent"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rate_limit_holds_for_the_cluster_as_a_whole() {
    const PER_MINUTE: f64 = 60.0;
    const BURST: f64 = 30.0;
    let cluster = Cluster::start(
        3,
        &["--rate-limit-per-minute", "60", "--rate-limit-burst", "30"],
    );
    let balancer = Arc::new(Server::at(&cluster.balancer.addr));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..6 {
        let balancer = balancer.clone();
        workers.push(tokio::spawn(async move {
            let mut tally = (0u32, 0u32);
            for _ in 0..20 {
                let reply = call_as(
                    &balancer,
                    "198.51.100.23",
                    "calculate-employee-tenure",
                    arguments("calculate-employee-tenure"),
                )
                .await;
                match reply.status {
                    200 => {
                        assert_ne!(reply.result()["isError"], true, "{}", reply.text);
                        tally.0 += 1;
                    }
                    429 => {
                        assert_eq!(reply.error_code(), -31002, "{}", reply.text);
                        assert!(
                            reply.header("retry-after").is_some(),
                            "429 without Retry-After"
                        );
                        tally.1 += 1;
                    }
                    other => panic!("unexpected HTTP {other}: {}", reply.text),
                }
            }
            tally
        }));
    }
    let (mut admitted, mut limited) = (0u32, 0u32);
    for w in workers {
        let (a, l) = w.await.expect("worker");
        admitted += a;
        limited += l;
    }
    // The bucket refills during the run; allow for that, then ±10%.
    let refill = started.elapsed().as_secs_f64() * PER_MINUTE / 60.0;
    let expected = BURST + refill;
    let admitted = f64::from(admitted);
    assert!(
        admitted >= BURST * 0.9 && admitted <= expected * 1.1 + 1.0,
        "admitted {admitted} of 120 (limited {limited}); expected {BURST}..{expected:.1} ±10% \
         for the whole cluster (a per-replica limit admits ~{})",
        BURST * 3.0
    );
    // The key is the forwarded client: another caller still has its burst.
    let other = call_as(
        &balancer,
        "198.51.100.24",
        "calculate-employee-tenure",
        arguments("calculate-employee-tenure"),
    )
    .await;
    assert_eq!(other.status, 200, "{}", other.text);
}

/// How one call of a load loop ended.
#[derive(Debug)]
enum Outcome {
    /// A result without `isError`.
    Answered,
    /// A tool error (`isError: true`), with its text.
    ToolError(String),
    /// Anything else: HTTP status (0 for a transport error) and body.
    Failed(u16, String),
}

/// One call of a load loop: when it started (since the load began), how
/// long it took, how it ended.
type Call = (Duration, Duration, Outcome);

/// Calls `get-employee-details` through `server` in a loop as `xff` until
/// `stop`, recording every call.
async fn load(server: Arc<Server>, xff: &'static str, t0: Instant, stop: Instant) -> Vec<Call> {
    let mut log = Vec::new();
    while Instant::now() < stop {
        let at = t0.elapsed();
        let body = modern_body(
            next_id(),
            "tools/call",
            json!({"name": "get-employee-details", "arguments": {"employeeId": "AliceJohnson"}}),
        );
        let headers = modern_headers(&body);
        let mut raw: Vec<(&str, &[u8])> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_bytes()))
            .collect();
        raw.push(("X-Forwarded-For", xff.as_bytes()));
        raw.push(("Content-Type", b"application/json"));
        let bytes = serde_json::to_vec(&body).expect("json");
        let outcome = match server.try_send("POST", &raw, Some(&bytes)).await {
            Ok(r) if r.status == 200 && r.body["result"]["isError"] == true => {
                Outcome::ToolError(r.text)
            }
            Ok(r) if r.status == 200 && r.body.get("result").is_some() => Outcome::Answered,
            Ok(r) => Outcome::Failed(r.status, r.text),
            Err(e) => Outcome::Failed(0, e.to_string()),
        };
        log.push((at, t0.elapsed() - at, outcome));
    }
    log
}

/// Runs `workers` load loops for `secs` through `server`, calling `during`
/// (on a blocking thread) once `at` has passed. Returns every call and
/// when `during` began and ended (since the load began).
async fn under_load(
    server: &Server,
    xff: &'static str,
    workers: usize,
    secs: u64,
    at: Duration,
    during: impl FnOnce() + Send + 'static,
) -> (Vec<Call>, Duration, Duration) {
    let t0 = Instant::now();
    let stop = t0 + Duration::from_secs(secs);
    let server = Arc::new(Server::at(&server.addr));
    let tasks: Vec<_> = (0..workers)
        .map(|_| tokio::spawn(load(server.clone(), xff, t0, stop)))
        .collect();
    tokio::time::sleep(at).await;
    let began = t0.elapsed();
    tokio::task::spawn_blocking(during)
        .await
        .expect("fault injection");
    let ended = t0.elapsed();
    let mut log = Vec::new();
    for t in tasks {
        log.extend(t.await.expect("load worker"));
    }
    (log, began, ended)
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_a_replica_under_load_loses_no_answered_call() {
    const XFF: &str = "198.51.100.77";
    const WORKERS: usize = 8;
    let cluster = Cluster::start(3, &LIFTED);
    let pid = cluster.replica_pid(1);
    let (log, kill_at, _) = under_load(
        &cluster.balancer,
        XFF,
        WORKERS,
        7,
        Duration::from_secs(2),
        move || common::cluster::kill(pid),
    )
    .await;
    let answered = log
        .iter()
        .filter(|c| matches!(c.2, Outcome::Answered))
        .count();
    let failed: Vec<&Call> = log
        .iter()
        .filter(|c| !matches!(c.2, Outcome::Answered))
        .collect();
    // Only calls already sent to the killed replica may fail (nginx does
    // not resend a POST it had sent): at most one per worker, all 502,
    // all in flight at the kill (or sent in the instant the kernel still
    // accepted connections for the dying process).
    assert!(
        failed.len() <= WORKERS,
        "{} failures: {failed:?}",
        failed.len()
    );
    for (at, took, outcome) in &failed {
        assert!(
            matches!(outcome, Outcome::Failed(502, _)),
            "unexpected failure at {at:?}: {outcome:?}"
        );
        assert!(
            *at <= kill_at + Duration::from_millis(500) && *at + *took >= kill_at,
            "a failure not in flight at the kill ({at:?} + {took:?}): {outcome:?}"
        );
    }
    let after = log
        .iter()
        .filter(|c| c.0 > kill_at + Duration::from_secs(1) && matches!(c.2, Outcome::Answered))
        .count();
    assert!(after > 20, "only {after} calls answered after the kill");
    // Every answered call was audited before it was answered.
    let audited = cluster
        .audit_rows("get-employee-details")
        .iter()
        .filter(|r| r["remote_addr"] == XFF && r["outcome"] == "success")
        .count();
    assert!(
        audited >= answered && audited <= answered + failed.len(),
        "{audited} audit records for {answered} answered and {} failed calls",
        failed.len()
    );
    // The survivors still serve, and `scripts/cluster status` says which
    // one is gone.
    for i in [0, 2] {
        cluster.replicas[i].assert_alive().await;
    }
    let (healthy, report) = cluster.status();
    assert!(!healthy, "status missed the dead replica:\n{report}");
    let down: Vec<&str> = report.lines().filter(|l| l.contains("DOWN")).collect();
    assert_eq!(down.len(), 1, "{report}");
    assert!(down[0].starts_with("replica 2 "), "{report}");
}

fn pg_scratch(action: &str, name: &str) {
    let out = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/pg-scratch"
    ))
    .args([action, name])
    .output()
    .expect("run scripts/pg-scratch");
    assert!(
        out.status.success(),
        "pg-scratch {action}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_outage_under_load_gives_clear_errors_then_recovers() {
    const PG: &str = "faults-cluster";
    const CALL_TIMEOUT: Duration = Duration::from_secs(5);
    const AUDIT_WAIT: Duration = Duration::from_secs(10);
    let mut flags = LIFTED.to_vec();
    flags.extend(["--call-timeout-secs", "5"]);
    let cluster = Cluster::start_on(Database::Own(PG), 3, &flags);
    // Down for three seconds in the middle of the load.
    let down_at = Duration::from_secs(2);
    let (log, _, _) = under_load(&cluster.balancer, "198.51.100.90", 4, 12, down_at, || {
        pg_scratch("stop", PG);
        std::thread::sleep(Duration::from_secs(3));
        pg_scratch("start", PG);
    })
    .await;
    let mut errors = 0;
    for (at, took, outcome) in &log {
        // No call hangs: the call timeout bounds the tool, the audit
        // commit wait (10 s) bounds the record; plus generous slack.
        assert!(
            *took < CALL_TIMEOUT + AUDIT_WAIT + Duration::from_secs(5),
            "call at {at:?} took {took:?}: {outcome:?}"
        );
        match outcome {
            Outcome::Answered => {}
            Outcome::ToolError(text) => {
                errors += 1;
                assert!(!text.is_empty());
            }
            // A clear JSON-RPC error from a replica, never nginx's 502/504.
            Outcome::Failed(status, text) => {
                errors += 1;
                let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
                // -32603 in a 200 body (the JSON-RPC answer) or with 500/503.
                assert!(
                    matches!(status, 200 | 500 | 503) && body["error"]["code"] == -32603,
                    "call at {at:?}: HTTP {status} {text}"
                );
                let message = body["error"]["message"].as_str().unwrap_or_default();
                assert!(!message.is_empty(), "{text}");
            }
        }
    }
    assert!(
        errors > 0,
        "the outage went unnoticed: {} calls all answered",
        log.len()
    );
    // Each replica serves again on its own.
    let deadline = Instant::now() + common::TIMEOUT;
    for (i, replica) in cluster.replicas.iter().enumerate() {
        loop {
            let reply = replica
                .rpc(
                    "tools/call",
                    json!({"name": "get-employee-details", "arguments": {"employeeId": "AliceJohnson"}}),
                )
                .await;
            if matches!(&reply, Ok(r) if r.get("isError") != Some(&Value::Bool(true))) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "replica {i} did not recover: {reply:?}\n{}",
                cluster.replica_log(i)
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
