//! MCP Apps views of the HR tools: every view is listed and readable as one
//! self-contained page that reaches no origin, declares an empty CSP, the
//! tools name their view, and a host without the extension gets exactly
//! the answers a host with it gets.

use serde_json::{Value, json};

use crate::common::access::{audit_rows, audit_table};
use crate::common::*;
use mcpwire_server::protocol::meta;

const EXTENSION: &str = "io.modelcontextprotocol/ui";
const MIME: &str = "text/html;profile=mcp-app";

/// (view, the tools that link it).
const VIEWS: [(&str, &[&str]); 5] = [
    (
        "ui://employee-directory/org-chart",
        &["get-team-members", "get-employee-details"],
    ),
    (
        "ui://employee-directory/roster",
        &["list-department-employees", "search-employees-by-skill"],
    ),
    (
        "ui://employee-directory/report",
        &["generate-employee-report"],
    ),
    (
        "ui://employee-directory/leave-balance",
        &["check-leave-balance"],
    ),
    (
        "ui://employee-directory/tenure",
        &["calculate-employee-tenure"],
    ),
];

/// The SVG namespace is an identifier, never fetched; any other
/// `http(s)://` in a page would be an outside origin.
const NAMESPACES: [&str; 1] = ["http://www.w3.org/2000/svg"];

