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
    let db = TempDb::pristine_on(backend);
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

// ------------------------------------------------------ approval policies

/// The `tools list --json` row of `name`.
fn row_of(db: &TempDb, name: &str) -> Value {
    list_json(db)
        .into_iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed"))
}

/// The catalogue's generation, read from its table.
fn generation(db: &TempDb) -> i64 {
    let sql = "SELECT generation FROM tool_catalog_generation WHERE id = 1";
    match &db.postgres {
        Some(url) => common::pg::psql(url, sql).trim().parse().expect("a number"),
        None => rusqlite::Connection::open(&db.path)
            .expect("open")
            .query_row(sql, [], |r| r.get(0))
            .expect("generation"),
    }
}

/// The history's rows (JSON lines), oldest first.
fn history(db: &TempDb) -> Vec<Value> {
    tools_ok(db, &["history"])
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

#[tokio::test]
async fn tools_approval_sets_and_clears_an_override_on_record() {
    approval_set_and_clear(Backend::Sqlite);
}

#[tokio::test]
async fn on_postgres_tools_approval_sets_and_clears_an_override_on_record() {
    approval_set_and_clear(Backend::Postgres);
}

fn approval_set_and_clear(backend: Backend) {
    let db = TempDb::pristine_on(backend);
    // The declared defaults, before any change.
    let row = row_of(&db, TOOL);
    assert_eq!(row["approval"], "confirm", "{row}");
    assert_eq!(row["approval_override"], Value::Null, "{row}");
    assert_eq!(row["approval_version"], 0, "{row}");
    let report = row_of(&db, "generate-employee-report");
    assert_eq!(report["approval"], "none", "{report}");
    assert_eq!(
        report["approval_policy"], r#"none; confirm if reportType="compensation""#,
        "{report}"
    );
    let leave = row_of(&db, "check-leave-balance");
    assert_eq!(leave["approval_policy"], "none", "{leave}");
    let table = tools_ok(&db, &["list"]);
    assert!(
        table.lines().next().unwrap().contains("APPROVAL"),
        "{table}"
    );
    let line = |table: &str, name: &str| {
        table
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} not in {table}"))
            .to_owned()
    };
    assert!(line(&table, TOOL).ends_with("confirm"), "{table}");

    // An override: recorded, the generation bumped, the version is it.
    let before = generation(&db);
    let out = tools_ok(
        &db,
        &[
            "approval",
            TOOL,
            "operator",
            "--reason",
            "audit finding 7",
            "--actor",
            "olga",
        ],
    );
    assert!(out.contains("operator (override)"), "{out}");
    let set = generation(&db);
    assert_eq!(set, before + 1);
    let row = row_of(&db, TOOL);
    assert_eq!(row["approval"], "operator", "{row}");
    assert_eq!(row["approval_override"], "operator", "{row}");
    assert_eq!(row["approval_version"], set, "{row}");
    assert_eq!(row["enabled"], true, "{row}");
    assert_eq!(row["updated_by"], "olga", "{row}");
    let table = tools_ok(&db, &["list"]);
    assert!(
        line(&table, TOOL).ends_with("operator (override)"),
        "{table}"
    );
    let last = history(&db).pop().expect("a change on record");
    assert_eq!(last["action"], "approval", "{last}");
    assert_eq!(last["tool"], TOOL, "{last}");
    assert_eq!(last["actor"], "olga", "{last}");
    assert_eq!(
        last["detail"], "operator (was confirm): audit finding 7",
        "{last}"
    );

    // The same again: said, not recorded, no new generation.
    let out = tools_ok(&db, &["approval", TOOL, "operator"]);
    assert!(out.contains("already operator"), "{out}");
    assert_eq!(generation(&db), set);
    assert_eq!(history(&db).len(), 1);

    // An override replaces argument rules (one level for every call).
    tools_ok(&db, &["approval", "generate-employee-report", "none"]);
    let report = row_of(&db, "generate-employee-report");
    assert_eq!(report["approval_policy"], "none", "{report}");
    let last = history(&db).pop().unwrap();
    assert_eq!(
        last["detail"], r#"none (was none; confirm if reportType="compensation")"#,
        "{last}"
    );
    // A self exemption stays under an override.
    tools_ok(&db, &["approval", "check-leave-balance", "confirm"]);
    let leave = row_of(&db, "check-leave-balance");
    assert_eq!(
        leave["approval_policy"], "confirm; none for one's own record",
        "{leave}"
    );

    // `default` clears it: a new version again.
    let out = tools_ok(&db, &["approval", TOOL, "default", "--reason", "fixed"]);
    assert!(out.contains("confirm (declared default)"), "{out}");
    let cleared = generation(&db);
    let row = row_of(&db, TOOL);
    assert_eq!(row["approval"], "confirm", "{row}");
    assert_eq!(row["approval_override"], Value::Null, "{row}");
    assert_eq!(row["approval_version"], cleared, "{row}");
    assert!(cleared > set);
    let last = history(&db).pop().unwrap();
    assert_eq!(
        last["detail"], "confirm, the declared default (was operator): fixed",
        "{last}"
    );
    let out = tools_ok(&db, &["approval", TOOL, "default"]);
    assert!(out.contains("already confirm"), "{out}");

    // Disabling and enabling gives a new version too (answers given before
    // are void), and keeps the override.
    tools_ok(&db, &["approval", TOOL, "operator"]);
    tools_ok(&db, &["disable", TOOL]);
    tools_ok(&db, &["enable", TOOL]);
    let row = row_of(&db, TOOL);
    assert_eq!(row["approval_version"], generation(&db), "{row}");
    assert_eq!(row["approval"], "operator", "{row}");

    // Unknown tools and levels are refused, naming what there is.
    let (ok, _, err) = tools_cli(&db, &["approval", "no-such-tool", "confirm"]);
    assert!(!ok);
    assert!(err.contains("no tool named \"no-such-tool\""), "{err}");
    assert!(
        err.contains("get-employee-details"),
        "the tools are listed: {err}"
    );
    let (ok, _, err) = tools_cli(&db, &["approval", TOOL, "manager"]);
    assert!(!ok);
    assert!(err.contains("none, confirm, operator, default"), "{err}");
    let changes = history(&db).len();
    let (ok, _, _) = tools_cli(&db, &["approval", "", "confirm"]);
    assert!(!ok);
    assert_eq!(history(&db).len(), changes, "refusals change nothing");
}

