//! SIGTERM ends the HTTP server promptly and cleanly.
#![cfg(unix)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Server, sigterm};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Opens a connection, completes one keep-alive request on it, and returns
/// the still-open connection.
async fn keep_alive_ping(addr: &str) -> tokio::net::TcpStream {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains(r#""result":{}"#) {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("response in time")
            .expect("read");
        assert!(
            n > 0,
            "connection closed early: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    assert!(
        got.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    stream
}

/// Waits (polling) up to `limit` for the child to exit.
async fn wait_exit(server: &mut Server, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = server.child_mut().try_wait().expect("poll child") {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "server still running {limit:?} after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn sigterm_when_idle_exits_zero() {
    let mut server = Server::start().await;
    server.assert_alive().await;
    sigterm(server.pid());
    let status = wait_exit(&mut server, Duration::from_secs(10)).await;
    assert!(status.success(), "exit status {status}");
}

#[tokio::test]
async fn sigterm_with_idle_keep_alive_connections_and_sessions() {
    let mut server = Server::start().await;
    // Leave a legacy session open and keep-alive connections idle.
    let session_id = server.legacy(Some("2025-11-25")).await.session_id;
    assert!(!session_id.is_empty());
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(keep_alive_ping(&server.addr).await);
    }
    sigterm(server.pid());
    let status = wait_exit(&mut server, Duration::from_secs(10)).await;
    assert!(status.success(), "exit status {status}");
}

#[tokio::test]
async fn sigterm_after_many_requests_exits_zero() {
    let mut server = Server::start().await;
    for _ in 0..5 {
        let r = server
            .call_tool(
                "generate-employee-report",
                json!({"reportType": "headcount"}),
            )
            .await;
        assert_eq!(r["structuredContent"]["reportType"], "headcount");
    }
    sigterm(server.pid());
    let status = wait_exit(&mut server, Duration::from_secs(10)).await;
    assert!(status.success(), "exit status {status}");
}

#[tokio::test]
async fn sigterm_on_stdio_exits() {
    let mut s = common::StdioServer::start();
    let reply = s
        .request(common::modern_body(
            common::next_id(),
            "tools/list",
            json!({}),
        ))
        .await;
    assert!(reply.get("result").is_some());
    let pid = s.child.id().expect("pid");
    sigterm(pid);
    let status = tokio::time::timeout(Duration::from_secs(10), s.child.wait())
        .await
        .expect("stdio server still running 10 s after SIGTERM")
        .expect("wait");
    // A graceful finish: in-flight requests answered, exit status 0.
    assert!(status.success(), "{status}");
}
