//! Shared harness for the end-to-end tests: spawns the real
//! `employee-mcp-server` binary (HTTP on a free port, or stdio) on a private
//! temporary database, and offers small helpers for both MCP wires.
//!
//! Seeding a fresh database takes about a second in debug builds, so each
//! test process seeds one template database once (by running the binary
//! itself on it), keeps its bytes in memory, deletes the file, and gives every
//! server its own copy.
//!
//! Two ways to talk to it:
//!
//! - **The library's client** (`mcpwire_server::client::Client`) for
//!   well-formed MCP traffic, so tests read as what a real client sees:
//!   [`Server::client`], [`Server::rpc`], [`Server::call_tool`],
//!   [`Server::tool_names`], [`Server::assert_alive`],
//!   [`Server::listen_tools`] + [`next_list_change`],
//!   [`Server::legacy_client`] (a legacy session), [`details_asking`] (one
//!   elicitation round), the free [`rpc`] / [`rpc_error`] / [`call`] for any
//!   client, and [`StdioClient`] (the binary on stdio, child-process mode).
//! - **Raw wire** for tests that deliberately send malformed or hostile
//!   bytes or assert HTTP-level facts (status codes, headers, Host/Origin
//!   checks, oversize bodies, bad JSON, SSE framing, connection limits,
//!   what exactly stdout carries): [`http_request`] / [`Server::send`] /
//!   [`Server::post_json`] / [`Server::post_modern`] / [`Server::modern`]
//!   (a minimal HTTP/1.1 client on a plain `TcpStream`, `Connection:
//!   close`, one request per connection, so tests can send arbitrary Host
//!   headers and non-UTF-8 header values and see every status and header),
//!   [`Server::legacy`] + [`LegacySession`] (the handshake and session
//!   headers by hand), [`SessionStream`] (raw SSE bytes of a GET
//!   stream), and [`StdioServer`] (line I/O on the child's pipes).
//!
//! [`client_builder`] gives a reqwest client (crypto provider installed)
//! where a test wants one. [`access`] adds bearer tokens from a test
//! issuer and the `audit` subcommand.

/// A fresh PostgreSQL database per test (shared with employee-directory).
#[path = "../../../../employee-directory/tests/integration/common/pg.rs"]
pub mod pg;

/// PostgreSQL + replicas + nginx, started with `scripts/cluster`.
pub mod cluster;

/// Bearer tokens from a test issuer, and the `audit` subcommand.
pub mod access;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mcpwire_server::client::{Client, ClientError, Subscription};
use mcpwire_server::protocol::{ProtocolVersion, meta};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_employee-mcp-server");
/// The stateless wire's revision.
pub const MODERN: &str = "2026-07-28";
/// Every legacy revision the server claims to serve.
pub const LEGACY_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The eight tools, in the article's order.
pub const TOOL_NAMES: [&str; 8] = [
    "get-employee-details",
    "list-department-employees",
    "calculate-employee-tenure",
    "get-team-members",
    "search-employees-by-skill",
    "get-compensation-info",
    "check-leave-balance",
    "generate-employee-report",
];
/// Generous upper bound for anything the server does.
pub const TIMEOUT: Duration = Duration::from_secs(30);

static COUNTER: AtomicU64 = AtomicU64::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh JSON-RPC request id.
pub fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// A unique path in the system temp directory.
pub fn temp_path(tag: &str, ext: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!(
        "employee-mcp-e2e-{}-{tag}-{n}.{ext}",
        std::process::id()
    ))
}

fn remove_db_files(path: &Path) {
    // The audit trail's file beside it (`x.db` → `x.audit.db`).
    let trail = audit_trail_file(path);
    for file in [path, trail.as_path()] {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = file.as_os_str().to_owned();
            p.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(p));
        }
    }
}

/// Where a server keeps the audit trail of the SQLite file `path`.
pub fn audit_trail_file(path: &Path) -> PathBuf {
    let mut name = path.file_stem().unwrap_or_default().to_os_string();
    name.push(".audit");
    if let Some(ext) = path.extension() {
        name.push(".");
        name.push(ext);
    }
    path.with_file_name(name)
}

/// Bytes of a database the binary created, migrated and seeded itself,
/// with the default approvals off ([`approvals_off`]).
fn seeded_template() -> &'static [u8] {
    static TEMPLATE: OnceLock<Vec<u8>> = OnceLock::new();
    TEMPLATE.get_or_init(|| template(true))
}

/// Bytes of a database as the binary seeded it: the declared approval
/// defaults, an empty catalogue history.
fn pristine_template() -> &'static [u8] {
    static TEMPLATE: OnceLock<Vec<u8>> = OnceLock::new();
    TEMPLATE.get_or_init(|| template(false))
}

fn template(without_approvals: bool) -> Vec<u8> {
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
    if without_approvals {
        approvals_off(&format!("sqlite://{}", path.display()));
    }
    let bytes = std::fs::read(&path).expect("read the seeded template database");
    remove_db_files(&path);
    assert!(bytes.len() > 100_000, "template database looks empty");
    bytes
}

