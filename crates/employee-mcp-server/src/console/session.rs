//! Who may use the console: the console token, the sessions a login
//! opens (in memory, bounded, expiring), the CSRF token of each, and the
//! checks every request passes (Host, Origin, login) and the security
//! headers every response carries.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

use super::Console;
use super::error::ConsoleError;

/// Sessions kept at once; a login beyond it ends the oldest.
pub const MAX_SESSIONS: usize = 64;
/// How long a session lasts after its login.
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);
/// Longest operator name kept, in characters.
const MAX_NAME_CHARS: usize = 64;
/// The session cookie's name.
pub const COOKIE: &str = "console_session";

/// 32 random bytes as hex: console tokens, session ids, CSRF tokens.
pub fn random_hex() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares secrets in time independent of where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// An operator name as recorded: no control characters, trimmed, at most
/// 64 characters; `None` when nothing is left.
pub fn clean_name(name: &str) -> Option<String> {
    let name: String = name
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_NAME_CHARS)
        .collect();
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// The logged-in operator of a request.
#[derive(Clone, Debug)]
pub struct Operator {
    /// The name given at login.
    pub name: String,
    /// The session's CSRF token; `None` for a bearer-token script, which
    /// a browser cannot be tricked into sending.
    pub csrf: Option<String>,
}

impl Operator {
    /// Who a change is recorded as: `console:NAME`.
    pub fn actor(&self) -> String {
        format!("console:{}", self.name)
    }

    /// Checks a form's CSRF field against the session's.
    pub fn check_csrf(&self, sent: Option<&str>) -> Result<(), ConsoleError> {
        match (&self.csrf, sent) {
            (None, _) => Ok(()),
            (Some(want), Some(sent)) if same_secret(want, sent) => Ok(()),
            _ => Err(ConsoleError::Forbidden(
                "missing or wrong CSRF token; reload the page and try again",
            )),
        }
    }
}

struct Session {
    operator: Operator,
    started: Instant,
}

/// The open sessions, by id.
#[derive(Default)]
pub struct Sessions {
    open: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        // A panic while holding the map leaves it consistent (one insert
        // or remove at a time), so a poisoned lock is still usable.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a session for `name`; returns its id.
    pub fn open(&self, name: String) -> Result<String, getrandom::Error> {
        let id = random_hex()?;
        let csrf = random_hex()?;
        let mut open = self.lock();
        open.retain(|_, s| s.started.elapsed() < SESSION_TTL);
        while open.len() >= MAX_SESSIONS {
            let oldest = open
                .iter()
                .min_by_key(|(_, s)| s.started)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => open.remove(&id),
                None => break,
            };
        }
        let operator = Operator {
            name,
            csrf: Some(csrf),
        };
        let started = Instant::now();
        open.insert(id.clone(), Session { operator, started });
        Ok(id)
    }

    /// The operator of live session `id`.
    pub fn get(&self, id: &str) -> Option<Operator> {
        let open = self.lock();
        let s = open.get(id)?;
        (s.started.elapsed() < SESSION_TTL).then(|| s.operator.clone())
    }

    /// Ends session `id`.
    pub fn close(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// The session id in a request's cookies.
pub fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v)
}

/// The cookie that opens session `id`.
pub fn session_cookie(id: &str) -> String {
    format!(
        "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
        SESSION_TTL.as_secs()
    )
}

/// The cookie that ends a session.
pub fn expired_cookie() -> String {
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
}

/// A 429 answer saying when to come back.
pub fn too_many(wait: Duration, body: impl IntoResponse) -> Response {
    let secs = (wait.as_secs() + 1).to_string();
    let mut res = (StatusCode::TOO_MANY_REQUESTS, body).into_response();
    if let Ok(v) = HeaderValue::from_str(&secs) {
        res.headers_mut().insert(header::RETRY_AFTER, v);
    }
    res
}

