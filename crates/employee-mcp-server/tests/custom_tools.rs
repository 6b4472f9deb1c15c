//! Operator-defined read-only SQL tools, end to end on the real binary:
//! added to a running server from a file, called through the engine
//! (validation, scopes, redaction, audit), every refusal path, injection
//! through parameters, row limit and timeout, and `--tools-file`.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{
    MODERN, Server, StdioServer, TempDb, read_stream_until, temp_path, tool_error_text, tools_cli,
    tools_ok,
};
use mcp_server::protocol::meta;
use serde_json::{Value, json};

/// The examples shipped in the repository.
fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tools/directory.toml")
}

/// A definition file in the temp directory, removed on drop.
struct ToolFile(PathBuf);

impl ToolFile {
    fn new(text: &str) -> Self {
        let path = temp_path("tools", "toml");
        std::fs::write(&path, text).expect("write tool file");
        ToolFile(path)
    }

    fn arg(&self) -> &str {
        self.0.to_str().expect("utf-8 path")
    }
}

impl Drop for ToolFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One tool named `name` with `sql` and parameters given as TOML lines.
fn tool(name: &str, sql: &str, extra: &str) -> String {
    format!(
        "[[tool]]\nname = \"{name}\"\ndescription = \"Test tool.\"\nscopes = [\"hr:directory\"]\nsql = \"\"\"\n{sql}\n\"\"\"\n{extra}\n"
    )
}

const BY_LAST_NAME: &str = r#"
[tool.parameters]
required = ["last"]
properties.last = { type = "string", maxLength = 200 }
"#;

/// A fingerprint of the directory: rows of every table we care about.
fn fingerprint(db: &TempDb) -> (i64, i64, String) {
    let conn = rusqlite::Connection::open(&db.path).expect("open db");
    let employees: i64 = conn
        .query_row("SELECT count(*) FROM employees", [], |r| r.get(0))
        .expect("count");
    let departments: i64 = conn
        .query_row("SELECT count(*) FROM departments", [], |r| r.get(0))
        .expect("count");
    let names: String = conn
        .query_row(
            "SELECT group_concat(id || last_name || salary, ',') FROM employees",
            [],
            |r| r.get(0),
        )
        .expect("names");
    (employees, departments, names)
}

#[tokio::test]
async fn adding_a_file_makes_tools_callable_and_announces_list_changed() {
    let server = Server::start().await;
    let mut listen = server.listen_tools().await;
    let out = tools_ok(
        server.db(),
        &[
            "add",
            "--file",
            examples().to_str().unwrap(),
            "--actor",
            "ops",
        ],
    );
    assert!(out.contains("added new-hires-since"), "{out}");
    read_stream_until(&mut listen, "notifications/tools/list_changed").await;

    let reply = server.modern("tools/list", json!({})).await;
    let tools = reply.result()["tools"].as_array().expect("tools").clone();
    assert_eq!(tools.len(), 10, "{}", reply.text);
    let hires = tools
        .iter()
        .find(|t| t["name"] == "new-hires-since")
        .expect("listed");
    assert_eq!(hires["annotations"]["readOnlyHint"], true);
    assert_eq!(hires["inputSchema"]["required"], json!(["since"]));
    let row_schema = &hires["outputSchema"]["properties"]["rows"]["items"];
    assert_eq!(
        row_schema["properties"]["startDate"]["type"],
        json!(["string", "null"])
    );

    let result = server
        .call_tool("new-hires-since", json!({"since": "2026-01-01"}))
        .await;
    let rows = result["structuredContent"]["rows"]
        .as_array()
        .expect("rows");
    assert!(!rows.is_empty(), "{result}");
    assert!(
        rows.iter()
            .all(|r| r["startDate"].as_str().unwrap() >= "2026-01-01")
    );
    // The text mirror carries the same JSON.
    assert_eq!(common::text_json(&result), result["structuredContent"]);

    // Arguments are validated against the declared schema.
    let bad = server
        .call_tool("new-hires-since", json!({"since": "last week"}))
        .await;
    assert!(tool_error_text(&bad).contains("Invalid arguments"), "{bad}");
    let extra = server
        .call_tool("new-hires-since", json!({"since": "2026-01-01", "x": 1}))
        .await;
    assert!(
        tool_error_text(&extra).contains("Invalid arguments"),
        "{extra}"
    );

    // Optional parameter omitted binds NULL.
    let all = server.call_tool("headcount-by-location", json!({})).await;
    let eng = server
        .call_tool(
            "headcount-by-location",
            json!({"department": "engineering"}),
        )
        .await;
    let total = |r: &Value| -> i64 {
        r["structuredContent"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["headcount"].as_i64().unwrap())
            .sum()
    };
    assert!(total(&all) > total(&eng) && total(&eng) > 0, "{all} {eng}");

    // Calls are audited like the built-ins.
    let audit = std::process::Command::new(common::BIN)
        .args(["audit", "--json", "--tool", "new-hires-since", "--database"])
        .arg(server.db().url())
        .output()
        .expect("audit");
    let audit = String::from_utf8_lossy(&audit.stdout);
    assert_eq!(audit.lines().count(), 3, "{audit}");

    // Removal reaches the server the same way.
    tools_ok(server.db(), &["remove", "new-hires-since"]);
    read_stream_until(&mut listen, "notifications/tools/list_changed").await;
    let names = server.tool_names().await;
    assert!(!names.contains(&"new-hires-since".to_owned()), "{names:?}");
    let shown = tools_ok(server.db(), &["show", "headcount-by-location"]);
    assert!(
        shown.contains("headcount-by-location") && shown.contains("[[tool]]"),
        "{shown}"
    );
}

