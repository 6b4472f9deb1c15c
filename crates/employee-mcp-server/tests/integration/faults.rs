//! Faults seen by the real binary: the database file deleted (and a copy
//! put back) while serving, and published schemas that TypeScript clients (Ajv)
//! accept without warnings.

use crate::common;

use common::{Server, TempDb};
use serde_json::{Value, json};

use mcpwire_server::tool::STANDARD_FORMATS;

/// Every `format` keyword in a schema, with the JSON pointer to it.
/// Property names are skipped (a property may be called "format").
fn formats(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let here = format!("{at}/{k}");
                match (k.as_str(), child) {
                    ("format", Value::String(f)) => out.push((here, f.clone())),
                    _ => formats(child, &here, out),
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                formats(child, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn tools_list_publishes_only_standard_formats() {
    let server = Server::start().await;
    let listed = server
        .rpc("tools/list", json!({}))
        .await
        .expect("tools/list");
    let tools = &listed["tools"];
    let mut found = Vec::new();
    formats(tools, "/tools", &mut found);
    let bad: Vec<_> = found
        .iter()
        .filter(|(_, f)| !STANDARD_FORMATS.contains(&f.as_str()))
        .collect();
    assert!(bad.is_empty(), "non-standard formats published: {bad:?}");
    // The ranges the formats implied are still there, e.g. on `limit`.
    let department = tools
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "list-department-employees"))
        .expect("list-department-employees is listed");
    let limit = &department["inputSchema"]["properties"]["limit"];
    assert_eq!(limit["minimum"], 1, "{limit}");
    assert_eq!(limit["maximum"], 500, "{limit}");
}

/// The audit trail has its own file: once the directory's file is gone a
/// call is still audited and answered with a tool error that says what
/// happened, never from a recreated empty file.
#[tokio::test]
async fn deleted_database_withholds_answers_and_a_copy_put_back_is_refused() {
    let db = TempDb::seeded();
    let path = db.path.clone();
    let server = Server::start_logged(db, &[]).await;
    server.assert_alive().await;
    let bytes = std::fs::read(&path).expect("read the database");
    std::fs::remove_file(&path).expect("delete the database");

    let call = json!({"name": "get-employee-details", "arguments": {"employeeId": "AliceJohnson"}});
    let answer = serde_json::Value::Object(
        server
            .rpc("tools/call", call.clone())
            .await
            .expect("answered with a tool error"),
    );
    assert_eq!(answer["isError"], true, "{answer}");
    assert!(
        answer.to_string().contains("HR database is missing"),
        "{answer}"
    );
    assert!(!path.exists(), "the server recreated the database file");
    // Still serving: other requests are answered.
    server
        .rpc("tools/list", json!({}))
        .await
        .expect("tools/list still answered");

    // A copy put back is another file: refused until restart, untouched.
    std::fs::write(&path, &bytes).expect("put a copy back");
    match server.rpc("tools/call", call).await {
        Ok(answer) => {
            assert_eq!(
                answer.get("isError"),
                Some(&json!(true)),
                "a copy put back was served: {answer:?}"
            )
        }
        Err(withheld) => assert_eq!(withheld.code(), Some(-32603), "{withheld}"),
    }
    assert_eq!(
        std::fs::read(&path).ok(),
        Some(bytes),
        "the copy was written to"
    );
    let (_, log) = server.stop().await;
    assert!(log.contains("is missing"), "{log}");
    assert!(log.contains("until restarted"), "{log}");
}
