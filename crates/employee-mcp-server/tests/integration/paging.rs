//! Answers sized for a model, on the real binary: the list tools page with
//! `limit` and keyset cursors (every row exactly once, also across a
//! change of the directory), refuse forged, edited and misplaced cursors,
//! lead with counts equal to SQL counts, rank skill matches, stay under
//! 32 KB at default arguments on a generated 100,000-person company, and publish
//! schemas in the subset every client takes (no type arrays).

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{Server, TempDb, tool_error_text};
use serde_json::{Value, json};

/// Rate limits high enough for a test that walks every page.
const MANY_CALLS: &[&str] = &[
    "--rate-limit-per-minute",
    "100000",
    "--rate-limit-burst",
    "10000",
];

/// Largest answer (the JSON-RPC result) a default call may produce.
const DEFAULT_ANSWER_BYTES: usize = 32 * 1024;

fn structured(result: &Value) -> Value {
    assert_ne!(result["isError"], true, "unexpected tool error: {result}");
    result["structuredContent"].clone()
}

/// Follows `nextCursor` from the first page, `limit` rows a page; returns
/// the ids listed under `rows` (in order) and the first page.
async fn walk(server: &Server, tool: &str, args: Value, rows: &str, limit: u64) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut a = args.clone();
        a["limit"] = json!(limit);
        if let Some(c) = &cursor {
            a["cursor"] = json!(c);
        }
        let page = structured(&server.call_tool(tool, a).await);
        let listed = page[rows].as_array().unwrap();
        assert!(listed.len() as u64 <= limit);
        assert_eq!(page["count"].as_u64().unwrap() as usize, listed.len());
        for row in listed {
            let skill = row["skill"]
                .as_str()
                .map(|s| format!("/{s}"))
                .unwrap_or_default();
            ids.push(format!("{}{skill}", row["employeeId"].as_str().unwrap()));
        }
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return ids,
        }
    }
}

fn sqlite_count(db: &TempDb, sql: &str) -> u64 {
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

#[tokio::test]
async fn pages_list_every_row_once_and_counts_match_sql() {
    let db = TempDb::seeded();
    let server = Server::start_on(db.share(), MANY_CALLS).await;
    let cases = [
        (
            "list-department-employees",
            json!({"departmentId": "engineering"}),
            "employees",
            "SELECT COUNT(*) FROM employees WHERE department_id = 'engineering' AND status = 'active'",
        ),
        (
            "get-team-members",
            json!({"teamId": "backend"}),
            "members",
            "SELECT COUNT(*) FROM employees WHERE team_id = 'backend' AND status = 'active'",
        ),
        (
            "search-employees-by-skill",
            json!({"skill": "o"}),
            "matches",
            "SELECT COUNT(*) FROM employee_skills es JOIN employees e ON e.id = es.employee_id
          JOIN skills s ON s.id = es.skill_id
          WHERE e.status = 'active' AND instr(lower(s.name), 'o') > 0",
        ),
    ];
    for (tool, args, rows, sql) in cases {
        let expected = sqlite_count(&db, sql);
        let first = structured(&server.call_tool(tool, args.clone()).await);
        assert_eq!(first["total"].as_u64(), Some(expected), "{tool}");
        let ids = walk(&server, tool, args, rows, 7).await;
        let unique: BTreeSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "{tool}: a row listed twice");
        assert_eq!(ids.len() as u64, expected, "{tool}: rows missing");
    }

    // The summary leads the roster and equals SQL's GROUP BY.
    let dept = structured(
        &server
            .call_tool(
                "list-department-employees",
                json!({"departmentId": "engineering"}),
            )
            .await,
    );
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT l.city, l.country, COUNT(*) FROM employees e
             JOIN locations l ON l.id = e.location_id
             WHERE e.department_id = 'engineering' AND e.status = 'active'
             GROUP BY l.id",
        )
        .unwrap();
    let by_sql: Vec<(String, String, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let by_location = dept["summary"]["byLocation"].as_array().unwrap();
    assert_eq!(by_location.len(), by_sql.len(), "{by_location:?}");
    for (city, _, n) in &by_sql {
        let found = by_location
            .iter()
            .find(|g| g["value"].as_str().unwrap().starts_with(city.as_str()))
            .unwrap_or_else(|| panic!("{city} missing in {by_location:?}"));
        assert_eq!(found["count"].as_i64(), Some(*n), "{city}");
    }
    let senior = sqlite_count(
        &db,
        "SELECT COUNT(*) FROM employees WHERE department_id = 'engineering'
         AND status = 'active' AND level = 'senior'",
    );
    let levels = dept["summary"]["byLevel"].as_array().unwrap();
    let got = levels.iter().find(|g| g["value"] == "senior").unwrap();
    assert_eq!(got["count"].as_u64(), Some(senior));
    let team_sum: u64 = dept["summary"]["byTeam"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["count"].as_u64().unwrap())
        .sum();
    assert_eq!(Some(team_sum), dept["total"].as_u64());
}