/// The catalogue as the release before approvals created it.
const OLD_CATALOG: &str = "
DROP TABLE IF EXISTS tool_catalog;
CREATE TABLE tool_catalog (
    name       TEXT NOT NULL PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('builtin', 'custom')),
    enabled    BOOLEAN NOT NULL DEFAULT TRUE,
    definition TEXT,
    source     TEXT NOT NULL DEFAULT 'cli',
    updated_at TEXT NOT NULL,
    updated_by TEXT NOT NULL
);
INSERT INTO tool_catalog (name, kind, enabled, updated_at, updated_by)
    VALUES ('check-leave-balance', 'builtin', FALSE, '2026-01-01T00:00:00.000Z', 'old');
";

#[tokio::test]
async fn an_older_catalogue_gets_the_approval_columns() {
    older_catalogue(Backend::Sqlite);
}

#[tokio::test]
async fn on_postgres_an_older_catalogue_gets_the_approval_columns() {
    older_catalogue(Backend::Postgres);
}

fn older_catalogue(backend: Backend) {
    let db = TempDb::seeded_on(backend);
    let columns = |db: &TempDb| -> Vec<String> {
        match &db.postgres {
            Some(url) => common::pg::psql(
                url,
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'tool_catalog'",
            )
            .lines()
            .map(str::to_owned)
            .collect(),
            None => {
                let conn = rusqlite::Connection::open(&db.path).expect("open");
                let mut stmt = conn
                    .prepare("SELECT name FROM pragma_table_info('tool_catalog')")
                    .expect("prepare");
                stmt.query_map([], |r| r.get(0))
                    .expect("columns")
                    .collect::<Result<_, _>>()
                    .expect("columns")
            }
        }
    };
    match &db.postgres {
        Some(url) => {
            common::pg::psql(url, OLD_CATALOG);
        }
        None => rusqlite::Connection::open(&db.path)
            .expect("open")
            .execute_batch(OLD_CATALOG)
            .expect("the old catalogue"),
    }
    assert!(!columns(&db).contains(&"approval".to_owned()));

    // Any `tools` command (as a server start) migrates it; the old row
    // keeps its state and gets the declared policy at version 0.
    let row = row_of(&db, "check-leave-balance");
    assert_eq!(row["enabled"], false, "{row}");
    assert_eq!(row["updated_by"], "old", "{row}");
    assert_eq!(row["approval_override"], Value::Null, "{row}");
    assert_eq!(row["approval_version"], 0, "{row}");
    let has = columns(&db);
    for column in ["approval", "approval_version"] {
        assert!(has.contains(&column.to_owned()), "{column} in {has:?}");
    }
    // Migrating again adds nothing twice (on PostgreSQL not the CHECK
    // either).
    let checks = |db: &TempDb| {
        db.postgres.as_ref().map(|url| {
            common::pg::psql(
                url,
                "SELECT count(*) FROM pg_constraint WHERE conrelid = 'tool_catalog'::regclass AND contype = 'c'",
            )
        })
    };
    let checks_before = checks(&db);
    tools_ok(&db, &["approval", "check-leave-balance", "operator"]);
    tools_ok(&db, &["list"]);
    assert_eq!(columns(&db).len(), has.len());
    assert_eq!(checks(&db), checks_before);
    let row = row_of(&db, "check-leave-balance");
    assert_eq!(row["approval"], "operator", "{row}");
    assert_eq!(row["enabled"], false, "an approval change keeps the state");
    // The stored values are checked by the table too.
    let bad = "UPDATE tool_catalog SET approval = 'nobody'";
    let refused = match &db.postgres {
        Some(url) => common::pg::try_psql(url, bad).is_err(),
        None => rusqlite::Connection::open(&db.path)
            .expect("open")
            .execute_batch(bad)
            .is_err(),
    };
    assert!(refused, "only none, confirm and operator are stored");
}

