//! Replicas that keep their guarantees without a database round trip per
//! guarantee per call: leased rate-limit tokens go back when a
//! replica stops, a replica that lost its generation listener serves no
//! stale answer, and grouped audit rows survive a kill in mid-group.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::pg::{fresh_database, psql};
use common::*;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(15);

/// `get-employee-details` through the client; the result, panicking on
/// a JSON-RPC error.
async fn details(server: &Server, id: &str) -> Value {
    let result = server
        .rpc(
            "tools/call",
            json!({ "name": "get-employee-details", "arguments": { "employeeId": id } }),
        )
        .await
        .unwrap_or_else(|e| panic!("get-employee-details {id}: {e}"));
    Value::Object(result)
}

fn tokens(url: &str) -> f64 {
    psql(url, "SELECT COALESCE(sum(tokens), 0) FROM mcp_rate_buckets")
        .parse()
        .expect("a number")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopping_replica_gives_its_unspent_tokens_back() {
    const BURST: f64 = 100.0;
    let url = tokio::task::spawn_blocking(fresh_database)
        .await
        .expect("database");
    // Refill of 1 a minute: under 0.1 token during the test.
    let flags = ["--rate-limit-per-minute", "1", "--rate-limit-burst", "100"];
    let replica = Server::start_on_postgres(&url, &flags).await;
    // Calls in quick succession grow the replica's slice (1, 2, 4, …):
    // the bucket then holds less than the burst minus the calls made.
    let mut admitted = 0.0;
    loop {
        details(&replica, "AliceJohnson").await;
        admitted += 1.0;
        if tokens(&url) < BURST - admitted - 0.5 {
            break;
        }
        assert!(admitted < 40.0, "the replica never leased ahead");
    }
    let (status, _) = replica.stop().await;
    assert!(status.success(), "{status}");
    let left = tokens(&url);
    assert!(
        (left - (BURST - admitted)).abs() < 0.5,
        "{left} tokens in the bucket after the stop; {admitted} calls were admitted \
         of {BURST}: the rest of the slice was not given back"
    );
}

/// The listener's backend, once it has rechecked the counter (its last
/// statement is the stamp read and it is idle), other than `not`.
fn listener_ready(url: &str, not: &str) -> Option<String> {
    let pid = psql(
        url,
        &format!(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'employee-directory listen' \
             AND datname = current_database() AND state = 'idle' AND query LIKE 'SELECT n,%' \
             AND pid::text <> '{not}'"
        ),
    );
    (!pid.is_empty()).then_some(pid)
}

async fn wait_for_listener(url: &str, not: &str) -> String {
    let start = Instant::now();
    loop {
        if let Some(pid) = listener_ready(url, not) {
            return pid;
        }
        assert!(start.elapsed() < WAIT, "no generation listener came up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_that_lost_its_listener_serves_no_stale_answer() {
    let url = tokio::task::spawn_blocking(fresh_database)
        .await
        .expect("database");
    let replica = Server::start_on_postgres(&url, &[]).await;
    let first = details(&replica, "AliceJohnson").await;
    let listener = wait_for_listener(&url, "").await;
    // Answered from the cache now.
    assert_eq!(details(&replica, "AliceJohnson").await, first);
    // The listener is cut, then the data changes: no announcement reaches
    // the replica, which must recheck when it listens again.
    psql(
        &url,
        &format!(
            "SELECT pg_terminate_backend({listener}); \
             UPDATE employees SET phone = '+1-555-0199' WHERE id = 'AliceJohnson'"
        ),
    );
    wait_for_listener(&url, &listener).await;
    let after = details(&replica, "AliceJohnson").await;
    assert!(
        after.to_string().contains("+1-555-0199"),
        "a stale answer after the listener came back: {after}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_answered_call_is_audited_when_a_replica_dies_mid_group() {
    const WORKERS: usize = 16;
    let url = tokio::task::spawn_blocking(fresh_database)
        .await
        .expect("database");
    let lifted = [
        "--rate-limit-per-minute",
        "1000000",
        "--rate-limit-burst",
        "1000000",
        "--max-concurrent-calls",
        "1000",
    ];
    let mut replica = Server::start_on_postgres(&url, &lifted).await;
    let target = Arc::new(Server::at(&replica.addr));
    let answered = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (target, answered) = (target.clone(), answered.clone());
            tokio::spawn(async move {
                loop {
                    let body = modern_body(
                        next_id(),
                        "tools/call",
                        json!({"name": "get-employee-details",
                               "arguments": {"employeeId": "AliceJohnson"}}),
                    );
                    let headers = modern_headers(&body);
                    let mut raw: Vec<(&str, &[u8])> = headers
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_bytes()))
                        .collect();
                    raw.push(("Content-Type", b"application/json"));
                    let bytes = serde_json::to_vec(&body).expect("json");
                    match target.try_send("POST", &raw, Some(&bytes)).await.ok() {
                        Some(reply) if reply.status == 200 && reply.text.contains("\"result\"") => {
                            answered.fetch_add(1, Ordering::SeqCst);
                        }
                        _ => return,
                    }
                }
            })
        })
        .collect();
    // Many groups committed, one in flight at the kill (16 callers keep
    // the writer busy).
    let start = Instant::now();
    while answered.load(Ordering::SeqCst) < 200 {
        assert!(start.elapsed() < WAIT, "the load never got going");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    replica.kill_9();
    for w in workers {
        w.await.expect("worker");
    }
    let answered = answered.load(Ordering::SeqCst);
    let audited: usize = psql(
        &url,
        "SELECT count(*) FROM audit_log WHERE tool = 'get-employee-details' AND outcome = 'success'",
    )
    .parse()
    .expect("a count");
    // Every answer waited for its group's commit; a group cut by the kill
    // may have committed without its answers getting out.
    assert!(
        audited >= answered && audited <= answered + WORKERS,
        "{audited} audit rows for {answered} answered calls"
    );
}
