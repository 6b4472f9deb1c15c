//! Canonical resource URIs and where their metadata lives (RFC 8707, RFC 9728).

use reqwest::Url;

use super::AuthError;

/// The well-known prefix of Protected Resource Metadata (RFC 9728 §3).
pub(crate) const PRM_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// The canonical form of a resource URI: lower-case scheme and host (the
/// parser does that), no default port, no trailing slash, no query or
/// fragment. `None` when the text is not an absolute http(s) URI.
pub(crate) fn canonical(uri: &str) -> Option<String> {
    let url = Url::parse(uri.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return None;
    }
    if url.fragment().is_some() {
        return None;
    }
    let mut s = url.origin().ascii_serialization();
    s.push_str(url.path().trim_end_matches('/'));
    if let Some(q) = url.query() {
        s.push('?');
        s.push_str(q);
    }
    Some(s)
}

/// What the Authenticator derives from the configured audience.
pub(crate) struct ResourceUris {
    /// The canonical audience.
    pub(crate) resource: String,
    /// The absolute metadata URL challenges name (path-inserted when the
    /// resource has a path).
    pub(crate) metadata_url: String,
    /// The path-inserted route (`/.well-known/oauth-protected-resource/mcp`),
    /// when the resource has a path.
    pub(crate) metadata_path: Option<String>,
}

pub(crate) fn resource_uris(audience: &str) -> Result<ResourceUris, AuthError> {
    let bad = || AuthError::InvalidAudience(audience.to_owned());
    let resource = canonical(audience).ok_or_else(bad)?;
    let url = Url::parse(&resource).map_err(|_| bad())?;
    if url.query().is_some() {
        // RFC 9728 §3.1 has no place for a query in the metadata URL.
        return Err(bad());
    }
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let metadata_path = (!path.is_empty()).then(|| format!("{PRM_PREFIX}{path}"));
    let metadata_url = format!("{origin}{}", metadata_path.as_deref().unwrap_or(PRM_PREFIX));
    Ok(ResourceUris {
        resource,
        metadata_url,
        metadata_path,
    })
}

/// Whether fetching from this URL is acceptable: HTTPS, or plain HTTP to
/// this machine only (authorization-server endpoints MUST be HTTPS, OAuth
/// 2.1 §1.5; loopback is allowed for development and tests).
pub(crate) fn fetchable(url: &Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => {
            let host = url.host_str().unwrap_or_default();
            let host = host.trim_start_matches('[').trim_end_matches(']');
            host.eq_ignore_ascii_case("localhost")
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        _ => false,
    }
}

/// Authorization-server metadata locations for an issuer, in the order
/// tried: RFC 8414 (path-inserted), OpenID Connect Discovery
/// (path-inserted, then appended).
pub(crate) fn discovery_urls(issuer: &str) -> Vec<String> {
    let Ok(url) = Url::parse(issuer) else {
        return Vec::new();
    };
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let mut out = vec![format!(
        "{origin}/.well-known/oauth-authorization-server{path}"
    )];
    if path.is_empty() {
        out.push(format!("{origin}/.well-known/openid-configuration"));
    } else {
        out.push(format!("{origin}/.well-known/openid-configuration{path}"));
        out.push(format!("{origin}{path}/.well-known/openid-configuration"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms() {
        assert_eq!(
            canonical("HTTPS://HR.Example.com/mcp/").as_deref(),
            Some("https://hr.example.com/mcp")
        );
        assert_eq!(
            canonical("https://hr.example.com:443").as_deref(),
            Some("https://hr.example.com")
        );
        assert_eq!(canonical("hr.example.com"), None);
        assert_eq!(canonical("https://hr.example.com/#frag"), None);
    }

    #[test]
    fn metadata_url_is_path_inserted() {
        let u = resource_uris("https://hr.example.com/mcp").expect("valid");
        assert_eq!(
            u.metadata_url,
            "https://hr.example.com/.well-known/oauth-protected-resource/mcp"
        );
        let u = resource_uris("https://hr.example.com").expect("valid");
        assert_eq!(
            u.metadata_url,
            "https://hr.example.com/.well-known/oauth-protected-resource"
        );
        assert!(u.metadata_path.is_none());
    }

    #[test]
    fn discovery_order() {
        assert_eq!(
            discovery_urls("https://id.example.com/tenant"),
            vec![
                "https://id.example.com/.well-known/oauth-authorization-server/tenant",
                "https://id.example.com/.well-known/openid-configuration/tenant",
                "https://id.example.com/tenant/.well-known/openid-configuration",
            ]
        );
    }
}
