//! The in-memory client (`mcpwire_server::client`) against the standard test
//! server, on both wires: calls, paging, input round trips answered by the
//! client's handler, subscriptions, completions, notifications, principals.

use crate::common;

use common::*;
use mcpwire_server::client::{Client, ClientError};
use mcpwire_server::protocol::ProtocolVersion;
use mcpwire_server::protocol::meta;
use mcpwire_server::protocol::model::InputRequest;
use mcpwire_server::{AccessOptions, Principal, Server, ServerEvent, Tool, ToolResult};
use serde_json::{Value, json};

/// Answers elicitations with `ok: true` and sampling with a fixed text.
async fn answer(request: InputRequest) -> Value {
    match request.method.as_str() {
        "elicitation/create" => json!({ "action": "accept", "content": { "ok": true } }),
        _ => {
            json!({ "role": "assistant", "content": { "type": "text", "text": "a haiku" }, "model": "m" })
        }
    }
}

async fn both_wires() -> Vec<Client> {
    let modern = Client::builder(server()).on_input(answer).connect().await;
    let legacy = Client::builder(server())
        .on_input(answer)
        .legacy(ProtocolVersion::LATEST_LEGACY)
        .connect()
        .await;
    vec![
        modern.expect("modern client"),
        legacy.expect("legacy client"),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn typed_tools_answer_on_both_wires() {
    for client in both_wires().await {
        let names: Vec<String> = client
            .list_tools()
            .await
            .expect("tools/list")
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert!(names.contains(&"echo".to_owned()), "{names:?}");
        let r = client
            .call_tool("add", json!({ "a": 2, "b": 3 }))
            .await
            .unwrap();
        assert_eq!(r.structured, Some(json!({ "sum": 5 })));
        assert!(!r.is_error);
        let r = client.call_tool("fail", json!({})).await.unwrap();
        assert!(r.is_error);
        assert!(r.text().contains("tomorrow"), "{}", r.text());
        let e = client.call_tool("nope", json!({})).await.unwrap_err();
        assert_eq!(e.code(), Some(-32602), "{e}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn input_requests_go_to_the_handler_on_both_wires() {
    for client in both_wires().await {
        let r = client
            .call_tool("ask", json!({ "topic": "x" }))
            .await
            .unwrap();
        let text: Value = serde_json::from_str(&r.text()).expect("ask answers JSON");
        assert_eq!(text["answer"]["content"]["ok"], true, "{text}");
        assert_eq!(text["topic"], "x");
        let r = client.call_tool("sample", json!({})).await.unwrap();
        assert!(r.text().contains("a haiku"), "{}", r.text());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_handler_input_is_refused() {
    let client = Client::connect(server()).await.unwrap();
    // No elicitation capability declared: the engine refuses the call.
    let r = client.call_tool("ask", json!({})).await;
    assert!(matches!(r, Err(ClientError::Rpc { .. })), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_and_logs_arrive_as_notifications() {
    let client = Client::connect(server()).await.unwrap();
    let mut params = serde_json::Map::new();
    params.insert("name".into(), json!("progress"));
    params.insert("_meta".into(), json!({ meta::PROGRESS_TOKEN: "p1" }));
    client.request("tools/call", params).await.unwrap();
    let progress: Vec<f64> = client
        .take_notifications()
        .await
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .filter_map(|n| n["params"]["progress"].as_f64())
        .collect();
    assert_eq!(progress, vec![1.0, 2.0, 3.0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn listen_streams_list_changes() {
    let server = server();
    let client = Client::connect(server.clone()).await.unwrap();
    let mut sub = client
        .listen(json!({ "toolsListChanged": true }))
        .await
        .expect("listen");
    assert_eq!(
        sub.acknowledgement()["method"],
        "notifications/subscriptions/acknowledged"
    );
    server.notify(ServerEvent::ToolsChanged);
    let n = tokio::time::timeout(WAIT, sub.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n["method"], "notifications/tools/list_changed");
    assert_eq!(&n["params"]["_meta"][meta::SUBSCRIPTION_ID], sub.id());
    client.unsubscribe(sub).await;
    // Legacy sessions have no listen method.
    let legacy = Client::builder(server)
        .legacy(ProtocolVersion::LATEST_LEGACY)
        .connect()
        .await
        .unwrap();
    let e = legacy
        .listen(json!({ "toolsListChanged": true }))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(-32601));
}

#[tokio::test(flavor = "multi_thread")]
async fn completions_come_back_as_values() {
    let server = builder()
        .completion(|_ctx, _r, _name, value| async move {
            Ok(["alpha", "beta"]
                .iter()
                .filter(|c| c.starts_with(value.as_str()))
                .map(|c| (*c).to_owned())
                .collect())
        })
        .build()
        .unwrap();
    let client = Client::connect(server).await.unwrap();
    let c = client
        .complete(json!({ "type": "ref/prompt", "name": "p" }), "x", "b")
        .await
        .unwrap();
    assert_eq!(c.values, vec!["beta".to_owned()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_principal_is_attached_to_every_request() {
    async fn whoami(_input: serde_json::Map<String, Value>) -> ToolResult<String> {
        Ok("unused".to_owned())
    }
    let tool = Tool::builder("secret")
        .required_scopes(["s:read"])
        .handler(whoami);
    let mut access = AccessOptions::default();
    access.enforce_scopes = true;
    let server = Server::builder("t", "1")
        .access(access)
        .tool(tool)
        .build()
        .unwrap();
    let principal = |scopes: &[&str]| Principal::new("u1").with_scopes(scopes.iter().copied());
    let allowed = Client::builder(server.clone())
        .extension(principal(&["s:read"]))
        .connect()
        .await
        .unwrap();
    assert!(
        !allowed
            .call_tool("secret", json!({}))
            .await
            .unwrap()
            .is_error
    );
    let denied = Client::builder(server)
        .extension(principal(&[]))
        .connect()
        .await
        .unwrap();
    let e = denied.call_tool("secret", json!({})).await.unwrap_err();
    assert_eq!(e.code(), Some(-31001), "{e}");
}

/// A raw tool that answers its own name.
fn named(name: &str) -> Tool {
    let text = name.to_owned();
    Tool::builder(name)
        .description("Answers its name.")
        .raw_handler(move |_ctx, _args| {
            let text = text.clone();
            async move { Ok(mcpwire_server::CallToolResult::text(text).into()) }
        })
}

#[tokio::test(flavor = "multi_thread")]
async fn replace_tools_swaps_the_whole_set_and_announces_once() {
    let server = Server::builder("swap", "1")
        .options(mcpwire_server::ServerOptions {
            page_size: 1,
            ..Default::default()
        })
        .tool(named("a"))
        .tool(named("b"))
        .build()
        .unwrap();
    let client = Client::connect(server.clone()).await.unwrap();
    let mut sub = client
        .listen(json!({ "toolsListChanged": true }))
        .await
        .expect("listen");
    // A cursor of the old set, held across the swap.
    let first = client
        .request("tools/list", serde_json::Map::new())
        .await
        .expect("list");
    let old_cursor = first["nextCursor"].as_str().expect("cursor").to_owned();

    server
        .replace_tools(vec![named("b"), named("c"), named("d")])
        .expect("swap");
    let n = tokio::time::timeout(WAIT, sub.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n["method"], "notifications/tools/list_changed");
    // Exactly one announcement.
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(200), sub.next())
            .await
            .is_err()
    );
    let names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["b", "c", "d"]);
    assert_eq!(server.tool_names(), names);
    let e = client.call_tool("a", json!({})).await.unwrap_err();
    assert_eq!(e.code(), Some(-32602));
    assert_eq!(client.call_tool("c", json!({})).await.unwrap().text(), "c");
    // The old set's cursor is refused.
    let mut params = serde_json::Map::new();
    params.insert("cursor".into(), json!(old_cursor));
    assert!(client.request("tools/list", params).await.is_err());
    // An invalid set changes nothing.
    assert!(server.replace_tools(vec![named("x"), named("x")]).is_err());
    assert_eq!(server.tool_names(), names);
}

/// A server with one resource and one template, at most two
/// subscriptions per session.
fn watched_server() -> Server {
    use mcpwire_server::protocol::model::{
        Resource as Def, ResourceContents, ResourceTemplate as TemplateDef,
    };
    use mcpwire_server::{RequestContext, Resource, ResourceTemplate};
    let read = |_ctx: RequestContext, uri: String| async move {
        Ok(vec![ResourceContents::Text {
            uri,
            mime_type: None,
            text: "x".into(),
        }])
    };
    let def: Def = serde_json::from_value(json!({ "uri": "test://a", "name": "a" })).unwrap();
    let template: TemplateDef =
        serde_json::from_value(json!({ "uriTemplate": "test://t/{id}", "name": "t" })).unwrap();
    builder()
        .resource(Resource::new(def, read))
        .resource_template(ResourceTemplate::new(template, move |ctx, uri, _| {
            read(ctx, uri)
        }))
        .options(mcpwire_server::ServerOptions {
            max_subscriptions_per_session: 2,
            ..Default::default()
        })
        .build()
        .unwrap()
}

fn uri(u: &str) -> serde_json::Map<String, Value> {
    json!({ "uri": u }).as_object().cloned().unwrap()
}

fn rpc_error(r: Result<serde_json::Map<String, Value>, ClientError>) -> (i64, String) {
    match r {
        Err(ClientError::Rpc { code, message, .. }) => (code, message),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_subscriptions_are_bounded_and_must_name_a_resource() {
    let client = Client::builder(watched_server())
        .legacy(ProtocolVersion::LATEST_LEGACY)
        .connect()
        .await
        .unwrap();
    let subscribe = |u: &str| client.request("resources/subscribe", uri(u));

    // Unknown URIs would be held for the session's life and never fire.
    let (code, message) = rpc_error(subscribe("file:///etc/passwd").await);
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("resource not found"), "{message}");

    subscribe("test://a").await.unwrap();
    subscribe("test://a").await.unwrap(); // again: still one
    subscribe("test://t/1").await.unwrap();
    let (code, message) = rpc_error(subscribe("test://t/2").await);
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("at most 2"), "{message}");

    // Unsubscribing frees a slot; the session keeps serving.
    client
        .request("resources/unsubscribe", uri("test://a"))
        .await
        .unwrap();
    subscribe("test://t/2").await.unwrap();
    assert!(!client.list_tools().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listen_stream_watches_a_bounded_number_of_uris() {
    let client = Client::connect(watched_server()).await.unwrap();
    let many = json!({ "resourceSubscriptions": ["test://a", "test://t/1", "test://t/2"] });
    match client.listen(many).await {
        Err(ClientError::Rpc { code, message, .. }) => {
            assert_eq!(code, -32602);
            assert!(message.contains("at most 2"), "{message}");
        }
        other => panic!("expected -32602, got {:?}", other.map(|s| s.id().clone())),
    }
    let two = json!({ "resourceSubscriptions": ["test://a", "test://t/1", "test://a"] });
    client.listen(two).await.unwrap();
}
