//! Who the caller is: OAuth bearer tokens on HTTP, environment credentials
//! on stdio. Both produce a [`Principal`] whose scopes are already expanded
//! through the hierarchy in [`crate::scopes`].

use std::collections::BTreeSet;
use std::sync::Arc;

use mcpwire_server::Principal;
use mcpwire_server::transport::http::auth::{self, AuthConfig, Authenticator};

use crate::cli::AuthArgs;
use crate::scopes;

/// Why the caller settings are unusable.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An `EMPLOYEE_MCP_STDIO_*` variable holds bytes that are not UTF-8.
    #[error("{0} is not valid UTF-8")]
    NotUnicode(&'static str),
    /// `--auth-issuer` without `--auth-audience`.
    #[error(
        "--auth-issuer needs --auth-audience: this server's canonical URI, e.g. https://hr.example.com/mcp"
    )]
    NoAudience,
    /// The library refused the OAuth settings.
    #[error("invalid OAuth configuration: {0}")]
    Config(String),
}

/// Subject recorded for stdio callers that set no `EMPLOYEE_MCP_STDIO_SUBJECT`.
const DEFAULT_STDIO_SUBJECT: &str = "stdio";

/// The stdio caller from `EMPLOYEE_MCP_STDIO_SCOPES` (space-separated),
/// `EMPLOYEE_MCP_STDIO_SUBJECT` and `EMPLOYEE_MCP_STDIO_SELF_ID`; `None`
/// (no enforcement) when no scopes variable is set.
pub fn stdio_principal_from_env() -> Result<Option<Principal>, Error> {
    let var = |name: &'static str| -> Result<Option<String>, Error> {
        match std::env::var(name) {
            Ok(v) => Ok(Some(v)),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(Error::NotUnicode(name)),
        }
    };
    let Some(granted) = var("EMPLOYEE_MCP_STDIO_SCOPES")? else {
        if var("EMPLOYEE_MCP_STDIO_SUBJECT")?.is_some()
            || var("EMPLOYEE_MCP_STDIO_SELF_ID")?.is_some()
        {
            tracing::warn!(
                "EMPLOYEE_MCP_STDIO_SUBJECT/SELF_ID are ignored without EMPLOYEE_MCP_STDIO_SCOPES; every tool is open"
            );
        }
        return Ok(None);
    };
    let subject = var("EMPLOYEE_MCP_STDIO_SUBJECT")?
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_STDIO_SUBJECT.to_owned());
    let self_id = var("EMPLOYEE_MCP_STDIO_SELF_ID")?
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    Ok(Some(principal(subject, &granted, None, self_id)))
}

/// A principal with the scope hierarchy applied.
pub fn principal(
    subject: String,
    scope: &str,
    client_id: Option<String>,
    self_id: Option<String>,
) -> Principal {
    let mut principal = Principal::new(subject).with_scopes(scopes::parse(scope));
    principal.client_id = client_id;
    principal.self_id = self_id;
    principal
}

/// The OAuth resource server: validates bearer tokens from the configured
/// issuer for this server's audience, and serves Protected Resource
/// Metadata.
pub struct OAuth {
    authenticator: Arc<Authenticator>,
}

impl OAuth {
    /// Checks the settings; fetches nothing yet (keys are fetched with the
    /// first token).
    pub fn configure(issuer: &str, args: &AuthArgs) -> Result<OAuth, Error> {
        let audience = args.auth_audience.clone().ok_or(Error::NoAudience)?;
        let mut config = AuthConfig::new(issuer, audience);
        config.jwks_url = args.auth_jwks_url.clone();
        config.scopes_supported = scopes::ALL.iter().map(|s| (*s).to_owned()).collect();
        // What a client should ask for first: read access to the directory.
        config.required_scope_hint = Some(scopes::DIRECTORY.to_owned());
        let claim = args.auth_self_claim.trim();
        config.self_id_claim = (!claim.is_empty()).then(|| claim.to_owned());
        config.scope_expansion = Arc::new(|granted: &BTreeSet<String>| scopes::expand(granted));
        let authenticator = Authenticator::new(config).map_err(|e| Error::Config(e.to_string()))?;
        tracing::info!(
            issuer,
            resource = authenticator.resource(),
            metadata = authenticator.resource_metadata_url(),
            "OAuth bearer tokens required"
        );
        Ok(OAuth {
            authenticator: Arc::new(authenticator),
        })
    }

    /// The token checks, shared with the console's login.
    pub fn authenticator(&self) -> Arc<Authenticator> {
        Arc::clone(&self.authenticator)
    }

    /// The Protected Resource Metadata URL, for `HttpConfig`.
    pub fn resource_metadata_url(&self) -> String {
        self.authenticator.resource_metadata_url().to_owned()
    }

    /// Wraps the MCP router: every request needs a valid token.
    pub fn protect(&self, router: axum::Router) -> axum::Router {
        auth::protect(router, Arc::clone(&self.authenticator))
    }
}