#[tokio::test]
async fn a_running_server_applies_an_approval_change() {
    running_server_applies_approval(Backend::Sqlite).await;
}

#[tokio::test]
async fn on_postgres_a_running_server_applies_an_approval_change() {
    running_server_applies_approval(Backend::Postgres).await;
}

async fn running_server_applies_approval(backend: Backend) {
    let server = Server::start_on(TempDb::seeded_on(backend), &[]).await;
    let mut listen = server.listen_tools().await;
    tools_ok(
        server.db(),
        &["approval", TOOL, "operator", "--actor", "olga"],
    );
    // The server swapped its tool set for the new generation (the policy
    // itself is not on the wire): the same tools, announced as changed.
    next_list_change(&mut listen).await;
    assert_eq!(server.tool_names().await, TOOL_NAMES);
    let row = row_of(server.db(), TOOL);
    assert_eq!(row["approval"], "operator", "{row}");
    assert_eq!(row["approval_version"], generation(server.db()), "{row}");
    // Clearing it is applied the same way.
    tools_ok(server.db(), &["approval", TOOL, "default"]);
    next_list_change(&mut listen).await;
    assert_eq!(server.tool_names().await, TOOL_NAMES);
    assert_eq!(row_of(server.db(), TOOL)["approval"], "confirm");
}
