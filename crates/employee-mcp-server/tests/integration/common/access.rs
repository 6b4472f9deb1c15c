//! The access-control and audit layer of the harness (`common::access`):
//! a test authorization server (an Ed25519 key whose JWKS is served on
//! loopback, and tokens signed with it), requests carrying its bearer
//! tokens, and the `audit` subcommand.

use std::io::{Read, Write};
use std::net::TcpListener;
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

/// A fake authorization server: the JWKS on a loopback port, tokens signed
/// with the matching key. The JWKS thread serves until the process ends.
pub struct Issuer {
    pub issuer: String,
    pub jwks_url: String,
    pub audience: String,
}

impl Issuer {
    pub fn start() -> Issuer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind JWKS listener");
        let addr = listener.local_addr().expect("JWKS address");
        let jwks = json!({"keys": [{
            "kty": "OKP", "crv": "Ed25519", "x": PUBLIC_X, "kid": KID, "alg": "EdDSA", "use": "sig"
        }]})
        .to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{jwks}",
                    jwks.len()
                );
                let _ = s.write_all(response.as_bytes());
            }
        });
        Issuer {
            issuer: format!("http://{addr}"),
            jwks_url: format!("http://{addr}/jwks.json"),
            audience: "http://127.0.0.1/mcp".to_owned(),
        }
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
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut claims = json!({
            "iss": self.issuer,
            "aud": self.audience,
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
}