/// Who a request says it is.
enum Claim {
    /// A session cookie naming an open session.
    Session(Operator),
    /// The console token as `Authorization: Bearer` (`console:token`).
    Bearer(Operator),
    /// A bearer token that is not the console's.
    WrongBearer,
    /// Nothing usable.
    Nobody,
}

async fn claim_of(console: &Console, headers: &HeaderMap) -> Claim {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if let Some(token) = bearer {
        // Logging in through the issuer: its access tokens, not ours.
        if let Some(subject) = console.issuer_bearer(token.trim()).await {
            return match subject {
                Some(name) => Claim::Bearer(Operator { name, csrf: None }),
                None => Claim::WrongBearer,
            };
        }
        if !same_secret(token.trim(), &console.token) {
            return Claim::WrongBearer;
        }
        let name = "token".into();
        return Claim::Bearer(Operator { name, csrf: None });
    }
    match session_id(headers).and_then(|id| console.sessions.get(id)) {
        Some(op) => Claim::Session(op),
        None => Claim::Nobody,
    }
}

/// The operator a request is from; a bearer token counts as a login, so
/// it is bounded with the form's: `Err(wait)` while the bucket is empty.
async fn operator_of(console: &Console, headers: &HeaderMap) -> Result<Option<Operator>, Duration> {
    let claim = claim_of(console, headers).await;
    if matches!(claim, Claim::Bearer(_) | Claim::WrongBearer) {
        console.logins.check(Instant::now())?;
    }
    Ok(match claim {
        Claim::Session(op) | Claim::Bearer(op) => Some(op),
        Claim::WrongBearer => {
            console.logins.failed(Instant::now());
            None
        }
        Claim::Nobody => None,
    })
}

/// Every request: a Host and (when sent) an Origin naming the console
/// itself, against DNS rebinding and cross-site posts.
pub async fn guard(State(console): State<Arc<Console>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host_ok = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| console.hosts.iter().any(|ok| ok == h));
    if !host_ok {
        return ConsoleError::Forbidden("unknown Host; open the console at its own address")
            .into_response();
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ours = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| console.hosts.iter().any(|ok| ok == o));
        if !ours && req.method() != Method::GET {
            return ConsoleError::Forbidden("a request from another origin is refused")
                .into_response();
        }
    }
    next.run(req).await
}

/// Pages behind the login: the operator goes into the request's
/// extensions; without one, a browser is sent to the login form and
/// anything else gets 401.
pub async fn require_login(
    State(console): State<Arc<Console>>,
    mut req: Request,
    next: Next,
) -> Response {
    let operator = match operator_of(&console, req.headers()).await {
        Ok(operator) => operator,
        Err(wait) => return too_many(wait, "too many failed logins; wait"),
    };
    match operator {
        Some(operator) => {
            req.extensions_mut().insert(operator);
            next.run(req).await
        }
        None if req.method() == Method::GET => Redirect::to("/login").into_response(),
        None => (StatusCode::UNAUTHORIZED, "log in to the console first").into_response(),
    }
}

/// The security headers of every response.
pub async fn headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    let set = [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        // Not `no-referrer`: under it a browser sends `Origin: null` with
        // its own form posts, which the Origin check must refuse.
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    for (name, value) in set {
        h.insert(name, HeaderValue::from_static(value));
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cleaned_and_bounded() {
        assert_eq!(clean_name("  ann\u{7}e "), Some("anne".into()));
        assert_eq!(clean_name(" \n "), None);
        assert_eq!(clean_name(&"x".repeat(100)).map(|n| n.len()), Some(64));
    }

    #[test]
    fn sessions_are_bounded() {
        let s = Sessions::default();
        let first = s.open("a".into()).expect("session");
        for _ in 0..MAX_SESSIONS {
            s.open("b".into()).expect("session");
        }
        assert!(s.get(&first).is_none(), "the oldest session ended");
        assert_eq!(s.lock().len(), MAX_SESSIONS);
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
    }
}
