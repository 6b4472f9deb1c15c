//! Console login through the server's OAuth issuer (`--auth-issuer` with
//! `--console-oidc-client-id`): the authorization code flow with PKCE
//! (RFC 7636, S256), the token asked for this server's resource (RFC 8707)
//! and checked exactly as `/mcp` checks bearer tokens, then the console
//! scope (`hr:admin` by default) required. The person's token subject is
//! the operator's name, so every change is recorded with it and an
//! operator cannot approve their own call.
//!
//! A flow is bound to the browser that began it: `/oidc/start` keeps the
//! PKCE verifier under a random `state` (bounded, for five minutes) and
//! sets a cookie with that state; the callback needs both, once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, header};
use axum::response::{AppendHeaders, IntoResponse, Redirect, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcpwire_server::transport::http::auth::Authenticator;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::error::{ConsoleError, Error};
use super::session::{self, random_hex};
use super::{Console, Form};

/// Flows begun and not finished, at most.
const MAX_PENDING: usize = 64;
/// How long a begun flow stays good.
const FLOW_TTL: Duration = Duration::from_secs(300);
/// The cookie that binds a flow to its browser.
const FLOW_COOKIE: &str = "console_oidc";
/// How long the issuer may take to answer.
const ISSUER_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest answer read from the issuer.
const MAX_ISSUER_BYTES: usize = 64 * 1024;
/// How long the issuer's metadata is reused: `/oidc/start` needs no login,
/// so without it every hit would send a request to the issuer.
const METADATA_TTL: Duration = Duration::from_secs(300);

/// How the console signs people in through the issuer.
pub struct Oidc {
    issuer: String,
    client_id: String,
    client_secret: Option<String>,
    /// Where the issuer sends the browser back.
    redirect_uri: String,
    /// The resource the token is asked for (`--auth-audience`).
    resource: String,
    /// The scope a person's token must carry.
    scope: String,
    authenticator: Arc<Authenticator>,
    http: reqwest::Client,
    /// `state` → (PKCE verifier, begun at).
    pending: Mutex<HashMap<String, (String, Instant)>>,
    /// The issuer's endpoints as last read, and when.
    metadata: tokio::sync::Mutex<Option<(Instant, Endpoints)>>,
}

/// The issuer's endpoints (RFC 8414 / OpenID Connect Discovery).
#[derive(Clone)]
struct Endpoints {
    authorization: String,
    token: String,
}

/// What `Oidc::new` needs.
pub struct Settings {
    /// `--auth-issuer`.
    pub issuer: String,
    /// `--console-oidc-client-id`.
    pub client_id: String,
    /// `--console-oidc-client-secret-file`'s content, for confidential clients.
    pub client_secret: Option<String>,
    /// The callback URL registered at the issuer.
    pub redirect_uri: String,
    /// `--auth-audience`.
    pub resource: String,
    /// `--console-scope`.
    pub scope: String,
}

impl Oidc {
    /// Checks nothing remote yet: the issuer's metadata is read at the
    /// first login and again after [`METADATA_TTL`], so rotated endpoints
    /// need no restart.
    pub fn new(settings: Settings, authenticator: Arc<Authenticator>) -> Result<Oidc, Error> {
        let http = reqwest::Client::builder()
            .timeout(ISSUER_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(Error::IssuerClient)?;
        Ok(Oidc {
            issuer: settings.issuer.trim_end_matches('/').to_owned(),
            client_id: settings.client_id,
            client_secret: settings.client_secret,
            redirect_uri: settings.redirect_uri,
            resource: settings.resource,
            scope: settings.scope,
            authenticator,
            http,
            pending: Mutex::new(HashMap::new()),
            metadata: tokio::sync::Mutex::new(None),
        })
    }

    /// The issuer's name, for the login page.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The scope a person's token must carry.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// Reads a JSON answer, bounded.
    async fn json(&self, response: reqwest::Response, what: &str) -> Result<Value, ConsoleError> {
        let failed = |why: String| ConsoleError::Issuer(format!("the issuer's {what}: {why}"));
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| failed(e.to_string()))?;
        if bytes.len() > MAX_ISSUER_BYTES {
            return Err(failed(format!("over {MAX_ISSUER_BYTES} bytes")));
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            return Err(failed(format!(
                "{status}: {}",
                text.chars().take(200).collect::<String>()
            )));
        }
        serde_json::from_slice(&bytes).map_err(|e| failed(e.to_string()))
    }

    /// The issuer's endpoints, read at most every [`METADATA_TTL`] (the
    /// lock makes concurrent logins wait for one read).
    async fn endpoints(&self) -> Result<Endpoints, ConsoleError> {
        let mut cached = self.metadata.lock().await;
        if let Some((at, endpoints)) = cached.as_ref()
            && at.elapsed() < METADATA_TTL
        {
            return Ok(endpoints.clone());
        }
        let endpoints = self.discover().await?;
        *cached = Some((Instant::now(), endpoints.clone()));
        Ok(endpoints)
    }

    /// The issuer's metadata: RFC 8414 first, then OpenID Connect's.
    async fn discover(&self) -> Result<Endpoints, ConsoleError> {
        let mut last = None;
        for path in [
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
        ] {
            let url = format!("{}{path}", self.issuer);
            let doc = match self.http.get(&url).send().await {
                Ok(r) => self.json(r, "metadata").await,
                Err(e) => Err(ConsoleError::Issuer(format!("cannot reach {url}: {e}"))),
            };
            match doc {
                Ok(doc)
                    if doc["issuer"].as_str().map(|i| i.trim_end_matches('/'))
                        == Some(&self.issuer) =>
                {
                    let endpoint = |key: &str| doc[key].as_str().map(str::to_owned);
                    if let (Some(authorization), Some(token)) = (
                        endpoint("authorization_endpoint"),
                        endpoint("token_endpoint"),
                    ) {
                        return Ok(Endpoints {
                            authorization,
                            token,
                        });
                    }
                    last = Some(ConsoleError::Issuer(format!(
                        "{url} names no authorization or token endpoint"
                    )));
                }
                Ok(_) => last = Some(ConsoleError::Issuer(format!("{url} is for another issuer"))),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| ConsoleError::Issuer("no issuer metadata".into())))
    }

    /// Keeps a new flow; the oldest goes when the bound is reached.
    fn remember(&self, state: String, verifier: String) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.retain(|_, (_, at)| at.elapsed() < FLOW_TTL);
        if pending.len() >= MAX_PENDING
            && let Some(oldest) = pending
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| k.clone())
        {
            pending.remove(&oldest);
        }
        pending.insert(state, (verifier, Instant::now()));
    }

    /// The verifier of flow `state`, once, if still good.
    fn take(&self, state: &str) -> Option<String> {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let (verifier, at) = pending.remove(state)?;
        (at.elapsed() < FLOW_TTL).then_some(verifier)
    }
}

