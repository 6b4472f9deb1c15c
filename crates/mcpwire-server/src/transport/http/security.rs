//! DNS-rebinding protection: `Host`, an absolute-form target and `Origin`
//! must name this server.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, Uri, header};
use mcpwire_protocol::ProtocolError;

use super::AppState;
use super::config::{HttpConfig, LOOPBACK_HOSTS};
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

fn host_allowed(config: &HttpConfig, name: &str) -> bool {
    LOOPBACK_HOSTS.contains(&name)
        || config
            .allowed_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(name))
}

/// Why a request was refused, and with which status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) why: &'static str,
}

fn bad_request(why: &'static str) -> Refusal {
    Refusal {
        status: StatusCode::BAD_REQUEST,
        why,
    }
}

fn forbidden(why: &'static str) -> Refusal {
    Refusal {
        status: StatusCode::FORBIDDEN,
        why,
    }
}

/// An authority without user info, lower-cased (`Host` form).
fn bare_authority(authority: &str) -> String {
    let a = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    a.trim().to_ascii_lowercase()
}

/// Checks `Host` (exactly one, naming this server) and an absolute-form
/// target's authority (allowed, and the same as `Host` when both exist).
fn check_host(config: &HttpConfig, headers: &HeaderMap, uri: &Uri) -> Result<(), Refusal> {
    let mut hosts = headers.get_all(header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Err(bad_request("more than one Host header"));
    }
    let host = host
        .map(|h| h.to_str().map(bare_authority))
        .transpose()
        .map_err(|_| bad_request("the Host header is not valid"))?;
    if let Some(h) = &host
        && !host_allowed(config, &host_name(h))
    {
        return Err(forbidden(
            "the Host header names a host this server does not serve",
        ));
    }
    if let Some(target) = uri.authority() {
        let target = bare_authority(target.as_str());
        if !host_allowed(config, &host_name(&target)) {
            return Err(forbidden(
                "the request target names a host this server does not serve",
            ));
        }
        if host.as_ref().is_some_and(|h| *h != target) {
            return Err(bad_request(
                "the request target and the Host header name different hosts",
            ));
        }
    }
    Ok(())
}

/// Checks `Origin`: a configured origin, or a site on an allowed host.
fn check_origin(config: &HttpConfig, headers: &HeaderMap) -> Result<(), Refusal> {
    let mut origins = headers.get_all(header::ORIGIN).iter();
    let Some(origin) = origins.next() else {
        return Ok(());
    };
    // Which one would a browser, a proxy or this check believe? None.
    if origins.next().is_some() {
        return Err(bad_request("more than one Origin header"));
    }
    let origin = origin
        .to_str()
        .map_err(|_| forbidden("the Origin header is not valid"))?;
    let trimmed = origin.trim_end_matches('/');
    if config
        .allowed_origins
        .iter()
        .any(|o| o.trim_end_matches('/').eq_ignore_ascii_case(trimmed))
    {
        return Ok(());
    }
    match trimmed.split_once("://").map(|(_, a)| a) {
        Some(a) if host_allowed(config, &host_name(a)) => Ok(()),
        _ => Err(forbidden(
            "the Origin header names a site this server does not trust",
        )),
    }
}

/// Checks one request's `Host`, target authority and `Origin`.
pub(crate) fn check(config: &HttpConfig, headers: &HeaderMap, uri: &Uri) -> Result<(), Refusal> {
    check_host(config, headers, uri)?;
    check_origin(config, headers)
}

/// Middleware: a JSON-RPC error body for a foreign or ambiguous
/// `Host`/target/`Origin` (403 when foreign, 400 when malformed).
pub(crate) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match check(&state.config, request.headers(), request.uri()) {
        Ok(()) => next.run(request).await,
        Err(Refusal { status, why }) => {
            tracing::debug!(reason = why, "refused request (DNS rebinding protection)");
            let message = status.canonical_reason().unwrap_or("Refused");
            let e = ProtocolError::invalid_request(format!("{message}: {why}."));
            error_response(status, None, e).into_response()
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

    fn host_check(hosts: &[&str], target: &str) -> Result<(), StatusCode> {
        let config = HttpConfig {
            allowed_hosts: vec!["mcp.example.com".into()],
            ..HttpConfig::default()
        };
        let mut headers = HeaderMap::new();
        for h in hosts {
            headers.append(header::HOST, h.parse().expect("header value"));
        }
        let uri: Uri = target.parse().expect("uri");
        check(&config, &headers, &uri).map_err(|r| r.status)
    }

    #[test]
    fn every_host_and_the_target_authority_are_checked() {
        assert_eq!(host_check(&["localhost:1"], "/mcp"), Ok(()));
        assert_eq!(host_check(&[], "/mcp"), Ok(()));
        let two = host_check(&["localhost:1", "evil.com"], "/mcp");
        assert_eq!(two, Err(StatusCode::BAD_REQUEST));
        let two_same = host_check(&["localhost:1", "localhost:1"], "/mcp");
        assert_eq!(two_same, Err(StatusCode::BAD_REQUEST));
        let foreign = host_check(&["localhost:1"], "http://evil.com/mcp");
        assert_eq!(foreign, Err(StatusCode::FORBIDDEN));
        assert_eq!(
            host_check(&[], "http://evil.com/mcp"),
            Err(StatusCode::FORBIDDEN)
        );
        let sneaky = host_check(&[], "http://localhost@evil.com/mcp");
        assert_eq!(sneaky, Err(StatusCode::FORBIDDEN));
        let ok = host_check(&["MCP.example.com:8080"], "http://mcp.example.com:8080/mcp");
        assert_eq!(ok, Ok(()));
        assert_eq!(host_check(&[], "http://localhost:1/mcp"), Ok(()));
        let mismatch = host_check(&["localhost:1"], "http://mcp.example.com/mcp");
        assert_eq!(mismatch, Err(StatusCode::BAD_REQUEST));
    }

    #[test]
    fn two_origin_headers_are_refused_even_when_both_are_allowed() {
        let config = HttpConfig::default();
        let uri: Uri = "/mcp".parse().expect("uri");
        let mut headers = HeaderMap::new();
        headers.append(header::ORIGIN, "http://localhost".parse().expect("value"));
        assert_eq!(check(&config, &headers, &uri), Ok(()));
        headers.append(header::ORIGIN, "http://localhost".parse().expect("value"));
        let refused = check(&config, &headers, &uri).map_err(|r| r.status);
        assert_eq!(refused, Err(StatusCode::BAD_REQUEST));
    }
}
