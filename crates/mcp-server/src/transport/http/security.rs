//! DNS-rebinding protection: `Host` and `Origin` must name this server.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, header};
use mcp_protocol::ProtocolError;

use super::AppState;
use super::config::LOOPBACK_HOSTS;
use super::reply::error_response;

/// The host name of a `Host` value or an origin's authority, lower-cased,
/// without port.
fn host_name(authority: &str) -> String {
    let a = authority.trim().to_ascii_lowercase();
    if let Some(rest) = a.strip_prefix('[') {
        // IPv6 literal: keep the brackets, drop the port.
        return rest
            .split_once(']')
            .map_or(a.clone(), |(h, _)| format!("[{h}]"));
    }
    a.rsplit_once(':')
        .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
        .map_or(a.clone(), |(h, _)| h.to_owned())
}

fn host_allowed(state: &AppState, name: &str) -> bool {
    LOOPBACK_HOSTS.contains(&name)
        || state
            .config
            .allowed_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(name))
}

/// Checks one request's `Host` and `Origin`.
pub(crate) fn check(state: &AppState, headers: &HeaderMap) -> Result<(), &'static str> {
    if let Some(host) = headers.get(header::HOST) {
        let host = host.to_str().map_err(|_| "the Host header is not valid")?;
        if !host_allowed(state, &host_name(host)) {
            return Err("the Host header names a host this server does not serve");
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin
            .to_str()
            .map_err(|_| "the Origin header is not valid")?;
        let trimmed = origin.trim_end_matches('/');
        if state
            .config
            .allowed_origins
            .iter()
            .any(|o| o.trim_end_matches('/').eq_ignore_ascii_case(trimmed))
        {
            return Ok(());
        }
        let authority = trimmed.split_once("://").map(|(_, a)| a);
        match authority {
            Some(a) if host_allowed(state, &host_name(a)) => {}
            _ => return Err("the Origin header names a site this server does not trust"),
        }
    }
    Ok(())
}

/// Middleware: 403 with a JSON-RPC error body for a foreign `Host`/`Origin`.
pub(crate) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match check(&state, request.headers()) {
        Ok(()) => next.run(request).await,
        Err(why) => {
            tracing::warn!(reason = why, "refused request (DNS rebinding protection)");
            let e = ProtocolError::invalid_request(format!("Forbidden: {why}."));
            error_response(StatusCode::FORBIDDEN, None, e).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_ports_and_keeps_ipv6_brackets() {
        assert_eq!(host_name("LocalHost:8080"), "localhost");
        assert_eq!(host_name("[::1]:80"), "[::1]");
        assert_eq!(host_name("evil.example.com"), "evil.example.com");
    }
}
