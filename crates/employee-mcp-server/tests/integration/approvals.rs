//! Approvals end to end, with the real binary: the built-in defaults
//! (confirm on compensation), a user's confirmation on the 2026 wire and
//! its replay, the fallback for a client that cannot ask, and operator
//! approval with the `approvals` CLI — self-approval refused, served once,
//! denied, voided by a policy change, bounded — on SQLite and across
//! PostgreSQL replicas; every step in the audit trail.

use std::process::{Command, Output};

use crate::common;

use common::access::{Issuer, audit_rows_at};
use common::{BIN, MODERN, Reply, Server, TempDb, next_id, set_approval};
use mcpwire_server::protocol::meta;
use serde_json::{Value, json};

const SALARY: &str = "get-compensation-info";

fn salary_args() -> Value {
    json!({"role": "Software Engineer", "level": "senior"})
}

/// A modern `tools/call` as `token`, with `capabilities` and extra params.
async fn call(server: &Server, token: Option<&str>, capabilities: Value, params: Value) -> Reply {
    request(server, token, capabilities, "tools/call", params).await
}

/// A modern request as `token`, declaring `capabilities`.
async fn request(
    server: &Server,
    token: Option<&str>,
    capabilities: Value,
    method: &str,
    params: Value,
) -> Reply {
    let mut body = json!({
        "jsonrpc": "2.0", "id": next_id(), "method": method, "params": params,
    });
    body["params"]["_meta"] = json!({
        meta::PROTOCOL_VERSION: MODERN,
        meta::CLIENT_CAPABILITIES: capabilities,
        meta::CLIENT_INFO: {"name": "approval-tests", "version": "1"},
    });
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut extra: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    // Task methods name their task in Mcp-Name.
    let task = body["params"]["taskId"].as_str().map(str::to_owned);
    if let Some(task) = &task {
        extra.push(("Mcp-Name", task.as_str()));
    }
    let reply = server.post_modern(&body, &extra).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply
}

async fn call_salary(server: &Server, token: Option<&str>) -> Value {
    let params = json!({"name": SALARY, "arguments": salary_args()});
    call(server, token, json!({}), params)
        .await
        .result()
        .clone()
}

/// `approvals ARGS… --database URL`.
fn approvals(url: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("approvals")
        .args(args)
        .args(["--database", url])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run the approvals subcommand")
}

