//! What the audit trail and the logs may cost, end to end: arguments are
//! redacted at any depth and capped in size, a rate-limit flood becomes a
//! few counted rows, old rows are pruned, a locked database fails calls
//! quickly, and stderr carries neither colour codes nor arguments.
#![cfg(unix)]

use crate::common;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::access::{audit_rows, audit_table};
use common::{Server, TempDb};
use serde_json::{Value, json};

/// Largest stored argument object (`RedactionLimits::DEFAULT.max_bytes`).
const MAX_ARGUMENT_BYTES: usize = 4096;

/// The binary with stderr captured in a file (not a terminal) and
/// `RUST_LOG` unset, so the default INFO level applies.
async fn start(db: &TempDb, args: &[&str]) -> Server {
    Server::start_logged(db.share(), args).await
}

/// A modern `tools/call`: (HTTP status, body).
async fn call(server: &Server, tool: &str, arguments: Value) -> (u16, Value) {
    let r = server.call_as(tool, arguments, None).await;
    (r.status, r.body)
}

fn stored_len(row: &Value) -> usize {
    serde_json::to_string(&row["arguments"]).map_or(usize::MAX, |s| s.len())
}

#[tokio::test]
async fn arguments_are_redacted_in_depth_and_capped_and_never_logged() {
    let db = TempDb::seeded();
    let server = start(&db, &[]).await;
    // Extra members make the call invalid; it is audited all the same.
    let nested = json!({
        "skill": "Rust",
        "list": [{"password": "hunter2-nested"}, {"deep": [{"apiToken": "tok-nested"}]}]
    });
    call(&server, "search-employees-by-skill", nested).await;
    let mut huge = serde_json::Map::new();
    huge.insert("skill".into(), json!("Rust"));
    for i in 0..40 {
        huge.insert(format!("pad{i:02}"), json!("p".repeat(250)));
    }
    let item = "blobvalue-".repeat(20);
    huge.insert("blob".into(), json!(vec![item; 4_000]));
    let size = serde_json::to_string(&huge).map_or(0, |s| s.len());
    assert!(size > 800_000, "{size}");
    let (status, body) = call(&server, "search-employees-by-skill", Value::Object(huge)).await;
    assert_eq!(status, 200, "{body}");

    let (exit, log) = server.stop().await;
    assert!(exit.success(), "{exit}: {log}");
    let rows = audit_rows(&db, &[]);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    let first = serde_json::to_string(&rows[0]["arguments"]).unwrap_or_default();
    assert!(
        !first.contains("hunter2") && !first.contains("tok-nested"),
        "{first}"
    );
    assert_eq!(rows[0]["arguments"]["list"][0]["password"], "[redacted]");
    assert!(
        stored_len(&rows[1]) <= MAX_ARGUMENT_BYTES,
        "{}",
        stored_len(&rows[1])
    );
    assert_eq!(rows[1]["arguments"]["_truncated"], true, "{}", rows[1]);
    assert_eq!(rows[1]["arguments"]["_bytes"], json!(size));
    assert_eq!(rows[1]["arguments"]["skill"], "Rust");

    assert!(
        !log.contains('\x1b'),
        "colour codes in a redirected log: {log:?}"
    );
    for value in [
        "hunter2",
        "tok-nested",
        "blobvalue",
        "ppppp",
        "remote_addr",
        "limits-tests",
    ] {
        assert!(!log.contains(value), "{value} in the log: {log}");
    }
    assert!(log.contains("INFO"), "default level is INFO: {log}");
}

#[tokio::test]
async fn json_log_lines_parse() {
    let db = TempDb::seeded();
    let server = start(&db, &["--log-format", "json"]).await;
    call(
        &server,
        "calculate-employee-tenure",
        json!({"employeeId": "JohnDoe"}),
    )
    .await;
    let (exit, log) = server.stop().await;
    assert!(exit.success(), "{exit}: {log}");
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() >= 2, "{log}");
    for line in lines {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v["level"].is_string() && v["fields"].is_object(), "{line}");
    }
    assert!(!log.contains("JohnDoe"), "{log}");
}

