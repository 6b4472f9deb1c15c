//! The runtime tool catalogue, end to end on the real binary: `tools
//! disable|enable|list|history` change what every running server on the
//! database serves, with `list_changed` to listeners and the change on
//! record.

use crate::common;

use std::time::{Duration, Instant};

use common::{
    Backend, LEGACY_VERSIONS, Server, TOOL_NAMES, TempDb, names_of, next_list_change, notification,
    rpc, tools_cli, tools_ok,
};
use serde_json::{Value, json};

const TOOL: &str = "get-compensation-info";

/// Polls `tools/list` until `check` holds (within the harness timeout).
async fn wait_for_tools(server: &Server, check: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = Instant::now() + common::TIMEOUT;
    loop {
        let names = server.tool_names().await;
        if check(&names) {
            return names;
        }
        assert!(
            Instant::now() < deadline,
            "tool set never matched: {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn list_json(db: &TempDb) -> Vec<Value> {
    tools_ok(db, &["list", "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

#[tokio::test]
async fn disable_reaches_a_running_server_with_list_changed_then_enable_restores() {
    disable_then_enable(Backend::Sqlite).await;
}

#[tokio::test]
async fn on_postgres_disable_reaches_a_running_server_then_enable_restores() {
    disable_then_enable(Backend::Postgres).await;
}

async fn disable_then_enable(backend: Backend) {
    let server = Server::start_on(TempDb::seeded_on(backend), &[]).await;
    let mut listen = server.listen_tools().await;
    assert_eq!(server.tool_names().await, TOOL_NAMES);

    let started = Instant::now();
    let out = tools_ok(server.db(), &["disable", TOOL, "--actor", "alice"]);
    assert!(out.contains("disabled"), "{out}");
    next_list_change(&mut listen).await;
    eprintln!("list_changed {:?} after the CLI started", started.elapsed());
    let names = server.tool_names().await;
    assert!(!names.contains(&TOOL.to_owned()), "{names:?}");
    assert_eq!(names.len(), 7);

    // A new call of the disabled tool is an unknown tool.
    let refused = server
        .rpc(
            "tools/call",
            json!({"name": TOOL, "arguments": {"role": "Software Engineer"}}),
        )
        .await
        .expect_err("a disabled tool is not called");
    assert_eq!(refused.code(), Some(-32602), "{refused}");
    assert!(refused.to_string().contains("unknown tool"), "{refused}");

    // The state and the change are on record.
    let rows = list_json(server.db());
    let row = rows.iter().find(|r| r["name"] == TOOL).expect("listed");
    assert_eq!(row["enabled"], false);
    assert_eq!(row["updated_by"], "alice");
    let history = tools_ok(server.db(), &["history"]);
    assert!(history.contains(r#""action":"disable""#), "{history}");
    assert!(history.contains(r#""actor":"alice""#), "{history}");

    tools_ok(server.db(), &["enable", TOOL, "--actor", "bob"]);
    next_list_change(&mut listen).await;
    assert_eq!(server.tool_names().await, TOOL_NAMES);
    let result = server
        .call_tool(
            TOOL,
            json!({"role": "Software Engineer", "level": "senior"}),
        )
        .await;
    assert_ne!(result["isError"], true, "{result}");
}

#[tokio::test]
async fn every_server_on_the_database_applies_a_change_and_tells_legacy_streams() {
    two_servers(Backend::Sqlite).await;
}

#[tokio::test]
async fn on_postgres_every_replica_applies_a_change_and_tells_legacy_streams() {
    two_servers(Backend::Postgres).await;
}

async fn two_servers(backend: Backend) {
    let a = Server::start_on(TempDb::seeded_on(backend), &[]).await;
    let b = Server::start_on(a.db().share(), &[]).await;
    // A legacy session's GET stream on the second server.
    let session = b.legacy_client(LEGACY_VERSIONS[1]).await;
    session.open_stream().await.expect("the legacy GET stream");

    tools_ok(a.db(), &["disable", "check-leave-balance"]);
    notification(&session, "notifications/tools/list_changed").await;
    for server in [&a, &b] {
        let names = wait_for_tools(server, |n| n.len() == 7).await;
        assert!(!names.contains(&"check-leave-balance".to_owned()));
    }
    // The legacy session sees the new set too.
    let listed = rpc(&session, "tools/list", json!({})).await;
    assert_eq!(names_of(&listed.expect("tools/list")).len(), 7);
}

#[tokio::test]
async fn the_cli_refuses_unknown_names_and_removing_built_ins() {
    cli_refusals(Backend::Sqlite);
}

#[tokio::test]
async fn on_postgres_the_cli_refuses_unknown_names_and_removing_built_ins() {
    let db = cli_refusals(Backend::Postgres);
    // Custom tools work on PostgreSQL too: an unknown one is named as such.
    for args in [&["show", "x"][..], &["remove", "x"]] {
        let (ok, _, err) = tools_cli(&db, args);
        assert!(!ok);
        assert!(err.contains("no custom tool named \"x\""), "{err}");
    }
}

fn cli_refusals(backend: Backend) -> TempDb {
    let db = TempDb::seeded_on(backend);
    let (ok, _, err) = tools_cli(&db, &["disable", "no-such-tool"]);
    assert!(!ok);
    assert!(err.contains("no tool named \"no-such-tool\""), "{err}");
    let (ok, _, err) = tools_cli(&db, &["remove", "get-employee-details"]);
    assert!(!ok);
    assert!(err.contains("cannot be removed, only disabled"), "{err}");
    // Disabling twice is reported, not recorded twice.
    tools_ok(&db, &["disable", TOOL]);
    let out = tools_ok(&db, &["disable", TOOL]);
    assert!(out.contains("already disabled"), "{out}");
    assert_eq!(tools_ok(&db, &["history"]).lines().count(), 1);
    // Eight built-ins, listed with their state.
    let rows = list_json(&db);
    assert_eq!(rows.len(), 8);
    assert_eq!(rows.iter().filter(|r| r["enabled"] == false).count(), 1);
    db
}

#[tokio::test]
async fn a_server_started_after_a_change_serves_the_changed_set() {
    started_after_a_change(Backend::Sqlite).await;
}

#[tokio::test]
async fn on_postgres_a_server_started_after_a_change_serves_the_changed_set() {
    started_after_a_change(Backend::Postgres).await;
}

async fn started_after_a_change(backend: Backend) {
    let db = TempDb::seeded_on(backend);
    tools_ok(&db, &["disable", "generate-employee-report"]);
    let server = Server::start_on(db, &[]).await;
    let names = server.tool_names().await;
    assert_eq!(names.len(), 7);
    assert!(!names.contains(&"generate-employee-report".to_owned()));
}

/// The watcher outlives a PostgreSQL outage: it logs, retries on every tick
/// and applies the next change once the database is back.
#[tokio::test(flavor = "multi_thread")]
async fn on_postgres_the_watcher_survives_an_outage_and_applies_the_next_change() {
    const NAME: &str = "faults-catalog";
    let root = tokio::task::spawn_blocking(|| common::pg_scratch("start", NAME))
        .await
        .expect("cluster");
    let name = format!("catalog_outage_{}", std::process::id());
    let url = format!(
        "{}/{name}",
        root.rsplit_once('/').map_or(root.as_str(), |(r, _)| r)
    );
    common::pg::psql(&root, &format!("DROP DATABASE IF EXISTS {name}"));
    common::pg::psql(&root, &format!("CREATE DATABASE {name}"));
    let server = Server::start_on(TempDb::postgres_at(&url), &[]).await;
    let mut listen = server.listen_tools().await;

    tokio::task::spawn_blocking(|| common::pg_scratch("stop", NAME))
        .await
        .expect("stop");
    // Several ticks fail while the database is down.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    tokio::task::spawn_blocking(|| common::pg_scratch("start", NAME))
        .await
        .expect("start");

    tools_ok(server.db(), &["disable", TOOL, "--actor", "after-outage"]);
    next_list_change(&mut listen).await;
    let names = wait_for_tools(&server, |n| n.len() == 7).await;
    assert!(!names.contains(&TOOL.to_owned()), "{names:?}");
}

/// Issue 28 item 12: a definition file that never ends (a device) is
/// read up to the limit and refused, by `tools validate` and at start.
#[tokio::test]
async fn a_definition_file_that_never_ends_is_refused() {
    let db = TempDb::seeded();
    let refusal = "/dev/zero is over the limit of 262144 bytes";
    let (ok, _, err) = tools_cli(&db, &["validate", "--file", "/dev/zero"]);
    assert!(!ok && err.contains(refusal), "{err}");
    let out = std::process::Command::new(common::BIN)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--tools-file",
            "/dev/zero",
            "--database",
        ])
        .arg(db.url())
        .env("RUST_LOG", "warn")
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains(refusal), "{err}");
}
