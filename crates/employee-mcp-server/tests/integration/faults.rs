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
    let reply = server.modern("tools/list", json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let tools = &reply.result()["tools"];
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

/// The audit trail lives in the same file: once it is gone, no call can
/// be audited, so none is answered (-32603), and the log says why.
#[tokio::test]
async fn deleted_database_withholds_answers_and_a_copy_put_back_is_refused() {
    let db = TempDb::seeded();
    let path = db.path.clone();
    let server = Server::start_logged(db, &[]).await;
    server.assert_alive().await;
    let bytes = std::fs::read(&path).expect("read the database");
    std::fs::remove_file(&path).expect("delete the database");

    let call = json!({"name": "get-employee-details", "arguments": {"employeeId": "AliceJohnson"}});
    let reply = server.modern("tools/call", call.clone()).await;
    assert_eq!(reply.error_code(), -32603, "{}", reply.text);
    assert!(
        reply.error_message().contains("audit trail"),
        "{}",
        reply.text
    );
    assert!(!path.exists(), "the server recreated the database file");
    // Still serving: other requests are answered.
    let list = server.modern("tools/list", json!({})).await;
    assert_eq!(list.status, 200, "{}", list.text);

    // A copy put back is another file: refused until restart, untouched.
    std::fs::write(&path, &bytes).expect("put a copy back");
    let reply = server.modern("tools/call", call).await;
    assert_eq!(reply.error_code(), -32603, "{}", reply.text);
    assert_eq!(
        std::fs::read(&path).ok(),
        Some(bytes),
        "the copy was written to"
    );
    let (_, log) = server.stop().await;
    assert!(log.contains("is missing"), "{log}");
    assert!(log.contains("until restarted"), "{log}");
}
