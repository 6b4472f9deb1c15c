//! The bare ceiling: an axum endpoint that does the least any MCP server
//! must do (read the body, parse it as JSON, answer with its id), measured
//! in the same run as the real server so their ratio survives a noisy
//! machine.

use std::net::SocketAddr;

use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// Serves the ceiling endpoint at `/mcp` on `addr` until the process ends.
pub async fn serve(addr: SocketAddr) -> std::io::Result<()> {
    let app = Router::new().route("/mcp", post(echo).delete(|| async { StatusCode::OK }));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, app).await
}

/// Answers a JSON-RPC request with an empty result carrying its id; a
/// notification (no id) gets 202 like a real server's.
async fn echo(body: Bytes) -> Response {
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    match msg.get("id") {
        Some(id) => {
            let answer = json!({ "jsonrpc": "2.0", "id": id, "result": {} });
            (
                [(header::CONTENT_TYPE, "application/json")],
                answer.to_string(),
            )
                .into_response()
        }
        None => StatusCode::ACCEPTED.into_response(),
    }
}