#[tokio::test(flavor = "multi_thread")]
async fn every_view_is_listed_readable_self_contained_and_declares_an_empty_csp() {
    let server = Server::start().await;
    let listed = server.modern("resources/list", json!({})).await;
    let resources = listed.result()["resources"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (uri, _) in VIEWS {
        let entry = resources
            .iter()
            .find(|r| r["uri"] == uri)
            .unwrap_or_else(|| panic!("{uri} not listed: {}", listed.text));
        assert_eq!(entry["mimeType"], MIME, "{entry}");
        assert_empty_csp(&entry["_meta"], uri);

        // The 2026 wire names the resource in a header too.
        let body = modern_body(next_id(), "resources/read", json!({ "uri": uri }));
        let read = server.post_modern(&body, &[("Mcp-Name", uri)]).await;
        let content = &read.result()["contents"][0];
        assert_eq!(content["uri"], uri, "{}", read.text);
        assert_eq!(content["mimeType"], MIME);
        assert_empty_csp(&content["_meta"], uri);
        assert_eq!(
            content["_meta"]["dev.mcpwire/etag"],
            entry["_meta"]["dev.mcpwire/etag"]
        );
        let html = content["text"].as_str().unwrap_or_default();
        assert_self_contained(uri, html);
    }
}

fn assert_empty_csp(meta: &Value, uri: &str) {
    assert_eq!(
        meta["ui"]["csp"]["connectDomains"],
        json!([]),
        "{uri}: {meta}"
    );
    assert_eq!(
        meta["ui"]["csp"]["resourceDomains"],
        json!([]),
        "{uri}: {meta}"
    );
    assert_eq!(meta["ui"]["prefersBorder"], json!(true), "{uri}: {meta}");
}

fn assert_self_contained(uri: &str, html: &str) {
    assert!(html.starts_with("<!doctype html>"), "{uri}");
    assert!(html.len() < 64 * 1024, "{uri}: {} bytes", html.len());
    let mut rest = html.to_lowercase();
    for ns in NAMESPACES {
        rest = rest.replace(ns, "");
    }
    for outside in [
        "http://",
        "https://",
        "//cdn",
        "<script src",
        "<link",
        "@import",
        "url(",
    ] {
        assert!(!rest.contains(outside), "{uri} refers outside: {outside}");
    }
    // Data goes in as text, never parsed as markup.
    for unsafe_sink in [
        "innerhtml",
        "outerhtml",
        "insertadjacenthtml",
        "document.write",
        "eval(",
    ] {
        assert!(!rest.contains(unsafe_sink), "{uri} uses {unsafe_sink}");
    }
    // The bridge speaks the extension's methods.
    for method in [
        "ui/initialize",
        "ui/notifications/initialized",
        "ui/notifications/tool-result",
        "ui/notifications/size-changed",
        "tools/call",
    ] {
        assert!(html.contains(method), "{uri} lacks {method}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_carry_their_view_on_every_revision_that_lists_meta() {
    let server = Server::start().await;
    let list = server.modern("tools/list", json!({})).await;
    assert_links(&list.result()["tools"]);
    let session = server.legacy(Some("2025-11-25")).await;
    assert_eq!(
        session.init["capabilities"]["extensions"][EXTENSION],
        json!({}),
        "{}",
        session.init
    );
    let list = session.request("tools/list", json!({})).await;
    assert_links(&list.result()["tools"]);

    let discover = server.modern("server/discover", json!({})).await;
    assert_eq!(
        discover.result()["capabilities"]["extensions"][EXTENSION],
        json!({}),
        "{}",
        discover.text
    );
}

fn assert_links(tools: &Value) {
    for (uri, names) in VIEWS {
        for name in names {
            let tool = tools
                .as_array()
                .and_then(|t| t.iter().find(|t| t["name"] == *name))
                .unwrap_or_else(|| panic!("{name} not listed: {tools}"));
            assert_eq!(tool["_meta"]["ui"]["resourceUri"], uri, "{name}: {tool}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_without_the_extension_gets_the_same_answers() {
    let server = Server::start().await;
    let calls = [
        ("get-team-members", json!({ "teamId": "backend" })),
        (
            "get-employee-details",
            json!({ "employeeId": "AliceJohnson" }),
        ),
        (
            "list-department-employees",
            json!({ "departmentId": "engineering", "limit": 5 }),
        ),
        ("search-employees-by-skill", json!({ "skill": "Rust" })),
        (
            "generate-employee-report",
            json!({ "reportType": "headcount" }),
        ),
        (
            "check-leave-balance",
            json!({ "employeeId": "AliceJohnson", "leaveType": "annual" }),
        ),
        (
            "calculate-employee-tenure",
            json!({ "employeeId": "AliceJohnson" }),
        ),
    ];
    let ui_caps = json!({ "extensions": { EXTENSION: { "mimeTypes": [MIME] } } });
    for (name, arguments) in calls {
        let params = json!({ "name": name, "arguments": arguments });
        let plain = server
            .post_modern(&modern_body(next_id(), "tools/call", params.clone()), &[])
            .await;
        let mut body = modern_body(next_id(), "tools/call", params);
        body["params"]["_meta"][meta::CLIENT_CAPABILITIES] = ui_caps.clone();
        let host = server.post_modern(&body, &[]).await;
        let (plain, host) = (plain.result(), host.result());
        assert_eq!(plain, host, "{name}");
        assert_ne!(plain["isError"], json!(true), "{name}: {plain}");
        assert!(plain["structuredContent"].is_object(), "{name}: {plain}");
        // The answer is the data, not a pointer to a view.
        assert!(!plain.to_string().contains("ui://"), "{name}: {plain}");
    }
}

/// A call a view makes through its host names the view in `_meta`; the
/// audit trail keeps it as the row's `via` (only for a view this server
/// serves), on both backends, and access stays what the model would get.
async fn a_call_from_a_view_is_audited_as_from_that_view(backend: Backend) {
    let server = Server::start_backend(backend).await;
    // The request's `_meta` (version, capabilities) plus the view's key.
    let call = |id: &str, view: Option<&str>| {
        let params = json!({ "name": "get-employee-details", "arguments": { "employeeId": id } });
        let mut body = modern_body(next_id(), "tools/call", params);
        if let Some(view) = view {
            body["params"]["_meta"]["dev.mcpwire/view"] = json!(view);
        }
        body
    };
    let from_view = server
        .post_modern(
            &call("AliceJohnson", Some("ui://employee-directory/org-chart")),
            &[],
        )
        .await;
    let from_model = server.post_modern(&call("AliceJohnson", None), &[]).await;
    let forged = server
        .post_modern(&call("AliceJohnson", Some("ui://elsewhere/<script>")), &[])
        .await;
    for reply in [&from_view, &from_model, &forged] {
        assert_ne!(reply.result()["isError"], json!(true), "{}", reply.text);
    }
    assert_eq!(
        from_view.result()["structuredContent"],
        from_model.result()["structuredContent"],
        "the same answer either way"
    );
    let rows = audit_rows(server.db(), &["--tool", "get-employee-details"]);
    let via: Vec<&Value> = rows.iter().map(|r| &r["via"]).collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(
        via.iter()
            .filter(|v| **v == "ui://employee-directory/org-chart")
            .count(),
        1,
        "{via:?}"
    );
    assert_eq!(via.iter().filter(|v| v.is_null()).count(), 2, "{via:?}");
    let table = audit_table(server.db(), &["--tool", "get-employee-details"]);
    assert!(
        table.contains("[from the view ui://employee-directory/org-chart]"),
        "{table}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_from_a_view_is_audited_as_from_that_view_on_sqlite() {
    a_call_from_a_view_is_audited_as_from_that_view(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_from_a_view_is_audited_as_from_that_view_on_postgres() {
    a_call_from_a_view_is_audited_as_from_that_view(Backend::Postgres).await;
}