fn pending(url: &str) -> Vec<Value> {
    let out = approvals(url, &["list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

/// The approval id a refused call names.
fn approval_id(result: &Value) -> String {
    let text = text_of(result);
    let start = text
        .find("apr-")
        .unwrap_or_else(|| panic!("no approval id: {text}"));
    text[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

fn outcomes(url: &str, tool: &str) -> Vec<String> {
    audit_rows_at(url, &["--tool", tool])
        .iter()
        .map(|r| r["outcome"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test]
async fn by_default_compensation_needs_the_users_confirmation_once() {
    let server = Server::start_on(TempDb::empty(), &[]).await;
    let url = server.db().url();
    // A client that cannot ask its user: refused, and told why.
    let refused = call_salary(&server, None).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text_of(&refused).contains("confirmation"), "{refused}");
    // Directory look-ups need nobody.
    let params =
        json!({"name": "get-employee-details", "arguments": {"employeeId": "AliceJohnson"}});
    let open = call(&server, None, json!({}), params).await;
    assert_ne!(open.result()["isError"], true, "{}", open.text);

    let elicits = json!({"elicitation": {}});
    let params = json!({"name": SALARY, "arguments": salary_args()});
    let asked = call(&server, None, elicits.clone(), params)
        .await
        .result()
        .clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let question = &asked["inputRequests"]["mcpwire.approval"];
    let message = question["params"]["message"].as_str().unwrap_or("");
    assert!(message.contains("Software Engineer"), "{question}");
    let answer = json!({"mcpwire.approval": {"action": "accept", "content": {"approve": true}}});
    let retry = json!({"name": SALARY, "arguments": salary_args(),
                       "inputResponses": answer, "requestState": asked["requestState"]});
    let served = call(&server, None, elicits.clone(), retry.clone()).await;
    assert_eq!(served.result()["resultType"], "complete", "{}", served.text);
    assert_ne!(served.result()["isError"], true, "{}", served.text);
    // The same yes again: refused.
    let replay = call(&server, None, elicits.clone(), retry).await;
    assert_eq!(replay.error_code(), -32602, "{}", replay.text);
    // The yes for other arguments: refused.
    let swapped = json!({"name": SALARY, "arguments": {"role": "Engineering Manager", "level": "senior"},
                         "inputResponses": answer, "requestState": asked["requestState"]});
    let swapped = call(&server, None, elicits, swapped).await;
    assert_eq!(swapped.error_code(), -32602, "{}", swapped.text);
    let steps = outcomes(&url, SALARY);
    assert!(steps.iter().any(|o| o == "approval_denied"), "{steps:?}");
    assert!(steps.iter().any(|o| o == "approval_pending"), "{steps:?}");
    assert!(steps.iter().any(|o| o == "success"), "{steps:?}");
}

/// A server trusting `issuer`, with `get-compensation-info` on operator.
async fn operator_server(db: TempDb, issuer: &Issuer, flags: &[&str]) -> Server {
    set_approval(&db.url(), SALARY, "operator");
    let mut args: Vec<String> = issuer.flags();
    args.extend(["--approval-wait".into(), "0".into()]);
    args.extend(flags.iter().map(|f| f.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Server::start_on(db, &args).await
}

#[tokio::test]
async fn an_operator_approves_the_exact_call_once_and_never_their_own() {
    let issuer = Issuer::start();
    let server = operator_server(TempDb::seeded(), &issuer, &[]).await;
    let url = server.db().url();
    let alice = issuer.token("alice", "hr:compensation", None);
    let first = call_salary(&server, Some(&alice)).await;
    assert_eq!(first["isError"], true, "{first}");
    let id = approval_id(&first);
    assert!(text_of(&first).contains("retry the same call"), "{first}");
    // The same call again finds the same approval; nothing runs.
    assert_eq!(approval_id(&call_salary(&server, Some(&alice)).await), id);
    let listed = pending(&url);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["subject"], "alice");
    assert_eq!(listed[0]["arguments"]["role"], "Software Engineer");

    let own = approvals(&url, &["approve", &id, "--actor", "alice"]);
    assert!(!own.status.success());
    assert!(String::from_utf8_lossy(&own.stderr).contains("own call"));
    let yes = approvals(
        &url,
        &[
            "approve",
            &id,
            "--actor",
            "bob",
            "--reason",
            "quarterly review",
        ],
    );
    assert!(
        yes.status.success(),
        "{}",
        String::from_utf8_lossy(&yes.stderr)
    );
    let again = approvals(&url, &["approve", &id, "--actor", "bob"]);
    assert!(!again.status.success(), "decided twice");

    // Another caller's identical call is not served by alice's approval.
    let carol = issuer.token("carol", "hr:compensation", None);
    let other = call_salary(&server, Some(&carol)).await;
    assert_ne!(approval_id(&other), id, "{other}");
    // Alice's retry is served, once.
    let served = call_salary(&server, Some(&alice)).await;
    assert_ne!(served["isError"], true, "{served}");
    assert!(served["structuredContent"].is_object(), "{served}");
    let next = call_salary(&server, Some(&alice)).await;
    assert_eq!(next["isError"], true, "{next}");
    assert_ne!(approval_id(&next), id, "an approval served twice");

    let rows = audit_rows_at(&url, &["--tool", SALARY]);
    let granted = rows
        .iter()
        .find(|r| r["outcome"] == "approval_granted")
        .expect("the decision is audited");
    let detail = granted["detail"].as_str().unwrap_or("");
    assert!(
        detail.contains(&id) && detail.contains("bob") && detail.contains("quarterly review"),
        "{granted}"
    );
    assert_eq!(granted["subject"], "alice");
    let served_row = rows
        .iter()
        .find(|r| r["outcome"] == "success")
        .expect("served");
    assert!(
        served_row["detail"].as_str().unwrap_or("").contains(&id),
        "{served_row}"
    );
}

#[tokio::test]
async fn a_denial_is_told_and_a_policy_change_voids_what_waits() {
    let issuer = Issuer::start();
    let server = operator_server(TempDb::seeded(), &issuer, &[]).await;
    let url = server.db().url();
    let alice = issuer.token("alice", "hr:compensation hr:directory", None);
    let id = approval_id(&call_salary(&server, Some(&alice)).await);
    let no = approvals(
        &url,
        &["deny", &id, "--actor", "bob", "--reason", "not needed"],
    );
    assert!(
        no.status.success(),
        "{}",
        String::from_utf8_lossy(&no.stderr)
    );
    let denied = call_salary(&server, Some(&alice)).await;
    let text = text_of(&denied);
    assert!(
        text.contains("denied") && text.contains("bob") && text.contains("not needed"),
        "{text}"
    );

    // A pending approval of another call, then the policy changes.
    let params =
        json!({"name": SALARY, "arguments": {"role": "Engineering Manager", "level": "senior"}});
    let waiting = call(&server, Some(&alice), json!({}), params).await;
    let waiting_id = approval_id(waiting.result());
    set_approval(&url, SALARY, "confirm");
    let shown = approvals(&url, &["show", &waiting_id]);
    let shown: Value = serde_json::from_slice(&shown.stdout).expect("show prints JSON");
    assert_eq!(shown["status"], "void", "{shown}");
    let late = approvals(&url, &["approve", &waiting_id, "--actor", "bob"]);
    assert!(!late.status.success(), "a void approval was approved");
    let steps = outcomes(&url, SALARY);
    assert!(
        steps.iter().filter(|o| *o == "approval_denied").count() >= 2,
        "{steps:?}"
    );
    assert!(steps.iter().any(|o| o == "approval_expired"), "{steps:?}");
}

#[tokio::test]
async fn pending_approvals_are_bounded_per_caller() {
    let issuer = Issuer::start();
    let flags = ["--max-pending-approvals-per-subject", "2"];
    let server = operator_server(TempDb::seeded(), &issuer, &flags).await;
    let alice = issuer.token("alice", "hr:compensation", None);
    for level in ["junior", "mid"] {
        let params =
            json!({"name": SALARY, "arguments": {"role": "Software Engineer", "level": level}});
        let r = call(&server, Some(&alice), json!({}), params).await;
        approval_id(r.result());
    }
    let params =
        json!({"name": SALARY, "arguments": {"role": "Software Engineer", "level": "senior"}});
    let full = call(&server, Some(&alice), json!({}), params).await;
    let text = text_of(full.result());
    assert!(text.contains("limit") && !text.contains("apr-"), "{text}");
    // Another caller still gets in.
    let carol = issuer.token("carol", "hr:compensation", None);
    approval_id(&call_salary(&server, Some(&carol)).await);
    assert_eq!(pending(&server.db().url()).len(), 3);
}

#[tokio::test]
async fn on_postgres_a_call_approved_on_one_replica_is_served_by_another() {
    let issuer = Issuer::start();
    let db = TempDb::seeded_on(common::Backend::Postgres);
    let url = db.url();
    let first = operator_server(db, &issuer, &[]).await;
    let mut args: Vec<String> = issuer.flags();
    args.extend(["--approval-wait".into(), "0".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let second = Server::start_on_postgres(&url, &args).await;
    let alice = issuer.token("alice", "hr:compensation", None);
    let id = approval_id(&call_salary(&first, Some(&alice)).await);
    assert_eq!(approval_id(&call_salary(&second, Some(&alice)).await), id);
    let yes = approvals(&url, &["approve", &id, "--actor", "bob"]);
    assert!(
        yes.status.success(),
        "{}",
        String::from_utf8_lossy(&yes.stderr)
    );
    let served = call_salary(&second, Some(&alice)).await;
    assert_ne!(served["isError"], true, "{served}");
    let after = call_salary(&first, Some(&alice)).await;
    assert_ne!(approval_id(&after), id, "served twice across replicas");
    let steps = outcomes(&url, SALARY);
    assert!(steps.iter().any(|o| o == "approval_granted"), "{steps:?}");
}

#[tokio::test]
async fn a_task_waits_for_the_operator_then_completes_with_the_report() {
    const REPORT: &str = "generate-employee-report";
    let issuer = Issuer::start();
    let db = TempDb::seeded();
    set_approval(&db.url(), REPORT, "operator");
    let args: Vec<String> = issuer.flags();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start_on(db, &args).await;
    let url = server.db().url();
    let alice = issuer.token("alice", "hr:reports", None);
    let tasks = json!({"extensions": {mcpwire_server::tasks::EXTENSION_ID: {}}});
    let params = json!({"name": REPORT, "arguments": {"reportType": "headcount"}});
    let created = call(&server, Some(&alice), tasks.clone(), params).await;
    let created = created.result().clone();
    assert_eq!(created["resultType"], "task", "{created}");
    let task = created["taskId"].as_str().expect("a task id").to_owned();
    let waiting = pending(&url);
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let id = waiting[0]["id"].as_str().unwrap_or_default().to_owned();
    let message = created["statusMessage"].as_str().unwrap_or_default();
    assert!(
        message.contains("approval") && message.contains(&id),
        "{created}"
    );

    let poll = || {
        request(
            &server,
            Some(&alice),
            tasks.clone(),
            "tasks/get",
            json!({"taskId": task}),
        )
    };
    assert_eq!(poll().await.result()["status"], "working");
    let yes = approvals(&url, &["approve", &id, "--actor", "bob"]);
    assert!(
        yes.status.success(),
        "{}",
        String::from_utf8_lossy(&yes.stderr)
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let done = loop {
        let got = poll().await.result().clone();
        if got["status"] != "working" {
            break got;
        }
        assert!(std::time::Instant::now() < deadline, "still waiting: {got}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    let report = &done["result"]["structuredContent"];
    assert_eq!(report["reportType"], "headcount", "{done}");
    let steps = outcomes(&url, REPORT);
    assert!(steps.iter().any(|o| o == "approval_granted"), "{steps:?}");
    assert!(steps.iter().any(|o| o == "success"), "{steps:?}");
}

#[tokio::test]
async fn on_stdio_the_operator_decides_with_the_cli_on_the_same_database() {
    let db = TempDb::seeded();
    let url = db.url();
    set_approval(&url, SALARY, "operator");
    let env = [
        ("EMPLOYEE_MCP_STDIO_SCOPES", "hr:compensation"),
        ("EMPLOYEE_MCP_STDIO_SUBJECT", "desktop-user"),
    ];
    let mut server = common::StdioServer::start_with_env(db, &["--approval-wait", "0"], &env);
    let ask = async |server: &mut common::StdioServer| {
        let body = json!({
            "jsonrpc": "2.0", "id": next_id(), "method": "tools/call",
            "params": {"name": SALARY, "arguments": salary_args(), "_meta": {
                meta::PROTOCOL_VERSION: MODERN, meta::CLIENT_CAPABILITIES: {},
            }},
        });
        server.request(body).await["result"].clone()
    };
    let first = ask(&mut server).await;
    let id = approval_id(&first);
    let listed = pending(&url);
    assert_eq!(listed[0]["subject"], "desktop-user", "{listed:?}");
    let yes = approvals(&url, &["approve", &id, "--actor", "hr-officer"]);
    assert!(
        yes.status.success(),
        "{}",
        String::from_utf8_lossy(&yes.stderr)
    );
    let served = ask(&mut server).await;
    assert_ne!(served["isError"], true, "{served}");
    assert!(served["structuredContent"].is_object(), "{served}");
    drop(server);
}
