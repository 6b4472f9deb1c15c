//! MCP Apps views (`io.modelcontextprotocol/ui`): the extension in the
//! capabilities of every revision, `ui://` resources listed and read with
//! their `_meta.ui`, tools linking them, and app-only tools hidden from
//! clients without the extension yet callable.

use crate::common;

use common::*;
use mcpwire_server::view::{ETAG_META, EXTENSION_ID, MIME_TYPE};
use mcpwire_server::{CallToolResult, RegistrationError, Server, Tool, ToolOutcome, View};
use serde_json::{Value, json};

const URI: &str = "ui://test/card";
const HTML: &str = "<!doctype html><html><body><p id=x></p><script>1</script></body></html>";

fn view_server() -> Server {
    builder()
        .view(View::html(URI, "card", HTML).title("Card"))
        .tool(
            Tool::builder("show")
                .description("Shows a card.")
                .view(URI)
                .raw_handler(|_ctx, _args| async {
                    Ok(ToolOutcome::Complete(CallToolResult::text("shown")))
                }),
        )
        .tool(
            Tool::builder("refresh")
                .view(URI)
                .visibility_app_only()
                .raw_handler(|_ctx, _args| async {
                    Ok(ToolOutcome::Complete(CallToolResult::text("fresh")))
                }),
        )
        .build()
        .expect("server builds")
}

/// `_meta` declaring MCP Apps support.
fn ui_caps() -> Value {
    json!({ "extensions": { EXTENSION_ID: { "mimeTypes": [MIME_TYPE] } } })
}

fn tool_names(r: &Value) -> Vec<String> {
    r["result"]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_extension_is_advertised_on_modern_and_legacy_revisions() {
    let h = spawn_http(view_server()).await;
    let r = h.modern(&req(1, "server/discover", json!({}))).await;
    let caps = &r.response()["result"]["capabilities"];
    assert_eq!(caps["extensions"][EXTENSION_ID], json!({}), "{caps}");
    assert!(caps["resources"].is_object(), "{caps}");
    let (_, init) = h.initialize(Some("2025-11-25"), json!({})).await;
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["extensions"][EXTENSION_ID], json!({}), "{init}");

    // A server without views declares no extension.
    let plain = spawn_http(server()).await;
    let (_, init) = plain.initialize(Some("2025-11-25"), json!({})).await;
    assert!(init["result"]["capabilities"].get("extensions").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_view_is_listed_and_read_with_its_meta() {
    let h = spawn_http(view_server()).await;
    let r = h.modern(&req(1, "resources/list", json!({}))).await;
    let list = r.response()["result"]["resources"].clone();
    let listed = list
        .as_array()
        .and_then(|l| l.iter().find(|x| x["uri"] == URI))
        .cloned()
        .unwrap_or_else(|| panic!("view listed: {}", r.raw));
    assert_eq!(listed["mimeType"], MIME_TYPE);
    assert_eq!(listed["title"], "Card");
    assert_eq!(listed["_meta"]["ui"]["csp"]["connectDomains"], json!([]));
    assert_eq!(listed["_meta"]["ui"]["csp"]["resourceDomains"], json!([]));
    assert_eq!(listed["_meta"]["ui"]["prefersBorder"], json!(true));
    let etag = listed["_meta"][ETAG_META].clone();
    assert!(etag.as_str().is_some_and(|e| e.len() == 32), "{listed}");

    let r = h
        .modern(&req(2, "resources/read", json!({ "uri": URI })))
        .await;
    let c = &r.response()["result"]["contents"][0];
    assert_eq!(c["uri"], URI, "{}", r.raw);
    assert_eq!(c["mimeType"], MIME_TYPE);
    assert_eq!(c["text"], HTML);
    assert_eq!(c["_meta"]["ui"]["csp"]["connectDomains"], json!([]));
    assert_eq!(c["_meta"][ETAG_META], etag);
    // Static, so the same bytes every time.
    let again = h
        .modern(&req(3, "resources/read", json!({ "uri": URI })))
        .await;
    assert_eq!(
        again.response()["result"]["contents"],
        r.response()["result"]["contents"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_link_the_view_and_app_only_tools_are_hidden_from_plain_clients() {
    let h = spawn_http(view_server()).await;
    let r = h.modern(&req(1, "tools/list", json!({}))).await;
    let names = tool_names(r.response());
    assert!(names.contains(&"show".to_owned()), "{}", r.raw);
    assert!(!names.contains(&"refresh".to_owned()), "{}", r.raw);
    let show = r.response()["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "show"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(show["_meta"]["ui"]["resourceUri"], URI, "{show}");

    // A host declaring MCP Apps sees it, marked for the app only.
    let body = req(2, "tools/list", json!({ "_meta": meta_with(ui_caps()) }));
    let r = h.modern(&body).await;
    let refresh = r.response()["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "refresh"))
        .cloned()
        .unwrap_or_else(|| panic!("listed to a UI host: {}", r.raw));
    assert_eq!(refresh["_meta"]["ui"]["visibility"], json!(["app"]));

    // Hidden is not forbidden: the view's calls come through any client.
    let r = h.modern(&call(3, "refresh", json!({}))).await;
    assert_eq!(text_of(r.response()), "fresh", "{}", r.raw);
    let r = h.modern(&call(4, "show", json!({}))).await;
    assert_eq!(text_of(r.response()), "shown", "{}", r.raw);
    assert!(
        r.response()["result"]
            .get("_meta")
            .is_none_or(|m| m.get("ui").is_none())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_sessions_hide_app_only_tools_unless_they_declare_the_extension() {
    let h = spawn_http(view_server()).await;
    let list = raw_req(1, "tools/list", json!({}));
    let (sid, _) = h.initialize(Some("2025-11-25"), json!({})).await;
    let r = h.legacy(&list, Some(&sid), Some("2025-11-25")).await;
    assert!(
        !tool_names(r.response()).contains(&"refresh".to_owned()),
        "{}",
        r.raw
    );
    let (sid, _) = h.initialize(Some("2025-11-25"), ui_caps()).await;
    let r = h.legacy(&list, Some(&sid), Some("2025-11-25")).await;
    assert!(
        tool_names(r.response()).contains(&"refresh".to_owned()),
        "{}",
        r.raw
    );
}

#[test]
fn a_view_needs_a_unique_ui_uri() {
    let bad = Server::builder("s", "1")
        .view(View::html("https://x/y", "y", ""))
        .build();
    assert!(matches!(bad, Err(RegistrationError::InvalidView(_))));
    let twice = Server::builder("s", "1")
        .view(View::html(URI, "a", ""))
        .view(View::html(URI, "b", ""))
        .build();
    assert!(matches!(twice, Err(RegistrationError::InvalidView(_))));
}
