//! The 2026-07-28 wire over Streamable HTTP: envelope and header
//! validation, status codes, results, paging, MRTR, subscriptions,
//! progress, logging and cancellation on disconnect.

use crate::common;

use std::time::Duration;

use common::*;
use mcpwire_server::transport::http::HttpConfig;
use mcpwire_server::{Prompt, PromptOutcome, ServerOptions};
use serde_json::{Value, json};

fn assert_error(r: &Reply, status: u16, code: i64) {
    assert_eq!(r.status, status, "HTTP status; body: {}", r.raw);
    assert_eq!(
        error_code(r.response()),
        Some(code),
        "JSON-RPC code; body: {}",
        r.raw
    );
    assert!(
        r.response()["error"]["message"].is_string(),
        "error.message: {}",
        r.raw
    );
}

// ------------------------------------------------------------ _meta

#[tokio::test(flavor = "multi_thread")]
async fn missing_meta_is_invalid_params_with_400() {
    let h = spawn_http(server()).await;
    // No _meta at all.
    let body = raw_req(1, "tools/list", json!({}));
    let r = h.modern(&body).await;
    assert_error(&r, 400, -32602);
    assert_eq!(r.response()["id"], 1, "errors echo the request id");

    // _meta without protocolVersion.
    let body = raw_req(2, "tools/list", json!({ "_meta": { META_CAPS: {} } }));
    let r = h.modern(&body).await;
    assert_error(&r, 400, -32602);
    assert_eq!(r.response()["id"], 2);

    // _meta without clientCapabilities.
    let body = raw_req(
        "three",
        "tools/list",
        json!({ "_meta": { META_VERSION: V } }),
    );
    let r = h.modern(&body).await;
    assert_error(&r, 400, -32602);
    assert_eq!(r.response()["id"], "three");
}

#[tokio::test(flavor = "multi_thread")]
async fn unsupported_version_is_32022_with_supported_and_requested() {
    let h = spawn_http(server()).await;
    let body = raw_req(
        7,
        "tools/list",
        json!({ "_meta": { META_VERSION: "v999.0.0", META_CAPS: {} } }),
    );
    let r = h.modern(&body).await;
    assert_error(&r, 400, -32022);
    let data = &r.response()["error"]["data"];
    let supported = data["supported"].as_array().expect("data.supported array");
    assert!(supported.iter().all(Value::is_string));
    assert!(supported.contains(&json!(V)), "{data}");
    assert_eq!(data["requested"], "v999.0.0");
    assert_eq!(r.response()["id"], 7);

    // A legacy revision in modern _meta (no initialize) is also unsupported here.
    let body = raw_req(
        8,
        "tools/list",
        json!({ "_meta": { META_VERSION: "2025-11-25", META_CAPS: {} } }),
    );
    let r = h.modern(&body).await;
    assert_error(&r, 400, -32022);
    assert_eq!(r.response()["error"]["data"]["requested"], "2025-11-25");
}

// ------------------------------------------------------------ headers

