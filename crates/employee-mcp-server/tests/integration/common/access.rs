//! The access-control and audit layer of the harness (`common::access`):
//! a test authorization server (an Ed25519 key whose JWKS is served on
//! loopback, and tokens signed with it), requests carrying its bearer
//! tokens, and the `audit` subcommand.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use base64::Engine;
use sha2::Digest;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcpwire_server::protocol::meta;
use serde_json::{Value, json};

use super::{BIN, Reply, Server, TempDb, modern_body, next_id};

impl Server {
    /// A modern request (`clientInfo` named `access-tests`), with an
    /// optional bearer token.
    pub async fn request_as(&self, method: &str, params: Value, token: Option<&str>) -> Reply {
        let mut body = modern_body(next_id(), method, params);
        // The audit records the client's name (`client_name`).
        body["params"]["_meta"][meta::CLIENT_INFO] =
            json!({"name": "access-tests", "version": "1"});
        let auth = token.map(|t| format!("Bearer {t}"));
        let extra: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        self.post_modern(&body, &extra).await
    }

    /// A modern `tools/call` with an optional bearer token.
    pub async fn call_as(&self, tool: &str, arguments: Value, token: Option<&str>) -> Reply {
        let params = json!({"name": tool, "arguments": arguments});
        self.request_as("tools/call", params, token).await
    }

    /// A modern `tools/list` with an optional bearer token.
    pub async fn list_as(&self, token: Option<&str>) -> Reply {
        self.request_as("tools/list", json!({}), token).await
    }
}

/// Runs `employee-mcp-server audit --database <db> --json <args>` and
/// returns the rows.
pub fn audit_rows(db: &TempDb, args: &[&str]) -> Vec<Value> {
    audit_rows_at(&db.url(), args)
}

/// [`audit_rows`] of the database at `url` (SQLite or PostgreSQL).
pub fn audit_rows_at(url: &str, args: &[&str]) -> Vec<Value> {
    let out = Command::new(BIN)
        .arg("audit")
        .arg("--database")
        .arg(url)
        .arg("--json")
        .args(args)
        .output()
        .expect("run the audit subcommand");
    assert!(
        out.status.success(),
        "audit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Runs `audit` without `--json`: the table.
pub fn audit_table(db: &TempDb, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .arg("audit")
        .arg("--database")
        .arg(db.url())
        .args(args)
        .output()
        .expect("run the audit subcommand");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Test-only Ed25519 signing key (generated for these tests; it protects
/// nothing).
const SIGNING_KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIATt281D3lCgfUSzjQYMHKtX59aW+OoTUJBrBM5cdwM3
-----END PRIVATE KEY-----
";
/// Its public half, base64url.
const PUBLIC_X: &str = "HNObntDD9ORtYPzalIxar-1y3oTBQYcRbMbIl2HorkE";
const KID: &str = "access-test-key";

/// A fake authorization server on a loopback port: the JWKS, tokens signed
/// with the matching key, and (for the console's login) the metadata, an
/// authorization endpoint that logs in whoever [`Issuer::log_in_as`] names
/// at once, and a token endpoint that checks the PKCE verifier. Its
/// thread serves until the process ends.
pub struct Issuer {
    pub issuer: String,
    pub jwks_url: String,
    pub audience: String,
    /// Who the authorization endpoint logs in, and the codes it gave.
    flows: Arc<Mutex<Flows>>,
}

/// The authorization endpoint's state.
#[derive(Default)]
struct Flows {
    /// (subject, scope) of the next login; `None`: the person refuses.
    login: Option<(String, String)>,
    /// code → (S256 challenge, redirect_uri, subject, scope).
    codes: HashMap<String, (String, String, String, String)>,
    /// Codes handed out so far (also makes each one distinct).
    issued: u64,
    /// Reads of the metadata document.
    metadata_reads: u64,
}

/// One HTTP request as the issuer reads it: method, target, body.
fn read_request(s: &mut std::net::TcpStream) -> Option<(String, String, String)> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    while data.len() < head_end + length {
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        data.extend_from_slice(&buf[..n]);
    }
    let mut line = head.lines().next()?.split(' ');
    let method = line.next()?.to_owned();
    let target = line.next()?.to_owned();
    let body = String::from_utf8_lossy(&data[head_end..]).to_string();
    Some((method, target, body))
}

fn form(text: &str) -> HashMap<String, String> {
    form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

impl Issuer {
    pub fn start() -> Issuer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the issuer's listener");
        let addr = listener.local_addr().expect("the issuer's address");
        let issuer = format!("http://{addr}");
        let audience = "http://127.0.0.1/mcp".to_owned();
        let flows = Arc::new(Mutex::new(Flows::default()));
        let (iss, aud, shared) = (issuer.clone(), audience.clone(), Arc::clone(&flows));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let Some((method, target, body)) = read_request(&mut s) else {
                    continue;
                };
                let (status, headers, text) = answer(&iss, &aud, &shared, &method, &target, &body);
                let response = format!(
                    "HTTP/1.1 {status}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = s.write_all(response.as_bytes());
            }
        });
        Issuer {
            jwks_url: format!("{issuer}/jwks.json"),
            issuer,
            audience,
            flows,
        }
    }

    /// How often the metadata document was read.
    pub fn metadata_reads(&self) -> u64 {
        self.flows
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .metadata_reads
    }

    /// The next login at the authorization endpoint is `sub` with `scope`;
    /// `None`: the person refuses (`error=access_denied`).
    pub fn log_in_as(&self, login: Option<(&str, &str)>) {
        let mut flows = self.flows.lock().unwrap_or_else(|p| p.into_inner());
        flows.login = login.map(|(s, c)| (s.to_owned(), c.to_owned()));
    }

    /// The flags that make the server trust this issuer.
    pub fn flags(&self) -> Vec<String> {
        vec![
            "--auth-issuer".into(),
            self.issuer.clone(),
            "--auth-audience".into(),
            self.audience.clone(),
            "--auth-jwks-url".into(),
            self.jwks_url.clone(),
        ]
    }

    /// A token for `sub` with `scope`, and an optional `employee_id` claim.
    pub fn token(&self, sub: &str, scope: &str, employee_id: Option<&str>) -> String {
        sign(&self.issuer, &self.audience, sub, scope, employee_id)
    }
}

/// A token of `issuer` for `audience`.
fn sign(issuer: &str, audience: &str, sub: &str, scope: &str, employee_id: Option<&str>) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut claims = json!({
        "iss": issuer,
        "aud": audience,
        "sub": sub,
        "scope": scope,
        "client_id": "access-test-client",
        "iat": now,
        "exp": now + 600,
    });
    if let Some(id) = employee_id {
        claims["employee_id"] = json!(id);
    }
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = Some(KID.to_owned());
    let key = jsonwebtoken::EncodingKey::from_ed_pem(SIGNING_KEY_PEM.as_bytes())
        .expect("parse the test signing key");
    jsonwebtoken::encode(&header, &claims, &key).expect("sign a test token")
}

