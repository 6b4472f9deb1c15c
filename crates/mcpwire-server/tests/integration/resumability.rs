//! SSE resumability of 2025-11-25 sessions over Streamable HTTP (SEP-1699):
//! priming events, event ids, server-closed connections, and resuming with
//! `GET` + `Last-Event-ID`. Other revisions and the 2026 wire: unchanged.

use crate::common;

use std::time::Duration;

use common::*;
use mcpwire_server::{CallToolResult, RequestContext, Server, Tool};
use serde_json::{Value, json};

const R: &str = "2025-11-25";

/// One parsed SSE event.
#[derive(Debug, Clone)]
struct Ev {
    id: Option<String>,
    retry: Option<String>,
    /// `None` when the event had no `data:` line.
    data: Option<String>,
}

impl Ev {
    fn json(&self) -> Value {
        serde_json::from_str(self.data.as_deref().expect("data")).expect("JSON data")
    }
}

fn parse(raw: &str) -> Vec<Ev> {
    let raw = raw.replace("\r\n", "\n");
    let mut out = Vec::new();
    for block in raw.split("\n\n") {
        let mut ev = Ev {
            id: None,
            retry: None,
            data: None,
        };
        let mut any = false;
        for line in block.lines() {
            if line.starts_with(':') || line.is_empty() {
                continue;
            }
            let (k, v) = line.split_once(':').unwrap_or((line, ""));
            let v = v.strip_prefix(' ').unwrap_or(v).to_owned();
            any = true;
            match k {
                "id" => ev.id = Some(v),
                "retry" => ev.retry = Some(v),
                "data" => {
                    ev.data = Some(match ev.data.take() {
                        Some(d) => format!("{d}\n{v}"),
                        None => v,
                    })
                }
                _ => {}
            }
        }
        if any {
            out.push(ev);
        }
    }
    out
}

/// Closes its connection after 50 ms (after one progress notification when
/// asked for progress), reports progress 2, answers "polled" after 300 ms.
fn poll_tool() -> Tool {
    Tool::builder("poll").raw_handler(|ctx: RequestContext, _args| async move {
        ctx.progress(1.0, None, None).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let closed = ctx.close_sse_stream();
        tokio::time::sleep(Duration::from_millis(300)).await;
        ctx.progress(2.0, None, None).await;
        Ok(CallToolResult::text(format!("polled closed={closed}")).into())
    })
}

fn test_server() -> Server {
    builder().tool(poll_tool()).build().expect("server builds")
}

fn call_legacy(id: i64, name: &str, progress: bool) -> Value {
    let mut params = json!({ "name": name, "arguments": {} });
    if progress {
        params["_meta"] = json!({ "progressToken": format!("t{id}") });
    }
    raw_req(id, "tools/call", params)
}

fn session_headers(sid: &str, version: &str) -> Vec<(String, String)> {
    vec![
        ("Mcp-Session-Id".to_owned(), sid.to_owned()),
        ("MCP-Protocol-Version".to_owned(), version.to_owned()),
    ]
}

/// POSTs and reads the whole body (the server ends it).
async fn post_raw(h: &Http, body: &Value, headers: &[(String, String)]) -> (String, String) {
    let resp = tokio::time::timeout(WAIT, h.post_builder(body, headers).send())
        .await
        .expect("reply in time")
        .expect("sent");
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let text = tokio::time::timeout(WAIT, resp.text())
        .await
        .expect("body in time")
        .expect("body");
    (ct, text)
}

