//! OAuth 2.1 resource server for the HTTP transport (MCP authorization).
//!
//! [`protect`] wraps the MCP router so that every request, whatever its
//! method, carries a valid bearer JWT in `Authorization: Bearer …`
//! (never the query string). A valid token becomes a [`Principal`] in the
//! request extensions, which the engine's scope checks and handlers read
//! (`ctx.extension::<Principal>()`). Nothing is cached per connection or
//! per session: each request is authorized on its own.
//!
//! It also serves Protected Resource Metadata (RFC 9728) at
//! `/.well-known/oauth-protected-resource<path>` and at the root, and names
//! that document in every `401` challenge. Put
//! [`Authenticator::resource_metadata_url`] into
//! [`HttpConfig::resource_metadata_url`](super::HttpConfig) so the engine's
//! `403 insufficient_scope` challenges name it too.
//!
//! Failures answer with a JSON-RPC error without `id`:
//! - `401` + [`UNAUTHORIZED`] (-31000): no token, or a token that is not
//!   valid here; `WWW-Authenticate: Bearer resource_metadata="…"` plus
//!   `scope="…"` and, when a token was present, `error="invalid_token"`.
//! - `400` + [`UNAUTHORIZED`]: a token in the query string or several
//!   `Authorization` headers (`error="invalid_request"`).
//! - `503` + -32603: the issuer's signing keys cannot be fetched.
//!
//! The token itself is never logged and is removed from the request before
//! it reaches the engine, so no handler can forward it upstream.

mod jwks;
mod token;
mod uri;

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::error::ErrorStatus;
use serde_json::{Value, json};

pub use token::{ALLOWED_ALGORITHMS, TokenError};

use crate::access::Principal;
use jwks::KeyStore;
use uri::{PRM_PREFIX, ResourceUris};

/// JSON-RPC error code of authentication failures (401/400). It is
/// application-defined, outside the reserved -32768..-32000 range, next to
/// the engine's -31001 (access denied) and -31002 (rate limited).
pub const UNAUTHORIZED: i64 = -31000;

/// Maps the scopes a token grants to the scopes they imply (a broader
/// scope implies narrower ones). The result is added to the granted set.
pub type ScopeExpansion = Arc<dyn Fn(&BTreeSet<String>) -> BTreeSet<String> + Send + Sync>;

/// How this server validates access tokens and describes itself.
#[derive(Clone)]
pub struct AuthConfig {
    /// The authorization server's issuer identifier; `iss` must equal it.
    pub issuer: String,
    /// This server's canonical URI (`https://hr.example.com/mcp`); `aud`
    /// must contain it. Upper-case scheme/host and a trailing slash are
    /// tolerated in tokens. Its path should be the MCP endpoint path.
    pub audience: String,
    /// Where the signing keys are. Default: `jwks_uri` from the issuer's
    /// metadata (`/.well-known/oauth-authorization-server`, then
    /// `/.well-known/openid-configuration`). Must be HTTPS unless loopback.
    pub jwks_url: Option<String>,
    /// Scopes listed in the metadata document (keep it minimal; never
    /// `offline_access`, which is dropped).
    pub scopes_supported: Vec<String>,
    /// `scope=` of `401` challenges: what a client should ask for first.
    pub required_scope_hint: Option<String>,
    /// A claim naming the domain record the subject is (e.g.
    /// `employee_id`), copied to [`Principal::self_id`]. Default: none.
    pub self_id_claim: Option<String>,
    /// Scope hierarchy; identity by default.
    pub scope_expansion: ScopeExpansion,
    /// Clock skew tolerated on `exp` and `nbf` (whole seconds).
    pub leeway: Duration,
    /// How long fetched keys are trusted before a refresh.
    pub jwks_cache_ttl: Duration,
    /// Least time between two JWKS fetches, so tokens with unknown `kid`s
    /// cannot make this server hammer the authorization server.
    pub jwks_min_refresh_interval: Duration,
    /// Timeout of each metadata or JWKS request.
    pub http_timeout: Duration,
}

impl AuthConfig {
    /// A configuration with defaults: JWKS discovered from the issuer, 60 s
    /// leeway, keys cached 10 minutes, at most one refresh per 30 s, 10 s
    /// HTTP timeout.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            audience: audience.into(),
            jwks_url: None,
            scopes_supported: Vec::new(),
            required_scope_hint: None,
            self_id_claim: None,
            scope_expansion: Arc::new(|_| BTreeSet::new()),
            leeway: Duration::from_secs(60),
            jwks_cache_ttl: Duration::from_secs(600),
            jwks_min_refresh_interval: Duration::from_secs(30),
            http_timeout: Duration::from_secs(10),
        }
    }

    /// The absolute Protected Resource Metadata URL for this audience
    /// (path-inserted, RFC 9728 §3.1), as challenges name it.
    pub fn resource_metadata_url(&self) -> Result<String, AuthError> {
        uri::resource_uris(&self.audience).map(|u| u.metadata_url)
    }
}