/// The tools that ask for a person's yes by default.
pub const GATED_TOOLS: [&str; 2] = ["get-compensation-info", "generate-employee-report"];

/// Turns the default approvals off on the database at `url`, with the CLI
/// an operator would use: the seeded databases are a company that decided
/// so, because the tests of other concerns call compensation tools with
/// clients that do not confirm. The approval tests start from a database
/// the server seeds itself ([`TempDb::empty`]) or as it left it
/// ([`TempDb::pristine_on`]).
pub fn approvals_off(url: &str) {
    for tool in GATED_TOOLS {
        set_approval(url, tool, "none");
    }
}

/// `tools approval TOOL LEVEL` on the database at `url`.
pub fn set_approval(url: &str, tool: &str, level: &str) {
    let out = Command::new(BIN)
        .args(["tools", "approval", tool, level, "--actor", "test-setup"])
        .args(["--database", url])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run tools approval");
    assert!(
        out.status.success(),
        "tools approval {tool} {level}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Which database a test server runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A private, already seeded database, removed on drop (unless it is a
/// [`TempDb::share`]d handle on another's): a SQLite file, or (with
/// `postgres` set) a per-test copy of a seeded PostgreSQL template database
/// (dropped from the scratch cluster with it).
pub struct TempDb {
    /// The SQLite file (unused for PostgreSQL).
    pub path: PathBuf,
    /// The PostgreSQL URL, when the database is on PostgreSQL.
    pub postgres: Option<String>,
    owned: bool,
}

impl TempDb {
    /// A copy of the seeded template.
    pub fn seeded() -> Self {
        let path = temp_path("db", "db");
        std::fs::write(&path, seeded_template()).expect("write test database");
        TempDb {
            path,
            postgres: None,
            owned: true,
        }
    }

    /// Another handle on the same database (for a second server on it);
    /// only the original removes the file.
    pub fn share(&self) -> TempDb {
        TempDb {
            path: self.path.clone(),
            postgres: self.postgres.clone(),
            owned: false,
        }
    }

    /// A seeded database on `backend`.
    pub fn seeded_on(backend: Backend) -> Self {
        match backend {
            Backend::Sqlite => TempDb::seeded(),
            Backend::Postgres => {
                let db = TempDb {
                    path: temp_path("unused", "db"),
                    postgres: Some(pg::seeded_database()),
                    owned: true,
                };
                approvals_off(&db.url());
                db
            }
        }
    }

    /// A seeded database on `backend` as the server left it: the declared
    /// approval defaults, nothing in the catalogue's history.
    pub fn pristine_on(backend: Backend) -> Self {
        match backend {
            Backend::Sqlite => {
                let path = temp_path("db", "db");
                std::fs::write(&path, pristine_template()).expect("write test database");
                TempDb {
                    path,
                    postgres: None,
                    owned: true,
                }
            }
            Backend::Postgres => TempDb {
                path: temp_path("unused", "db"),
                postgres: Some(pg::seeded_database()),
                owned: true,
            },
        }
    }

    /// A path where no database exists yet (the server creates and seeds it).
    pub fn empty() -> Self {
        TempDb {
            path: temp_path("fresh", "db"),
            postgres: None,
            owned: true,
        }
    }

    /// The PostgreSQL database at `url`, left in place on drop (for a
    /// database on a cluster of its own, e.g. one a test stops).
    pub fn postgres_at(url: &str) -> Self {
        TempDb {
            path: temp_path("unused", "db"),
            postgres: Some(url.to_owned()),
            owned: false,
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
        if !self.owned {
            return;
        }
        remove_db_files(&self.path);
        if let Some(url) = &self.postgres {
            pg::drop_database(url);
        }
    }
}

/// One HTTP response, body parsed as JSON when possible.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
    /// The body as JSON, `Value::Null` when empty or not JSON.
    pub body: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().expect("ascii header").to_owned())
    }

    /// The `result` member; panics (with the reply) when absent.
    pub fn result(&self) -> &Value {
        assert!(
            self.body.get("result").is_some(),
            "expected a result, got HTTP {} {}",
            self.status,
            self.text
        );
        &self.body["result"]
    }

    /// The `error.code` member; panics (with the reply) when absent.
    pub fn error_code(&self) -> i64 {
        self.body["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("expected an error, got HTTP {} {}", self.status, self.text))
    }

    /// Names in a `tools/list` result; panics (with the reply) when absent.
    #[track_caller]
    pub fn tool_names(&self) -> Vec<String> {
        self.result()["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools: {}", self.text))
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }

    pub fn error_message(&self) -> String {
        self.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Asserts HTTP status and JSON-RPC error code together.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: i64) {
        assert_eq!(
            (self.status, self.error_code()),
            (status, code),
            "unexpected reply: HTTP {} {}",
            self.status,
            self.text
        );
        assert_eq!(self.body["jsonrpc"], "2.0", "{}", self.text);
        assert!(
            !self.error_message().is_empty(),
            "error without a message: {}",
            self.text
        );
    }
}