#[tokio::test]
async fn a_rate_limit_flood_becomes_a_few_counted_rows() {
    let db = TempDb::seeded();
    let flags = ["--rate-limit-per-minute", "1", "--rate-limit-burst", "1"];
    let server = start(&db, &flags).await;
    let secret = "x".repeat(10_000);
    let mut limited = 0;
    for _ in 0..200 {
        let (status, body) = call(
            &server,
            "calculate-employee-tenure",
            json!({"employeeId": "JohnDoe", "note": secret}),
        )
        .await;
        match status {
            429 => limited += 1,
            200 => {}
            other => panic!("HTTP {other}: {body}"),
        }
    }
    assert!(limited >= 198, "{limited} refused");
    // The first refusal of the window is stored at once.
    let live = audit_rows(&db, &["--outcome", "rate_limited"]);
    assert!(!live.is_empty() && live.len() <= 2, "{live:#?}");

    let (exit, log) = server.stop().await;
    assert!(exit.success(), "{exit}: {log}");
    let rows = audit_rows(&db, &[]);
    assert!(rows.len() <= 4, "{} rows: {rows:#?}", rows.len());
    let refused: Vec<&Value> = rows
        .iter()
        .filter(|r| r["outcome"] == "rate_limited")
        .collect();
    let counted: i64 = refused.iter().filter_map(|r| r["count"].as_i64()).sum();
    assert_eq!(counted, limited, "{rows:#?}");
    for r in &refused {
        assert_eq!(r["arguments"], json!({}), "no arguments on aggregated rows");
        assert_eq!(r["remote_addr"], "127.0.0.1");
    }
    assert!(rows.iter().all(|r| stored_len(r) <= MAX_ARGUMENT_BYTES));
    let table = audit_table(&db, &["--outcome", "rate_limited"]);
    assert!(
        table.lines().next().is_some_and(|h| h.contains("COUNT")),
        "{table}"
    );
    assert!(table.contains(&refused[0]["count"].to_string()), "{table}");
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(0))
}

/// `audit_log` as first deployed (no `count`).
const OLD_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, at_unix_ms INTEGER NOT NULL,
    subject TEXT, client_id TEXT, client_name TEXT, remote_addr TEXT, tool TEXT NOT NULL,
    arguments TEXT NOT NULL, outcome TEXT NOT NULL, detail TEXT, latency_ms INTEGER NOT NULL,
    protocol_version TEXT NOT NULL)";

fn insert_row(conn: &rusqlite::Connection, age_ms: i64, tool: &str) {
    conn.execute(
        "INSERT INTO audit_log (at, at_unix_ms, tool, arguments, outcome, latency_ms, protocol_version)
         VALUES ('2000-01-01T00:00:00.000Z', ?1, ?2, '{}', 'success', 1, '2026-07-28')",
        rusqlite::params![now_ms() - age_ms, tool],
    )
    .expect("insert an audit row");
}

#[tokio::test]
async fn old_rows_are_pruned_and_an_old_table_is_migrated() {
    let db = TempDb::seeded();
    {
        // A table as deployed before the count column existed.
        let conn = rusqlite::Connection::open(&db.path).expect("open the test database");
        conn.execute_batch(OLD_SCHEMA).expect("old audit_log table");
        let has_count: bool = conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM pragma_table_info('audit_log') WHERE name = 'count')",
                [],
                |row| row.get(0),
            )
            .expect("read the schema");
        if has_count {
            conn.execute_batch("ALTER TABLE audit_log DROP COLUMN count")
                .expect("drop count");
        }
        for _ in 0..1_200 {
            insert_row(&conn, 2 * 3_600_000, "old-tool");
        }
        insert_row(&conn, 600_000, "recent-tool");
    }
    assert_eq!(audit_rows(&db, &["--limit", "5000"]).len(), 1_201);
    let server = start(&db, &["--audit-retention", "1h"]).await;
    let deadline = Instant::now() + common::TIMEOUT;
    while !audit_rows(&db, &["--tool", "old-tool", "--limit", "5000"]).is_empty() {
        assert!(Instant::now() < deadline, "old rows were not pruned");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, body) = call(
        &server,
        "calculate-employee-tenure",
        json!({"employeeId": "JohnDoe"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (exit, log) = server.stop().await;
    assert!(exit.success(), "{exit}: {log}");
    let rows = audit_rows(&db, &[]);
    let tools: Vec<&str> = rows.iter().filter_map(|r| r["tool"].as_str()).collect();
    assert_eq!(tools, ["recent-tool", "calculate-employee-tenure"]);
    assert!(rows.iter().all(|r| r["count"] == 1), "{rows:#?}");
    assert!(log.contains("pruned audit_log rows"), "{log}");
    // The rows moved out of the directory's file into the trail's.
    let conn = rusqlite::Connection::open(&db.path).expect("open the directory");
    let left: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'audit_log')",
            [],
            |r| r.get(0),
        )
        .expect("read the schema");
    assert!(!left, "audit_log is still in the directory's file");
    assert!(common::audit_trail_file(&db.path).is_file());
}

