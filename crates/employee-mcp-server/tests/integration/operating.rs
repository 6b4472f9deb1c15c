//! Operations against the real binary: health probes, the Prometheus
//! scrape, and OpenTelemetry spans received by an in-test OTLP/HTTP
//! collector.
#![cfg(unix)]

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Server, TIMEOUT, TempDb, modern_body, modern_headers, next_id};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// `GET path` on `addr`; (status, body).
async fn get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let head = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await?;
    let mut raw = Vec::new();
    tokio::time::timeout(TIMEOUT, stream.read_to_end(&mut raw))
        .await
        .map_err(|_| std::io::Error::other("timed out"))??;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad response {text:?}")))?;
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    Ok((status, body))
}

/// Polls `GET path` until it answers `status`; returns the body.
async fn wait_for(addr: &str, path: &str, status: u16) -> String {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let last = get(addr, path).await;
        if let Ok((s, body)) = &last
            && *s == status
        {
            return body.clone();
        }
        assert!(
            Instant::now() < deadline,
            "{path} never answered {status}: {last:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A loopback address that was free a moment ago.
fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").to_string()
}

#[tokio::test]
async fn probes_answer_without_auth_and_follow_the_database() {
    let db = TempDb::seeded();
    let path = db.path.clone();
    let server = Server::start_on(db, &[]).await;
    assert_eq!(
        get(&server.addr, "/healthz").await.unwrap(),
        (200, "ok\n".into())
    );
    assert_eq!(wait_for(&server.addr, "/readyz", 200).await, "ready\n");
    // /metrics is not on the public listener unless asked for.
    assert_eq!(get(&server.addr, "/metrics").await.unwrap().0, 404);

    let aside = path.with_extension("moved");
    std::fs::rename(&path, &aside).expect("move the database away");
    let body = wait_for(&server.addr, "/readyz", 503).await;
    assert_eq!(
        body, "not ready: database unavailable\n",
        "no path or data leaks"
    );
    assert_eq!(
        get(&server.addr, "/healthz").await.unwrap().0,
        200,
        "still alive"
    );

    std::fs::rename(&aside, &path).expect("restore the database");
    wait_for(&server.addr, "/readyz", 200).await;
}

#[tokio::test]
async fn readiness_fails_as_soon_as_shutdown_begins() {
    let metrics = free_addr();
    let server = Server::start_with(&["--metrics-listen", &metrics]).await;
    wait_for(&metrics, "/readyz", 200).await;
    // A request whose body never comes keeps the drain going (up to the
    // 10 s shutdown grace), while the metrics listener still answers.
    let mut slow = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n",
        server.addr
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let status = Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    assert_eq!(
        wait_for(&metrics, "/readyz", 503).await,
        "not ready: shutting down\n"
    );
    assert_eq!(get(&metrics, "/healthz").await.unwrap().0, 200);
}

/// One sample: name and labels → value.
type Samples = BTreeMap<(String, BTreeMap<String, String>), f64>;

/// A strict reader of the text format: every sample belongs to a family
/// declared by `# TYPE` before it, names and labels are well formed,
/// values parse, and nothing repeats.
fn parse_prometheus(text: &str) -> Samples {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = Samples::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE line");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            assert!(
                types.insert(name.into(), kind.into()).is_none(),
                "TYPE twice: {line}"
            );
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        assert!(
            !line.is_empty() && !line.starts_with('#'),
            "unexpected line {line:?}"
        );
        let (series, value) = line.rsplit_once(' ').expect("sample line");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("bad value in {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series, BTreeMap::new()),
            Some((name, rest)) => (name, parse_labels(rest.strip_suffix('}').expect(line))),
        };
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad name {name}"
        );
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| types.get(*f).is_some_and(|k| k == "histogram"))
            })
            .unwrap_or(name);
        assert!(types.contains_key(family), "sample before its TYPE: {line}");
        let key = (name.to_owned(), labels);
        assert!(
            samples.insert(key, value).is_none(),
            "duplicate sample {line}"
        );
    }
    samples
}