/// The `_meta` every modern request carries.
pub fn modern_meta() -> Value {
    json!({
        meta::PROTOCOL_VERSION: MODERN,
        meta::CLIENT_CAPABILITIES: {}
    })
}

/// A reqwest builder usable in this process: reqwest is compiled with
/// `rustls-no-provider` (for mcpwire-server's JWKS client), so a crypto provider
/// must be installed first.
pub fn client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

/// A modern request body: `params` plus the required `_meta`.
pub fn modern_body(id: u64, method: &str, params: Value) -> Value {
    let mut params = match params {
        Value::Null => json!({}),
        p => p,
    };
    params["_meta"] = modern_meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The headers a compliant modern client sends for `body`.
pub fn modern_headers(body: &Value) -> Vec<(String, String)> {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let mut h = vec![
        (
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
        ("MCP-Protocol-Version".to_owned(), MODERN.to_owned()),
        ("Mcp-Method".to_owned(), method.clone()),
    ];
    if method == "tools/call"
        && let Some(name) = body["params"]["name"].as_str()
    {
        h.push(("Mcp-Name".to_owned(), name.to_owned()));
    }
    h
}

/// Sends one HTTP/1.1 request to `addr` (`IP:PORT`) on a fresh connection
/// and reads the whole response. `Host` (unless given), `Content-Length` and
/// `Connection: close` are added. A failure to write the body (the server may
/// answer early and close) is ignored as long as a response can be read.
pub async fn http_request(
    addr: &str,
    method: &str,
    headers: &[(&str, &[u8])],
    body: Option<&[u8]>,
) -> std::io::Result<Reply> {
    tokio::time::timeout(TIMEOUT, http_request_inner(addr, method, headers, body))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "HTTP request timed out"))?
}

async fn http_request_inner(
    addr: &str,
    method: &str,
    headers: &[(&str, &[u8])],
    body: Option<&[u8]>,
) -> std::io::Result<Reply> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let mut head = format!("{method} /mcp HTTP/1.1\r\n").into_bytes();
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.extend_from_slice(format!("Host: {addr}\r\n").as_bytes());
    }
    for (k, v) in headers {
        head.extend_from_slice(k.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(v);
        head.extend_from_slice(b"\r\n");
    }
    if let Some(b) = body {
        head.extend_from_slice(format!("Content-Length: {}\r\n", b.len()).as_bytes());
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    stream.write_all(&head).await?;
    if let Some(b) = body {
        let _ = stream.write_all(b).await;
    }
    let _ = stream.flush().await;
    let mut raw = Vec::new();
    let read = stream.read_to_end(&mut raw).await;
    if raw.is_empty() {
        read?;
    }
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> std::io::Result<Reply> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_owned());
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("incomplete response head"))?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| bad("non-UTF-8 response head"))?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| bad("bad status line"))?;
    let mut headers = HeaderMap::new();
    for line in lines {
        let (k, v) = line.split_once(':').ok_or_else(|| bad("bad header line"))?;
        headers.append(
            HeaderName::from_bytes(k.trim().as_bytes()).map_err(|_| bad("bad header name"))?,
            HeaderValue::from_str(v.trim()).map_err(|_| bad("bad header value"))?,
        );
    }
    let mut body = raw[end + 4..].to_vec();
    let chunked = headers
        .get("transfer-encoding")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"chunked"));
    if chunked {
        body = dechunk(&body).ok_or_else(|| bad("bad chunked body"))?;
    } else if let Some(len) = headers
        .get("content-length")
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
    {
        if body.len() < len {
            return Err(bad("truncated body"));
        }
        body.truncate(len);
    }
    let text = String::from_utf8_lossy(&body).into_owned();
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Ok(Reply {
        status,
        headers,
        text,
        body: json,
    })
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}

/// The real binary serving Streamable HTTP on a free loopback port.
/// Dropping it kills the process and removes its files. [`Server::at`]
/// is an endpoint started by someone else (a replica or the balancer of a
/// [`cluster::Cluster`]): same helpers, nothing to stop on drop.
pub struct Server {
    child: Option<Child>,
    pub addr: String,
    port_file: Option<PathBuf>,
    /// Where stderr goes for [`Server::start_logged`].
    stderr: Option<PathBuf>,
    client: tokio::sync::OnceCell<Client>,
    _db: Option<TempDb>,
}

impl Server {
    /// A server on a private copy of the seeded database.
    pub async fn start() -> Server {
        Server::start_with(&[]).await
    }

    /// Same, with extra command-line flags.
    pub async fn start_with(args: &[&str]) -> Server {
        Server::start_on(TempDb::seeded(), args).await
    }

    /// A server on a private seeded database on `backend`.
    pub async fn start_backend(backend: Backend) -> Server {
        let db = tokio::task::spawn_blocking(move || TempDb::seeded_on(backend))
            .await
            .expect("create the test database");
        Server::start_on(db, &[]).await
    }

