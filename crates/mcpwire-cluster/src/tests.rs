//! The shared-state implementations on a real PostgreSQL (the scratch
//! cluster of `scripts/pg-scratch`, one fresh database per test), with
//! several instances on one database standing in for replicas.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use mcpwire_server::access::{
    Approval, ApprovalOptions, ApprovalStore, CallLimiter, MemoryApprovals, Permit,
};
use mcpwire_server::protocol::{Request, RequestId};
use mcpwire_server::tasks::{Settled, TaskBackend, TaskBackendError, TaskStatus};
use mcpwire_server::{
    CallToolResult, Inbound, RateLimit, RequestContext, Server, TaskSupport, Tool, ToolError,
    ToolOutcome, Wire,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::limits::{PgLimitOptions, PgLimiter, SharedLimiter};
use super::slices::{MAX_SLICE, Slices};
use super::tasks::PgTasks;

const TTL: Duration = Duration::from_secs(60);
const TIMEOUT: Duration = Duration::from_secs(5);
const WAIT: Duration = Duration::from_secs(15);

/// A fresh, migrated database; `n` pools on it (one per "replica").
async fn replicas(n: usize) -> (String, Vec<Pool>) {
    let url = tokio::task::spawn_blocking(super::testing::fresh_database)
        .await
        .expect("fresh database");
    let pools: Vec<Pool> = (0..n)
        .map(|_| super::pool(&url, 8, TIMEOUT).expect("pool"))
        .collect();
    super::migrate(&pools[0]).await.expect("migrate");
    (url, pools)
}

fn options() -> PgLimitOptions {
    PgLimitOptions {
        timeout: TIMEOUT,
        idle_ttl: Duration::from_secs(600),
        max_buckets: 1000,
        lease_ttl: Duration::from_secs(30),
    }
}

fn map(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_record_is_shared_between_instances() {
    let (_, pools) = replicas(2).await;
    let a = PgTasks::new(pools[0].clone(), TIMEOUT);
    let b = PgTasks::new(pools[1].clone(), TIMEOUT);
    let created = a
        .create("t1", Some("alice"), TTL, 100)
        .await
        .expect("create");
    assert_eq!(created.status, TaskStatus::Working);
    let seen = b.get("t1").await.expect("get").expect("visible on b");
    assert_eq!(seen.owner.as_deref(), Some("alice"));
    assert_eq!(seen.created, created.created);
    assert!(seen.status_message.is_none());

    // A status message set on A is read on B, and cleared.
    let note = "waiting for approval by an operator (apr-1)";
    assert!(
        a.set_status_message("t1", Some(note), TTL)
            .await
            .expect("set")
    );
    let r = b.get("t1").await.expect("get").expect("live");
    assert_eq!(r.status_message.as_deref(), Some(note));
    assert!(b.set_status_message("t1", None, TTL).await.expect("clear"));
    let r = a.get("t1").await.expect("get").expect("live");
    assert!(r.status_message.is_none());
    assert!(
        !a.set_status_message("nope", Some(note), TTL)
            .await
            .expect("set")
    );

    // Input round: parked on A, answered in two parts on B, taken on A.
    let requests = map(json!({ "x": { "method": "elicitation/create" }, "y": {} }));
    assert!(a.park("t1", &requests, TTL).await.expect("park"));
    let r = b.get("t1").await.expect("get").expect("live");
    assert_eq!(r.status, TaskStatus::InputRequired);
    assert_eq!(r.pending.len(), 2);
    // Another owner cannot answer or cancel.
    let x = map(json!({ "x": 1, "zzz": 9 }));
    assert!(!b.answer("t1", Some("bob"), &x, TTL).await.expect("answer"));
    assert!(!b.cancel("t1", None, TTL).await.expect("cancel"));
    assert!(
        b.answer("t1", Some("alice"), &x, TTL)
            .await
            .expect("answer")
    );
    assert!(a.take_answers("t1", TTL).await.expect("take").is_none());
    let y = map(json!({ "y": 2 }));
    assert!(
        b.answer("t1", Some("alice"), &y, TTL)
            .await
            .expect("answer")
    );
    let answers = a
        .take_answers("t1", TTL)
        .await
        .expect("take")
        .expect("ready");
    assert_eq!(Value::Object(answers), json!({ "x": 1, "y": 2 }));
    assert!(a.take_answers("t1", TTL).await.expect("take").is_none());

    // Cancelled on B: A's later outcome does not overwrite it.
    assert!(b.cancel("t1", Some("alice"), TTL).await.expect("cancel"));
    a.settle("t1", Settled::Completed(map(json!({ "late": true }))), TTL)
        .await
        .expect("settle");
    let r = a.get("t1").await.expect("get").expect("live");
    assert_eq!(r.status, TaskStatus::Cancelled);
    assert!(r.result.is_none());
    // Cancelling a finished task is a no-op that still finds it.
    assert!(b.cancel("t1", Some("alice"), TTL).await.expect("cancel"));
    assert!(b.get("nope").await.expect("get").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_migration_adds_the_status_message_to_an_existing_task_table() {
    let url = tokio::task::spawn_blocking(super::testing::fresh_database)
        .await
        .expect("fresh database");
    // The table as the first release created it, with a row in it.
    super::testing::psql(
        &url,
        "CREATE TABLE mcp_tasks (id text PRIMARY KEY, owner text, status text NOT NULL, \
         created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, \
         expires_at timestamptz NOT NULL, result jsonb, error jsonb, \
         pending jsonb NOT NULL DEFAULT '{}', answers jsonb NOT NULL DEFAULT '{}'); \
         INSERT INTO mcp_tasks (id, status, created_at, updated_at, expires_at) \
         VALUES ('old', 'working', now(), now(), now() + interval '1 hour')",
    );
    let pool = super::pool(&url, 2, TIMEOUT).expect("pool");
    super::migrate(&pool)
        .await
        .expect("migrate over the old table");
    super::migrate(&pool).await.expect("and again");
    let s = PgTasks::new(pool, TIMEOUT);
    let old = s.get("old").await.expect("get").expect("kept");
    assert!(old.status_message.is_none());
    assert!(
        s.set_status_message("old", Some("x"), TTL)
            .await
            .expect("set")
    );
    let r = s.get("old").await.expect("get").expect("kept");
    assert_eq!(r.status_message.as_deref(), Some("x"));
}

#[tokio::test(flavor = "multi_thread")]
async fn task_records_expire_and_the_table_stays_bounded() {
    let (url, pools) = replicas(1).await;
    let s = PgTasks::new(pools[0].clone(), TIMEOUT);
    s.create("short", None, Duration::from_millis(200), 10)
        .await
        .expect("create");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(s.get("short").await.expect("get").is_none());
    // At capacity: finished tasks make room, running ones do not.
    s.create("a", None, TTL, 2).await.expect("a");
    s.create("b", None, TTL, 2).await.expect("b");
    assert!(matches!(
        s.create("c", None, TTL, 2).await,
        Err(TaskBackendError::Full)
    ));
    s.settle("a", Settled::Failed(json!({ "code": -32603 })), TTL)
        .await
        .expect("settle");
    s.create("c", None, TTL, 2).await.expect("c after eviction");
    assert!(s.get("a").await.expect("get").is_none());
    let rows = super::testing::psql(&url, "SELECT count(*) FROM mcp_tasks");
    assert_eq!(rows, "2", "the expired and the evicted rows are gone");
}

/// Hammers one bucket from `limiters` (one per replica), `workers` loops
/// each, for `run`; returns the calls admitted and the time it took.
async fn hammer(limiters: &[Arc<SharedLimiter>], workers: usize, run: Duration) -> (usize, f64) {
    let admitted = Arc::new(AtomicUsize::new(0));
    let limit = RateLimit::new(600, 50);
    let start = Instant::now();
    let mut handles = Vec::new();
    for l in limiters {
        for _ in 0..workers {
            let (l, admitted) = (Arc::clone(l), Arc::clone(&admitted));
            handles.push(tokio::spawn(async move {
                while start.elapsed() < run {
                    match l.take("ip:10.0.0.1", "report", limit).await {
                        Ok(Ok(())) => {
                            admitted.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(Err(_)) => {}
                        Err(e) => panic!("limiter failed: {e}"),
                    }
                }
            }));
        }
    }
    for h in handles {
        h.await.expect("worker");
    }
    (
        admitted.load(Ordering::SeqCst),
        start.elapsed().as_secs_f64(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn three_limiters_on_one_database_admit_the_configured_rate() {
    let (_, pools) = replicas(3).await;
    let limiters: Vec<Arc<SharedLimiter>> = pools
        .iter()
        .map(|p| Arc::new(SharedLimiter(PgLimiter::new(p.clone(), options()))))
        .collect();
    let (admitted, secs) = hammer(&limiters, 6, Duration::from_secs(3)).await;
    // A burst of 50, then 10 per second, for the three together.
    let expected = 50.0 + 10.0 * secs;
    let ratio = admitted as f64 / expected;
    eprintln!("admitted {admitted} in {secs:.2} s; expected {expected:.1} (ratio {ratio:.3})");
    assert!(
        (0.9..=1.1).contains(&ratio),
        "admitted {admitted}, expected {expected:.1} ± 10%"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn callers_finding_a_slice_empty_wait_for_one_lease() {
    let (_, pools) = replicas(1).await;
    let slices = Arc::new(Slices::new(1000));
    let limit = RateLimit::new(60_000, 10_000);
    let (callers, each) = (64, 10);
    let mut handles = Vec::new();
    for _ in 0..callers {
        let (slices, pool) = (Arc::clone(&slices), pools[0].clone());
        handles.push(tokio::spawn(async move {
            for _ in 0..each {
                let taken = slices.take(&pool, "ip:10.0.0.1", "details", limit).await;
                assert!(matches!(taken, Ok(Ok(()))), "refused: {taken:?}");
            }
        }));
    }
    for h in handles {
        h.await.expect("caller");
    }
    // Slices of 1, 2, 4 … 32 tokens: about calls / 32 leases, where each
    // caller leasing for itself sent one per caller whenever a slice ran out.
    let calls = (callers * each) as u64;
    let leases = slices.leases();
    eprintln!("{calls} calls, {leases} leases");
    assert!(
        leases <= calls / u64::from(MAX_SLICE) + 8,
        "{leases} leases for {calls} calls"
    );
}

fn limiter(pool: &Pool, lease_ttl: Duration) -> SharedLimiter {
    SharedLimiter(PgLimiter::new(
        pool.clone(),
        PgLimitOptions {
            lease_ttl,
            ..options()
        },
    ))
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrency_leases_are_capped_across_instances_and_released() {
    let (url, pools) = replicas(3).await;
    let limiters: Vec<Arc<SharedLimiter>> = pools
        .iter()
        .map(|p| Arc::new(limiter(p, Duration::from_secs(30))))
        .collect();
    let mut tries = Vec::new();
    for i in 0..30 {
        let l = Arc::clone(&limiters[i % 3]);
        tries.push(tokio::spawn(async move { l.acquire("sub:alice", 3).await }));
    }
    let mut held: Vec<Permit> = Vec::new();
    for t in tries {
        if let Some(p) = t.await.expect("task").expect("acquire") {
            held.push(p);
        }
    }
    assert_eq!(held.len(), 3, "exactly the cap is admitted");
    // Other callers are not affected.
    assert!(
        limiters[0]
            .acquire("sub:bob", 3)
            .await
            .expect("bob")
            .is_some()
    );
    // Releasing one (its row is deleted in the background) frees a slot.
    held.pop();
    let start = Instant::now();
    loop {
        if let Some(p) = limiters[2].acquire("sub:alice", 3).await.expect("acquire") {
            held.push(p);
            break;
        }
        assert!(start.elapsed() < WAIT, "the released lease was never freed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(held);
    let start = Instant::now();
    while super::testing::psql(
        &url,
        "SELECT count(*) FROM mcp_call_shares WHERE caller = 'sub:alice'",
    ) != "0"
    {
        assert!(start.elapsed() < WAIT, "idle shares not given back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn leases_of_a_crashed_replica_lapse_while_live_ones_are_refreshed() {
    let (_, pools) = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(replicas(2));
    let ttl = Duration::from_millis(1500);
    // The "replica" that crashes: its runtime goes away with its lease
    // never released (as under kill -9: no drop, no refresh).
    let crashed = tokio::runtime::Runtime::new().expect("runtime");
    crashed.block_on(async {
        let l = limiter(&pools[0], ttl);
        let p = l
            .acquire("sub:carol", 1)
            .await
            .expect("acquire")
            .expect("slot");
        std::mem::forget(p);
    });
    drop(crashed);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let l = limiter(&pools[1], ttl);
        assert!(l.acquire("sub:carol", 1).await.expect("acquire").is_none());
        // A live holder keeps its slot past several TTLs.
        let start = Instant::now();
        let held = loop {
            if let Some(p) = l.acquire("sub:carol", 1).await.expect("acquire") {
                break p;
            }
            assert!(
                start.elapsed() < WAIT,
                "the crashed replica's lease never lapsed"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        tokio::time::sleep(ttl * 3).await;
        assert!(
            l.acquire("sub:carol", 1).await.expect("acquire").is_none(),
            "a refreshed lease must not lapse"
        );
        drop(held);
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_database_fails_fast_and_closed() {
    // Nothing listens on this port (bound, then released).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead = closed.local_addr().expect("addr");
    drop(closed);
    // This one accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let mute = silent.local_addr().expect("addr");
    let _keep = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    for addr in [dead, mute] {
        let url = format!("postgres://postgres@{addr}/employee");
        let timeout = Duration::from_millis(500);
        let pool = super::pool(&url, 2, timeout).expect("pool");
        let l = SharedLimiter(PgLimiter::new(
            pool.clone(),
            PgLimitOptions {
                timeout,
                ..options()
            },
        ));
        let t = PgTasks::new(pool, timeout);
        let start = Instant::now();
        let limit = RateLimit::new(60, 5);
        assert!(l.take("c", "t", limit).await.is_err(), "{addr}");
        assert!(l.acquire("c", 1).await.is_err(), "{addr}");
        assert!(matches!(
            t.get("x").await,
            Err(TaskBackendError::Unavailable(_))
        ));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{addr}: took {:?}",
            start.elapsed()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_buckets_are_pruned() {
    let (url, pools) = replicas(1).await;
    let l = PgLimiter::new(
        pools[0].clone(),
        PgLimitOptions {
            idle_ttl: Duration::from_secs(60),
            max_buckets: 3,
            ..options()
        },
    );
    let shared = SharedLimiter(Arc::clone(&l));
    let limit = RateLimit::new(60, 5);
    for i in 0..6 {
        shared
            .take(&format!("c{i}"), "t", limit)
            .await
            .expect("take")
            .expect("admitted");
    }
    super::testing::psql(
        &url,
        "UPDATE mcp_rate_buckets SET updated_at = now() - interval '1 hour' WHERE caller = 'c0'",
    );
    l.prune().await.expect("prune");
    let left = super::testing::psql(
        &url,
        "SELECT string_agg(caller, ',' ORDER BY caller) FROM mcp_rate_buckets",
    );
    assert_eq!(left, "c3,c4,c5", "idle first, then the least recently used");
}

// ------------------------------------------------ two engines, one database

/// Sleeps `ms` unless cancelled; counts runs and cancellations.
fn sleeper(runs: Arc<AtomicUsize>, cancelled: Arc<AtomicBool>) -> Tool {
    Tool::builder("sleeper")
        .task_support(TaskSupport::Optional)
        .raw_handler(move |ctx: RequestContext, args: Map<String, Value>| {
            let (runs, cancelled) = (Arc::clone(&runs), Arc::clone(&cancelled));
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(10);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    () = ctx.cancelled() => {
                        cancelled.store(true, Ordering::SeqCst);
                        return Err(ToolError::execution("cancelled"));
                    }
                }
                Ok::<ToolOutcome, ToolError>(CallToolResult::text(format!("slept {ms}")).into())
            }
        })
}

struct Replica {
    server: Server,
    runs: Arc<AtomicUsize>,
    cancelled: Arc<AtomicBool>,
}

fn engine(pool: &Pool) -> Replica {
    let (runs, cancelled) = (Arc::default(), Arc::default());
    let server = Server::builder("replica", "1")
        .task_backend(Arc::new(PgTasks::new(pool.clone(), TIMEOUT)))
        .limiter(Arc::new(limiter(pool, Duration::from_secs(30))))
        .tool(sleeper(Arc::clone(&runs), Arc::clone(&cancelled)))
        .build()
        .expect("builds");
    Replica {
        server,
        runs,
        cancelled,
    }
}

async fn rpc(server: &Server, method: &str, mut params: Map<String, Value>) -> Value {
    let caps = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    params.insert(
        "_meta".into(),
        json!({
            mcpwire_server::protocol::meta::PROTOCOL_VERSION: "2026-07-28",
            mcpwire_server::protocol::meta::CLIENT_CAPABILITIES: caps,
        }),
    );
    let inbound = Inbound {
        request: Request {
            id: RequestId::from_value(&json!(1)).expect("id"),
            method: method.to_owned(),
            params,
        },
        wire: Wire::Modern,
        outbound: None,
        cancel: CancellationToken::new(),
        extensions: Arc::new(http::Extensions::new()),
    };
    match server.handle(inbound).await {
        mcpwire_server::Reply::Response(r) => serde_json::from_str(&r.to_json()).expect("json"),
        _ => panic!("expected a response"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_started_on_one_engine_is_cancelled_through_another() {
    let (_, pools) = replicas(2).await;
    let (a, b) = (engine(&pools[0]), engine(&pools[1]));
    let created = rpc(
        &a.server,
        "tools/call",
        map(json!({ "name": "sleeper", "arguments": { "ms": 60_000 } })),
    )
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let get = || map(json!({ "taskId": id }));
    let seen = rpc(&b.server, "tasks/get", get()).await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");

    let ack = rpc(&b.server, "tasks/cancel", get()).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    // A's handler sees it by following the row.
    let start = Instant::now();
    while !a.cancelled.load(Ordering::SeqCst) {
        assert!(start.elapsed() < WAIT, "A's handler was never cancelled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let done = rpc(&a.server, "tasks/get", get()).await;
    assert_eq!(done["result"]["status"], "cancelled", "{done}");
    assert_eq!(a.runs.load(Ordering::SeqCst), 1);
    assert_eq!(b.runs.load(Ordering::SeqCst), 0);
    assert!(!b.cancelled.load(Ordering::SeqCst));

    // A short task finished on A is read, with its result, on B.
    let created = rpc(
        &a.server,
        "tools/call",
        map(json!({ "name": "sleeper", "arguments": { "ms": 20 } })),
    )
    .await;
    let id = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let start = Instant::now();
    loop {
        let r = rpc(&b.server, "tasks/get", map(json!({ "taskId": id }))).await;
        if r["result"]["status"] == "completed" {
            assert_eq!(
                r["result"]["result"]["content"][0]["text"], "slept 20",
                "{r}"
            );
            break;
        }
        assert!(start.elapsed() < WAIT, "never completed: {r}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Fail-closed: a share is used from memory only while its row is known
/// to be alive. Cut off from the database past the TTL, a replica admits
/// nothing (another replica may hold the room its lapsed row held).
#[tokio::test(flavor = "multi_thread")]
async fn a_share_past_its_ttl_admits_nothing_without_the_database() {
    let (_, pools) = replicas(1).await;
    let ttl = Duration::from_millis(800);
    let shares = super::shares::Shares::new(pools[0].clone(), ttl);
    let first = shares.acquire("sub:alice", 4).await.expect("acquire");
    drop(first.expect("room"));
    // The database out of reach from here on.
    pools[0].close();
    let local = shares
        .acquire("sub:alice", 4)
        .await
        .expect("within the TTL");
    drop(local.expect("the local share admits without a round trip"));
    tokio::time::sleep(ttl + Duration::from_millis(200)).await;
    assert!(
        shares.acquire("sub:alice", 4).await.is_err(),
        "admitted from a share whose row may have lapsed"
    );
}

/// An engine whose `sleeper` needs an operator's approval, on `pool`'s
/// tasks and a shared approval store.
fn approving_engine(pool: &Pool, approvals: &Arc<MemoryApprovals>) -> Replica {
    let runs: Arc<AtomicUsize> = Arc::default();
    let cancelled = Arc::default();
    let tool = Tool::builder("sleeper")
        .approval(Approval::Operator)
        .task_support(TaskSupport::Optional)
        .raw_handler({
            let runs = Arc::clone(&runs);
            move |_: RequestContext, _: Map<String, Value>| {
                let runs = Arc::clone(&runs);
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<ToolOutcome, ToolError>(CallToolResult::text("served").into())
                }
            }
        });
    let server = Server::builder("replica", "1")
        .task_backend(Arc::new(PgTasks::new(pool.clone(), TIMEOUT)))
        .approvals(Arc::clone(approvals) as Arc<dyn ApprovalStore>)
        .approval_options(ApprovalOptions {
            poll: Duration::from_millis(20),
            ..ApprovalOptions::default()
        })
        .tool(tool)
        .build()
        .expect("builds");
    Replica {
        server,
        runs,
        cancelled,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_waiting_for_an_operator_shows_its_status_message_on_every_engine() {
    let (_, pools) = replicas(2).await;
    let approvals = Arc::new(MemoryApprovals::default());
    let a = approving_engine(&pools[0], &approvals);
    let b = approving_engine(&pools[1], &approvals);
    let created = rpc(
        &a.server,
        "tools/call",
        map(json!({ "name": "sleeper", "arguments": {} })),
    )
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let approval = approvals.pending()[0].1.id.clone();
    let message = format!("waiting for approval by an operator ({approval})");
    assert_eq!(created["result"]["statusMessage"], message.as_str());
    let id = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let get = || map(json!({ "taskId": id }));
    let seen = rpc(&b.server, "tasks/get", get()).await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");
    assert_eq!(seen["result"]["statusMessage"], message.as_str(), "{seen}");

    approvals
        .decide(&approval, true, "olga", None)
        .expect("approve");
    let start = Instant::now();
    let done = loop {
        let r = rpc(&b.server, "tasks/get", get()).await;
        if r["result"]["status"] == "completed" {
            break r;
        }
        assert!(start.elapsed() < WAIT, "task stuck: {r}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(done["result"]["result"]["content"][0]["text"], "served");
    assert!(done["result"].get("statusMessage").is_none(), "{done}");
    assert_eq!(a.runs.load(Ordering::SeqCst), 1);
    assert_eq!(b.runs.load(Ordering::SeqCst), 0);
}