fn parse_labels(mut rest: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    while !rest.is_empty() {
        let (k, after) = rest.split_once("=\"").expect("label");
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next().expect("closing quote") {
                (i, '"') => break i,
                (_, '\\') => match chars.next().expect("escape").1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (_, c) => value.push(c),
            }
        };
        labels.insert(k.to_owned(), value);
        rest = after[end + 1..]
            .strip_prefix(',')
            .unwrap_or(&after[end + 1..]);
    }
    labels
}

fn value(samples: &Samples, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    samples.get(&(name.to_owned(), labels)).copied()
}

#[tokio::test]
async fn metrics_count_calls_by_tool_and_outcome() {
    let metrics = free_addr();
    let server = Server::start_with(&["--metrics-listen", &metrics]).await;
    wait_for(&metrics, "/metrics", 200).await;
    for _ in 0..3 {
        server
            .call_tool(
                "get-employee-details",
                json!({"employeeId": "AliceJohnson"}),
            )
            .await;
    }
    // Raw on purpose: a second connection for the connection counter.
    let unknown = server
        .modern(
            "tools/call",
            json!({"name": "no-such-tool", "arguments": {}}),
        )
        .await;
    assert_eq!(unknown.error_code(), -32602, "{}", unknown.text);
    let text = wait_for(&metrics, "/metrics", 200).await;
    let samples = parse_prometheus(&text);

    const OP: &str = "mcp_server_operation_duration_seconds";
    let ok = [
        ("mcp_method_name", "tools/call"),
        ("gen_ai_tool_name", "get-employee-details"),
        ("outcome", "success"),
    ];
    assert_eq!(
        value(&samples, &format!("{OP}_count"), &ok),
        Some(3.0),
        "{text}"
    );
    let mut inf = ok.to_vec();
    inf.push(("le", "+Inf"));
    assert_eq!(value(&samples, &format!("{OP}_bucket"), &inf), Some(3.0));
    assert!(value(&samples, &format!("{OP}_sum"), &ok).is_some_and(|s| s > 0.0));
    // An unknown tool is counted without a tool label (bounded cardinality).
    let unknown = [
        ("mcp_method_name", "tools/call"),
        ("outcome", "protocol_error"),
    ];
    assert_eq!(
        value(&samples, &format!("{OP}_count"), &unknown),
        Some(1.0),
        "{text}"
    );
    assert!(
        !text.contains("no-such-tool"),
        "client-chosen names stay out"
    );
    assert_eq!(
        value(&samples, "mcp_server_requests_in_flight", &[]),
        Some(0.0)
    );
    let commits = value(
        &samples,
        "employee_audit_commit_duration_seconds_count",
        &[],
    );
    assert!(commits.is_some_and(|c| c >= 1.0), "{text}");
    assert_eq!(
        value(&samples, "employee_audit_queue_depth", &[]),
        Some(0.0)
    );
    // The library client keeps its connection alive across the three
    // calls; the raw request opens another.
    assert!(
        value(&samples, "mcp_http_connections_accepted_total", &[]).is_some_and(|c| c >= 2.0),
        "{text}"
    );
    assert_eq!(
        value(
            &samples,
            "mcp_http_bodies_rejected_total",
            &[("reason", "too_large")]
        ),
        Some(0.0)
    );
    assert!(value(&samples, "employee_directory_pool_waits_total", &[]).is_some());
}

/// The binary exporting its traces to `collector`.
async fn start_traced(collector: &str) -> Server {
    let endpoint = format!("http://{collector}");
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];
    Server::start_with_env(TempDb::seeded(), &[], &env).await
}

