//! Bounded HTTP connections against the real binary: slow headers and
//! bodies, idle keep-alive, the connection limit, the shutdown deadline,
//! and Host / absolute-form target checks. Limits are set small so each
//! test runs in seconds; the timing bounds are generous upper bounds.
#![cfg(unix)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Server, modern_body, next_id, sigterm};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What a connection did while we waited for the server to close it.
struct Closed {
    after: Duration,
    received: String,
}

/// Reads until the server closes `stream` (EOF or reset); panics if it is
/// still open after `limit`.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> Closed {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = limit.saturating_sub(start.elapsed());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Err(_) => panic!(
                "connection still open after {limit:?}; received {:?}",
                String::from_utf8_lossy(&got)
            ),
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
    Closed {
        after: start.elapsed(),
        received: String::from_utf8_lossy(&got).into_owned(),
    }
}

/// Asserts `stream` is still open: nothing to read for `wait`, or data.
async fn assert_open(stream: &mut TcpStream, wait: Duration, what: &str) {
    let mut buf = [0u8; 4096];
    match tokio::time::timeout(wait, stream.read(&mut buf)).await {
        Err(_) => {}
        Ok(Ok(n)) => assert!(n > 0, "{what}: closed by the server"),
        Ok(Err(e)) => panic!("{what}: {e}"),
    }
}