    /// A server on `db` (which may not exist yet).
    pub async fn start_on(db: TempDb, args: &[&str]) -> Server {
        Server::start_with_env(db, args, &[]).await
    }

    /// A server on `db` with extra flags and environment variables.
    pub async fn start_with_env(db: TempDb, args: &[&str], env: &[(&str, &str)]) -> Server {
        let url = db.url();
        Server::spawn(url, db, args, env, None).await
    }

    /// A server on `db` logging as in production: `RUST_LOG` and
    /// `EMPLOYEE_MCP_LOG_FORMAT` unset, stderr captured in a file (not a
    /// terminal) that [`Server::stop`] returns.
    pub async fn start_logged(db: TempDb, args: &[&str]) -> Server {
        let url = db.url();
        let stderr = temp_path("stderr", "log");
        Server::spawn(url, db, args, &[], Some(stderr)).await
    }

    /// A replica on a PostgreSQL database (`postgres://…`, e.g. from
    /// `pg::fresh_database`), with extra flags.
    pub async fn start_on_postgres(url: &str, args: &[&str]) -> Server {
        Server::spawn(url.to_owned(), TempDb::empty(), args, &[], None).await
    }

    async fn spawn(
        database: String,
        db: TempDb,
        args: &[&str],
        env: &[(&str, &str)],
        stderr: Option<PathBuf>,
    ) -> Server {
        let port_file = temp_path("port", "txt");
        let mut command = Command::new(BIN);
        command
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--database")
            .arg(database)
            .arg("--port-file")
            .arg(&port_file)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        match &stderr {
            Some(path) => {
                let log = std::fs::File::create(path).expect("create the stderr file");
                command
                    .env_remove("RUST_LOG")
                    .env_remove("EMPLOYEE_MCP_LOG_FORMAT")
                    .stderr(Stdio::from(log));
            }
            None => {
                command.env("RUST_LOG", "warn").stderr(Stdio::null());
            }
        }
        let mut child = command
            .envs(env.iter().copied())
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
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                let _ = std::fs::remove_file(&port_file);
                panic!("server did not write its port file within {TIMEOUT:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        Server {
            child: Some(child),
            addr,
            port_file: Some(port_file),
            stderr,
            client: tokio::sync::OnceCell::new(),
            _db: Some(db),
        }
    }

