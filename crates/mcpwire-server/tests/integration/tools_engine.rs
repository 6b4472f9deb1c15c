//! The `tools/call` engine on the modern wire: lookup, argument handling,
//! schema validation, typed output, output-schema enforcement, execution
//! errors and time limits.

use crate::common;

use std::time::Duration;

use common::*;
use mcpwire_server::ServerOptions;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn unknown_tool_is_invalid_params() {
    let h = spawn_http(server()).await;
    let r = h.modern(&call(1, "nope", json!({}))).await;
    assert_eq!(error_code(r.response()), Some(-32602), "{}", r.raw);
    assert_eq!(r.response()["id"], 1);
    assert!(r.response().get("result").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn omitted_arguments_mean_an_empty_object() {
    let h = spawn_http(server()).await;
    // `region` has no required arguments: omitting them must succeed.
    let body = req(1, "tools/call", json!({ "name": "region" }));
    let r = h.modern(&body).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(!is_error_result(r.response()), "{}", r.raw);
    assert_eq!(text_of(r.response()), "{}");

    // `add` requires a and b: omitting them is a schema violation (isError).
    let body = req(2, "tools/call", json!({ "name": "add" }));
    let r = h.modern(&body).await;
    assert!(is_error_result(r.response()), "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn non_object_arguments_are_invalid_params() {
    let h = spawn_http(server()).await;
    for (id, args) in [(1, json!([1, 2])), (2, json!("a=1")), (3, json!(5))] {
        let r = h.modern(&call(id, "add", args)).await;
        assert_eq!(error_code(r.response()), Some(-32602), "{}", r.raw);
        assert_eq!(r.response()["id"], id);
    }
    // `name` missing.
    let r = h
        .modern(&req(4, "tools/call", json!({ "arguments": {} })))
        .await;
    assert!(r.response()["error"].is_object(), "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn schema_violations_are_tool_errors_naming_every_field() {
    let h = spawn_http(server()).await;
    let r = h
        .modern(&call(1, "add", json!({ "a": "one", "extra": 1 })))
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(is_error_result(r.response()), "{}", r.raw);
    assert_eq!(r.response()["result"]["resultType"], "complete");
    let text = text_of(r.response());
    assert!(text.contains("/a"), "names the mistyped field a: {text}");
    assert!(text.contains("\"b\""), "names the missing field b: {text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn typed_output_is_structured_and_mirrored_as_text() {
    let h = spawn_http(server()).await;
    let r = h.modern(&call(1, "echo", json!({ "text": "héllo" }))).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let res = &r.response()["result"];
    assert!(
        res.get("isError").is_none() || res["isError"] == false,
        "{res}"
    );
    let structured = &res["structuredContent"];
    assert_eq!(structured, &json!({ "text": "héllo", "length": 6 }));
    let blocks = res["content"].as_array().expect("content");
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0]["type"], "text");
    let mirrored: Value =
        serde_json::from_str(blocks[0]["text"].as_str().expect("text")).expect("JSON text");
    assert_eq!(&mirrored, structured);

    // The listed outputSchema accepts what was returned.
    let r = h.modern(&req(2, "tools/list", json!({}))).await;
    let tools = r.response()["result"]["tools"]
        .as_array()
        .expect("tools")
        .clone();
    let echo = tools.iter().find(|t| t["name"] == "echo").expect("echo");
    assert_eq!(echo["outputSchema"]["type"], "object", "{echo}");
    assert_eq!(echo["title"], "Echo");
    assert_eq!(echo["annotations"]["readOnlyHint"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn output_schema_violation_is_internal_error() {
    let h = spawn_http(server()).await;
    let r = h.modern(&call(1, "bad_output", json!({}))).await;
    assert_eq!(error_code(r.response()), Some(-32603), "{}", r.raw);
    assert_eq!(r.response()["id"], 1);
}

/// A typed tool's given schema is validated on every call, unless it is
/// declared the output type's own (`output_schema_of_type`): then, as for
/// a derived schema, only debug builds check it.
#[tokio::test(flavor = "multi_thread")]
async fn a_schema_of_the_type_is_checked_only_in_debug_builds() {
    use mcpwire_server::Tool;
    // Stricter than `AddOut` on purpose: `sum` must be negative.
    let strict = json!({
        "type": "object",
        "properties": { "sum": { "type": "integer", "maximum": -1 } },
        "required": ["sum"]
    });
    let add = |name: &str| Tool::builder(name).description("Adds a and b.");
    let handler = |input: AddIn| async move {
        Ok(AddOut {
            sum: input.a + input.b,
        })
    };
    let server = builder()
        .tool(add("given").output_schema(strict.clone()).handler(handler))
        .tool(
            add("of-type")
                .output_schema_of_type(strict)
                .handler(handler),
        )
        .build()
        .expect("server builds");
    let h = spawn_http(server).await;
    let args = json!({ "a": 1, "b": 2 });
    let given = h.modern(&call(1, "given", args.clone())).await;
    assert_eq!(error_code(given.response()), Some(-32603), "{}", given.raw);
    let of_type = h.modern(&call(2, "of-type", args)).await;
    if cfg!(debug_assertions) {
        assert_eq!(
            error_code(of_type.response()),
            Some(-32603),
            "{}",
            of_type.raw
        );
    } else {
        assert_eq!(
            of_type.response()["result"]["structuredContent"]["sum"],
            3,
            "{}",
            of_type.raw
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn execution_errors_are_is_error_results() {
    let h = spawn_http(server()).await;
    let r = h.modern(&call(1, "fail", json!({}))).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(is_error_result(r.response()), "{}", r.raw);
    assert!(
        text_of(r.response()).contains("widget is broken"),
        "{}",
        r.raw
    );
    assert!(r.response()["result"].get("structuredContent").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn handlers_past_the_call_timeout_give_an_is_error_result() {
    let s = server_with(ServerOptions {
        call_timeout: Some(Duration::from_millis(200)),
        ..ServerOptions::default()
    });
    let h = spawn_http(s).await;
    let started = std::time::Instant::now();
    let r = h.modern(&call(1, "slow", json!({ "ms": 5000 }))).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "did not wait for the handler"
    );
    assert!(is_error_result(r.response()), "{}", r.raw);
    let text = text_of(r.response());
    assert!(text.contains("timed out"), "{text}");

    // A fast call under the same limit succeeds.
    let r = h.modern(&call(2, "slow", json!({ "ms": 1 }))).await;
    assert!(!is_error_result(r.response()), "{}", r.raw);
    assert_eq!(text_of(r.response()), "slept");
}

#[tokio::test(flavor = "multi_thread")]
async fn timeout_message_states_a_meaningful_duration() {
    let s = server_with(ServerOptions {
        call_timeout: Some(Duration::from_millis(200)),
        ..ServerOptions::default()
    });
    let h = spawn_http(s).await;
    let r = h.modern(&call(1, "slow", json!({ "ms": 5000 }))).await;
    let text = text_of(r.response());
    assert!(
        !text.contains("after 0 s"),
        "a 200 ms limit is reported as \"0 s\": {text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn added_tools_are_callable_and_listed_at_the_end() {
    let h = spawn_http(server()).await;
    h.server.add_tool(plain_tool("zzz_new")).expect("add");
    assert!(
        h.server.add_tool(plain_tool("zzz_new")).is_err(),
        "duplicate"
    );
    let r = h.modern(&req(1, "tools/list", json!({}))).await;
    let tools = r.response()["result"]["tools"]
        .as_array()
        .expect("tools")
        .clone();
    assert_eq!(tools.last().expect("a tool")["name"], "zzz_new");
    let r = h.modern(&call(2, "zzz_new", json!({}))).await;
    assert_eq!(text_of(r.response()), "zzz_new");
    assert!(h.server.remove_tool("zzz_new"));
    let r = h.modern(&call(3, "zzz_new", json!({}))).await;
    assert_eq!(error_code(r.response()), Some(-32602), "{}", r.raw);
}

/// A [`SharedOutput`] answers with exactly the bytes of returning the value
/// itself, on every revision, call after call (its finished results are
/// reused), and is still sanitised when its text needs it.
#[tokio::test(flavor = "multi_thread")]
async fn shared_output_answers_the_bytes_of_the_value() {
    use mcpwire_server::{SharedOutput, Tool};
    use std::collections::HashMap;
    use std::sync::Arc;
    // Quotes and newlines are escaped twice; a bidi override is sanitised.
    let texts = ["line\n\"quoted\" é", "\u{202e}reversed"];
    let value = |text: &str| EchoOut {
        text: text.to_owned(),
        length: 3,
    };
    let shared: HashMap<String, SharedOutput<EchoOut>> = texts
        .iter()
        .map(|t| {
            (
                t.to_string(),
                SharedOutput::new(&value(t)).expect("serialises"),
            )
        })
        .collect();
    let server = builder()
        .tool(
            Tool::builder("plain-out")
                .description("The value, serialised per call.")
                .handler(move |input: EchoIn| async move { Ok(value(&input.text)) }),
        )
        .tool(
            Tool::builder("shared-out")
                .description("The same value, serialised once.")
                .state(Arc::new(shared))
                .handler(|shared: Arc<HashMap<String, SharedOutput<EchoOut>>>, input: EchoIn| async move {
                    shared
                        .get(&input.text)
                        .cloned()
                        .ok_or_else(|| mcpwire_server::ToolError::execution("unknown text"))
                }),
        )
        .build()
        .expect("server builds");
    let h = spawn_http(server).await;
    let result = |r: &Reply| r.response()["result"].to_string();
    for (round, text) in texts.iter().chain(&texts).enumerate() {
        let args = json!({ "text": text });
        let plain = h.modern(&call(1, "plain-out", args.clone())).await;
        let shared = h.modern(&call(1, "shared-out", args.clone())).await;
        assert_eq!(plain.raw, shared.raw, "modern, round {round}");
        assert!(!plain.raw.contains('\u{202e}'), "sanitised: {}", plain.raw);
        assert!(!is_error_result(plain.response()), "{}", plain.raw);
        for version in ["2025-11-25", "2025-03-26"] {
            let (sid, _) = h.initialize(Some(version), json!({})).await;
            let legacy =
                |name: &str| raw_req(2, "tools/call", json!({ "name": name, "arguments": args }));
            let plain = h
                .legacy(&legacy("plain-out"), Some(&sid), Some(version))
                .await;
            let shared = h
                .legacy(&legacy("shared-out"), Some(&sid), Some(version))
                .await;
            assert_eq!(result(&plain), result(&shared), "{version}, round {round}");
            let structured = plain.response()["result"]
                .get("structuredContent")
                .is_some();
            assert_eq!(structured, version == "2025-11-25", "{}", plain.raw);
        }
    }
    // The listed schemas are the same too.
    let r = h.modern(&req(3, "tools/list", json!({}))).await;
    let tools = r.response()["result"]["tools"]
        .as_array()
        .expect("tools")
        .clone();
    let schema =
        |name: &str| tools.iter().find(|t| t["name"] == name).expect(name)["outputSchema"].clone();
    assert_eq!(schema("plain-out"), schema("shared-out"));
}
