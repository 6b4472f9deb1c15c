//! The audit trail, end to end: every outcome lands in `audit_log` and is
//! visible through the `audit` subcommand; records of answered calls
//! survive a SIGKILL; the rate limit answers 429 and recovers.

use crate::common;

use std::time::Duration;

use common::access::{Issuer, audit_rows, audit_table};
use common::{Backend, Server, TempDb};
use serde_json::{Value, json};

fn outcomes(rows: &[Value]) -> Vec<&str> {
    rows.iter().filter_map(|r| r["outcome"].as_str()).collect()
}

/// A seeded database on SQLite or PostgreSQL.
async fn database(postgres: bool) -> TempDb {
    if postgres {
        tokio::task::spawn_blocking(|| TempDb::seeded_on(Backend::Postgres))
            .await
            .expect("create a PostgreSQL test database")
    } else {
        TempDb::seeded()
    }
}

#[tokio::test]
async fn every_outcome_is_audited_and_queryable() {
    every_outcome_is_audited_and_queryable_on(false).await;
}

#[tokio::test]
async fn every_outcome_is_audited_and_queryable_on_postgres() {
    every_outcome_is_audited_and_queryable_on(true).await;
}

async fn every_outcome_is_audited_and_queryable_on(postgres: bool) {
    let issuer = Issuer::start();
    let db = database(postgres).await;
    let mut flags = issuer.flags();
    flags.extend(["--rate-limit-burst".into(), "2".into()]);
    flags.extend(["--rate-limit-per-minute".into(), "1".into()]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = Server::start_on(db.share(), &flags).await;
    let token = issuer.token("alice@acme.test", "hr:directory", None);
    let t = Some(token.as_str());

    // success
    let r = server
        .call_as(
            "get-employee-details",
            json!({"employeeId": "AliceJohnson"}),
            t,
        )
        .await;
    assert_eq!(r.result()["isError"], json!(null), "{}", r.text);
    // tool error (unknown employee)
    let r = server
        .call_as(
            "get-employee-details",
            json!({"employeeId": "NoSuchPerson"}),
            t,
        )
        .await;
    assert_eq!(r.result()["isError"], true, "{}", r.text);
    // denied (no hr:compensation)
    let r = server
        .call_as(
            "get-compensation-info",
            json!({"role": "Software Engineer", "level": "senior"}),
            t,
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(r.error_code(), -31001);
    // rate limited: a burst of two per tool, the third call is refused
    for _ in 0..2 {
        let r = server
            .call_as(
                "calculate-employee-tenure",
                json!({"employeeId": "JohnDoe"}),
                t,
            )
            .await;
        r.result();
    }
    let r = server
        .call_as(
            "calculate-employee-tenure",
            json!({"employeeId": "JohnDoe"}),
            t,
        )
        .await;
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.error_code(), -31002);
    assert!(r.header("retry-after").is_some());

    // Everything, oldest first.
    let rows = audit_rows(&db, &[]);
    assert_eq!(
        outcomes(&rows),
        [
            "success",
            "tool_error",
            "denied",
            "success",
            "success",
            "rate_limited"
        ],
        "{rows:#?}"
    );
    let first = &rows[0];
    assert_eq!(first["tool"], "get-employee-details");
    assert_eq!(first["subject"], "alice@acme.test");
    assert_eq!(first["client_id"], "access-test-client");
    assert_eq!(first["client_name"], "access-tests");
    assert_eq!(first["remote_addr"], "127.0.0.1");
    assert_eq!(first["arguments"], json!({"employeeId": "AliceJohnson"}));
    assert_eq!(first["protocol_version"], "2026-07-28");
    assert!(first["at"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert!(first["at_unix_ms"].as_i64().is_some_and(|t| t > 0));
    assert!(
        rows[1]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("NoSuchPerson"))
    );
    assert!(
        rows[2]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("hr:compensation"))
    );

    // Filters.
    for outcome in ["success", "tool_error", "denied", "rate_limited"] {
        let rows = audit_rows(&db, &["--outcome", outcome]);
        assert!(!rows.is_empty(), "{outcome}");
        assert!(outcomes(&rows).iter().all(|o| *o == outcome));
    }
    assert!(audit_rows(&db, &["--outcome", "protocol_error"]).is_empty());
    let rows = audit_rows(&db, &["--tool", "calculate-employee-tenure"]);
    assert_eq!(rows.len(), 3);
    assert_eq!(audit_rows(&db, &["--subject", "alice@acme.test"]).len(), 6);
    assert!(audit_rows(&db, &["--subject", "bob"]).is_empty());
    assert_eq!(audit_rows(&db, &["--since", "1h"]).len(), 6);
    assert!(audit_rows(&db, &["--until", "1h"]).is_empty());
    assert!(audit_rows(&db, &["--since", "2000-01-01T00:00:00Z"]).len() == 6);
    // --limit keeps the newest rows.
    let rows = audit_rows(&db, &["--limit", "2"]);
    assert_eq!(outcomes(&rows), ["success", "rate_limited"]);

    // The table form.
    let table = audit_table(&db, &[]);
    assert!(table.starts_with("TIME"), "{table}");
    assert_eq!(table.lines().count(), 7, "{table}");
    assert!(table.contains("rate_limited") && table.contains("alice@acme.test"));
}

#[tokio::test]
async fn answered_calls_survive_sigkill() {
    answered_calls_survive_sigkill_on(false).await;
}

/// On PostgreSQL the record is committed on the server before the answer:
/// killing the MCP server loses nothing.
#[tokio::test]
async fn answered_calls_survive_sigkill_on_postgres() {
    answered_calls_survive_sigkill_on(true).await;
}

async fn answered_calls_survive_sigkill_on(postgres: bool) {
    let db = database(postgres).await;
    let mut server = Server::start_on(db.share(), &[]).await;
    let ids = ["AliceJohnson", "JohnDoe", "NoSuchPerson"];
    for id in ids {
        let r = server
            .call_as("calculate-employee-tenure", json!({"employeeId": id}), None)
            .await;
        r.result();
    }
    // No graceful shutdown: the records must already be on disk.
    server.kill_9();
    let rows = audit_rows(&db, &[]);
    assert_eq!(rows.len(), 3, "{rows:#?}");
    for (row, id) in rows.iter().zip(ids) {
        assert_eq!(row["arguments"]["employeeId"], id);
        assert_eq!(row["subject"], Value::Null);
    }
    assert_eq!(outcomes(&rows), ["success", "success", "tool_error"]);

    // A restart on the same database appends to the same trail.
    let mut server = Server::start_on(db.share(), &[]).await;
    server
        .call_as("get-team-members", json!({"teamId": "backend"}), None)
        .await
        .result();
    server.kill_9();
    let rows = audit_rows(&db, &[]);
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[3]["tool"], "get-team-members");
}