#[tokio::test]
async fn every_refusal_names_the_field_and_changes_nothing() {
    let db = TempDb::seeded();
    let sel = "SELECT id AS employeeId FROM employees WHERE last_name = :last";
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "bad schema",
            tool(
                "t",
                sel,
                "[tool.parameters]\nproperties.last = { type = \"string\", pattern = \"(\" }",
            ),
            "`parameters`",
        ),
        (
            "unknown parameter",
            tool(
                "t",
                "SELECT id AS i FROM employees WHERE last_name = :other",
                BY_LAST_NAME,
            ),
            "parameter :other is not declared",
        ),
        (
            "unused parameter",
            tool("t", "SELECT id AS i FROM employees", BY_LAST_NAME),
            "declared but the SQL never uses :last",
        ),
        (
            "two statements",
            tool("t", &format!("{sel}; SELECT 1"), BY_LAST_NAME),
            "exactly one statement",
        ),
        (
            "delete",
            tool(
                "t",
                "DELETE FROM employees WHERE last_name = :last",
                BY_LAST_NAME,
            ),
            "not allowed in a read-only tool",
        ),
        (
            "update",
            tool(
                "t",
                "UPDATE employees SET salary = 0 WHERE last_name = :last",
                BY_LAST_NAME,
            ),
            "not allowed in a read-only tool",
        ),
        (
            "insert",
            tool(
                "t",
                "INSERT INTO skills (name, category) VALUES (:last, 'x')",
                BY_LAST_NAME,
            ),
            "not allowed in a read-only tool",
        ),
        (
            "cte delete",
            tool(
                "t",
                "WITH x AS (SELECT 1) DELETE FROM employees WHERE last_name = :last",
                BY_LAST_NAME,
            ),
            "not allowed in a read-only tool",
        ),
        (
            "attach",
            tool("t", "ATTACH DATABASE '/tmp/evil.db' AS evil", ""),
            "not allowed in a read-only tool",
        ),
        (
            "pragma",
            tool("t", "PRAGMA table_info(employees)", ""),
            "not allowed in a read-only tool",
        ),
        (
            "pragma function",
            tool("t", "SELECT name FROM pragma_table_info('employees')", ""),
            "not allowed in a read-only tool",
        ),
        (
            "audit_log",
            tool("t", "SELECT tool FROM audit_log", ""),
            "not allowed in a read-only tool",
        ),
        (
            "catalogue",
            tool("t", "SELECT definition FROM tool_catalog", ""),
            "not allowed in a read-only tool",
        ),
        (
            "catalogue in a subquery",
            tool(
                "t",
                "SELECT id FROM employees WHERE id IN (SELECT tool FROM tool_catalog_changes)",
                "",
            ),
            "not allowed in a read-only tool",
        ),
        (
            "does not prepare",
            tool("t", "SELECT nope FROM no_such_table", ""),
            "does not prepare",
        ),
        (
            "positional",
            tool("t", "SELECT id AS i FROM employees WHERE id = ?", ""),
            "named parameters",
        ),
        (
            "duplicate columns",
            tool("t", "SELECT id, id FROM employees", ""),
            "appears twice",
        ),
        (
            "built-in name",
            tool("get-employee-details", "SELECT id AS i FROM employees", ""),
            "already exists",
        ),
        (
            "unknown scope",
            tool("t", "SELECT 1 AS x", "").replace("hr:directory", "hr:god"),
            "unknown scope",
        ),
        ("bad toml", "[[tool]\nname=".to_owned(), "(toml)"),
        (
            "second tool broken",
            tool("ok-one", "SELECT 1 AS x", "") + &tool("t", "DELETE FROM employees", ""),
            "not allowed in a read-only tool",
        ),
    ];
    let before = fingerprint(&db);
    for (what, text, reason) in &cases {
        let file = ToolFile::new(text);
        for action in ["validate", "add"] {
            let (ok, out, err) = tools_cli(&db, &[action, "--file", file.arg()]);
            assert!(!ok, "{what}: {action} accepted it: {out}");
            assert!(err.contains(reason), "{what}: {action}: {err}");
            assert!(err.contains("field `"), "{what}: no field named: {err}");
        }
    }
    assert_eq!(tools_ok(&db, &["list", "--json"]).lines().count(), 8);
    assert_eq!(tools_ok(&db, &["history"]).lines().count(), 0);
    assert_eq!(fingerprint(&db), before);
}