/// GET with `Last-Event-ID`; (status, body).
async fn resume(h: &Http, sid: &str, last: &str) -> (u16, String) {
    let resp = tokio::time::timeout(
        WAIT,
        h.client
            .get(&h.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", R)
            .header("last-event-id", last)
            .send(),
    )
    .await
    .expect("reply in time")
    .expect("sent");
    let status = resp.status().as_u16();
    let text = tokio::time::timeout(WAIT, resp.text())
        .await
        .expect("body in time")
        .expect("body");
    (status, text)
}

fn stream_of(id: &str) -> &str {
    id.split_once('_').expect("id encodes the stream").0
}

#[tokio::test(flavor = "multi_thread")]
async fn priming_event_then_ids_per_stream() {
    let h = spawn_http(test_server()).await;
    let (sid, _) = h.initialize(Some(R), json!({})).await;
    let hs = session_headers(&sid, R);
    let (ct, raw) = post_raw(&h, &call_legacy(1, "progress", true), &hs).await;
    assert!(ct.starts_with("text/event-stream"), "{ct}: {raw}");
    let evs = parse(&raw);
    let prime = &evs[0];
    assert!(prime.id.is_some(), "{raw}");
    assert!(prime.retry.is_some(), "{raw}");
    assert_eq!(prime.data.as_deref(), Some(""), "{raw}");
    let rest = &evs[1..];
    assert_eq!(rest.len(), 4, "3 progress + response: {raw}");
    assert_eq!(rest[3].json()["id"], 1);
    assert_eq!(text_of(&rest[3].json()), "done");
    let ids: Vec<&str> = evs.iter().map(|e| e.id.as_deref().expect("id")).collect();
    let stream_a = stream_of(ids[0]);
    assert!(ids.iter().all(|i| stream_of(i) == stream_a), "{ids:?}");

    // A second stream: another stream identity, no id reused.
    let (_, raw2) = post_raw(&h, &call_legacy(2, "progress", true), &hs).await;
    let evs2 = parse(&raw2);
    let ids2: Vec<&str> = evs2.iter().map(|e| e.id.as_deref().expect("id")).collect();
    assert_eq!(evs2[0].data.as_deref(), Some(""));
    let stream_b = stream_of(ids2[0]);
    assert_ne!(stream_a, stream_b);
    let mut all: Vec<&str> = ids.iter().chain(ids2.iter()).copied().collect();
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "ids unique in the session");

    // Nothing streamed: still plain JSON.
    let r = h
        .legacy(&call_legacy(3, "echo", false), Some(&sid), Some(R))
        .await;
    assert!(!r.is_sse(), "{}", r.raw);
    assert!(r.response()["result"].is_object(), "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn server_closes_and_get_resumes_with_the_result() {
    let h = spawn_http(test_server()).await;
    let (sid, _) = h.initialize(Some(R), json!({})).await;
    let hs = session_headers(&sid, R);
    // Without progress: the handler closes before sending anything.
    let (ct, raw) = post_raw(&h, &call_legacy(7, "poll", false), &hs).await;
    assert!(ct.starts_with("text/event-stream"), "{ct}: {raw}");
    let evs = parse(&raw);
    assert_eq!(evs.len(), 1, "only the priming event: {raw}");
    let prime = evs[0].id.clone().expect("priming id");
    assert!(evs[0].retry.is_some());
    let (status, raw) = resume(&h, &sid, &prime).await;
    assert_eq!(status, 200, "{raw}");
    let evs = parse(&raw);
    let last = evs.last().expect("events").json();
    assert_eq!(last["id"], 7, "{raw}");
    assert_eq!(text_of(&last), "polled closed=true");
    assert!(
        evs.iter()
            .all(|e| stream_of(e.id.as_deref().unwrap()) == stream_of(&prime))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_replays_only_later_events_of_that_stream() {
    let h = spawn_http(test_server()).await;
    let (sid, _) = h.initialize(Some(R), json!({})).await;
    let hs = session_headers(&sid, R);
    // Two concurrent polls, each closed after its first progress.
    let (ca, cb) = (call_legacy(10, "poll", true), call_legacy(11, "poll", true));
    let (a, b) = tokio::join!(post_raw(&h, &ca, &hs), post_raw(&h, &cb, &hs));
    let (ea, eb) = (parse(&a.1), parse(&b.1));
    assert_eq!(ea.len(), 2, "priming + progress 1: {}", a.1);
    assert_eq!(eb.len(), 2, "priming + progress 1: {}", b.1);
    assert_eq!(ea[1].json()["params"]["progress"], json!(1.0));
    let a_progress = ea[1].id.clone().unwrap();
    let b_prime = eb[0].id.clone().unwrap();
    assert_ne!(stream_of(&a_progress), stream_of(&b_prime));

    // A after its progress 1: progress 2 and A's result, nothing of B.
    let (status, raw) = resume(&h, &sid, &a_progress).await;
    assert_eq!(status, 200, "{raw}");
    let evs = parse(&raw);
    assert_eq!(evs.len(), 2, "{raw}");
    assert_eq!(evs[0].json()["params"]["progressToken"], "t10");
    assert_eq!(evs[0].json()["params"]["progress"], json!(2.0));
    assert_eq!(evs[1].json()["id"], 10);

    // B from its priming event: all of B, nothing of A.
    let (status, raw) = resume(&h, &sid, &b_prime).await;
    assert_eq!(status, 200, "{raw}");
    let evs = parse(&raw);
    let msgs: Vec<Value> = evs.iter().map(Ev::json).collect();
    assert_eq!(msgs.len(), 3, "{raw}");
    assert!(
        msgs[..2]
            .iter()
            .all(|m| m["params"]["progressToken"] == "t11")
    );
    assert_eq!(msgs[2]["id"], 11);

    // Unknown ids, and ids of another session: 400, the session lives on.
    for bad in ["999_0", "nonsense", "1_999"] {
        let (status, _) = resume(&h, &sid, bad).await;
        assert_eq!(status, 400, "{bad}");
    }
    let (other, _) = h.initialize(Some(R), json!({})).await;
    let (status, _) = resume(&h, &other, &b_prime).await;
    assert_eq!(status, 400);
    let r = h
        .legacy(&call_legacy(12, "echo", false), Some(&sid), Some(R))
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_priming_before_2025_11_25_nor_on_the_modern_wire() {
    let h = spawn_http(test_server()).await;
    for v in ["2025-06-18", "2025-03-26"] {
        let (sid, _) = h.initialize(Some(v), json!({})).await;
        let hs = session_headers(&sid, v);
        let (ct, raw) = post_raw(&h, &call_legacy(1, "poll", true), &hs).await;
        assert!(ct.starts_with("text/event-stream"), "{v}: {raw}");
        let evs = parse(&raw);
        assert!(
            evs.iter().all(|e| e.id.is_none() && e.retry.is_none()),
            "{v}: {raw}"
        );
        // Closing is a no-op: everything, result included, on the POST.
        let last = evs.last().expect("events").json();
        assert_eq!(text_of(&last), "polled closed=false", "{v}: {raw}");
    }
    let body = {
        let mut b = call(2, "poll", json!({}));
        b["params"]["_meta"]["progressToken"] = json!("m");
        b
    };
    let (ct, raw) = post_raw(&h, &body, &modern_headers(&body)).await;
    assert!(ct.starts_with("text/event-stream"), "{raw}");
    let evs = parse(&raw);
    assert!(
        evs.iter().all(|e| e.id.is_none() && e.retry.is_none()),
        "{raw}"
    );
    assert_eq!(
        text_of(&evs.last().unwrap().json()),
        "polled closed=false",
        "{raw}"
    );
}