#[tokio::test]
async fn rate_limit_answers_429_then_recovers_after_retry_after() {
    let db = TempDb::seeded();
    let server = Server::start_on(
        db.share(),
        &["--rate-limit-burst", "1", "--rate-limit-per-minute", "60"],
    )
    .await;
    let call = || server.call_as("search-employees-by-skill", json!({"skill": "Rust"}), None);
    call().await.result();
    let limited = call().await;
    assert_eq!(limited.status, 429, "{}", limited.text);
    assert_eq!(limited.error_code(), -31002);
    let wait: u64 = limited
        .header("retry-after")
        .and_then(|s| s.parse().ok())
        .expect("Retry-After seconds");
    assert!((1..=2).contains(&wait), "Retry-After {wait}");
    // Another tool has its own bucket.
    server
        .call_as(
            "calculate-employee-tenure",
            json!({"employeeId": "JohnDoe"}),
            None,
        )
        .await
        .result();
    tokio::time::sleep(Duration::from_secs(wait)).await;
    call().await.result();
    let rows = audit_rows(&db, &["--tool", "search-employees-by-skill"]);
    assert_eq!(outcomes(&rows), ["success", "rate_limited", "success"]);
}

/// Runs `employee-mcp-server audit ARGS`: (exit code, stderr).
fn audit_cli(args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(common::BIN)
        .arg("audit")
        .args(args)
        .env_remove("EMPLOYEE_MCP_DATABASE")
        .output()
        .expect("run audit");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 28 item 6: times before 1970 (or past chrono's range) are
/// argument errors, not a panic.
#[test]
fn audit_times_out_of_range_are_argument_errors() {
    for (flag, value) in [
        ("--since", "99999999999d"),
        ("--until", "99999999999d"),
        ("--since", "9223372036854775807s"),
    ] {
        let (code, err) = audit_cli(&[flag, value, "--database", "sqlite:///nonexistent/x.db"]);
        assert_eq!(code, Some(2), "{flag} {value}: {err}");
        assert!(
            err.contains(&format!("invalid value '{value}' for '{flag} <TIME>'"))
                && err.contains("that reaches back before 1970"),
            "{err}"
        );
    }
}

/// Issue 28 item 7: `audit` opens the file read-only; a foreign SQLite
/// file, a device and a file that is no database are named as such, and
/// none of them is changed.
#[test]
fn audit_reads_without_writing_and_names_what_it_cannot_read() {
    let foreign = common::temp_path("foreign", "db");
    let conn = rusqlite::Connection::open(&foreign).expect("create");
    conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x');")
        .expect("fill");
    drop(conn);
    let before = std::fs::read(&foreign).expect("read");
    let url = format!("sqlite://{}", foreign.display());
    let (code, err) = audit_cli(&["--database", &url]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("is not an employee directory (it has no audit_log or employees table)"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&foreign).expect("read"),
        before,
        "the file changed"
    );
    let wal = format!("{}-wal", foreign.display());
    assert!(!std::path::Path::new(&wal).exists(), "a WAL was created");

    let (code, err) = audit_cli(&["--database", "sqlite:///dev/zero"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/dev/zero is not a database file"), "{err}");

    let text = common::temp_path("text", "db");
    std::fs::write(
        &text,
        "not a database, just some words in a file\n".repeat(20),
    )
    .expect("write");
    let (code, err) = audit_cli(&["--database", &format!("sqlite://{}", text.display())]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is not a SQLite database"), "{err}");
    for p in [&foreign, &text] {
        let _ = std::fs::remove_file(p);
    }
}
