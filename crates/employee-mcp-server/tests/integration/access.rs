//! Access control end to end: OAuth tokens signed by a test issuer whose
//! JWKS is served on loopback; tool lists filtered per scope set, contact
//! fields redacted, self-service leave, the two-scope compensation report,
//! `hr:admin`; stdio credentials from the environment; the paged roster.

use crate::common;

use std::collections::BTreeSet;
use std::process::Stdio;

use common::access::{Issuer, audit_rows};
use common::{BIN, Server, TempDb};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const DIRECTORY_TOOLS: [&str; 5] = [
    "get-employee-details",
    "list-department-employees",
    "calculate-employee-tenure",
    "get-team-members",
    "search-employees-by-skill",
];

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

async fn oauth_server(issuer: &Issuer, db: &TempDb) -> Server {
    let flags = issuer.flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    Server::start_on(db.share(), &flags).await
}

#[tokio::test]
async fn requests_without_a_valid_token_get_401() {
    let issuer = Issuer::start();
    let db = TempDb::seeded();
    let server = oauth_server(&issuer, &db).await;
    let r = server.list_as(None).await;
    assert_eq!(r.status, 401, "{}", r.text);
    let challenge = r.header("www-authenticate").expect("challenge");
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    assert!(challenge.contains("hr:directory"), "{challenge}");
    let r = server.list_as(Some("not.a.token")).await;
    assert_eq!(r.status, 401, "{}", r.text);
    // Protected Resource Metadata names the issuer and our scopes.
    let prm: Value = common::client_builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(format!(
            "http://{}/.well-known/oauth-protected-resource/mcp",
            server.addr
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(prm["authorization_servers"], json!([issuer.issuer]));
    let scopes = prm["scopes_supported"].as_array().expect("scopes").len();
    assert_eq!(scopes, 6, "{prm}");
}

#[tokio::test]
async fn tools_list_is_filtered_by_scope() {
    let issuer = Issuer::start();
    let db = TempDb::seeded();
    let server = oauth_server(&issuer, &db).await;
    let cases: [(&str, Option<&str>, BTreeSet<String>); 7] = [
        ("hr:directory", None, set(&DIRECTORY_TOOLS)),
        // hr:contact implies hr:directory.
        ("hr:contact", None, set(&DIRECTORY_TOOLS)),
        ("hr:compensation", None, set(&["get-compensation-info"])),
        ("hr:reports", None, set(&["generate-employee-report"])),
        ("hr:leave", None, set(&["check-leave-balance"])),
        // An employee with no scopes still sees the self-service tool.
        ("", Some("AliceJohnson"), set(&["check-leave-balance"])),
        ("unrelated:scope", None, set(&[])),
    ];
    for (scope, me, expected) in cases {
        let token = issuer.token("u", scope, me);
        let r = server.list_as(Some(&token)).await;
        let got: BTreeSet<String> = r.tool_names().into_iter().collect();
        assert_eq!(got, expected, "scope {scope:?}");
        assert_eq!(r.result()["cacheScope"], "private", "{}", r.text);
    }
    let admin = issuer.token("root", "hr:admin", None);
    assert_eq!(server.list_as(Some(&admin)).await.tool_names().len(), 8);
}

#[tokio::test]
async fn contact_fields_need_hr_contact() {
    let issuer = Issuer::start();
    let db = TempDb::seeded();
    let server = oauth_server(&issuer, &db).await;
    let directory = issuer.token("d", "hr:directory", None);
    let contact = issuer.token("c", "hr:contact", None);
    let args = json!({"employeeId": "AliceJohnson"});

    let r = server
        .call_as("get-employee-details", args.clone(), Some(&directory))
        .await;
    let s = &r.result()["structuredContent"];
    assert_eq!(s["employeeId"], "AliceJohnson");
    assert!(s["title"].is_string() && s["skills"].is_array());
    for field in ["email", "phone", "location"] {
        assert!(s.get(field).is_none(), "{field} leaked: {s}");
    }
    // The text mirror is redacted too.
    let text = r.result()["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(!text.contains("@"), "{text}");

    let r = server
        .call_as("get-employee-details", args, Some(&contact))
        .await;
    let s = &r.result()["structuredContent"];
    assert!(s["email"].as_str().is_some_and(|e| e.contains('@')), "{s}");
    assert!(s["phone"].is_string() && s["location"].is_object(), "{s}");

    let team = json!({"teamId": "backend"});
    let r = server
        .call_as("get-team-members", team.clone(), Some(&directory))
        .await;
    let members = r.result()["structuredContent"]["members"]
        .as_array()
        .expect("members")
        .clone();
    assert!(!members.is_empty());
    assert!(
        members
            .iter()
            .all(|m| m.get("email").is_none() && m.get("location").is_none())
    );
    assert!(members.iter().all(|m| m["employeeId"].is_string()));
    let r = server
        .call_as("get-team-members", team, Some(&contact))
        .await;
    let members = r.result()["structuredContent"]["members"]
        .as_array()
        .expect("members")
        .clone();
    assert!(members.iter().all(|m| m["email"].is_string()));

    // The published output schema no longer requires the scoped fields.
    let list = server.list_as(Some(&contact)).await;
    let details = list.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "get-employee-details")
        .cloned()
        .unwrap();
    let required = details["outputSchema"]["required"].as_array().unwrap();
    assert!(!required.contains(&json!("email")));
    assert!(required.contains(&json!("employeeId")));
}

#[tokio::test]
async fn employees_read_their_own_leave_balance_only() {
    let issuer = Issuer::start();
    let db = TempDb::seeded();
    let server = oauth_server(&issuer, &db).await;
    let alice = issuer.token("alice", "hr:directory", Some("AliceJohnson"));
    let r = server
        .call_as(
            "check-leave-balance",
            json!({"employeeId": "AliceJohnson", "leaveType": "annual"}),
            Some(&alice),
        )
        .await;
    assert_eq!(
        r.result()["structuredContent"]["employeeId"],
        "AliceJohnson"
    );
    // The id matches in any case, as the directory's lookups do.
    server
        .call_as(
            "check-leave-balance",
            json!({"employeeId": "alicejohnson", "leaveType": "sick"}),
            Some(&alice),
        )
        .await
        .result();

    let r = server
        .call_as(
            "check-leave-balance",
            json!({"employeeId": "JohnDoe", "leaveType": "annual"}),
            Some(&alice),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(r.error_code(), -31001);
    let challenge = r.header("www-authenticate").expect("challenge");
    assert!(challenge.contains("insufficient_scope"), "{challenge}");
    assert!(challenge.contains("hr:leave"), "{challenge}");
    assert!(challenge.contains("resource_metadata="), "{challenge}");

    // HR with hr:leave reads anyone's.
    let hr = issuer.token("hr", "hr:leave", None);
    server
        .call_as(
            "check-leave-balance",
            json!({"employeeId": "JohnDoe", "leaveType": "annual"}),
            Some(&hr),
        )
        .await
        .result();

    let denied = audit_rows(&db, &["--outcome", "denied"]);
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0]["subject"], "alice");
    assert_eq!(denied[0]["arguments"]["employeeId"], "JohnDoe");
}

#[tokio::test]
async fn compensation_report_needs_reports_and_compensation() {
    let issuer = Issuer::start();
    let db = TempDb::seeded();
    let server = oauth_server(&issuer, &db).await;
    let reports = issuer.token("analyst", "hr:reports", None);
    for kind in ["headcount", "turnover"] {
        server
            .call_as(
                "generate-employee-report",
                json!({"reportType": kind}),
                Some(&reports),
            )
            .await
            .result();
    }
    let r = server
        .call_as(
            "generate-employee-report",
            json!({"reportType": "compensation"}),
            Some(&reports),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(r.error_code(), -31001);
    let challenge = r.header("www-authenticate").expect("challenge");
    assert!(
        challenge.contains("scope=\"hr:reports hr:compensation\""),
        "{challenge}"
    );
    let both = issuer.token("cfo", "hr:reports hr:compensation", None);
    let r = server
        .call_as(
            "generate-employee-report",
            json!({"reportType": "compensation"}),
            Some(&both),
        )
        .await;
    assert_eq!(
        r.result()["structuredContent"]["reportType"],
        "compensation"
    );
    // Compensation alone does not grant reports.
    let comp = issuer.token("payroll", "hr:compensation", None);
    let r = server
        .call_as(
            "generate-employee-report",
            json!({"reportType": "compensation"}),
            Some(&comp),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    let rows = audit_rows(
        &db,
        &["--tool", "generate-employee-report", "--outcome", "denied"],
    );
    assert_eq!(rows.len(), 2);
}

#[tokio::test]
async fn admin_sees_everything() {
    let issuer = Issuer::start();
    let db = TempDb::seeded();
    let server = oauth_server(&issuer, &db).await;
    let admin = issuer.token("root", "hr:admin", None);
    let t = Some(admin.as_str());
    let s = server
        .call_as("get-employee-details", json!({"employeeId": "JohnDoe"}), t)
        .await;
    assert!(s.result()["structuredContent"]["email"].is_string());
    let calls = [
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
            json!({"reportType": "compensation"}),
        ),
        (
            "list-department-employees",
            json!({"departmentId": "engineering"}),
        ),
        ("get-team-members", json!({"teamId": "backend"})),
        (
            "calculate-employee-tenure",
            json!({"employeeId": "JohnDoe"}),
        ),
        ("search-employees-by-skill", json!({"skill": "Rust"})),
    ];
    for (tool, args) in calls {
        let r = server.call_as(tool, args, t).await;
        assert_eq!(r.result()["isError"], Value::Null, "{tool}: {}", r.text);
    }
}

#[tokio::test]
async fn stdio_credentials_come_from_the_environment() {
    let db = TempDb::seeded();
    let mut child = tokio::process::Command::new(BIN)
        .arg("--stdio")
        .arg("--database")
        .arg(db.url())
        .env("RUST_LOG", "warn")
        .env("EMPLOYEE_MCP_STDIO_SCOPES", "hr:directory")
        .env("EMPLOYEE_MCP_STDIO_SUBJECT", "desktop-user")
        .env("EMPLOYEE_MCP_STDIO_SELF_ID", "AliceJohnson")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn stdio server");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let meta = common::modern_meta();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"_meta": meta,
            "name": "get-compensation-info", "arguments": {"role": "Software Engineer", "level": "senior"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"_meta": meta,
            "name": "check-leave-balance", "arguments": {"employeeId": "AliceJohnson", "leaveType": "annual"}}}),
    ];
    let mut replies = Vec::new();
    for req in requests {
        stdin
            .write_all(format!("{req}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
        let line = tokio::time::timeout(common::TIMEOUT, lines.next_line())
            .await
            .expect("reply in time")
            .unwrap()
            .expect("a reply line");
        replies.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    drop(stdin);
    let _ = child.wait().await;
    let names: BTreeSet<String> = replies[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let mut expected = set(&DIRECTORY_TOOLS);
    expected.insert("check-leave-balance".into());
    assert_eq!(names, expected);
    assert_eq!(replies[1]["error"]["code"], -31001, "{}", replies[1]);
    assert_eq!(
        replies[2]["result"]["structuredContent"]["employeeId"], "AliceJohnson",
        "{}",
        replies[2]
    );
    let rows = audit_rows(&db, &[]);
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["subject"] == "desktop-user"));
}

#[tokio::test]
async fn department_roster_pages_to_fit() {
    let db = TempDb::seeded();
    // A small result cap: the default page still fits.
    let server = Server::start_on(db.share(), &["--max-result-bytes", "40000"]).await;
    let r = server
        .call_as(
            "list-department-employees",
            json!({"departmentId": "engineering"}),
            None,
        )
        .await;
    let page = r.result()["structuredContent"].clone();
    assert_eq!(r.result()["isError"], Value::Null, "{}", r.text);
    let total = page["total"].as_u64().unwrap();
    let count = page["count"].as_u64().unwrap();
    assert!(count > 0 && count < total, "{count} of {total}");
    assert!(page["nextCursor"].is_string(), "{page}");
    assert_eq!(page["employees"].as_array().unwrap().len() as u64, count);

    // Explicit pages walk the whole department without overlap.
    let mut seen = BTreeSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"departmentId": "engineering", "limit": 50});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let r = server
            .call_as("list-department-employees", args, None)
            .await;
        let p = &r.result()["structuredContent"];
        for e in p["employees"].as_array().unwrap() {
            assert!(seen.insert(e["employeeId"].as_str().unwrap().to_owned()));
        }
        match p["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen.len() as u64, total);

    // A team filter.
    let r = server
        .call_as(
            "list-department-employees",
            json!({"departmentId": "engineering", "teamId": "backend"}),
            None,
        )
        .await;
    let p = &r.result()["structuredContent"];
    assert!(
        p["employees"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["teamId"] == "backend")
    );
    let (count, total) = (p["count"].as_u64().unwrap(), p["total"].as_u64().unwrap());
    assert!(count > 0 && count <= total, "{count} of {total}");
    assert_eq!(p["nextCursor"].is_null(), count == total);
    let r = server
        .call_as(
            "list-department-employees",
            json!({"departmentId": "engineering", "teamId": "payroll"}),
            None,
        )
        .await;
    assert_eq!(r.result()["isError"], true, "{}", r.text);
}