    /// The helpers of this type for an endpoint at `addr` (`IP:PORT`) that
    /// this harness did not start.
    pub fn at(addr: &str) -> Server {
        Server {
            child: None,
            addr: addr.to_owned(),
            port_file: None,
            stderr: None,
            client: tokio::sync::OnceCell::new(),
            _db: None,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The database this server serves.
    pub fn db(&self) -> &TempDb {
        self._db.as_ref().expect("a server this harness started")
    }

    /// Opens a modern `subscriptions/listen` stream for tool list changes
    /// (through the library's client) and waits for its acknowledgement;
    /// see [`next_list_change`].
    pub async fn listen_tools(&self) -> Subscription {
        let client = self.client().await;
        let listen = client.listen(json!({"toolsListChanged": true}));
        tokio::time::timeout(TIMEOUT, listen)
            .await
            .unwrap_or_else(|_| panic!("no acknowledgement within {TIMEOUT:?}"))
            .unwrap_or_else(|e| panic!("subscriptions/listen on {}: {e}", self.url()))
    }

    /// The names `tools/list` shows now (first page), through the client.
    pub async fn tool_names(&self) -> Vec<String> {
        let result = self.rpc("tools/list", json!({})).await;
        let result = result.unwrap_or_else(|e| panic!("tools/list: {e}"));
        names_of(&result)
    }

    pub fn pid(&self) -> u32 {
        self.child
            .as_ref()
            .expect("a server this harness started")
            .id()
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill_9(&mut self) {
        let status = Command::new("kill")
            .arg("-KILL")
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(status.success());
        let _ = self.child_mut().wait();
    }

    /// SIGTERM, wait for the exit, and return what the server wrote to
    /// stderr (captured by [`Server::start_logged`], empty otherwise).
    pub async fn stop(mut self) -> (std::process::ExitStatus, String) {
        sigterm(self.pid());
        let deadline = Instant::now() + TIMEOUT;
        let exit = loop {
            if let Some(s) = self.child_mut().try_wait().expect("poll child") {
                break s;
            }
            assert!(Instant::now() < deadline, "server did not stop");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let log = match &self.stderr {
            Some(path) => std::fs::read(path).expect("read stderr"),
            None => Vec::new(),
        };
        (exit, String::from_utf8_lossy(&log).into_owned())
    }

    pub fn child_mut(&mut self) -> &mut Child {
        self.child.as_mut().expect("a server this harness started")
    }

    /// Sends any request; a body gets `Content-Type: application/json`
    /// unless `headers` name another. Panics on transport errors.
    pub async fn send(
        &self,
        method: &str,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Reply {
        let mut all: Vec<(&str, &[u8])> = headers.iter().map(|(k, v)| (*k, v.as_bytes())).collect();
        if body.is_some()
            && !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            all.push(("Content-Type", b"application/json"));
        }
        self.try_send(method, &all, body.as_deref())
            .await
            .unwrap_or_else(|e| panic!("HTTP {method} to {} failed: {e}", self.url()))
    }

    /// Same, with raw header values, returning transport errors.
    pub async fn try_send(
        &self,
        method: &str,
        headers: &[(&str, &[u8])],
        body: Option<&[u8]>,
    ) -> std::io::Result<Reply> {
        http_request(&self.addr, method, headers, body).await
    }

    /// POSTs raw bytes with the given headers.
    pub async fn post_raw(&self, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Reply {
        self.send("POST", headers, Some(body.into())).await
    }

    /// POSTs a JSON value with the given headers.
    pub async fn post_json(&self, headers: &[(&str, &str)], body: &Value) -> Reply {
        self.post_raw(headers, serde_json::to_vec(body).unwrap())
            .await
    }

    /// POSTs a modern body with compliant headers, plus `extra` headers
    /// (which replace same-named compliant ones).
    pub async fn post_modern(&self, body: &Value, extra: &[(&str, &str)]) -> Reply {
        let mut headers: Vec<(String, String)> = modern_headers(body)
            .into_iter()
            .filter(|(k, _)| !extra.iter().any(|(e, _)| e.eq_ignore_ascii_case(k)))
            .collect();
        headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.post_json(&refs, body).await
    }

    /// A compliant modern request.
    pub async fn modern(&self, method: &str, params: Value) -> Reply {
        self.post_modern(&modern_body(next_id(), method, params), &[])
            .await
    }

    /// A modern `tools/call` through the library's client (HTTP mode);
    /// returns the result, panicking on a JSON-RPC error.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Value {
        call(self.client().await, name, arguments).await
    }

    /// A modern `tools/call` through the client that must fail with a
    /// JSON-RPC error; returns its code.
    pub async fn call_tool_error(&self, name: &str, arguments: Value) -> i64 {
        let params = json!({"name": name, "arguments": arguments});
        rpc_error(self.client().await, "tools/call", params).await
    }

    /// A modern request through the library's client: the result object,
    /// or the [`ClientError`] (a JSON-RPC error has its `.code()`).
    pub async fn rpc(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Map<String, Value>, ClientError> {
        rpc(self.client().await, method, params).await
    }

    /// This server's modern client (`mcpwire_server::client` over HTTP),
    /// connected on first use.
    pub async fn client(&self) -> &Client {
        self.client
            .get_or_init(|| async {
                Client::http(&self.url())
                    .connect()
                    .await
                    .unwrap_or_else(|e| panic!("client for {}: {e}", self.url()))
            })
            .await
    }

    /// A legacy session opened by the library's client (`initialize` at
    /// `version`, then `notifications/initialized`); closing it deletes
    /// the session. [`Server::legacy`] is the raw one, for tests of the
    /// handshake and of HTTP-level session facts.
    pub async fn legacy_client(&self, version: &str) -> Client {
        let v = ProtocolVersion::parse(version)
            .unwrap_or_else(|| panic!("not a protocol version: {version}"));
        let connect = Client::http(&self.url()).legacy(v).connect();
        tokio::time::timeout(TIMEOUT, connect)
            .await
            .unwrap_or_else(|_| panic!("initialize {version} took over {TIMEOUT:?}"))
            .unwrap_or_else(|e| panic!("legacy {version} session on {}: {e}", self.url()))
    }

    /// A good request proving the server still serves (through the client).
    pub async fn assert_alive(&self) {
        let list = self.rpc("tools/list", json!({})).await;
        let list = list.unwrap_or_else(|e| panic!("server stopped serving: {e}"));
        assert_eq!(names_of(&list).len(), 8, "{list:?}");
        let result = self
            .call_tool(
                "get-employee-details",
                json!({"employeeId": "AliceJohnson"}),
            )
            .await;
        assert_eq!(result["structuredContent"]["employeeId"], "AliceJohnson");
    }

    /// Opens a legacy session: `initialize` (with `version`, or none) then
    /// `notifications/initialized`.
    pub async fn legacy(&self, version: Option<&str>) -> LegacySession<'_> {
        let mut params = json!({
            "capabilities": {},
            "clientInfo": {"name": "e2e-tests", "version": "1.0.0"}
        });
        if let Some(v) = version {
            params["protocolVersion"] = json!(v);
        }
        let init = self
            .post_json(
                &[("Accept", "application/json, text/event-stream")],
                &json!({"jsonrpc": "2.0", "id": next_id(), "method": "initialize", "params": params}),
            )
            .await;
        assert_eq!(init.status, 200, "{}", init.text);
        let session_id = init
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("no Mcp-Session-Id on initialize: {:?}", init.headers));
        let version = init.result()["protocolVersion"]
            .as_str()
            .expect("protocolVersion")
            .to_owned();
        let session = LegacySession {
            server: self,
            session_id,
            version,
            init: init.result().clone(),
        };
        let ack = session
            .notify("notifications/initialized", Value::Null)
            .await;
        assert_eq!(ack.status, 202, "{}", ack.text);
        assert!(ack.text.is_empty(), "202 with a body: {}", ack.text);
        session
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(port_file) = &self.port_file {
            let _ = std::fs::remove_file(port_file);
        }
        if let Some(stderr) = &self.stderr {
            let _ = std::fs::remove_file(stderr);
        }
    }
}

/// A legacy (initialize-based) HTTP session.
pub struct LegacySession<'a> {
    pub server: &'a Server,
    pub session_id: String,
    /// The negotiated protocol version.
    pub version: String,
    /// The `InitializeResult`.
    pub init: Value,
}

impl LegacySession<'_> {
    fn headers(&self) -> Vec<(&str, &str)> {
        vec![
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", self.session_id.as_str()),
            ("MCP-Protocol-Version", self.version.as_str()),
        ]
    }

    /// A request in this session (no `_meta`).
    pub async fn request(&self, method: &str, params: Value) -> Reply {
        let mut body = json!({"jsonrpc": "2.0", "id": next_id(), "method": method});
        if !params.is_null() {
            body["params"] = params;
        }
        self.server.post_json(&self.headers(), &body).await
    }

    /// A notification in this session.
    pub async fn notify(&self, method: &str, params: Value) -> Reply {
        let mut body = json!({"jsonrpc": "2.0", "method": method});
        if !params.is_null() {
            body["params"] = params;
        }
        self.server.post_json(&self.headers(), &body).await
    }

    /// `tools/call` in this session; returns the result.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Value {
        let reply = self
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        reply.result().clone()
    }