impl fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthConfig")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("jwks_url", &self.jwks_url)
            .field("scopes_supported", &self.scopes_supported)
            .field("required_scope_hint", &self.required_scope_hint)
            .field("self_id_claim", &self.self_id_claim)
            .field("leeway", &self.leeway)
            .field("jwks_cache_ttl", &self.jwks_cache_ttl)
            .field("jwks_min_refresh_interval", &self.jwks_min_refresh_interval)
            .field("http_timeout", &self.http_timeout)
            .finish_non_exhaustive()
    }
}

/// A configuration that cannot work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The audience is not an absolute http(s) URI without fragment/query.
    #[error("the audience {0:?} is not an absolute http(s) URI without query or fragment")]
    InvalidAudience(String),
    /// The issuer or JWKS URL is not an absolute HTTPS (or loopback HTTP) URL.
    #[error("{0:?} is not an HTTPS URL (plain HTTP is allowed for loopback only)")]
    InsecureUrl(String),
    /// The HTTP client for JWKS fetching could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// Validates bearer tokens for one resource; shared by all requests.
pub struct Authenticator {
    config: AuthConfig,
    uris: ResourceUris,
    keys: KeyStore,
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authenticator")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// Checks the configuration and prepares the key cache. No network
    /// traffic happens until the first token arrives.
    pub fn new(config: AuthConfig) -> Result<Self, AuthError> {
        let uris = uri::resource_uris(&config.audience)?;
        for u in std::iter::once(&config.issuer).chain(config.jwks_url.as_ref()) {
            match reqwest::Url::parse(u) {
                Ok(parsed) if uri::fetchable(&parsed) => {}
                _ => return Err(AuthError::InsecureUrl(u.clone())),
            }
        }
        install_crypto_providers();
        let client = reqwest::Client::builder()
            .timeout(config.http_timeout)
            .connect_timeout(config.http_timeout)
            // Redirects could lead a key fetch to a non-HTTPS location.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| AuthError::Client(e.to_string()))?;
        let keys = KeyStore::new(
            client,
            config.issuer.clone(),
            config.jwks_url.clone(),
            config.jwks_cache_ttl,
            config.jwks_min_refresh_interval,
        );
        Ok(Self { config, uris, keys })
    }

    /// The configuration in force.
    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// This server's canonical resource URI (the audience tokens must name).
    pub fn resource(&self) -> &str {
        &self.uris.resource
    }

    /// The absolute Protected Resource Metadata URL named in challenges;
    /// put it into `HttpConfig::resource_metadata_url`.
    pub fn resource_metadata_url(&self) -> &str {
        &self.uris.metadata_url
    }

    /// The Protected Resource Metadata document (RFC 9728 §2).
    pub fn metadata_document(&self) -> Value {
        let mut doc = json!({
            "resource": self.uris.resource,
            "authorization_servers": [self.config.issuer],
            "bearer_methods_supported": ["header"],
        });
        let scopes: Vec<&String> = self
            .config
            .scopes_supported
            .iter()
            .filter(|s| s.as_str() != "offline_access")
            .collect();
        if !scopes.is_empty() {
            doc["scopes_supported"] = json!(scopes);
        }
        doc
    }

    /// Authenticates one request from its headers and query: the principal,
    /// or why not.
    pub async fn authenticate(
        &self,
        query: Option<&str>,
        headers: &HeaderMap,
    ) -> Result<Principal, AuthFailure> {
        // Tokens in URLs leak into logs and histories; refuse loudly.
        if query.is_some_and(|q| {
            q.split('&')
                .any(|pair| pair.split('=').next() == Some("access_token"))
        }) {
            return Err(AuthFailure::BadRequest(
                "Access tokens are not accepted in the query string.",
            ));
        }
        let mut values = headers.get_all(header::AUTHORIZATION).iter();
        let Some(value) = values.next() else {
            return Err(AuthFailure::Missing);
        };
        if values.next().is_some() {
            return Err(AuthFailure::BadRequest(
                "Send exactly one Authorization header.",
            ));
        }
        let value = value.to_str().map_err(|_| AuthFailure::Missing)?;
        let (scheme, token) = value.trim().split_once(' ').unwrap_or((value, ""));
        if !scheme.eq_ignore_ascii_case("bearer") {
            // Another scheme is no bearer token at all (RFC 6750 §3.1).
            return Err(AuthFailure::Missing);
        }
        let token = token.trim();
        if token.is_empty() {
            return Err(AuthFailure::Missing);
        }
        self.validate(token).await.map_err(AuthFailure::Invalid)
    }

