//! Test fixtures for OAuth: an in-process authorization server (metadata +
//! JWKS over loopback HTTP), Ed25519 signing keys, token minting, and an
//! MCP server protected by `transport::http::auth` (`common::oauth`, used
//! by `tests/oauth.rs`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcpwire_server::transport::http::auth::{AuthConfig, Authenticator, protect};
use mcpwire_server::transport::http::{self, HttpConfig};
use mcpwire_server::{AccessOptions, CallToolResult, Principal, Server, Tool};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::{META_CAPS, META_VERSION, V, WAIT, http_client};

// ------------------------------------------------------------ keys

/// An Ed25519 signing key with its public JWK.
pub struct TestKey {
    pub kid: String,
    pub encoding: EncodingKey,
    pub jwk: Value,
}

impl TestKey {
    pub fn generate(kid: &str) -> Self {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).expect("randomness");
        // PKCS#8 v1 wrapping of an Ed25519 seed (RFC 8410): fixed prefix + seed.
        let mut der = vec![
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        der.extend_from_slice(&seed);
        let encoding = EncodingKey::from_ed_der(&der);
        let jwk = Jwk::from_encoding_key(&encoding, Algorithm::EdDSA).expect("public jwk");
        let mut jwk = serde_json::to_value(jwk).expect("jwk json");
        jwk["kid"] = json!(kid);
        jwk["use"] = json!("sig");
        Self {
            kid: kid.to_owned(),
            encoding,
            jwk,
        }
    }

    /// Signs `claims` with this key (EdDSA, this kid).
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("sign")
    }
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// A JWT with an arbitrary header and an empty or given signature, for
/// tokens no library would produce (`alg: none`).
pub fn unsigned(header: &Value, claims: &Value, signature: &str) -> String {
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        signature
    )
}

// ------------------------------------------------------------ the IdP

/// A tiny authorization server: RFC 8414 metadata and a JWKS whose keys
/// the test can swap; counts JWKS fetches.
pub struct Idp {
    pub issuer: String,
    pub keys: Arc<Mutex<Vec<Value>>>,
    pub jwks_fetches: Arc<AtomicUsize>,
}

#[derive(Clone)]
struct IdpState {
    issuer: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
}

impl Idp {
    pub async fn start(keys: &[&TestKey]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind idp");
        let addr = listener.local_addr().expect("addr");
        let issuer = format!("http://{addr}");
        let state = IdpState {
            issuer: issuer.clone(),
            keys: Arc::new(Mutex::new(keys.iter().map(|k| k.jwk.clone()).collect())),
            fetches: Arc::new(AtomicUsize::new(0)),
        };
        let app = Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                get(|State(s): State<IdpState>| async move {
                    axum::Json(json!({
                        "issuer": s.issuer,
                        "jwks_uri": format!("{}/jwks", s.issuer),
                        "code_challenge_methods_supported": ["S256"],
                    }))
                }),
            )
            .route(
                "/jwks",
                get(|State(s): State<IdpState>| async move {
                    s.fetches.fetch_add(1, Ordering::SeqCst);
                    let keys = s.keys.lock().expect("keys").clone();
                    axum::Json(json!({ "keys": keys }))
                }),
            )
            .with_state(state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            issuer,
            keys: state.keys,
            jwks_fetches: state.fetches,
        }
    }

    pub fn publish(&self, keys: &[&TestKey]) {
        *self.keys.lock().expect("keys") = keys.iter().map(|k| k.jwk.clone()).collect();
    }

    pub fn fetches(&self) -> usize {
        self.jwks_fetches.load(Ordering::SeqCst)
    }
}

// ------------------------------------------------------------ the MCP server

/// The protected MCP server under test.
pub struct Mcp {
    pub base: String,
    pub url: String,
    pub audience: String,
    pub metadata_url: String,
    pub client: reqwest::Client,
}