    /// DELETE on the endpoint with this session's id.
    pub async fn delete(&self) -> Reply {
        self.server.send("DELETE", &self.headers(), None).await
    }
}

// ------------------------------------------------ the library's client

/// A `json!` object as request params (`Value::Null` is none).
pub fn object(params: Value) -> Map<String, Value> {
    match params {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => panic!("params must be an object: {other}"),
    }
}

/// Any request through `client` within [`TIMEOUT`]: the result object, or
/// the [`ClientError`] (a JSON-RPC error has its `.code()`).
pub async fn rpc(
    client: &Client,
    method: &str,
    params: Value,
) -> Result<Map<String, Value>, ClientError> {
    tokio::time::timeout(TIMEOUT, client.request(method, object(params)))
        .await
        .unwrap_or_else(|_| panic!("{method} took over {TIMEOUT:?}"))
}

/// The JSON-RPC error code `method` gets through `client`; panics (with
/// the answer) on a result or another failure.
pub async fn rpc_error(client: &Client, method: &str, params: Value) -> i64 {
    match rpc(client, method, params).await {
        Err(e) => e
            .code()
            .unwrap_or_else(|| panic!("{method}: not a JSON-RPC error: {e}")),
        Ok(result) => panic!("{method}: expected an error, got {result:?}"),
    }
}

/// `tools/call` through `client`: the whole result object, panicking on a
/// JSON-RPC error.
pub async fn call(client: &Client, name: &str, arguments: Value) -> Value {
    let reply = tokio::time::timeout(TIMEOUT, client.call_tool(name, arguments))
        .await
        .unwrap_or_else(|_| panic!("tools/call {name} took over {TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("tools/call {name}: {e}"));
    Value::Object(reply.raw)
}

/// The tool names in a `tools/list` result.
#[track_caller]
pub fn names_of(result: &Map<String, Value>) -> Vec<String> {
    result["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {result:?}"))
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect()
}

/// Waits (within [`TIMEOUT`]) for the next `notifications/tools/list_changed`
/// on a [`Server::listen_tools`] subscription, skipping anything else.
pub async fn next_list_change(subscription: &mut Subscription) {
    let seen = tokio::time::timeout(TIMEOUT, async {
        while let Some(n) = subscription.next().await {
            if n["method"] == "notifications/tools/list_changed" {
                return true;
            }
        }
        false
    })
    .await;
    match seen {
        Ok(true) => {}
        Ok(false) => panic!("the subscription ended before a tools/list_changed"),
        Err(_) => panic!("no tools/list_changed within {TIMEOUT:?}"),
    }
}

/// The next notification named `method` that `client` receives outside
/// subscriptions (e.g. on a legacy session's GET stream, opened with
/// `open_stream`), within [`TIMEOUT`]; others are skipped.
pub async fn notification(client: &Client, method: &str) -> Value {
    let seen = tokio::time::timeout(TIMEOUT, async {
        while let Some(n) = client.next_notification().await {
            if n["method"] == method {
                return Some(n);
            }
        }
        None
    })
    .await;
    match seen {
        Ok(Some(n)) => n,
        Ok(None) => panic!("the connection closed before a {method}"),
        Err(_) => panic!("no {method} within {TIMEOUT:?}"),
    }
}

/// The real binary on stdin/stdout driven by the library's client
/// (child-process mode); [`StdioServer`] is the raw one.
pub struct StdioClient {
    pub client: Client,
    _db: TempDb,
}

impl std::ops::Deref for StdioClient {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

/// The binary on `--stdio` over `db`, with extra flags and environment
/// variables (stderr discarded), for [`StdioClient`] and [`StdioServer`].
fn stdio_command(db: &TempDb, args: &[&str], env: &[(&str, &str)]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(BIN);
    command
        .arg("--stdio")
        .arg("--database")
        .arg(db.url())
        .args(args)
        .env("RUST_LOG", "info")
        .envs(env.iter().copied())
        .stderr(Stdio::null());
    command
}

impl StdioClient {
    /// A modern client of `--stdio` on `db`, with extra flags and
    /// environment variables.
    pub async fn start_with_env(db: TempDb, args: &[&str], env: &[(&str, &str)]) -> StdioClient {
        let client = Client::child(stdio_command(&db, args, env))
            .connect()
            .await
            .expect("spawn employee-mcp-server --stdio");
        StdioClient { client, _db: db }
    }

    /// Closes stdin and returns the exit status.
    pub async fn close(self) -> std::process::ExitStatus {
        self.client.close_child().await.expect("an exit status")
    }
}

/// The JSON in a tool result's first text block.
pub fn text_json(result: &Value) -> Value {
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text block in {result}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("text block is not JSON ({e}): {text}"))
}

/// The text of a tool result's first block.
pub fn first_text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text block in {result}"))
        .to_owned()
}