/// Reads until `needle` appears; returns everything read.
async fn read_until(stream: &mut TcpStream, needle: &str) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains(needle) {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .unwrap_or_else(|_| {
                panic!("no {needle:?} in time: {:?}", String::from_utf8_lossy(&got))
            })
            .expect("read");
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// A keep-alive `ping` POST (no `Connection: close`).
fn ping_request(addr: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A connection that completed one keep-alive request and stays open.
async fn keep_alive_ping(addr: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(ping_request(addr).as_bytes())
        .await
        .expect("write");
    let got = read_until(&mut stream, r#""result":{}"#).await;
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    stream
}

/// Sends raw request bytes on a fresh connection and returns the status.
async fn raw_status(addr: &str, request: &str) -> u16 {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    let closed = closed_within(&mut stream, Duration::from_secs(10)).await;
    closed
        .received
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {:?}", closed.received))
}

#[tokio::test]
async fn slow_request_headers_are_cut_and_others_still_served() {
    let server = Server::start_with(&["--header-read-timeout-secs", "1"]).await;
    let mut slow = TcpStream::connect(&server.addr).await.expect("connect");
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
        .await
        .expect("write");
    let mut silent = TcpStream::connect(&server.addr).await.expect("connect");
    server.assert_alive().await;
    let closed = closed_within(&mut slow, Duration::from_secs(4)).await;
    assert!(closed.received.is_empty(), "{}", closed.received);
    // A connection that never sends a byte is bounded the same way.
    closed_within(&mut silent, Duration::from_secs(4)).await;
    server.assert_alive().await;
}

#[tokio::test]
async fn slow_request_body_gets_408_and_the_connection_closes() {
    let server = Server::start_with(&["--body-read-timeout-secs", "1"]).await;
    let addr = &server.addr;
    let mut slow = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{{\"jsonrpc\""
    );
    slow.write_all(head.as_bytes()).await.expect("write");
    server.assert_alive().await;
    let closed = closed_within(&mut slow, Duration::from_secs(5)).await;
    assert!(
        closed.received.starts_with("HTTP/1.1 408"),
        "{}",
        closed.received
    );
    server.assert_alive().await;
}

#[tokio::test]
async fn idle_keep_alive_connections_are_closed() {
    let server = Server::start_with(&["--idle-timeout-secs", "1"]).await;
    let mut idle = keep_alive_ping(&server.addr).await;
    let closed = closed_within(&mut idle, Duration::from_secs(4)).await;
    assert!(closed.received.is_empty(), "{}", closed.received);
    assert!(
        closed.after >= Duration::from_millis(500),
        "{:?}",
        closed.after
    );
    server.assert_alive().await;
}

#[tokio::test]
async fn streams_are_not_idle() {
    let server = Server::start_with(&["--idle-timeout-secs", "1"]).await;
    let addr = &server.addr;
    // A legacy session's standalone GET stream.
    let session = server.legacy(Some("2025-06-18")).await;
    let mut get = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {}\r\nMCP-Protocol-Version: {}\r\n\r\n",
        session.session_id, session.version
    );
    get.write_all(request.as_bytes()).await.expect("write");
    let head = read_until(&mut get, "\r\n\r\n").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // A modern subscriptions/listen stream.
    let body = modern_body(
        next_id(),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let body = serde_json::to_string(&body).expect("json");
    let mut listen = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {}\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        common::MODERN,
        body.len()
    );
    listen.write_all(request.as_bytes()).await.expect("write");
    read_until(&mut listen, "notifications/subscriptions/acknowledged").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_open(&mut get, Duration::from_millis(300), "GET stream").await;
    assert_open(&mut listen, Duration::from_millis(300), "listen stream").await;
}

#[tokio::test]
async fn at_the_connection_limit_idle_keep_alive_connections_make_room() {
    let mut server = Server::start_with(&["--max-connections", "5"]).await;
    let addr = server.addr.clone();
    let mut held = Vec::new();
    for _ in 0..5 {
        held.push(keep_alive_ping(&addr).await);
    }
    // A newcomer is served: idle connections are closed to make room.
    let mut newcomer = TcpStream::connect(&addr).await.expect("connect");
    newcomer
        .write_all(ping_request(&addr).as_bytes())
        .await
        .expect("write");
    let got = read_until(&mut newcomer, r#""result":{}"#).await;
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    let mut closed = 0;
    for stream in &mut held {
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await;
        if matches!(read, Ok(Ok(0) | Err(_))) {
            closed += 1;
        }
    }
    assert!(closed >= 1, "no idle connection was closed");
    assert!(server.child_mut().try_wait().expect("poll").is_none());
    server.assert_alive().await;
}

/// A `subscriptions/listen` POST on a new connection; returns the
/// connection (left open, never read again) and the response head.
async fn open_listen(addr: &str) -> (TcpStream, String) {
    let body = modern_body(
        next_id(),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let body = serde_json::to_string(&body).expect("json");
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {}\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        common::MODERN,
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let head = read_until(&mut stream, "\r\n\r\n").await;
    (stream, head)
}

fn status_of(head: &str) -> u16 {
    head.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head:?}"))
}

/// A modern tools/call on a fresh connection, retried as a client would
/// after `503` + `Retry-After`; panics if not answered within 20 s.
async fn call_until_answered(addr: &str) -> common::Reply {
    let body = modern_body(
        next_id(),
        "tools/call",
        json!({"name": "get-employee-details", "arguments": {"employeeId": "JohnDoe"}}),
    );
    let headers = common::modern_headers(&body);
    let mut headers: Vec<(&str, &[u8])> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_bytes()))
        .collect();
    headers.push(("Content-Type", b"application/json"));
    let body = serde_json::to_vec(&body).expect("json");
    let start = Instant::now();
    loop {
        let reply = common::http_request(addr, "POST", &headers, Some(&body))
            .await
            .expect("an answer");
        if reply.status != 503 || start.elapsed() > Duration::from_secs(20) {
            return reply;
        }
        assert_eq!(reply.header("retry-after").as_deref(), Some("1"));
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[tokio::test]
async fn idle_streams_from_one_client_leave_room_for_calls_and_probes() {
    let server =
        Server::start_with(&["--max-connections", "8", "--max-streams-per-caller", "3"]).await;
    let addr = server.addr.clone();
    // One client opens as many streams as there are connections, and
    // then sends nothing more.
    let mut flood = Vec::new();
    let mut statuses = Vec::new();
    for _ in 0..8 {
        let (stream, head) = open_listen(&addr).await;
        statuses.push(status_of(&head));
        if status_of(&head) == 429 {
            let lower = head.to_ascii_lowercase();
            assert!(lower.contains("retry-after: 10"), "{head}");
        }
        flood.push(stream);
    }
    assert_eq!(statuses[..4], [200, 200, 200, 429], "{statuses:?}");
    assert!(
        statuses.iter().all(|s| [200, 429, 503].contains(s)),
        "{statuses:?}"
    );
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 3);
    // A legitimate call and the probes are still answered.
    let reply = call_until_answered(&addr).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.result()["isError"], json!(null), "{}", reply.text);
    let health = common::http_get(&addr, "/healthz").await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    let ready = common::http_get(&addr, "/readyz").await;
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    drop(flood);
}

#[tokio::test]
async fn beyond_the_connection_limit_probes_are_served_and_others_told_to_retry() {
    let server = Server::start_with(&[
        "--max-connections",
        "3",
        "--max-streams",
        "3",
        "--max-streams-per-caller",
        "3",
    ])
    .await;
    let addr = server.addr.clone();
    // Three streams: every regular connection is busy (none is idle).
    let mut busy = Vec::new();
    for _ in 0..3 {
        let (stream, head) = open_listen(&addr).await;
        assert_eq!(status_of(&head), 200, "{head}");
        busy.push(stream);
    }
    let health = common::http_get(&addr, "/healthz").await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    let mut newcomer = TcpStream::connect(&addr).await.expect("connect");
    newcomer
        .write_all(ping_request(&addr).as_bytes())
        .await
        .expect("write");
    let refused = closed_within(&mut newcomer, Duration::from_secs(10)).await;
    let text = refused.received.to_ascii_lowercase();
    assert!(text.starts_with("http/1.1 503"), "{}", refused.received);
    assert!(text.contains("retry-after: 1"), "{}", refused.received);
    assert!(text.contains("connection: close"), "{}", refused.received);
    assert!(text.contains("connection limit"), "{}", refused.received);
    // A stream that ends frees its connection for everyone.
    drop(busy.pop());
    let reply = call_until_answered(&addr).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

#[tokio::test]
async fn an_early_refusal_of_a_large_body_keeps_the_connection_usable() {
    let server = Server::start().await;
    let addr = &server.addr;
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let body = vec![b'x'; 100_000];
    // Refused before the body is read: a wrong media type (415), then a
    // foreign Origin (403); then a ping on the same connection.
    let refusals = [
        ("Content-Type: text/plain\r\n", "HTTP/1.1 415"),
        (
            "Content-Type: application/json\r\nOrigin: http://evil.example.com\r\n",
            "HTTP/1.1 403",
        ),
    ];
    for (headers, status) in refusals {
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.expect("head");
        stream.write_all(&body).await.expect("body");
        let got = read_until(&mut stream, "}}").await;
        assert!(got.starts_with(status), "{got}");
        assert!(
            !got.to_ascii_lowercase().contains("connection: close"),
            "{got}"
        );
    }
    stream
        .write_all(ping_request(addr).as_bytes())
        .await
        .expect("the connection takes the next request");
    let got = read_until(&mut stream, r#""result":{}"#).await;
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    server.assert_alive().await;
}

#[tokio::test]
async fn shutdown_drops_stuck_clients_after_the_grace_period() {
    let mut server = Server::start_with(&["--shutdown-grace-secs", "1"]).await;
    let addr = server.addr.clone();
    // One stuck in its request head, one in its body.
    let mut head = TcpStream::connect(&addr).await.expect("connect");
    head.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
        .await
        .expect("write");
    let mut body = TcpStream::connect(&addr).await.expect("connect");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{"
    );
    body.write_all(request.as_bytes()).await.expect("write");
    server.assert_alive().await;
    let start = Instant::now();
    sigterm(server.pid());
    loop {
        if let Some(status) = server.child_mut().try_wait().expect("poll") {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(4),
            "still running 4 s after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn duplicate_host_and_foreign_absolute_targets_are_refused() {
    let server = Server::start().await;
    let addr = &server.addr;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let tail = format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let two_hosts = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nHost: evil.com\r\n{tail}");
    assert_eq!(raw_status(addr, &two_hosts).await, 400);
    let same_twice = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nHost: {addr}\r\n{tail}");
    assert_eq!(raw_status(addr, &same_twice).await, 400);
    let foreign = format!("POST http://evil.com/mcp HTTP/1.1\r\nHost: {addr}\r\n{tail}");
    assert_eq!(raw_status(addr, &foreign).await, 403);
    let foreign_both = format!("POST http://evil.com/mcp HTTP/1.1\r\nHost: evil.com\r\n{tail}");
    assert_eq!(raw_status(addr, &foreign_both).await, 403);
    let allowed = format!("POST http://{addr}/mcp HTTP/1.1\r\nHost: {addr}\r\n{tail}");
    assert_eq!(raw_status(addr, &allowed).await, 200);
    server.assert_alive().await;
}
