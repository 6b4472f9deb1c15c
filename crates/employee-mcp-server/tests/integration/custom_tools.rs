//! Operator-defined read-only SQL tools, end to end on the real binary:
//! added to a running server from a file, called through the engine
//! (validation, scopes, redaction, audit), every refusal path, injection
//! through parameters, row limit and timeout, and `--tools-file`; each case
//! on SQLite and on PostgreSQL (`both!`), plus the PostgreSQL-only ones
//! (the reader role, `EXPLAIN`-time refusals, two replicas).

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{
    Backend, Server, StdioClient, TempDb, next_list_change, temp_path, tool_error_text, tools_cli,
    tools_ok,
};
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

/// Runs `case` on SQLite as `$sqlite` and on PostgreSQL as `$postgres`.
macro_rules! both {
    ($case:ident, $sqlite:ident, $postgres:ident) => {
        #[tokio::test]
        async fn $sqlite() {
            $case(Backend::Sqlite).await;
        }

        #[tokio::test]
        async fn $postgres() {
            $case(Backend::Postgres).await;
        }
    };
}

/// A private seeded database on `backend`.
async fn seeded(backend: Backend) -> TempDb {
    tokio::task::spawn_blocking(move || TempDb::pristine_on(backend))
        .await
        .expect("create the test database")
}

/// A fingerprint of the directory: rows of every table we care about.
fn fingerprint(db: &TempDb) -> (i64, i64, String) {
    if let Some(url) = &db.postgres {
        let count = |t: &str| -> i64 {
            common::pg::psql(url, &format!("SELECT count(*) FROM {t}"))
                .parse()
                .expect("count")
        };
        let names = common::pg::psql(
            url,
            "SELECT string_agg(id || last_name || salary, ',' ORDER BY id) FROM employees",
        );
        return (count("employees"), count("departments"), names);
    }
    let conn = rusqlite::Connection::open(&db.path).expect("open db");
    let employees: i64 = conn
        .query_row("SELECT count(*) FROM employees", [], |r| r.get(0))
        .expect("count");
    let departments: i64 = conn
        .query_row("SELECT count(*) FROM departments", [], |r| r.get(0))
        .expect("count");
    let names: String = conn
        .query_row(
            "SELECT group_concat(id || last_name || salary, ',') FROM (SELECT * FROM employees ORDER BY id)",
            [],
            |r| r.get(0),
        )
        .expect("names");
    (employees, departments, names)
}

both!(
    adding_a_file_makes_tools_callable_and_announces_list_changed_case,
    adding_a_file_makes_tools_callable_and_announces_list_changed,
    on_postgres_adding_a_file_makes_tools_callable_and_announces_list_changed
);