/// The issuer's answer to one request: status line, extra headers, body.
fn answer(
    issuer: &str,
    audience: &str,
    flows: &Mutex<Flows>,
    method: &str,
    target: &str,
    body: &str,
) -> (&'static str, String, String) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut flows = flows.lock().unwrap_or_else(|p| p.into_inner());
    match (method, path) {
        ("GET", "/.well-known/oauth-authorization-server") => {
            flows.metadata_reads += 1;
            let doc = json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": format!("{issuer}/token"),
                "jwks_uri": format!("{issuer}/jwks.json"),
                "code_challenge_methods_supported": ["S256"],
            });
            ("200 OK", String::new(), doc.to_string())
        }
        ("GET", "/authorize") => {
            let q = form(query);
            let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
            let state = q.get("state").cloned().unwrap_or_default();
            let pkce = q.get("code_challenge_method").map(String::as_str) == Some("S256");
            let resource = q.get("resource").map(String::as_str) == Some(audience);
            let location = match (
                flows.login.clone(),
                pkce && resource && q.get("response_type").map(String::as_str) == Some("code"),
            ) {
                (Some((sub, scope)), true) => {
                    flows.issued += 1;
                    let code = format!("code-{}", flows.issued);
                    let challenge = q.get("code_challenge").cloned().unwrap_or_default();
                    let entry = (challenge, redirect.clone(), sub.clone(), scope.clone());
                    flows.codes.insert(code.clone(), entry);
                    format!("{redirect}?code={code}&state={state}")
                }
                (None, true) => format!("{redirect}?error=access_denied&state={state}"),
                (_, false) => format!("{redirect}?error=invalid_request&state={state}"),
            };
            (
                "302 Found",
                format!("Location: {location}\r\n"),
                "{}".to_owned(),
            )
        }
        ("POST", "/token") => {
            let f = form(body);
            let get = |k: &str| f.get(k).cloned().unwrap_or_default();
            let verified =
                flows
                    .codes
                    .remove(&get("code"))
                    .filter(|(challenge, redirect, _, _)| {
                        let digest = sha2::Sha256::digest(get("code_verifier").as_bytes());
                        let computed =
                            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
                        &computed == challenge && redirect == &get("redirect_uri")
                    });
            match verified {
                Some((_, _, sub, scope)) => {
                    let token = sign(issuer, audience, &sub, &scope, None);
                    let doc =
                        json!({"access_token": token, "token_type": "Bearer", "expires_in": 600});
                    ("200 OK", String::new(), doc.to_string())
                }
                None => (
                    "400 Bad Request",
                    String::new(),
                    json!({"error": "invalid_grant"}).to_string(),
                ),
            }
        }
        _ => {
            let jwks = json!({"keys": [{
                "kty": "OKP", "crv": "Ed25519", "x": PUBLIC_X, "kid": KID, "alg": "EdDSA", "use": "sig"
            }]});
            ("200 OK", String::new(), jwks.to_string())
        }
    }
}