/// Asserts a tool execution error (`isError: true`) and returns its text.
#[track_caller]
pub fn tool_error_text(result: &Value) -> String {
    assert_eq!(
        result["isError"], true,
        "expected isError:true, got {result}"
    );
    assert_eq!(result["content"][0]["type"], "text", "{result}");
    first_text(result)
}

/// The real binary on stdin/stdout.
pub struct StdioServer {
    pub child: tokio::process::Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    /// Messages read while waiting for another id.
    pending: Vec<Value>,
    _db: TempDb,
}

impl StdioServer {
    pub fn start() -> StdioServer {
        Self::start_with(&[])
    }

    /// The stdio server with extra flags.
    pub fn start_with(args: &[&str]) -> StdioServer {
        Self::start_with_env(TempDb::seeded(), args, &[])
    }

    /// The stdio server on `db` with extra flags and environment variables.
    pub fn start_with_env(db: TempDb, args: &[&str], env: &[(&str, &str)]) -> StdioServer {
        let mut child = stdio_command(&db, args, env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn employee-mcp-server --stdio");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        StdioServer {
            child,
            stdin: Some(stdin),
            lines: BufReader::new(stdout).lines(),
            pending: Vec::new(),
            _db: db,
        }
    }

    /// Writes one line (a newline is appended).
    pub async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        stdin.write_all(line.as_bytes()).await.expect("write stdin");
        stdin.write_all(b"\n").await.expect("write stdin");
        stdin.flush().await.expect("flush stdin");
    }

    pub async fn send(&mut self, message: &Value) {
        self.send_line(&serde_json::to_string(message).unwrap())
            .await;
    }

    /// Writes raw bytes as they are (no newline appended), in one write.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        stdin.write_all(bytes).await.expect("write stdin");
        stdin.flush().await.expect("flush stdin");
    }

    /// Reads the next stdout line, which must be a JSON-RPC 2.0 message.
    pub async fn recv(&mut self) -> Value {
        if !self.pending.is_empty() {
            return self.pending.remove(0);
        }
        self.read_message().await
    }

    async fn read_message(&mut self) -> Value {
        let line = tokio::time::timeout(TIMEOUT, self.lines.next_line())
            .await
            .expect("timed out waiting for a line on stdout")
            .expect("read stdout")
            .expect("stdout closed while waiting for a message");
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("non-JSON line on stdout ({e}): {line:?}"));
        assert_eq!(value["jsonrpc"], "2.0", "not JSON-RPC 2.0: {line}");
        value
    }

    /// Reads until the response with `id` (responses may come out of order).
    pub async fn recv_id(&mut self, id: &Value) -> Value {
        if let Some(i) = self.pending.iter().position(|m| &m["id"] == id) {
            return self.pending.remove(i);
        }
        loop {
            let m = self.read_message().await;
            if &m["id"] == id {
                return m;
            }
            self.pending.push(m);
        }
    }

    /// Sends a request and waits for its response.
    pub async fn request(&mut self, message: Value) -> Value {
        let id = message["id"].clone();
        self.send(&message).await;
        self.recv_id(&id).await
    }

    /// Closes stdin, checks every remaining stdout line is JSON-RPC, and
    /// returns the remaining messages and the exit status.
    pub async fn close(mut self) -> (Vec<Value>, std::process::ExitStatus) {
        drop(self.stdin.take());
        let mut rest = std::mem::take(&mut self.pending);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match tokio::time::timeout_at(deadline, self.lines.next_line()).await {
                Err(_) => panic!("stdout not closed within 10 s of closing stdin"),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(line))) => {
                    let value: Value = serde_json::from_str(&line)
                        .unwrap_or_else(|e| panic!("non-JSON line on stdout ({e}): {line:?}"));
                    assert_eq!(value["jsonrpc"], "2.0", "not JSON-RPC 2.0: {line}");
                    rest.push(value);
                }
                Ok(Err(e)) => panic!("read stdout: {e}"),
            }
        }
        let status = tokio::time::timeout_at(deadline, self.child.wait())
            .await
            .expect("process did not exit within 10 s of closing stdin")
            .expect("wait for process");
        (rest, status)
    }
}