async fn adding_a_file_makes_tools_callable_and_announces_list_changed_case(backend: Backend) {
    let server = Server::start_backend(backend).await;
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
    next_list_change(&mut listen).await;

    let result = server.rpc("tools/list", json!({})).await;
    let result = result.unwrap_or_else(|e| panic!("tools/list: {e}"));
    let tools = result["tools"].as_array().expect("tools").clone();
    assert_eq!(tools.len(), 10, "{result:?}");
    let hires = tools
        .iter()
        .find(|t| t["name"] == "new-hires-since")
        .expect("listed");
    assert_eq!(hires["annotations"]["readOnlyHint"], true);
    assert_eq!(hires["inputSchema"]["required"], json!(["since"]));
    let row_schema = &hires["outputSchema"]["properties"]["rows"]["items"];
    // Nullable, published as an `anyOf` every client accepts.
    assert_eq!(
        row_schema["properties"]["startDate"]["anyOf"],
        json!([{"type": "string"}, {"type": "null"}])
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
    next_list_change(&mut listen).await;
    let names = server.tool_names().await;
    assert!(!names.contains(&"new-hires-since".to_owned()), "{names:?}");
    let shown = tools_ok(server.db(), &["show", "headcount-by-location"]);
    assert!(
        shown.contains("headcount-by-location") && shown.contains("[[tool]]"),
        "{shown}"
    );
}

both!(
    every_refusal_names_the_field_and_changes_nothing_case,
    every_refusal_names_the_field_and_changes_nothing,
    on_postgres_every_refusal_names_the_field_and_changes_nothing
);

async fn every_refusal_names_the_field_and_changes_nothing_case(backend: Backend) {
    let db = seeded(backend).await;
    let sel = "SELECT id AS employeeId FROM employees WHERE last_name = :last";
    // On SQLite the audit trail has a file of its own (a table left by an
    // earlier version would be "not allowed"); on PostgreSQL it is a
    // protected table of the same database.
    let audit_refusal = match backend {
        Backend::Sqlite => "no such table: audit_log",
        Backend::Postgres => "not allowed in a read-only tool",
    };
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
            "audit_log",
            tool("t", "SELECT tool FROM audit_log", ""),
            audit_refusal,
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
    let mut cases = cases;
    cases.extend(match backend {
        Backend::Sqlite => sqlite_refusals(),
        Backend::Postgres => postgres_refusals(),
    });
    // A server creates the audit trail (and on PostgreSQL the mcp_* tables)
    // the statements try to read.
    let server = Server::start_on(db.share(), &[]).await;
    drop(server);
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

fn sqlite_refusals() -> Vec<(&'static str, String, &'static str)> {
    vec![
        (
            "pragma function",
            tool("t", "SELECT name FROM pragma_table_info('employees')", ""),
            "not allowed in a read-only tool",
        ),
        // Both prepared, then failed every call as "temporarily
        // unavailable": the authorizer now refuses them with the reason.
        (
            "dbstat",
            tool("t", "SELECT count(*) AS n FROM dbstat", ""),
            "not allowed in a read-only tool: it reads dbstat, SQLite's own data, not the directory;",
        ),
        (
            "load_extension",
            tool("t", "SELECT load_extension('/tmp/evil.so') AS x", ""),
            "not allowed in a read-only tool: it calls load_extension(), which loads native code into the server;",
        ),
    ]
}

/// What only PostgreSQL can be asked: refused by the reader role's
/// permissions under `EXPLAIN`, or by the statement checks before it.
fn postgres_refusals() -> Vec<(&'static str, String, &'static str)> {
    let refused = "not allowed in a read-only tool";
    vec![
        (
            "data-modifying CTE",
            tool(
                "t",
                "WITH gone AS (DELETE FROM employees WHERE last_name = :last RETURNING id) SELECT id FROM gone",
                BY_LAST_NAME,
            ),
            refused,
        ),
        (
            "for update",
            tool("t", "SELECT id FROM employees FOR UPDATE", ""),
            refused,
        ),
        (
            "for share in a subquery",
            tool(
                "t",
                "SELECT id FROM (SELECT id FROM employees FOR SHARE) AS e",
                "",
            ),
            refused,
        ),
        (
            "mcp_ table",
            tool("t", "SELECT count(*) AS n FROM mcp_sessions", ""),
            refused,
        ),
        (
            "catalogue generation",
            tool("t", "SELECT generation FROM tool_catalog_generation", ""),
            refused,
        ),
        (
            "set_config undoing the role",
            tool("t", "SELECT set_config('role', 'postgres', true) AS r", ""),
            "calls set_config()",
        ),
        (
            "quoted set_config",
            tool(
                "t",
                "SELECT \"set_config\"('role', 'postgres', true) AS r",
                "",
            ),
            "calls set_config()",
        ),
        (
            "set_config hidden after an E-string",
            tool(
                "t",
                "SELECT E'\\\\'' AS a, set_config('role', 'postgres', true) AS r",
                "",
            ),
            "calls set_config()",
        ),
        (
            "nextval",
            tool(
                "t",
                "SELECT nextval('tool_catalog_changes_id_seq') AS n",
                "",
            ),
            "calls nextval()",
        ),
        (
            "SQL run from text",
            tool(
                "t",
                "SELECT query_to_xml('SELECT 1', true, true, '') AS x",
                "",
            ),
            "calls query_to_xml()",
        ),
        (
            "create table as",
            tool("t", "CREATE TABLE stolen AS SELECT * FROM employees", ""),
            refused,
        ),
        (
            "dollar quoting",
            tool("t", "SELECT $$x$$ AS a", ""),
            "no `$`",
        ),
        (
            "a type custom tools do not return",
            tool("t", "SELECT interval '1 day' AS i", ""),
            "cast it",
        ),
    ]
}

both!(
    injection_through_parameters_returns_data_or_an_error_never_a_change_case,
    injection_through_parameters_returns_data_or_an_error_never_a_change,
    on_postgres_injection_through_parameters_returns_data_or_an_error_never_a_change
);

async fn injection_through_parameters_returns_data_or_an_error_never_a_change_case(
    backend: Backend,
) {
    let server = Server::start_backend(backend).await;
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

both!(
    row_limit_and_timeout_are_enforced_case,
    row_limit_and_timeout_are_enforced,
    on_postgres_row_limit_and_timeout_are_enforced
);

async fn row_limit_and_timeout_are_enforced_case(backend: Backend) {
    let server = Server::start_backend(backend).await;
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

both!(
    an_in_flight_call_finishes_when_its_tool_is_disabled_case,
    an_in_flight_call_finishes_when_its_tool_is_disabled,
    on_postgres_an_in_flight_call_finishes_when_its_tool_is_disabled
);

async fn an_in_flight_call_finishes_when_its_tool_is_disabled_case(backend: Backend) {
    let server = Server::start_backend(backend).await;
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
        next_list_change(&mut listen).await;
    };
    let (result, ()) = tokio::join!(call, disable);
    assert_eq!(
        result["structuredContent"]["rows"][0]["n"], 3_000_000,
        "{result}"
    );
    let after = server.call_tool_error("slow-count", json!({"n": 1})).await;
    assert_eq!(after, -32602);
}

both!(
    scopes_and_field_redaction_apply_to_custom_tools_case,
    scopes_and_field_redaction_apply_to_custom_tools,
    on_postgres_scopes_and_field_redaction_apply_to_custom_tools
);

async fn scopes_and_field_redaction_apply_to_custom_tools_case(backend: Backend) {
    let db = seeded(backend).await;
    tools_ok(&db, &["add", "--file", examples().to_str().unwrap()]);
    // hr:directory: new hires without email; headcount (hr:reports) refused.
    let scopes = |s| [("EMPLOYEE_MCP_STDIO_SCOPES", s)];
    let stdio = StdioClient::start_with_env(db.share(), &[], &scopes("hr:directory")).await;
    let hires = common::call(&stdio, "new-hires-since", json!({"since": "2026-01-01"})).await;
    let rows = hires["structuredContent"]["rows"].as_array().expect("rows");
    assert!(!rows.is_empty(), "{hires}");
    assert!(rows.iter().all(|r| r.get("email").is_none()), "{hires}");
    assert!(rows.iter().all(|r| r.get("name").is_some()));
    let denied = stdio.call_tool("headcount-by-location", json!({})).await;
    assert_eq!(
        denied.as_ref().map_err(|e| e.code()).err(),
        Some(Some(-31001)),
        "{denied:?}"
    );
    let status = stdio.close().await;
    assert!(status.success(), "exit status {status}");
    // hr:contact sees the email.
    let stdio = StdioClient::start_with_env(db.share(), &[], &scopes("hr:contact")).await;
    let hires = common::call(&stdio, "new-hires-since", json!({"since": "2026-01-01"})).await;
    let rows = hires["structuredContent"]["rows"].as_array().expect("rows");
    assert!(
        rows.iter()
            .all(|r| r["email"].as_str().is_some_and(|e| e.contains('@'))),
        "{hires}"
    );
}

both!(
    a_tools_file_is_loaded_and_watched_and_a_broken_edit_keeps_the_set_case,
    a_tools_file_is_loaded_and_watched_and_a_broken_edit_keeps_the_set,
    on_postgres_a_tools_file_is_loaded_and_watched_and_a_broken_edit_keeps_the_set
);

async fn a_tools_file_is_loaded_and_watched_and_a_broken_edit_keeps_the_set_case(backend: Backend) {
    let first = tool(
        "file-one",
        "SELECT id AS employeeId FROM employees ORDER BY id LIMIT 1",
        "",
    );
    let file = ToolFile::new(&first);
    let server = Server::start_on(seeded(backend).await, &["--tools-file", file.arg()]).await;
    let names = server.tool_names().await;
    assert!(names.contains(&"file-one".to_owned()), "{names:?}");
    let mut listen = server.listen_tools().await;

    // A valid edit: a second tool.
    let second = first.clone() + &tool("file-two", "SELECT count(*) AS n FROM departments", "");
    std::fs::write(&file.0, &second).expect("edit");
    next_list_change(&mut listen).await;
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
    next_list_change(&mut listen).await;
    let names = server.tool_names().await;
    assert!(!names.contains(&"file-two".to_owned()), "{names:?}");
    assert!(names.contains(&"file-one".to_owned()), "{names:?}");
}

both!(
    a_broken_tools_file_stops_the_start_case,
    a_broken_tools_file_stops_the_start,
    on_postgres_a_broken_tools_file_stops_the_start
);

async fn a_broken_tools_file_stops_the_start_case(backend: Backend) {
    let file = ToolFile::new(&tool("bad", "UPDATE employees SET salary = 1", ""));
    let db = seeded(backend).await;
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

both!(
    the_custom_tool_bound_is_enforced_case,
    the_custom_tool_bound_is_enforced,
    on_postgres_the_custom_tool_bound_is_enforced
);

async fn the_custom_tool_bound_is_enforced_case(backend: Backend) {
    let db = seeded(backend).await;
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

/// The server still answers a built-in call.
async fn assert_serving(server: &Server) {
    let alive = server
        .call_tool(
            "get-employee-details",
            json!({"employeeId": "AliceJohnson"}),
        )
        .await;
    assert_eq!(
        alive["structuredContent"]["employeeId"], "AliceJohnson",
        "{alive}"
    );
}

/// Waits until `server` serves `name`.
async fn wait_for_tool(server: &Server, name: &str) {
    let deadline = Instant::now() + common::TIMEOUT;
    while !server.tool_names().await.contains(&name.to_owned()) {
        assert!(Instant::now() < deadline, "{name} never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn on_postgres_a_sleeping_statement_is_stopped_at_its_timeout() {
    let server = Server::start_backend(Backend::Postgres).await;
    let file = ToolFile::new(&tool(
        "sleepy",
        "SELECT 1 AS x FROM pg_sleep(:seconds)",
        "timeout_ms = 300\n[tool.parameters]\nproperties.seconds = { type = \"number\", minimum = 0 }",
    ));
    tools_ok(server.db(), &["add", "--file", file.arg()]);
    wait_for_tool(&server, "sleepy").await;
    let quick = server.call_tool("sleepy", json!({"seconds": 0})).await;
    assert_eq!(quick["structuredContent"]["rows"][0]["x"], 1, "{quick}");
    let stopped = server.call_tool("sleepy", json!({"seconds": 30})).await;
    let text = tool_error_text(&stopped);
    assert!(
        text.contains("longer than its limit of 300 ms"),
        "{stopped}"
    );
    // Nothing of PostgreSQL's own wording reaches the client.
    assert!(!text.contains("statement timeout"), "{text}");
    assert_serving(&server).await;
}

#[tokio::test]
async fn on_postgres_statement_errors_are_tool_errors_without_internals() {
    let server = Server::start_backend(Backend::Postgres).await;
    let file = ToolFile::new(&tool(
        "divide",
        "SELECT 10 / :d AS q, :day::date AS day, round(10::numeric / :d, 2) AS exact",
        "[tool.parameters]\nproperties.d = { type = \"integer\" }\nproperties.day = { type = \"string\" }",
    ));
    tools_ok(server.db(), &["add", "--file", file.arg()]);
    wait_for_tool(&server, "divide").await;
    let ok = server
        .call_tool("divide", json!({"d": 4, "day": "2026-02-03"}))
        .await;
    assert_eq!(
        ok["structuredContent"]["rows"][0],
        json!({"q": 2, "day": "2026-02-03", "exact": 2.5}),
        "{ok}"
    );
    let zero = server
        .call_tool("divide", json!({"d": 0, "day": "2026-02-03"}))
        .await;
    assert_eq!(zero["isError"], true, "{zero}");
    let bad_date = server
        .call_tool("divide", json!({"d": 1, "day": "not-a-date"}))
        .await;
    assert!(
        tool_error_text(&bad_date).contains("refused an argument"),
        "{bad_date}"
    );
    for r in [&zero, &bad_date] {
        let text = tool_error_text(r);
        assert!(
            !text.contains("postgres") && !text.contains("SQLSTATE"),
            "{text}"
        );
    }
    assert_serving(&server).await;
}

/// Two replicas on one database: a tool added through the CLI is announced
/// and callable on both, and its removal reaches both.
#[tokio::test]
async fn on_postgres_a_tool_added_once_is_served_by_every_replica() {
    let db = seeded(Backend::Postgres).await;
    let one = Server::start_on(db.share(), &[]).await;
    let two = Server::start_on(db, &[]).await;
    let mut listen_one = one.listen_tools().await;
    let mut listen_two = two.listen_tools().await;
    tools_ok(two.db(), &["add", "--file", examples().to_str().unwrap()]);
    next_list_change(&mut listen_one).await;
    next_list_change(&mut listen_two).await;
    let args = json!({"since": "2026-01-01"});
    let a = one.call_tool("new-hires-since", args.clone()).await;
    let b = two.call_tool("new-hires-since", args).await;
    assert!(
        a["structuredContent"]["rows"]
            .as_array()
            .is_some_and(|r| !r.is_empty()),
        "{a}"
    );
    assert_eq!(a["structuredContent"], b["structuredContent"]);
    tools_ok(one.db(), &["remove", "new-hires-since"]);
    next_list_change(&mut listen_two).await;
    assert!(
        !two.tool_names()
            .await
            .contains(&"new-hires-since".to_owned())
    );
}

/// The shipped examples answer the same on both backends.
#[tokio::test]
async fn the_examples_return_the_same_results_on_both_backends() {
    let sqlite = Server::start_backend(Backend::Sqlite).await;
    let postgres = Server::start_backend(Backend::Postgres).await;
    for server in [&sqlite, &postgres] {
        tools_ok(
            server.db(),
            &["add", "--file", examples().to_str().unwrap()],
        );
        wait_for_tool(server, "headcount-by-location").await;
    }
    let calls = [
        ("new-hires-since", json!({"since": "2025-06-01"})),
        ("headcount-by-location", json!({})),
        (
            "headcount-by-location",
            json!({"department": "engineering"}),
        ),
    ];
    for (name, args) in calls {
        let a = sqlite.call_tool(name, args.clone()).await;
        let b = postgres.call_tool(name, args).await;
        let rows = a["structuredContent"]["rows"].as_array().expect("rows");
        assert!(!rows.is_empty(), "{a}");
        assert_eq!(a["structuredContent"], b["structuredContent"], "{name}");
    }
}

/// A user that may not create roles gets the exact SQL a DBA must run; once
/// it has run, the same command works.
#[tokio::test]
async fn on_postgres_a_user_without_role_rights_is_told_the_grants() {
    let admin = common::pg::fresh_database();
    let pid = std::process::id();
    let (user, role) = (format!("owner_{pid}"), format!("reader_{pid}"));
    let dbname = admin.rsplit('/').next().expect("db name").to_owned();
    common::pg::psql(&admin, &format!("CREATE ROLE {user} LOGIN"));
    common::pg::psql(&admin, &format!("ALTER DATABASE {dbname} OWNER TO {user}"));
    common::pg::psql(&admin, &format!("ALTER SCHEMA public OWNER TO {user}"));
    let url = admin.replacen("postgres@", &format!("{user}@"), 1);
    assert_ne!(url, admin, "the scratch URL names its user");
    let db = TempDb::postgres_at(&url);
    let file = ToolFile::new(&tool("one", "SELECT count(*) AS n FROM employees", ""));
    let args = [
        "validate",
        "--file",
        file.arg(),
        "--custom-reader-role",
        role.as_str(),
    ];
    let (ok, _, err) = tools_cli(&db, &args);
    assert!(!ok);
    assert!(err.contains("a DBA must run once"), "{err}");
    let sql: String = err
        .lines()
        .skip_while(|l| !l.starts_with("CREATE ROLE"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(sql.contains(&format!("GRANT {role} TO {user}")), "{err}");
    assert!(
        !sql.contains("audit_log") && !sql.contains("tool_catalog"),
        "{sql}"
    );
    // The DBA runs it as the superuser, and nothing else is needed.
    for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        common::pg::psql(&admin, statement);
    }
    let out = tools_ok(&db, &args);
    assert!(out.contains("ok: one"), "{out}");
    // The role reads the directory and nothing else.
    let can = |t: &str| {
        common::pg::psql(
            &admin,
            &format!("SELECT has_table_privilege('{role}', '{t}', 'SELECT')"),
        )
    };
    assert_eq!(can("employees"), "t");
    assert_eq!(can("tool_catalog"), "f");
}

/// CPU time (user + system, in clock ticks) the process `pid` used so far.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/PID/stat");
    // Fields after the command name, which is in parentheses.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

/// Peak resident memory of the process `pid`, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/PID/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

both!(
    a_statement_past_the_call_timeout_is_stopped_case,
    a_statement_past_the_call_timeout_is_stopped,
    on_postgres_a_statement_past_the_call_timeout_is_stopped
);

/// With a call timeout of 2 s and a tool allowing 60 s,
/// the statement stops with the call (not 58 s later) and gives its
/// connection back.
async fn a_statement_past_the_call_timeout_is_stopped_case(backend: Backend) {
    let db = seeded(backend).await;
    let flags = [
        "--call-timeout-secs",
        "2",
        "--custom-query-connections",
        "1",
    ];
    let server = Server::start_on(db, &flags).await;
    let spin = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) SELECT count(*) AS n FROM c";
    let file = ToolFile::new(
        &(tool("spin", spin, "timeout_ms = 60000") + &tool("one", "SELECT 1 AS x", "")),
    );
    tools_ok(server.db(), &["add", "--file", file.arg()]);
    wait_for_tool(&server, "spin").await;
    wait_for_tool(&server, "one").await;

    let stopped = server.call_tool("spin", json!({})).await;
    let text = tool_error_text(&stopped);
    assert!(
        text.contains("timed out after 2.0 s") || text.contains("longer than its limit of 2000 ms"),
        "{text}"
    );
    match server.db().postgres.as_deref() {
        // A resource check, not a timing one: a statement still running
        // would use a whole core for the next 3 s.
        None => {
            let before = cpu_ticks(server.pid());
            tokio::time::sleep(Duration::from_secs(3)).await;
            let used = cpu_ticks(server.pid()) - before;
            assert!(used < 100, "{used} ticks of CPU after the timeout");
        }
        Some(url) => {
            let running = "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%2000000000%' AND pid <> pg_backend_pid()";
            let deadline = Instant::now() + Duration::from_secs(1);
            while common::pg::psql(url, running) != "0" {
                assert!(Instant::now() < deadline, "the statement is still running");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    // The only custom-query connection is free again.
    let one = server.call_tool("one", json!({})).await;
    assert_eq!(one["structuredContent"]["rows"][0]["x"], 1, "{one}");
}

both!(
    a_statement_asking_for_a_gigabyte_is_refused_and_memory_stays_low_case,
    a_statement_asking_for_a_gigabyte_is_refused_and_memory_stays_low,
    on_postgres_a_statement_asking_for_a_gigabyte_is_refused_and_memory_stays_low
);

/// Issue 28 item 5: values, rows and SQLite heap are bounded; each of
/// these once took the server to 0.7–2 GB.
async fn a_statement_asking_for_a_gigabyte_is_refused_and_memory_stays_low_case(backend: Backend) {
    let db = seeded(backend).await;
    let flags = [
        "--call-timeout-secs",
        "60",
        "--custom-query-memory-mib",
        "16",
    ];
    let server = Server::start_on(db, &flags).await;
    let count = |n: &str| {
        format!(
            "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < {n}) SELECT"
        )
    };
    let large = "larger than this server's limit of 524288 bytes";
    let mut cases = vec![(
        "many-rows",
        format!(
            "{} (x || '{}') AS s FROM r",
            count("20000"),
            "y".repeat(1000)
        ),
        "row_limit = 10000",
        large,
    )];
    match backend {
        Backend::Sqlite => cases.extend([
            (
                "random",
                "SELECT length(randomblob(999999999)) AS n".to_owned(),
                "",
                large,
            ),
            (
                "hex",
                "SELECT length(hex(zeroblob(499999999))) AS n".to_owned(),
                "",
                large,
            ),
            (
                "printf",
                "SELECT length(printf('%.*c', 999999999, 'x')) AS n".to_owned(),
                "",
                large,
            ),
            (
                "json",
                format!(
                    "{} length(json_group_array(x)) AS n FROM r",
                    count("50000000")
                ),
                "timeout_ms = 60000",
                "more than this server's limit of 16 MiB of memory",
            ),
        ]),
        // A parameter, so checking the definition does not fold the call.
        Backend::Postgres => cases.push((
            "repeat",
            "SELECT repeat('x', CAST(:n AS integer)) AS s".to_owned(),
            "timeout_ms = 60000\n[tool.parameters]\nproperties.n = { type = \"integer\" }",
            large,
        )),
    }
    let text: String = cases
        .iter()
        .map(|(name, sql, extra, _)| tool(name, sql, extra))
        .collect();
    let file = ToolFile::new(&text);
    tools_ok(server.db(), &["add", "--file", file.arg()]);
    for (name, _, _, _) in &cases {
        wait_for_tool(&server, name).await;
    }
    for (name, _, _, refusal) in &cases {
        let arguments = if *name == "repeat" {
            json!({"n": 400_000_000})
        } else {
            json!({})
        };
        let result = server.call_tool(name, arguments).await;
        let text = tool_error_text(&result);
        assert!(text.contains(refusal), "{name}: {text}");
    }
    let peak = peak_rss_kib(server.pid());
    assert!(peak < 200 * 1024, "peak RSS {peak} KiB");
    assert_serving(&server).await;
}

both!(
    a_custom_tool_declares_its_approval_case,
    a_custom_tool_declares_its_approval,
    on_postgres_a_custom_tool_declares_its_approval
);

/// `approval = …` in a definition: listed, shown, overridable; a value
/// other than none, confirm or operator is refused naming the tool.
async fn a_custom_tool_declares_its_approval_case(backend: Backend) {
    let db = seeded(backend).await;
    let row = |name: &str| -> Value {
        tools_ok(&db, &["list", "--json"])
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("json line"))
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed"))
    };

    let bad = ToolFile::new(&tool("pay-peek", "SELECT 1 AS x", "approval = \"manager\""));
    for action in ["validate", "add"] {
        let (ok, _, err) = tools_cli(&db, &[action, "--file", bad.arg()]);
        assert!(!ok, "{action}");
        assert!(
            err.contains("tool \"pay-peek\", field `approval`")
                && err.contains("\"manager\"")
                && err.contains("none, confirm, operator"),
            "{action}: {err}"
        );
    }
    assert_eq!(tools_ok(&db, &["list", "--json"]).lines().count(), 8);

    let text = tool("pay-peek", "SELECT 1 AS x", "approval = \"operator\"")
        + &tool("plain", "SELECT 2 AS x", "");
    let file = ToolFile::new(&text);
    tools_ok(&db, &["add", "--file", file.arg()]);
    let peek = row("pay-peek");
    assert_eq!(peek["approval"], "operator", "{peek}");
    assert_eq!(peek["approval_override"], Value::Null, "{peek}");
    assert!(peek["approval_version"].as_i64().unwrap() > 0, "{peek}");
    assert_eq!(row("plain")["approval"], "none", "the default");
    let shown = tools_ok(&db, &["show", "pay-peek"]);
    assert!(shown.contains("approval = \"operator\""), "{shown}");

    // The catalogue overrides a custom tool's declared approval too.
    tools_ok(
        &db,
        &["approval", "pay-peek", "confirm", "--reason", "eases"],
    );
    let peek = row("pay-peek");
    assert_eq!(peek["approval"], "confirm", "{peek}");
    let shown = tools_ok(&db, &["show", "pay-peek"]);
    assert!(
        shown.contains("overridden in the catalogue: confirm (declared: operator)"),
        "{shown}"
    );
    let history = tools_ok(&db, &["history"]);
    assert!(
        history.contains(r#""detail":"confirm (was operator): eases""#),
        "{history}"
    );
    tools_ok(&db, &["approval", "pay-peek", "default"]);
    assert_eq!(row("pay-peek")["approval"], "operator");
    // A removed tool is unknown to `tools approval`.
    tools_ok(&db, &["remove", "plain"]);
    let (ok, _, err) = tools_cli(&db, &["approval", "plain", "confirm"]);
    assert!(!ok && err.contains("no tool named \"plain\""), "{err}");
    assert!(err.contains("pay-peek"), "custom tools are listed: {err}");
}

both!(
    editing_the_approval_in_a_tools_file_gives_a_new_policy_version_case,
    editing_the_approval_in_a_tools_file_gives_a_new_policy_version,
    on_postgres_editing_the_approval_in_a_tools_file_gives_a_new_policy_version
);

async fn editing_the_approval_in_a_tools_file_gives_a_new_policy_version_case(backend: Backend) {
    let text = |approval: &str| tool("watched", "SELECT 1 AS x", approval);
    let file = ToolFile::new(&text(""));
    let server = Server::start_on(seeded(backend).await, &["--tools-file", file.arg()]).await;
    let row = || -> Value {
        tools_ok(server.db(), &["list", "--json"])
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("json line"))
            .find(|r| r["name"] == "watched")
            .expect("listed")
    };
    let first = row();
    assert_eq!(first["approval"], "none", "{first}");
    let mut listen = server.listen_tools().await;

    std::fs::write(&file.0, text("approval = \"confirm\"")).expect("edit");
    next_list_change(&mut listen).await;
    let edited = row();
    assert_eq!(edited["approval"], "confirm", "{edited}");
    assert!(
        edited["approval_version"].as_i64() > first["approval_version"].as_i64(),
        "a changed definition is a new policy version: {first} -> {edited}"
    );
    assert!(server.tool_names().await.contains(&"watched".to_owned()));
}