#[tokio::test]
async fn cursors_survive_a_change_and_refuse_forgeries() {
    let db = TempDb::seeded();
    let server = Server::start_on(db.share(), MANY_CALLS).await;
    let args = json!({"departmentId": "engineering", "limit": 10});
    let first = structured(
        &server
            .call_tool("list-department-employees", args.clone())
            .await,
    );
    let cursor = first["nextCursor"].as_str().unwrap().to_owned();
    let shown: Vec<String> = first["employees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["employeeId"].as_str().unwrap().to_owned())
        .collect();

    // Between pages: someone not yet listed leaves, someone listed leaves.
    let all = walk(
        &server,
        "list-department-employees",
        json!({"departmentId": "engineering"}),
        "employees",
        500,
    )
    .await;
    let (gone_later, gone_seen) = (all[20].clone(), shown[3].clone());
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    for id in [&gone_later, &gone_seen] {
        conn.execute(
            "UPDATE employees SET status = 'terminated', termination_date = '2025-01-01',
             termination_reason = 'voluntary' WHERE id = ?1",
            [id],
        )
        .unwrap();
    }
    let mut rest = Vec::new();
    let mut next = Some(cursor.clone());
    while let Some(c) = next {
        let page = structured(
            &server
                .call_tool(
                    "list-department-employees",
                    json!({"departmentId": "engineering", "limit": 10, "cursor": c}),
                )
                .await,
        );
        for e in page["employees"].as_array().unwrap() {
            rest.push(e["employeeId"].as_str().unwrap().to_owned());
        }
        next = page["nextCursor"].as_str().map(str::to_owned);
    }
    let mut expected: Vec<String> = all[10..].to_vec();
    expected.retain(|id| id != &gone_later);
    assert_eq!(rest, expected, "the rows after the first page, each once");

    // Edited, made up, and used with other arguments.
    let mut edited = cursor.clone().into_bytes();
    edited[4] = if edited[4] == b'A' { b'B' } else { b'A' };
    let edited = String::from_utf8(edited).unwrap();
    for bad in [edited.as_str(), "bm90IGEgY3Vyc29y", "x"] {
        let r = server
            .call_tool(
                "list-department-employees",
                json!({"departmentId": "engineering", "cursor": bad}),
            )
            .await;
        let text = tool_error_text(&r);
        assert!(text.contains("start again without cursor"), "{text}");
    }
    let r = server
        .call_tool(
            "list-department-employees",
            json!({"departmentId": "sales", "cursor": cursor}),
        )
        .await;
    assert!(tool_error_text(&r).contains("another list"));
    let r = server
        .call_tool(
            "get-team-members",
            json!({"teamId": "backend", "cursor": cursor}),
        )
        .await;
    assert!(tool_error_text(&r).contains("another list"));
    server.assert_alive().await;
}

#[tokio::test]
async fn limits_at_their_bounds() {
    let server = Server::start_with(MANY_CALLS).await;
    for (tool, args, max) in [
        (
            "list-department-employees",
            json!({"departmentId": "engineering"}),
            500,
        ),
        ("get-team-members", json!({"teamId": "backend"}), 250),
        ("search-employees-by-skill", json!({"skill": "o"}), 500),
    ] {
        for (limit, ok) in [(0, false), (1, true), (max, true), (max + 1, false)] {
            let mut a = args.clone();
            a["limit"] = json!(limit);
            let reply = server
                .rpc("tools/call", json!({"name": tool, "arguments": a}))
                .await;
            let refused = match &reply {
                Err(_) => true,
                Ok(r) => r.get("isError") == Some(&Value::Bool(true)),
            };
            assert_eq!(!refused, ok, "{tool} limit {limit}: {reply:?}");
            if let Ok(result) = &reply
                && ok
            {
                let count = result["structuredContent"]["count"].as_u64().unwrap();
                assert!(
                    count >= 1 && count <= limit,
                    "{tool} limit {limit}: {count}"
                );
            }
        }
    }
}

#[tokio::test]
async fn search_ranks_exact_then_prefix_then_substring() {
    let server = Server::start_with(MANY_CALLS).await;
    let found = structured(
        &server
            .call_tool(
                "search-employees-by-skill",
                json!({"skill": "go", "limit": 500}),
            )
            .await,
    );
    assert_eq!(found["matchKind"], "exact");
    let rank = |skill: &str| {
        let s = skill.to_lowercase();
        if s == "go" {
            0
        } else if s.starts_with("go") {
            1
        } else {
            2
        }
    };
    let matches = found["matches"].as_array().unwrap();
    let ranks: Vec<(u8, String, i64)> = matches
        .iter()
        .map(|m| {
            let p = ["beginner", "intermediate", "advanced", "expert"]
                .iter()
                .position(|x| m["proficiency"] == *x)
                .unwrap() as i64;
            let skill = m["skill"].as_str().unwrap();
            (rank(skill), skill.to_ascii_lowercase(), -p)
        })
        .collect();
    // Exact, prefix, substring; each skill by name, strongest first in it.
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");
    let kinds: BTreeSet<u8> = ranks.iter().map(|r| r.0).collect();
    assert_eq!(
        kinds,
        BTreeSet::from([0, 1, 2]),
        "exact, prefix and substring matches"
    );
}

/// A fresh SQLite file holding the generated company of `people` (the
/// demo generator's shape: departments, teams of 3 to 15, skills with a
/// long tail).
async fn generated_company(people: u32) -> TempDb {
    let db = TempDb::empty();
    let options = employee_directory::DirectoryOptions {
        demo_employees: Some(people),
        ..Default::default()
    };
    let url = format!("sqlite://{}", db.path.display());
    let clock = std::sync::Arc::new(employee_directory::SystemClock);
    let directory = employee_directory::Directory::open_with(&url, clock, options)
        .await
        .expect("generate the company");
    drop(directory);
    common::approvals_off(&db.url());
    db
}

/// At default arguments no answer of any tool exceeds 32 KB on a
/// 100,000-person company (sizes only; the timings are `mcp-bench
/// --employees`), and the department and search lists lead with their
/// totals and page the rest.
#[tokio::test]
async fn default_answers_stay_small_on_a_100k_company() {
    let db = generated_company(100_000).await;
    let people = sqlite_count(&db, "SELECT COUNT(*) FROM employees");
    assert_eq!(people, 100_000);
    let server = Server::start_on(db.share(), MANY_CALLS).await;
    let lists = [
        (
            "list-department-employees",
            json!({"departmentId": "engineering"}),
        ),
        ("search-employees-by-skill", json!({"skill": "o"})),
        ("search-employees-by-skill", json!({"skill": "Go"})),
    ];
    // A generated team has 3 to 15 people: one page.
    let others = [
        ("get-team-members", json!({"teamId": "backend"})),
        ("get-employee-details", json!({"employeeId": "JohnDoe"})),
        (
            "calculate-employee-tenure",
            json!({"employeeId": "JohnDoe"}),
        ),
        (
            "check-leave-balance",
            json!({"employeeId": "JohnDoe", "leaveType": "annual"}),
        ),
        (
            "get-compensation-info",
            json!({"role": "Software Engineer", "level": "senior"}),
        ),
        (
            "generate-employee-report",
            json!({"reportType": "headcount"}),
        ),
        (
            "generate-employee-report",
            json!({"reportType": "turnover"}),
        ),
        (
            "generate-employee-report",
            json!({"reportType": "compensation"}),
        ),
    ];
    for (tool, args) in lists.iter().chain(others.iter()) {
        let result = server.call_tool(tool, args.clone()).await;
        let answer = structured(&result);
        let bytes = serde_json::to_string(&result).unwrap().len();
        println!("{tool} {args}: {bytes} bytes");
        assert!(
            bytes <= DEFAULT_ANSWER_BYTES,
            "{tool} {args}: {bytes} bytes"
        );
        if lists.iter().any(|(t, a)| t == tool && a == args) {
            assert!(
                answer["total"].as_u64().unwrap() > 100,
                "{tool} {args}: a large list"
            );
            assert!(answer["nextCursor"].is_string(), "{tool}: more pages");
        }
    }
    // The roster names 50 of engineering's thousands of teams and counts them.
    let roster = structured(
        &server
            .call_tool(
                "list-department-employees",
                json!({"departmentId": "engineering"}),
            )
            .await,
    );
    let teams = sqlite_count(
        &db,
        "SELECT COUNT(*) FROM teams WHERE department_id = 'engineering'",
    );
    assert_eq!(roster["teamCount"].as_u64(), Some(teams));
    assert!(teams > 50, "{teams}");
    assert_eq!(roster["department"]["teams"].as_array().unwrap().len(), 50);
}

/// Every construct a portable (OpenAPI-subset) client may refuse, found
/// anywhere in `schema`; `at` is the path so far.
fn unportable(schema: &Value, at: &str, out: &mut Vec<String>) {
    match schema {
        Value::Object(m) => {
            for (k, v) in m {
                let here = format!("{at}/{k}");
                match k.as_str() {
                    "type" if !v.is_string() => out.push(format!("{here}: {v}")),
                    "nullable" | "patternProperties" | "prefixItems" | "if" | "then" | "else"
                    | "not" | "dependentSchemas" => out.push(here),
                    // Data, not schemas.
                    "enum" | "const" | "default" | "examples" => {}
                    _ => unportable(v, &here, out),
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                unportable(v, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn every_published_schema_is_portable() {
    let tools_file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tools/directory.toml");
    let server = Server::start_on(
        TempDb::seeded(),
        &["--tools-file", tools_file.to_str().unwrap()],
    )
    .await;
    let listed = server
        .rpc("tools/list", json!({}))
        .await
        .expect("tools/list");
    let tools = listed["tools"].as_array().unwrap().clone();
    assert!(
        tools.len() > 8,
        "built-ins and custom tools: {}",
        tools.len()
    );
    let mut found = Vec::new();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        for key in ["inputSchema", "outputSchema"] {
            unportable(&tool[key], &format!("{name}/{key}"), &mut found);
        }
    }
    assert!(found.is_empty(), "unportable schema parts: {found:#?}");
}
