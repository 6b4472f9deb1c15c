//! Harness for the access-control and audit tests: the real binary on a
//! free loopback port and a private database, the `audit` subcommand, and a
//! test authorization server (an Ed25519 key whose JWKS is served on
//! loopback, and tokens signed with it).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_employee-mcp-server");
/// The stateless wire's revision.
pub const MODERN: &str = "2026-07-28";
/// Generous upper bound for anything the server does.
pub const TIMEOUT: Duration = Duration::from_secs(30);

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A unique path in the system temp directory.
pub fn temp_path(tag: &str, ext: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!(
        "employee-mcp-access-{}-{tag}-{n}.{ext}",
        std::process::id()
    ))
}

fn remove_db_files(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

/// Bytes of a database the binary seeded itself (once per test process).
fn seeded_template() -> &'static [u8] {
    static TEMPLATE: OnceLock<Vec<u8>> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let path = temp_path("template", "db");
        let status = Command::new(BIN)
            .arg("--stdio")
            .arg("--database")
            .arg(format!("sqlite://{}", path.display()))
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run the server to seed a template database");
        assert!(status.success(), "seeding run failed: {status}");
        let bytes = std::fs::read(&path).expect("read the seeded template database");
        remove_db_files(&path);
        bytes
    })
}

#[path = "../../../employee-directory/tests/common/pg.rs"]
pub mod pg;

/// A private seeded database file, removed on drop; or (with `postgres`
/// set) a per-test PostgreSQL copy of a seeded template database.
pub struct TempDb {
    pub path: PathBuf,
    pub postgres: Option<String>,
}

impl TempDb {
    pub fn seeded() -> Self {
        let path = temp_path("db", "db");
        std::fs::write(&path, seeded_template()).expect("write test database");
        TempDb {
            path,
            postgres: None,
        }
    }

    /// A seeded PostgreSQL database (blocking: call off the async threads
    /// or before the runtime is busy).
    pub fn seeded_postgres() -> Self {
        TempDb {
            path: temp_path("unused", "db"),
            postgres: Some(pg::seeded_database()),
        }
    }

    pub fn url(&self) -> String {
        match &self.postgres {
            Some(url) => url.clone(),
            None => format!("sqlite://{}", self.path.display()),
        }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        remove_db_files(&self.path);
    }
}

/// One HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
    pub body: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    #[track_caller]
    pub fn result(&self) -> &Value {
        assert!(
            self.status == 200 && self.body.get("result").is_some(),
            "expected a result, got HTTP {} {}",
            self.status,
            self.text
        );
        &self.body["result"]
    }

    pub fn error_code(&self) -> Option<i64> {
        self.body["error"]["code"].as_i64()
    }

    /// Names in a tools/list result.
    #[track_caller]
    pub fn tool_names(&self) -> Vec<String> {
        self.result()["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools: {}", self.text))
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }
}

/// A reqwest builder usable in this process: reqwest is compiled with
/// `rustls-no-provider` (for mcp-server's JWKS client), so a crypto provider
/// must be installed first.
pub fn client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

/// The real binary serving Streamable HTTP on a free loopback port; killed
/// on drop.
pub struct Server {
    child: Child,
    pub addr: String,
    client: reqwest::Client,
}

impl Server {
    /// Starts on `db` with extra flags.
    pub async fn start(db: &TempDb, args: &[&str]) -> Server {
        let port_file = temp_path("port", "txt");
        let mut child = Command::new(BIN)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--database")
            .arg(db.url())
            .arg("--port-file")
            .arg(&port_file)
            .args(args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn employee-mcp-server");
        let deadline = Instant::now() + TIMEOUT;
        let addr = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file)
                && text.trim().parse::<std::net::SocketAddr>().is_ok()
            {
                break text.trim().to_owned();
            }
            if let Some(status) = child.try_wait().expect("poll server") {
                let _ = std::fs::remove_file(&port_file);
                panic!("server exited before listening: {status}");
            }
            assert!(Instant::now() < deadline, "server did not start in time");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let _ = std::fs::remove_file(&port_file);
        Server {
            child,
            addr,
            client: client_builder()
                .no_proxy()
                .timeout(TIMEOUT)
                .build()
                .expect("HTTP client"),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill_9(&mut self) {
        let status = Command::new("kill")
            .arg("-KILL")
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success());
        let _ = self.child.wait();
    }

    /// A modern request, with an optional bearer token.
    pub async fn request(&self, method: &str, params: Value, token: Option<&str>) -> Reply {
        static ID: AtomicU64 = AtomicU64::new(1);
        let mut params = match params {
            Value::Null => json!({}),
            p => p,
        };
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "access-tests", "version": "1"}
        });
        let id = ID.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut req = self
            .client
            .post(self.url())
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", MODERN)
            .header("Mcp-Method", method);
        if let Some(name) = body["params"]["name"].as_str() {
            req = req.header("Mcp-Name", name);
        }
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req.json(&body).send().await.expect("HTTP request");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.expect("read body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            text,
            body,
        }
    }

    pub async fn call(&self, tool: &str, arguments: Value, token: Option<&str>) -> Reply {
        self.request(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            token,
        )
        .await
    }

    pub async fn list(&self, token: Option<&str>) -> Reply {
        self.request("tools/list", json!({}), token).await
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `employee-mcp-server audit --database <db> --json <args>` and
/// returns the rows.
pub fn audit_rows(db: &TempDb, args: &[&str]) -> Vec<Value> {
    let out = Command::new(BIN)
        .arg("audit")
        .arg("--database")
        .arg(db.url())
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