/// The S256 challenge of a PKCE verifier.
fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn oidc(console: &Console) -> Result<&Oidc, ConsoleError> {
    console.oidc.as_ref().ok_or(ConsoleError::Forbidden(
        "the console has no OpenID Connect login",
    ))
}

/// `GET /oidc/start`: to the issuer's authorization endpoint.
pub async fn start(State(console): State<Arc<Console>>) -> Result<Response, ConsoleError> {
    let oidc = oidc(&console)?;
    let endpoints = oidc.endpoints().await?;
    let state = random_hex()?;
    let verifier = random_hex()?;
    let nonce = random_hex()?;
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("response_type", "code")
        .append_pair("client_id", &oidc.client_id)
        .append_pair("redirect_uri", &oidc.redirect_uri)
        .append_pair("scope", &format!("openid {}", oidc.scope))
        .append_pair("state", &state)
        .append_pair("nonce", &nonce)
        .append_pair("code_challenge", &challenge(&verifier))
        .append_pair("code_challenge_method", "S256")
        .append_pair("resource", &oidc.resource)
        .finish();
    let separator = if endpoints.authorization.contains('?') {
        '&'
    } else {
        '?'
    };
    let target = format!("{}{separator}{query}", endpoints.authorization);
    let cookie = format!(
        "{FLOW_COOKIE}={state}; Path=/oidc; HttpOnly; SameSite=Lax; Max-Age={}",
        FLOW_TTL.as_secs()
    );
    oidc.remember(state, verifier);
    Ok(([(header::SET_COOKIE, cookie)], Redirect::to(&target)).into_response())
}