/// Tools: `salary` needs `hr.read`; `whoami` is open and reports the
/// principal the transport established.
fn server() -> Server {
    let salary = Tool::builder("salary")
        .description("Reads salaries.")
        .required_scopes(["hr.read"])
        .raw_handler(|_ctx, _args| async move { Ok(CallToolResult::text("42").into()) });
    let whoami = Tool::builder("whoami")
        .description("Who is calling.")
        .raw_handler(|ctx, _args| async move {
            let p = ctx.extension::<Principal>().cloned().unwrap_or_default();
            let text = json!({
                "subject": p.subject,
                "scopes": p.scopes,
                "clientId": p.client_id,
                "selfId": p.self_id,
            });
            Ok(CallToolResult::text(text.to_string()).into())
        });
    let mut access = AccessOptions::default();
    access.enforce_scopes = true;
    Server::builder("oauth-test", "0.0.1")
        .access(access)
        .tool(salary)
        .tool(whoami)
        .build()
        .expect("server")
}

impl Mcp {
    /// Starts a protected server; `tweak` adjusts the auth configuration.
    pub async fn start(idp: &Idp, tweak: impl FnOnce(&mut AuthConfig)) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind mcp");
        let addr: SocketAddr = listener.local_addr().expect("addr");
        let base = format!("http://{addr}");
        let audience = format!("{base}/mcp");
        let mut config = AuthConfig::new(idp.issuer.clone(), audience.clone());
        config.scopes_supported = vec!["hr.read".into(), "offline_access".into()];
        config.required_scope_hint = Some("hr.read".into());
        config.self_id_claim = Some("employee_id".into());
        config.leeway = Duration::from_secs(5);
        tweak(&mut config);
        let auth = Arc::new(Authenticator::new(config).expect("auth config"));
        let metadata_url = auth.resource_metadata_url().to_owned();
        let server = server();
        let router = http::router(
            server.clone(),
            HttpConfig {
                resource_metadata_url: Some(metadata_url.clone()),
                ..HttpConfig::default()
            },
        );
        let app = protect(router, auth);
        tokio::spawn(async move {
            let _ = http::serve(listener, app, server, std::future::pending()).await;
        });
        Self {
            url: audience.clone(),
            base,
            audience,
            metadata_url,
            client: http_client(),
        }
    }

    /// Claims a valid token for this server carries.
    pub fn claims(&self, idp: &Idp, scope: &str) -> Value {
        json!({
            "iss": idp.issuer,
            "aud": self.audience,
            "sub": "user-1",
            "client_id": "client-9",
            "employee_id": "E042",
            "scope": scope,
            "iat": now(),
            "exp": now() + 300,
        })
    }

    /// POSTs a modern-wire request with the given bearer token.
    pub async fn call(&self, token: Option<&str>, method: &str, params: Value) -> Reply {
        let mut params = params;
        params["_meta"] = json!({ META_VERSION: V, META_CAPS: {} });
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let mut rb = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", V)
            .header("Mcp-Method", method)
            .body(body.to_string());
        if let Some(name) = body["params"]["name"].as_str() {
            rb = rb.header("Mcp-Name", name);
        }
        if let Some(t) = token {
            rb = rb.bearer_auth(t);
        }
        send(rb).await
    }

    pub async fn tool(&self, token: Option<&str>, name: &str) -> Reply {
        self.call(
            token,
            "tools/call",
            json!({ "name": name, "arguments": {} }),
        )
        .await
    }
}

/// One HTTP reply, read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub raw: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn challenge(&self) -> &str {
        self.header("www-authenticate").unwrap_or_default()
    }
}

pub async fn send(rb: reqwest::RequestBuilder) -> Reply {
    let resp = tokio::time::timeout(WAIT, rb.send())
        .await
        .expect("reply in time")
        .expect("request sent");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let raw = resp.text().await.expect("body");
    let body = serde_json::from_str(&raw).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        body,
        raw,
    }
}