/// An OTLP/HTTP receiver: every span of every export, on a channel.
async fn collector() -> (String, mpsc::UnboundedReceiver<Span>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: bytes::Bytes| {
            let tx = tx.clone();
            async move {
                let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
                for rs in request.resource_spans {
                    for ss in rs.scope_spans {
                        for span in ss.spans {
                            let _ = tx.send(span);
                        }
                    }
                }
                (
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, rx)
}

fn attr(span: &Span, key: &str) -> Option<String> {
    let kv = span.attributes.iter().find(|a| a.key == key)?;
    match kv.value.as_ref()?.value.as_ref()? {
        AnyValue::StringValue(s) => Some(s.clone()),
        AnyValue::IntValue(i) => Some(i.to_string()),
        other => Some(format!("{other:?}")),
    }
}

async fn post_call(addr: &str, meta_extra: Value) -> u16 {
    let mut body = modern_body(
        next_id(),
        "tools/call",
        json!({"name": "get-employee-details", "arguments": {"employeeId": "AliceJohnson"}}),
    );
    for (k, v) in meta_extra.as_object().unwrap() {
        body["params"]["_meta"][k] = v.clone();
    }
    let headers = modern_headers(&body);
    let bytes = serde_json::to_vec(&body).unwrap();
    let mut all: Vec<(&str, &[u8])> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_bytes()))
        .collect();
    all.push(("Content-Type", b"application/json"));
    let reply = common::http_request(addr, "POST", &all, Some(&bytes))
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.status
}

#[tokio::test]
async fn spans_reach_an_otlp_collector_parented_on_meta_traceparent() {
    let (collector, mut spans) = collector().await;
    let server = start_traced(&collector).await;
    const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
    const PARENT: &str = "00f067aa0ba902b7";
    post_call(
        &server.addr,
        json!({"traceparent": format!("00-{TRACE}-{PARENT}-01")}),
    )
    .await;
    // Invalid context is ignored, never an error.
    post_call(
        &server.addr,
        json!({"traceparent": "00-zz-nonsense", "tracestate": "\u{1}"}),
    )
    .await;

    let mut seen: Vec<Span> = Vec::new();
    let deadline = Instant::now() + TIMEOUT;
    let server_span = loop {
        if let Some(s) = seen
            .iter()
            .find(|s| s.name == "tools/call get-employee-details" && hex(&s.trace_id) == TRACE)
        {
            break s.clone();
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, spans.recv()).await {
            Ok(Some(span)) => seen.push(span),
            _ => panic!(
                "no server span in {:?}",
                seen.iter().map(|s| &s.name).collect::<Vec<_>>()
            ),
        }
    };
    assert_eq!(hex(&server_span.parent_span_id), PARENT);
    assert_eq!(server_span.kind, 2, "SERVER");
    assert_eq!(
        attr(&server_span, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(
        attr(&server_span, "gen_ai.tool.name").as_deref(),
        Some("get-employee-details")
    );
    assert_eq!(
        attr(&server_span, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(
        attr(&server_span, "mcp.protocol.version").as_deref(),
        Some("2026-07-28")
    );
    assert!(attr(&server_span, "jsonrpc.request.id").is_some());
    assert!(attr(&server_span, "error.type").is_none());

    // Children: the query and the audit commit, same trace, parent = server span.
    let mut children = BTreeMap::new();
    while children.len() < 2 {
        for s in &seen {
            if s.parent_span_id == server_span.span_id {
                children.insert(s.name.clone(), hex(&s.trace_id));
            }
        }
        if children.len() >= 2 {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, spans.recv()).await {
            Ok(Some(span)) => seen.push(span),
            _ => panic!("children missing: {children:?}"),
        }
    }
    assert_eq!(
        children.get("db.query").map(String::as_str),
        Some(TRACE),
        "{children:?}"
    );
    assert_eq!(
        children.get("audit.commit").map(String::as_str),
        Some(TRACE),
        "{children:?}"
    );

    // The call with a broken traceparent got its own, new trace.
    let deadline = Instant::now() + TIMEOUT;
    while !seen
        .iter()
        .any(|s| s.name == "tools/call get-employee-details" && hex(&s.trace_id) != TRACE)
    {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, spans.recv()).await {
            Ok(Some(span)) => seen.push(span),
            _ => panic!("no span for the call with an invalid traceparent"),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