/// The flow cookie of a request.
fn flow_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix(FLOW_COOKIE)?.strip_prefix('='))
}

/// `GET /oidc/callback?code=…&state=…`: the code for a token, the token
/// checked, a session opened for its subject.
pub async fn callback(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Result<Response, ConsoleError> {
    let oidc = oidc(&console)?;
    let form = Form::parse(q.as_deref().unwrap_or("").as_bytes());
    if let Some(error) = form.get("error") {
        let why = form.get("error_description").unwrap_or(error);
        return Err(ConsoleError::Unauthorized(format!(
            "the issuer refused the login: {why}"
        )));
    }
    let (Some(code), Some(state)) = (form.get("code"), form.get("state")) else {
        return Err(ConsoleError::BadRequest(
            "the issuer's answer has no code or state".into(),
        ));
    };
    if !flow_cookie(&headers).is_some_and(|c| session::same_secret(c, state)) {
        return Err(ConsoleError::Forbidden(
            "this login was not begun in this browser; start again",
        ));
    }
    let Some(verifier) = oidc.take(state) else {
        return Err(ConsoleError::Unauthorized(
            "this login expired or was already used; start again".into(),
        ));
    };
    let endpoints = oidc.endpoints().await?;
    // Built before any await: the serializer is not `Send`.
    let body = {
        let mut body = form_urlencoded::Serializer::new(String::new());
        body.append_pair("grant_type", "authorization_code")
            .append_pair("code", code)
            .append_pair("redirect_uri", &oidc.redirect_uri)
            .append_pair("client_id", &oidc.client_id)
            .append_pair("code_verifier", &verifier)
            .append_pair("resource", &oidc.resource);
        if let Some(secret) = &oidc.client_secret {
            body.append_pair("client_secret", secret);
        }
        body.finish()
    };
    let answer = oidc
        .http
        .post(&endpoints.token)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::ACCEPT, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| ConsoleError::Issuer(format!("cannot reach the token endpoint: {e}")))?;
    let tokens = oidc.json(answer, "token answer").await?;
    let Some(access) = tokens["access_token"].as_str() else {
        return Err(ConsoleError::Issuer(
            "the issuer's token answer has no access_token".into(),
        ));
    };
    let principal = oidc.authenticator.validate(access).await.map_err(|e| {
        ConsoleError::Unauthorized(format!("the issuer's token is not accepted: {e}"))
    })?;
    if !principal.scopes.contains(&oidc.scope) {
        return Err(ConsoleError::Forbidden(
            "your account's token lacks the console's scope; ask for it to be granted",
        ));
    }
    let Some(name) = session::clean_name(&principal.subject) else {
        return Err(ConsoleError::Unauthorized(
            "the token has no usable subject".into(),
        ));
    };
    let id = console.sessions.open(name)?;
    let clear = format!("{FLOW_COOKIE}=; Path=/oidc; HttpOnly; SameSite=Lax; Max-Age=0");
    // Appended: a second `Set-Cookie` must not replace the first.
    let cookies = AppendHeaders([
        (header::SET_COOKIE, session::session_cookie(&id)),
        (header::SET_COOKIE, clear),
    ]);
    Ok((cookies, Redirect::to("/tools")).into_response())
}

/// A bearer access token from the issuer with the console scope (for
/// scripts, when the console logs in through the issuer): its subject.
pub async fn bearer_subject(oidc: &Oidc, token: &str) -> Option<String> {
    let principal = oidc.authenticator.validate(token).await.ok()?;
    principal
        .scopes
        .contains(&oidc.scope)
        .then(|| session::clean_name(&principal.subject))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_rfc_7636s() {
        // RFC 7636 appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn the_flow_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            "a=1; console_oidc=abc; console_session=x"
                .parse()
                .expect("header"),
        );
        assert_eq!(flow_cookie(&headers), Some("abc"));
    }
}