/// An import's apply phase holds the directory's write lock; the audit
/// trail has its own file, so a call is answered (and audited) meanwhile.
#[tokio::test]
async fn a_call_is_answered_while_an_import_holds_the_directory_lock() {
    let db = TempDb::seeded();
    let server = start(&db, &["--audit-commit-timeout-secs", "10"]).await;
    let conn = rusqlite::Connection::open(&db.path).expect("open the test database");
    conn.execute_batch("BEGIN IMMEDIATE; UPDATE employees SET phone = phone")
        .expect("take the write lock, as an import does");
    let (status, body) = call(
        &server,
        "calculate-employee-tenure",
        json!({"employeeId": "JohnDoe"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["result"].is_object(),
        "answered under the lock: {body}"
    );
    // Still held: the answer did not wait for it.
    assert!(!conn.is_autocommit());
    let rows = audit_rows(&db, &["--tool", "calculate-employee-tenure"]);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    conn.execute_batch("ROLLBACK").expect("release the lock");
}

#[tokio::test]
async fn a_locked_database_fails_the_call_in_bounded_time() {
    let db = TempDb::seeded();
    // The smallest wait the flag takes (the default, 30 s, outlasts an import).
    let server = start(&db, &["--audit-commit-timeout-secs", "10"]).await;
    let trail = common::audit_trail_file(&db.path);
    let conn = rusqlite::Connection::open(&trail).expect("open the audit trail");
    conn.execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let started = Instant::now();
    let (status, body) = call(
        &server,
        "calculate-employee-tenure",
        json!({"employeeId": "JohnDoe"}),
    )
    .await;
    let waited = started.elapsed();
    assert_eq!(body["error"]["code"], -32603, "HTTP {status} {body}");
    assert!(waited < Duration::from_secs(12), "waited {waited:?}");
    conn.execute_batch("ROLLBACK").expect("release the lock");
    let (status, body) = call(
        &server,
        "calculate-employee-tenure",
        json!({"employeeId": "JohnDoe"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"].is_object(), "{body}");
}

#[tokio::test]
async fn calls_to_unknown_tools_are_audited_and_a_flood_folds_into_counted_rows() {
    let db = TempDb::seeded();
    let server = start(&db, &[]).await;
    let calls = 300;
    for i in 0..calls {
        // Made-up names, each new, each longer than the trail keeps.
        let name = format!("{i:03}{}", "z".repeat(300));
        let (_, body) = call(&server, &name, json!({"employeeId": "JohnDoe"})).await;
        assert_eq!(body["error"]["code"], -32602, "{body}");
    }
    // The first one is stored at once.
    let live = audit_rows(&db, &["--outcome", "protocol_error"]);
    assert!(!live.is_empty() && live.len() <= 2, "{live:#?}");
    let (exit, log) = server.stop().await;
    assert!(exit.success(), "{exit}: {log}");
    let rows = audit_rows(&db, &["--outcome", "protocol_error"]);
    assert!(rows.len() <= 2, "{} rows: {rows:#?}", rows.len());
    let counted: i64 = rows.iter().filter_map(|r| r["count"].as_i64()).sum();
    assert_eq!(counted, calls, "{rows:#?}");
    let first = rows.iter().map(|r| r["tool"].as_str().unwrap_or("")).min();
    let first = first.unwrap_or_default();
    assert!(first.starts_with("000z"), "{first}");
    assert_eq!(first.chars().count(), 128, "the name is cut");
    assert!(
        rows[0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("unknown tool")),
        "{rows:#?}"
    );
}