#[tokio::test]
async fn injection_through_parameters_returns_data_or_an_error_never_a_change() {
    let server = Server::start().await;
    let file = ToolFile::new(&tool(
        "by-last-name",
        "SELECT id AS employeeId, last_name AS lastName FROM employees WHERE last_name = :last",
        BY_LAST_NAME,
    ));
    tools_ok(server.db(), &["add", "--file", file.arg()]);
    let before = fingerprint(server.db());
    let attempts = [
        "x'; DELETE FROM employees; --",
        "' OR '1'='1",
        "Johnson' UNION SELECT tool, arguments FROM audit_log --",
        "\"; DROP TABLE employees; --",
        "Johnson\u{0}; UPDATE employees SET salary = 0",
    ];
    let deadline = Instant::now() + common::TIMEOUT;
    while !server
        .tool_names()
        .await
        .contains(&"by-last-name".to_owned())
    {
        assert!(Instant::now() < deadline, "tool never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for attempt in attempts {
        let result = server
            .call_tool("by-last-name", json!({"last": attempt}))
            .await;
        if result["isError"] != true {
            let rows = result["structuredContent"]["rows"]
                .as_array()
                .expect("rows");
            assert!(rows.is_empty(), "{attempt}: {result}");
        }
    }
    let honest = server
        .call_tool("by-last-name", json!({"last": "Johnson"}))
        .await;
    assert!(
        !honest["structuredContent"]["rows"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(fingerprint(server.db()), before);
}

#[tokio::test]
async fn row_limit_and_timeout_are_enforced() {
    let server = Server::start().await;
    let slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < :n) SELECT count(*) AS n FROM c";
    let text = tool(
        "five-employees",
        "SELECT id AS employeeId FROM employees ORDER BY id",
        "row_limit = 5",
    ) + &tool(
        "slow-count",
        slow,
        "timeout_ms = 200\n[tool.parameters]\nproperties.n = { type = \"integer\", minimum = 1 }",
    );
    let file = ToolFile::new(&text);
    tools_ok(server.db(), &["add", "--file", file.arg()]);
    let deadline = Instant::now() + common::TIMEOUT;
    while server.tool_names().await.len() < 10 {
        assert!(Instant::now() < deadline, "tools never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let five = server.call_tool("five-employees", json!({})).await;
    assert_eq!(
        five["structuredContent"]["rows"].as_array().map(Vec::len),
        Some(5)
    );
    assert_eq!(five["structuredContent"]["truncated"], true);

    let quick = server.call_tool("slow-count", json!({"n": 10})).await;
    assert_eq!(quick["structuredContent"]["rows"][0]["n"], 10);
    let stopped = server
        .call_tool("slow-count", json!({"n": 2_000_000_000_i64}))
        .await;
    assert!(
        tool_error_text(&stopped).contains("longer than its limit of 200 ms"),
        "{stopped}"
    );
    let alive = server
        .call_tool(
            "get-employee-details",
            json!({"employeeId": "AliceJohnson"}),
        )
        .await;
    assert_eq!(alive["structuredContent"]["employeeId"], "AliceJohnson");
}

#[tokio::test]
async fn an_in_flight_call_finishes_when_its_tool_is_disabled() {
    let server = Server::start().await;
    let slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < :n) SELECT count(*) AS n FROM c";
    let file = ToolFile::new(&tool(
        "slow-count",
        slow,
        "timeout_ms = 60000\n[tool.parameters]\nproperties.n = { type = \"integer\", minimum = 1 }",
    ));
    tools_ok(server.db(), &["add", "--file", file.arg()]);
    let deadline = Instant::now() + common::TIMEOUT;
    while server.tool_names().await.len() < 9 {
        assert!(Instant::now() < deadline, "tool never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut listen = server.listen_tools().await;
    let call = server.call_tool("slow-count", json!({"n": 3_000_000}));
    let disable = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        tools_ok(server.db(), &["disable", "slow-count"]);
        read_stream_until(&mut listen, "notifications/tools/list_changed").await;
    };
    let (result, ()) = tokio::join!(call, disable);
    assert_eq!(
        result["structuredContent"]["rows"][0]["n"], 3_000_000,
        "{result}"
    );
    let after = server
        .modern(
            "tools/call",
            json!({"name": "slow-count", "arguments": {"n": 1}}),
        )
        .await;
    assert_eq!(after.error_code(), -32602, "{}", after.text);
}

#[tokio::test]
async fn scopes_and_field_redaction_apply_to_custom_tools() {
    let db = TempDb::seeded();
    tools_ok(&db, &["add", "--file", examples().to_str().unwrap()]);
    let meta = json!({
        meta::PROTOCOL_VERSION: MODERN,
        meta::CLIENT_CAPABILITIES: {}
    });
    let call = |id: u64, name: &str, args: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"_meta": meta, "name": name, "arguments": args}})
    };
    // hr:directory: new hires without email; headcount (hr:reports) refused.
    let mut stdio = StdioServer::start_with_env(
        db.share(),
        &[],
        &[("EMPLOYEE_MCP_STDIO_SCOPES", "hr:directory")],
    );
    let hires = stdio
        .request(call(1, "new-hires-since", json!({"since": "2026-01-01"})))
        .await;
    let rows = hires["result"]["structuredContent"]["rows"]
        .as_array()
        .expect("rows");
    assert!(!rows.is_empty(), "{hires}");
    assert!(rows.iter().all(|r| r.get("email").is_none()), "{hires}");
    assert!(rows.iter().all(|r| r.get("name").is_some()));
    let denied = stdio
        .request(call(2, "headcount-by-location", json!({})))
        .await;
    assert_eq!(denied["error"]["code"], -31001, "{denied}");
    drop(stdio);
    // hr:contact sees the email.
    let mut stdio = StdioServer::start_with_env(
        db.share(),
        &[],
        &[("EMPLOYEE_MCP_STDIO_SCOPES", "hr:contact")],
    );
    let hires = stdio
        .request(call(3, "new-hires-since", json!({"since": "2026-01-01"})))
        .await;
    let rows = hires["result"]["structuredContent"]["rows"]
        .as_array()
        .expect("rows");
    assert!(
        rows.iter()
            .all(|r| r["email"].as_str().is_some_and(|e| e.contains('@'))),
        "{hires}"
    );
}