    /// The response for a failed authentication: status, challenge and a
    /// JSON-RPC error body a person can act on.
    pub fn reject(&self, failure: &AuthFailure) -> Response {
        let hint = self
            .config
            .required_scope_hint
            .as_deref()
            .map(quotable)
            .filter(|s| !s.is_empty());
        let mut challenge = format!(
            "Bearer resource_metadata=\"{}\"",
            quotable(&self.uris.metadata_url)
        );
        if let Some(h) = &hint {
            challenge.push_str(&format!(", scope=\"{h}\""));
        }
        let (status, code, message) = match failure {
            AuthFailure::Missing => (
                StatusCode::UNAUTHORIZED,
                UNAUTHORIZED,
                format!(
                    "Authorization required: send an OAuth access token issued by {} for {} \
                     in the Authorization: Bearer header (see {}).",
                    self.config.issuer, self.uris.resource, self.uris.metadata_url
                ),
            ),
            AuthFailure::Invalid(TokenError::KeysUnavailable) => (
                StatusCode::SERVICE_UNAVAILABLE,
                -32603,
                TokenError::KeysUnavailable.to_string(),
            ),
            AuthFailure::Invalid(e) => {
                challenge.push_str(&format!(
                    ", error=\"invalid_token\", error_description=\"{}\"",
                    quotable(&e.to_string())
                ));
                (
                    StatusCode::UNAUTHORIZED,
                    UNAUTHORIZED,
                    format!("{e} Obtain a new access token for {}.", self.uris.resource),
                )
            }
            AuthFailure::BadRequest(why) => {
                challenge.push_str(&format!(
                    ", error=\"invalid_request\", error_description=\"{}\"",
                    quotable(why)
                ));
                (StatusCode::BAD_REQUEST, UNAUTHORIZED, (*why).to_owned())
            }
        };
        let error = ProtocolError {
            code,
            message,
            data: None,
            status: ErrorStatus::Forbidden,
        };
        let body = mcpwire_protocol::Response::error(None, error).to_json();
        let mut r = (status, Body::from(body)).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        } else if let Ok(v) = HeaderValue::from_str(&challenge) {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        r
    }
}

/// Why a request was not authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthFailure {
    /// No bearer token (401 without `error`).
    Missing,
    /// A bearer token that is not valid here (401 `invalid_token`, or 503
    /// when the keys are unavailable).
    Invalid(TokenError),
    /// A malformed authorization request (400 `invalid_request`).
    BadRequest(&'static str),
}

/// Wraps the MCP router: every route already in it (all methods of the
/// MCP endpoint) requires a valid bearer token, and the Protected Resource
/// Metadata routes are added, unauthenticated.
pub fn protect(router: Router, auth: Arc<Authenticator>) -> Router {
    // A route layer sits inside the router's Host/Origin guard, so a
    // rebinding attempt is refused (403) before any token is looked at.
    let guarded = router.route_layer(axum::middleware::from_fn_with_state(
        auth.clone(),
        require_token,
    ));
    let mut routes = Router::new().route(PRM_PREFIX, get(metadata));
    if let Some(path) = &auth.uris.metadata_path {
        routes = routes.route(path, get(metadata));
    }
    guarded.merge(routes.with_state(auth))
}

/// Middleware: a valid token becomes the request's [`Principal`].
async fn require_token(
    State(auth): State<Arc<Authenticator>>,
    mut request: Request,
    next: Next,
) -> Response {
    match auth
        .authenticate(request.uri().query(), request.headers())
        .await
    {
        Ok(principal) => {
            tracing::debug!(sub = %principal.subject, "request authenticated");
            // The token has done its job; handlers must not see (and so
            // cannot pass on) the client's credential.
            request.headers_mut().remove(header::AUTHORIZATION);
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(failure) => {
            let kid = request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().split_once(' '))
                .and_then(|(_, t)| jsonwebtoken::decode_header(t.trim()).ok())
                .and_then(|h| h.kid);
            match &failure {
                AuthFailure::Missing => tracing::debug!("request without bearer token"),
                AuthFailure::Invalid(e) => {
                    tracing::debug!(reason = %e, kid = ?kid, "refused access token");
                }
                AuthFailure::BadRequest(why) => {
                    tracing::debug!(reason = why, "refused authorization request");
                }
            }
            auth.reject(&failure)
        }
    }
}

async fn metadata(State(auth): State<Arc<Authenticator>>) -> Response {
    let mut r = (
        StatusCode::OK,
        Body::from(auth.metadata_document().to_string()),
    )
        .into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    r
}

/// Text safe inside a quoted `WWW-Authenticate` parameter.
fn quotable(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '"' && *c != '\\' && !c.is_control())
        .collect()
}

/// jsonwebtoken and rustls pick a crypto backend per process. Ours are the
/// pure-Rust RustCrypto one and ring; install them unless the application
/// already chose (both installs are no-ops then).
fn install_crypto_providers() {
    if jsonwebtoken::crypto::CryptoProvider::try_get_default().is_none() {
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
    }
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