#[tokio::test(flavor = "multi_thread")]
async fn header_mismatches_are_32020_with_400() {
    let h = spawn_http(server()).await;
    let list = req(1, "tools/list", json!({}));

    // Mcp-Method differs from the body.
    let r = h
        .modern_plus(&list, &[("Mcp-Method", "prompts/list")])
        .await;
    assert_error(&r, 400, -32020);
    assert_eq!(r.response()["id"], 1);

    // Values are case-sensitive.
    let r = h.modern_plus(&list, &[("Mcp-Method", "TOOLS/LIST")]).await;
    assert_error(&r, 400, -32020);

    // Mcp-Method missing.
    let headers: Vec<_> = modern_headers(&list)
        .into_iter()
        .filter(|(k, _)| k != "Mcp-Method")
        .collect();
    let r = h.post_with(&list, &headers).await;
    assert_error(&r, 400, -32020);

    // MCP-Protocol-Version differs from _meta.
    let r = h
        .modern_plus(&list, &[("MCP-Protocol-Version", "2025-11-25")])
        .await;
    assert_error(&r, 400, -32020);

    // tools/call: Mcp-Name missing, then mismatched.
    let c = call(2, "echo", json!({ "text": "hi" }));
    let headers: Vec<_> = modern_headers(&c)
        .into_iter()
        .filter(|(k, _)| k != "Mcp-Name")
        .collect();
    let r = h.post_with(&c, &headers).await;
    assert_error(&r, 400, -32020);
    let r = h.modern_plus(&c, &[("Mcp-Name", "add")]).await;
    assert_error(&r, 400, -32020);
    assert_eq!(r.response()["id"], 2);

    // And the well-formed request still works.
    let r = h.modern(&c).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(!is_error_result(r.response()), "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn header_names_are_case_insensitive_and_values_trimmed() {
    let h = spawn_http(server()).await;
    let body = call(5, "echo", json!({ "text": "hi" })).to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncOnTeNt-TyPe: application/json\r\n\
         aCCept: application/json, text/event-stream\r\nmcp-PROTOCOL-version: {V}\r\n\
         MCP-METHOD: tools/call\r\nmCp-NaMe:  echo \r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let (status, text) = raw_http(h.addr, &request).await;
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(text.trim()).expect("JSON body");
    assert_eq!(v["id"], 5);
    assert!(v["result"]["structuredContent"].is_object(), "{v}");

    // Whitespace around Mcp-Name via the ordinary client too.
    let c = call(6, "echo", json!({ "text": "hi" }));
    let r = h.modern_plus(&c, &[("Mcp-Name", "  echo ")]).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(r.response()["result"].is_object(), "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_param_headers_follow_x_mcp_header() {
    let h = spawn_http(server()).await;
    let c = call(1, "region", json!({ "region": "Hello", "count": 42 }));

    // Plain values.
    let r = h
        .modern_plus(
            &c,
            &[("Mcp-Param-Region", "Hello"), ("Mcp-Param-Count", "42")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(!is_error_result(r.response()), "{}", r.raw);

    // Base64 sentinel for "Hello", integer compared numerically.
    let r = h
        .modern_plus(
            &c,
            &[
                ("Mcp-Param-Region", "=?base64?SGVsbG8=?="),
                ("Mcp-Param-Count", "42.0"),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(r.response()["result"].is_object(), "{}", r.raw);

    // Bad padding and bad characters inside the sentinel.
    for bad in ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?="] {
        let r = h
            .modern_plus(&c, &[("Mcp-Param-Region", bad), ("Mcp-Param-Count", "42")])
            .await;
        assert_error(&r, 400, -32020);
    }

    // Wrong value.
    let r = h
        .modern_plus(
            &c,
            &[("Mcp-Param-Region", "Bye"), ("Mcp-Param-Count", "42")],
        )
        .await;
    assert_error(&r, 400, -32020);

    // Missing header for a present argument.
    let r = h.modern_plus(&c, &[("Mcp-Param-Count", "42")]).await;
    assert_error(&r, 400, -32020);

    // Null or absent arguments need no header (a null string is then a
    // schema violation reported as a tool error, not a header error).
    let c = call(2, "region", json!({ "region": null }));
    let r = h.modern(&c).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(r.response()["result"].is_object(), "{}", r.raw);
    let c = call(3, "region", json!({}));
    let r = h.modern(&c).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(!is_error_result(r.response()), "{}", r.raw);
}

// ------------------------------------------------------------ methods

#[tokio::test(flavor = "multi_thread")]
async fn removed_methods_are_404_method_not_found() {
    let h = spawn_http(server()).await;
    let cases = [
        req(
            1,
            "initialize",
            json!({ "protocolVersion": V, "capabilities": {}, "clientInfo": { "name": "x", "version": "1" } }),
        ),
        req(2, "ping", json!({})),
        req(3, "logging/setLevel", json!({ "level": "info" })),
        req(4, "resources/subscribe", json!({ "uri": "file:///x" })),
        req(5, "no/such/method", json!({})),
    ];
    for body in cases {
        let r = h.modern(&body).await;
        assert_error(&r, 404, -32601);
        assert_eq!(r.response()["id"], body["id"], "{}", r.raw);
        assert!(r.session_id.is_none(), "modern wire mints no session ids");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn results_carry_result_type_and_server_info() {
    let h = spawn_http(server()).await;
    for body in [
        req(1, "server/discover", json!({})),
        req(2, "tools/list", json!({})),
        call(3, "echo", json!({ "text": "x" })),
        call(4, "fail", json!({})),
    ] {
        let r = h.modern(&body).await;
        assert_eq!(r.status, 200, "{}", r.raw);
        assert_eq!(r.content_type, "application/json");
        let res = &r.response()["result"];
        assert_eq!(r.response()["id"], body["id"]);
        assert_eq!(res["resultType"], "complete", "{}", r.raw);
        let info = &res["_meta"][META_SERVER_INFO];
        assert_eq!(info["name"], "test-server", "{}", r.raw);
        assert_eq!(info["version"], "1.2.3", "{}", r.raw);
    }
    let r = h.modern(&req(9, "server/discover", json!({}))).await;
    let res = &r.response()["result"];
    assert!(
        res["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!(V)))
    );
    assert!(res["capabilities"]["tools"].is_object());
    assert!(res["ttlMs"].as_u64().is_some());
    assert!(matches!(
        res["cacheScope"].as_str(),
        Some("public" | "private")
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_list_is_deterministic() {
    let h = spawn_http(server()).await;
    let names = |r: &Reply| -> Vec<String> {
        r.response()["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().expect("name").to_owned())
            .collect()
    };
    let a = names(&h.modern(&req(1, "tools/list", json!({}))).await);
    let b = names(&h.modern(&req(2, "tools/list", json!({}))).await);
    assert_eq!(a, b);
    assert_eq!(a.len(), 10);
    let r = h.modern(&req(3, "tools/list", json!({}))).await;
    let res = &r.response()["result"];
    assert!(res.get("nextCursor").is_none(), "single page: {res}");
    for t in res["tools"].as_array().expect("tools") {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_list_pages_with_cursors() {
    let mut b = mcpwire_server::Server::builder("pager", "0.1").options(ServerOptions {
        page_size: 2,
        ..ServerOptions::default()
    });
    for i in 1..=5 {
        b = b.tool(plain_tool(&format!("t{i}")));
    }
    let h = spawn_http(b.build().expect("builds")).await;

    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    let mut first_cursor = None;
    let mut scopes = Vec::new();
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let r = h.modern(&req(pages, "tools/list", params)).await;
        assert_eq!(r.status, 200, "{}", r.raw);
        let res = r.response()["result"].clone();
        assert!(
            res["ttlMs"].as_u64().is_some(),
            "ttlMs on every page: {res}"
        );
        scopes.push(res["cacheScope"].clone());
        assert_eq!(res["resultType"], "complete");
        for t in res["tools"].as_array().expect("tools") {
            names.push(t["name"].as_str().expect("name").to_owned());
        }
        pages += 1;
        match res.get("nextCursor") {
            Some(c) => {
                let c = c.as_str().expect("nextCursor is a string").to_owned();
                assert!(!c.is_empty(), "never an empty nextCursor");
                first_cursor.get_or_insert(c.clone());
                cursor = Some(c);
            }
            None => break,
        }
        assert!(pages < 10, "paging terminates");
    }
    assert_eq!(pages, 3);
    assert_eq!(names, ["t1", "t2", "t3", "t4", "t5"]);
    assert!(
        scopes.iter().all(|s| s == &scopes[0] && s.is_string()),
        "{scopes:?}"
    );

    // A cursor this server never issued.
    let r = h
        .modern(&req(
            10,
            "tools/list",
            json!({ "cursor": "bm90LWEtY3Vyc29y" }),
        ))
        .await;
    assert_eq!(error_code(r.response()), Some(-32602), "{}", r.raw);
    assert_eq!(r.response()["id"], 10);

    // A cursor from before the tool set changed.
    let stale = first_cursor.expect("a cursor");
    h.server.add_tool(plain_tool("t6")).expect("add");
    let r = h
        .modern(&req(11, "tools/list", json!({ "cursor": stale })))
        .await;
    assert_eq!(error_code(r.response()), Some(-32602), "{}", r.raw);
}

// ------------------------------------------------------------ HTTP methods

#[tokio::test(flavor = "multi_thread")]
async fn notifications_are_accepted_and_get_delete_are_405() {
    let h = spawn_http(server()).await;
    let n = json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": { "requestId": 99, "_meta": meta_with(json!({})) }
    });
    let r = h
        .post_with(
            &n,
            &[
                ("MCP-Protocol-Version".into(), V.into()),
                ("Mcp-Method".into(), "notifications/cancelled".into()),
            ],
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.raw);
    assert!(r.raw.is_empty(), "no body for 202: {}", r.raw);

    let get = h
        .client
        .get(&h.url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("GET");
    assert_eq!(get.status().as_u16(), 405);
    let del = h.client.delete(&h.url).send().await.expect("DELETE");
    assert_eq!(del.status().as_u16(), 405);
}

// ------------------------------------------------------------ progress, logging

#[tokio::test(flavor = "multi_thread")]
async fn progress_streams_over_sse_only_with_a_token() {
    let h = spawn_http(server()).await;
    let mut body = call(1, "progress", json!({}));
    body["params"]["_meta"]["progressToken"] = json!("p-1");
    let r = h.modern(&body).await;
    assert_eq!(r.status, 200);
    assert!(r.is_sse(), "SSE with a progress token: {}", r.content_type);
    let before = r.before_response();
    assert!(!before.is_empty(), "at least one notification: {}", r.raw);
    let mut last = f64::NEG_INFINITY;
    for n in before {
        assert_eq!(n["method"], "notifications/progress", "{n}");
        assert_eq!(n["params"]["progressToken"], "p-1");
        let p = n["params"]["progress"].as_f64().expect("progress");
        assert!(p > last, "progress increases: {}", r.raw);
        last = p;
    }
    let resp = r.response();
    assert_eq!(resp["id"], 1);
    assert_eq!(text_of(resp), "done");
    assert_eq!(resp["result"]["resultType"], "complete", "SSE results too");
    assert!(resp["result"]["_meta"][META_SERVER_INFO].is_object());
    assert_eq!(
        r.headers
            .get("x-accel-buffering")
            .and_then(|v| v.to_str().ok()),
        Some("no")
    );

    let r = h.modern(&call(2, "progress", json!({}))).await;
    assert_eq!(r.content_type, "application/json", "no token → plain JSON");
    assert_eq!(r.messages.len(), 1);
    assert_eq!(text_of(r.response()), "done");
}

#[tokio::test(flavor = "multi_thread")]
async fn logging_requires_per_request_opt_in() {
    let h = spawn_http(server()).await;
    let r = h.modern(&call(1, "log", json!({}))).await;
    assert_eq!(r.content_type, "application/json", "no logLevel → no logs");
    assert_eq!(text_of(r.response()), "logged");

    let mut body = call(2, "log", json!({}));
    body["params"]["_meta"][META_LOG] = json!("warning");
    let r = h.modern(&body).await;
    assert!(r.is_sse(), "{}", r.raw);
    let levels: Vec<&str> = r
        .before_response()
        .iter()
        .map(|n| {
            assert_eq!(n["method"], "notifications/message", "{n}");
            n["params"]["level"].as_str().expect("level")
        })
        .collect();
    assert_eq!(levels, ["warning", "error"]);
    assert_eq!(text_of(r.response()), "logged");

    let mut body = call(3, "log", json!({}));
    body["params"]["_meta"][META_LOG] = json!("loud");
    let r = h.modern(&body).await;
    assert_eq!(error_code(r.response()), Some(-32602), "{}", r.raw);
    assert_eq!(r.response()["id"], 3);
}

// ------------------------------------------------------------ cancellation

#[tokio::test(flavor = "multi_thread")]
async fn dropping_the_sse_response_cancels_the_handler() {
    let (tool, fired, flag) = cancel_probe("probe", true);
    let s = mcpwire_server::Server::builder("c", "1")
        .tool(tool)
        .build()
        .expect("builds");
    let h = spawn_http(s).await;
    let mut body = call(1, "probe", json!({}));
    body["params"]["_meta"]["progressToken"] = json!(1);
    let mut stream = h.open_stream(&body, &modern_headers(&body)).await;
    let first = stream.expect_next().await;
    assert_eq!(first["method"], "notifications/progress");
    assert!(!flag.load(std::sync::atomic::Ordering::SeqCst));
    drop(stream);
    tokio::time::timeout(Duration::from_secs(5), fired)
        .await
        .expect("ctx.cancelled() fires after the client disconnects")
        .expect("signal");
}

#[tokio::test(flavor = "multi_thread")]
async fn disconnecting_before_any_output_cancels_the_handler() {
    let (tool, fired, _flag) = cancel_probe("probe", false);
    let s = mcpwire_server::Server::builder("c", "1")
        .tool(tool)
        .build()
        .expect("builds");
    let h = spawn_http(s).await;
    let body = call(1, "probe", json!({}));
    let pending = h.post_builder(&body, &modern_headers(&body)).send();
    // Give the request time to reach the handler, then hang up.
    let _ = tokio::time::timeout(Duration::from_millis(300), pending).await;
    tokio::time::timeout(Duration::from_secs(5), fired)
        .await
        .expect("ctx.cancelled() fires after the client disconnects")
        .expect("signal");
}

// ------------------------------------------------------------ MRTR

#[tokio::test(flavor = "multi_thread")]
async fn input_required_round_trip() {
    let h = spawn_http(server()).await;
    let caps = json!({ "elicitation": {} });
    let mut first = call(1, "ask", json!({ "topic": "deploy" }));
    first["params"]["_meta"] = meta_with(caps.clone());
    let r = h.modern(&first).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let res = &r.response()["result"];
    assert_eq!(res["resultType"], "input_required", "{}", r.raw);
    let ir = &res["inputRequests"]["confirm"];
    assert_eq!(ir["method"], "elicitation/create", "{res}");
    assert_eq!(ir["params"]["message"], "Proceed?");
    assert!(
        ir.get("id").is_none(),
        "input requests carry no JSON-RPC id"
    );
    let state = res["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();
    assert!(
        res.get("ttlMs").is_none(),
        "input_required is not cacheable"
    );

    let answer = json!({ "action": "accept", "content": { "ok": true } });
    let retry = |id: i64, args: Value, state: Value, responses: Value| {
        let mut b = call(id, "ask", args);
        b["params"]["_meta"] = meta_with(caps.clone());
        b["params"]["inputResponses"] = responses;
        b["params"]["requestState"] = state;
        b
    };

    let r = h
        .modern(&retry(
            2,
            json!({ "topic": "deploy" }),
            json!(state),
            json!({ "confirm": answer }),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let res = &r.response()["result"];
    assert_eq!(res["resultType"], "complete", "{}", r.raw);
    let seen: Value = serde_json::from_str(&text_of(r.response())).expect("json text");
    assert_eq!(seen["answer"], answer);
    assert_eq!(seen["state"], json!({ "step": 1 }), "ctx.request_state()");
    assert_eq!(seen["topic"], "deploy");

    // Tampered state.
    let r = h
        .modern(&retry(
            3,
            json!({ "topic": "deploy" }),
            json!(format!("{state}-TAMPERED")),
            json!({ "confirm": answer }),
        ))
        .await;
    assert!(r.response()["error"].is_object(), "{}", r.raw);
    assert_eq!(r.response()["id"], 3);

    // State replayed with different arguments.
    let r = h
        .modern(&retry(
            4,
            json!({ "topic": "delete-everything" }),
            json!(state),
            json!({ "confirm": answer }),
        ))
        .await;
    assert!(r.response()["error"].is_object(), "{}", r.raw);

    // inputResponses: null.
    let r = h
        .modern(&retry(
            5,
            json!({ "topic": "deploy" }),
            json!(state),
            Value::Null,
        ))
        .await;
    assert!(r.response()["error"].is_object(), "{}", r.raw);
    assert_eq!(error_code(r.response()), Some(-32602), "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn input_request_needing_an_undeclared_capability_is_32021() {
    let h = spawn_http(server()).await;
    let r = h.modern(&call(1, "sample", json!({}))).await;
    assert_error(&r, 400, -32021);
    assert_eq!(
        r.response()["error"]["data"]["requiredCapabilities"],
        json!({ "sampling": {} })
    );
    assert_eq!(r.response()["id"], 1);

    // Declared on this request → input_required.
    let mut body = call(2, "sample", json!({}));
    body["params"]["_meta"] = meta_with(json!({ "sampling": {} }));
    let r = h.modern(&body).await;
    assert_eq!(
        r.response()["result"]["resultType"],
        "input_required",
        "{}",
        r.raw
    );
}

// ------------------------------------------------------------ subscriptions/listen

fn listen(id: Value, notifications: Value) -> Value {
    req(
        id,
        "subscriptions/listen",
        json!({ "notifications": notifications }),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn listen_acknowledges_then_forwards_tool_changes_and_ends_on_shutdown() {
    let h = spawn_http(server()).await;
    let body = listen(json!("sub-1"), json!({ "toolsListChanged": true }));
    let mut s = h.open_stream(&body, &modern_headers(&body)).await;
    assert_eq!(s.status, 200);
    assert!(s.content_type.starts_with("text/event-stream"));
    let ack = s.expect_next().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(ack["params"]["_meta"][META_SUB], "sub-1");
    assert!(ack.get("id").is_none());

    h.server.add_tool(plain_tool("late")).expect("add");
    let n = s.expect_next().await;
    assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");
    assert_eq!(n["params"]["_meta"][META_SUB], "sub-1");

    h.server.shutdown();
    let last = s.expect_next().await;
    assert_eq!(last["id"], "sub-1", "{last}");
    assert_eq!(last["result"]["resultType"], "complete");
    assert!(s.next().await.is_none(), "stream ends after the result");
}

#[tokio::test(flavor = "multi_thread")]
async fn listen_keeps_numeric_ids_and_honours_filters() {
    let s = builder()
        .prompt(Prompt::new("p", "A prompt.", vec![], |_c, _a| async {
            Ok(PromptOutcome::Complete {
                description: None,
                messages: vec![],
            })
        }))
        .build()
        .expect("builds");
    let h = spawn_http(s).await;
    let body = listen(json!(42), json!({ "promptsListChanged": true }));
    let mut s = h.open_stream(&body, &modern_headers(&body)).await;
    let ack = s.expect_next().await;
    assert_eq!(ack["params"]["_meta"][META_SUB], 42, "keeps the id's type");
    assert!(
        ack["params"]["notifications"]
            .get("toolsListChanged")
            .is_none()
    );

    h.server.add_tool(plain_tool("late")).expect("add");
    match s.next_within(Duration::from_millis(300)).await {
        Err(_) => {}
        Ok(m) => panic!("prompts-only listener got {m:?}"),
    }
    h.server
        .add_prompt(Prompt::new("q", "Another.", vec![], |_c, _a| async {
            Ok(PromptOutcome::Complete {
                description: None,
                messages: vec![],
            })
        }));
    let n = s.expect_next().await;
    assert_eq!(n["method"], "notifications/prompts/list_changed", "{n}");
    assert_eq!(n["params"]["_meta"][META_SUB], 42);
    h.server.shutdown();
    let last = s.expect_next().await;
    assert_eq!(last["id"], 42, "{last}");
    assert!(last.get("result").is_some());
}

fn mirrored_tool() -> mcpwire_server::Tool {
    mcpwire_server::Tool::builder("mirrored")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "text": { "type": "string", "x-mcp-header": "Text" },
                "flag": { "type": "boolean", "x-mcp-header": "Flag" },
                "scope": {
                    "type": "object",
                    "properties": { "tenant": { "type": "string", "x-mcp-header": "TenantId" } }
                }
            }
        }))
        .raw_handler(|_ctx, args| async move {
            Ok(mcpwire_server::CallToolResult::text(Value::Object(args).to_string()).into())
        })
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_param_encoding_examples_from_the_spec() {
    let s = mcpwire_server::Server::builder("m", "1")
        .tool(mirrored_tool())
        .build()
        .expect("builds");
    let h = spawn_http(s).await;
    let cases = [
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("us-west1", "us-west1"),
    ];
    for (i, (value, header)) in cases.into_iter().enumerate() {
        let c = call(i as u64, "mirrored", json!({ "text": value }));
        let r = h.modern_plus(&c, &[("Mcp-Param-Text", header)]).await;
        assert_eq!(r.status, 200, "{value:?}: {}", r.raw);
        assert!(!is_error_result(r.response()), "{value:?}: {}", r.raw);
    }
    // " padded " sent plain arrives trimmed, so it no longer matches.
    let c = call(10, "mirrored", json!({ "text": " padded " }));
    let r = h.modern_plus(&c, &[("Mcp-Param-Text", " padded ")]).await;
    assert_error(&r, 400, -32020);

    // Booleans are lowercase true/false.
    let c = call(11, "mirrored", json!({ "flag": true }));
    let r = h.modern_plus(&c, &[("Mcp-Param-Flag", "true")]).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let r = h.modern_plus(&c, &[("Mcp-Param-Flag", "True")]).await;
    assert_error(&r, 400, -32020);
    let r = h.modern_plus(&c, &[("Mcp-Param-Flag", "false")]).await;
    assert_error(&r, 400, -32020);

    // Nested properties are mirrored too.
    let c = call(12, "mirrored", json!({ "scope": { "tenant": "acme" } }));
    let r = h.modern(&c).await;
    assert_error(&r, 400, -32020);
    let r = h.modern_plus(&c, &[("mcp-param-tenantid", "acme")]).await;
    assert_eq!(r.status, 200, "{}", r.raw);

    // Unrecognized Mcp-Param-* headers are ignored.
    let c = call(13, "mirrored", json!({}));
    let r = h
        .modern_plus(&c, &[("Mcp-Param-Unknown", "whatever")])
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn unadvertised_capabilities_are_404() {
    // The standard server has no prompts, resources or completions.
    let h = spawn_http(server()).await;
    for (id, method, params) in [
        (1, "prompts/list", json!({})),
        (2, "resources/list", json!({})),
        (
            3,
            "completion/complete",
            json!({ "ref": { "type": "ref/prompt", "name": "p" }, "argument": { "name": "a", "value": "" } }),
        ),
    ] {
        let r = h.modern(&req(id, method, params)).await;
        assert_error(&r, 404, -32601);
    }
    let r = h.modern(&req(4, "subscriptions/listen", json!({}))).await;
    assert_eq!(
        error_code(r.response()),
        Some(-32602),
        "listen without notifications: {}",
        r.raw
    );
}

/// Opens `subscriptions/listen` streams until one is refused; returns the
/// open ones and the refusal.
async fn listen_until_refused(h: &Http, body: &Value) -> (Vec<SseStream>, Reply) {
    let mut open = Vec::new();
    loop {
        let mut s = h.open_stream(body, &modern_headers(body)).await;
        if s.status != 200 {
            return (open, h.modern(body).await);
        }
        s.expect_next().await;
        open.push(s);
        assert!(open.len() <= 10, "no stream was refused");
    }
}

// (`spawn_http` serves through axum without client addresses: every
// request of these tests is the same caller.)
#[tokio::test(flavor = "multi_thread")]
async fn long_lived_streams_are_bounded_per_caller_and_in_total() {
    let body = listen(json!("sub"), json!({ "toolsListChanged": true }));
    let per_caller = HttpConfig {
        max_streams: 5,
        max_streams_per_caller: 2,
        ..HttpConfig::default()
    };
    let h = spawn_http_with(server(), per_caller).await;
    let (mut open, r) = listen_until_refused(&h, &body).await;
    assert_eq!(open.len(), 2);
    assert_eq!(r.status, 429, "{}", r.raw);
    assert_eq!(r.response()["id"], json!("sub"), "{}", r.raw);
    assert!(r.raw.contains("from this client: at most 2"), "{}", r.raw);
    // Requests are still served, and a closed stream frees its slot.
    h.assert_alive().await;
    drop(open.pop());
    let mut again = None;
    for _ in 0..100 {
        let s = h.open_stream(&body, &modern_headers(&body)).await;
        if s.status == 200 {
            again = Some(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(again.is_some(), "the slot of a closed stream was not freed");

    let total = HttpConfig {
        max_streams: 3,
        max_streams_per_caller: 16,
        ..HttpConfig::default()
    };
    let h = spawn_http_with(server(), total).await;
    let (open, r) = listen_until_refused(&h, &body).await;
    assert_eq!(open.len(), 3);
    assert_eq!(r.status, 429, "{}", r.raw);
    assert!(r.raw.contains("at most 3 open streams"), "{}", r.raw);
}