#[tokio::test]
async fn a_tools_file_is_loaded_and_watched_and_a_broken_edit_keeps_the_set() {
    let first = tool(
        "file-one",
        "SELECT id AS employeeId FROM employees ORDER BY id LIMIT 1",
        "",
    );
    let file = ToolFile::new(&first);
    let server = Server::start_with(&["--tools-file", file.arg()]).await;
    let names = server.tool_names().await;
    assert!(names.contains(&"file-one".to_owned()), "{names:?}");
    let mut listen = server.listen_tools().await;

    // A valid edit: a second tool.
    let second = first.clone() + &tool("file-two", "SELECT count(*) AS n FROM departments", "");
    std::fs::write(&file.0, &second).expect("edit");
    read_stream_until(&mut listen, "notifications/tools/list_changed").await;
    let names = server.tool_names().await;
    assert!(names.contains(&"file-two".to_owned()), "{names:?}");

    // A broken edit changes nothing.
    std::fs::write(&file.0, tool("file-three", "DELETE FROM employees", "")).expect("edit");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(server.tool_names().await, names);
    let two = server.call_tool("file-two", json!({})).await;
    assert!(
        two["structuredContent"]["rows"][0]["n"].as_i64().unwrap() > 0,
        "{two}"
    );

    // Dropping a tool from the file removes it.
    std::fs::write(&file.0, &first).expect("edit");
    read_stream_until(&mut listen, "notifications/tools/list_changed").await;
    let names = server.tool_names().await;
    assert!(!names.contains(&"file-two".to_owned()), "{names:?}");
    assert!(names.contains(&"file-one".to_owned()), "{names:?}");
}

#[tokio::test]
async fn a_broken_tools_file_stops_the_start() {
    let file = ToolFile::new(&tool("bad", "UPDATE employees SET salary = 1", ""));
    let db = TempDb::seeded();
    let out = std::process::Command::new(common::BIN)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--tools-file",
            file.arg(),
            "--database",
        ])
        .arg(db.url())
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not allowed in a read-only tool"), "{err}");
}

#[tokio::test]
async fn the_custom_tool_bound_is_enforced() {
    let db = TempDb::seeded();
    let text = tool("one", "SELECT 1 AS x", "") + &tool("two", "SELECT 2 AS x", "");
    let file = ToolFile::new(&text);
    let (ok, _, err) = tools_cli(
        &db,
        &["add", "--file", file.arg(), "--max-custom-tools", "1"],
    );
    assert!(!ok);
    assert!(err.contains("over the limit of 1"), "{err}");
    assert_eq!(tools_ok(&db, &["list", "--json"]).lines().count(), 8);
}
