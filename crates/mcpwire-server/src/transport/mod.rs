//! Transports: thin adapters that move bytes to and from the engine
//! ([`crate::Server::accept`]) and map its answers to their own framing.
//!
//! - `http` (feature `http`): Streamable HTTP on axum (both wires on one endpoint), and
//!   the 2024-11-05 HTTP+SSE transport beside it.
//! - `stdio` (feature `stdio`): newline-delimited JSON-RPC on stdin/stdout.

#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "stdio")]
pub mod stdio;

/// Resolves on SIGINT (Ctrl-C) or SIGTERM: the usual cue to finish
/// in-flight requests and exit.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        // Without a handler there is no Ctrl-C to wait for: never resolve.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