/// The first bytes of the answer to `GET path` (status line and headers;
/// a stream answer is not read to its end).
pub async fn http_get(addr: &str, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let head = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    stream.write_all(head.as_bytes()).await.expect("write");
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(TIMEOUT, stream.read(&mut buf))
        .await
        .expect("answer in time")
        .expect("read");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Sends SIGTERM to a process.
pub fn sigterm(pid: u32) {
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -TERM failed");
}

/// A legacy session's standalone GET stream on a raw connection.
pub struct SessionStream {
    reader: tokio::io::BufReader<tokio::net::TcpStream>,
}

impl SessionStream {
    /// Opens `GET /mcp` for `session_id` on `addr`; returns the status and,
    /// for 200, the stream (its headers read).
    pub async fn open(addr: &str, session_id: &str) -> (u16, Option<SessionStream>) {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let head = format!(
            "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session_id}\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await.expect("write");
        let mut reader = tokio::io::BufReader::new(stream);
        let mut status = String::new();
        tokio::time::timeout(TIMEOUT, reader.read_line(&mut status))
            .await
            .expect("status line in time")
            .expect("status line");
        let code: u16 = status
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status:?}"));
        if code != 200 {
            return (code, None);
        }
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).await.expect("header");
            if line == "\r\n" || line.is_empty() {
                break;
            }
        }
        (code, Some(SessionStream { reader }))
    }

    /// The next `data:` message within [`TIMEOUT`]; `None` when the
    /// stream ended (chunk framing and keep-alive comments are skipped).
    pub async fn next(&mut self) -> Option<Value> {
        use tokio::io::AsyncBufReadExt;
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(TIMEOUT, self.reader.read_line(&mut line))
                .await
                .expect("an SSE message or the end of the stream in time")
                .unwrap_or(0);
            if n == 0 {
                return None;
            }
            if let Some(data) = line.trim_end().strip_prefix("data:") {
                return Some(serde_json::from_str(data.trim()).expect("SSE data is JSON"));
            }
        }
    }
}

/// Runs `scripts/pg-scratch CMD NAME` (a dedicated cluster for tests that
/// stop it); returns its output (the URL for `start`).
pub fn pg_scratch(cmd: &str, name: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-scratch");
    let out = Command::new(script)
        .args([cmd, name])
        .output()
        .expect("run scripts/pg-scratch");
    assert!(
        out.status.success(),
        "pg-scratch {cmd} {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Runs `employee-mcp-server tools ARGS --database URL`: (success, stdout,
/// stderr).
pub fn tools_cli(db: &TempDb, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .arg("tools")
        .args(args)
        .arg("--database")
        .arg(db.url())
        .env("RUST_LOG", "warn")
        .env_remove("EMPLOYEE_MCP_DATABASE")
        .stdin(Stdio::null())
        .output()
        .expect("run employee-mcp-server tools");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Same, asserting success; returns stdout.
pub fn tools_ok(db: &TempDb, args: &[&str]) -> String {
    let (ok, out, err) = tools_cli(db, args);
    assert!(ok, "tools {args:?} failed: {err}");
    out
}

// ------------------------------------------- multi round trip (elicitation)

/// A modern `get-employee-details` call from a client that declares
/// elicitation, with `extra` parameters (input responses, request state);
/// one round through the library's client (`request_once`: an
/// `input_required` result is returned, not answered).
pub async fn details_asking(server: &Server, employee_id: &str, extra: Value) -> Value {
    let mut params =
        json!({"name": "get-employee-details", "arguments": {"employeeId": employee_id}});
    for (k, v) in extra.as_object().into_iter().flatten() {
        params[k] = v.clone();
    }
    let client = Client::http(&server.url())
        .capabilities(json!({"elicitation": {}}))
        .connect()
        .await
        .unwrap_or_else(|e| panic!("client for {}: {e}", server.url()));
    let round = client.request_once("tools/call", object(params));
    let result = tokio::time::timeout(TIMEOUT, round)
        .await
        .unwrap_or_else(|_| panic!("tools/call took over {TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("tools/call: {e}"));
    Value::Object(result)
}

/// The answer to round 1's question: `action` and the chosen id.
pub fn pick(round1: &Value, action: &str, employee_id: &str) -> Value {
    json!({
        "inputResponses": {"employee": {"action": action, "content": {"employeeId": employee_id}}},
        "requestState": round1["requestState"],
    })
}
