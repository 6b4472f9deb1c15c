//! The operator console over HTTP, against the real binary: login and the
//! token, CSRF and Origin refusals, the security headers, a tool disabled
//! from the page leaving `tools/list`, an approval decided on the page
//! (and refused for one's own call), HR values escaped, CSV cells
//! neutralised, the live stream, and the console and MCP ports kept apart.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;

use common::access::Issuer;
use common::{
    BIN, Backend, Server, TIMEOUT, TOOL_NAMES, TempDb, modern_body, next_id, set_approval,
};
use mcpwire_server::protocol::meta;
use reqwest::StatusCode;
use serde_json::{Value, json};

const TOKEN: &str = "console-test-token-0123456789abcdef";
const SALARY: &str = "get-compensation-info";
const XSS: &str = "<img src=x onerror=alert(1)>";
const FORMULA: &str = "=HYPERLINK(\"http://evil.example\",\"x\")";

/// A server with the console on, and the console's `IP:PORT`.
async fn start(db: TempDb, extra: &[String]) -> (Server, String) {
    let token_file = common::temp_path("console-token", "txt");
    std::fs::write(&token_file, TOKEN).expect("write the token file");
    let port_file = common::temp_path("console-port", "txt");
    let mut args: Vec<String> = vec![
        "--console-listen".into(),
        "127.0.0.1:0".into(),
        "--console-token-file".into(),
        token_file.display().to_string(),
        "--console-port-file".into(),
        port_file.display().to_string(),
    ];
    args.extend(extra.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start_on(db, &args).await;
    // The console starts before the MCP listener writes its port file.
    let addr = std::fs::read_to_string(&port_file).expect("the console's port file");
    let _ = std::fs::remove_file(&port_file);
    let _ = std::fs::remove_file(&token_file);
    (server, addr.trim().to_owned())
}

/// A browser-like session with the console: its cookie once logged in.
struct Browser {
    base: String,
    client: reqwest::Client,
    cookie: Option<String>,
}

impl Browser {
    fn new(addr: &str) -> Browser {
        let client = common::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a client");
        Browser {
            base: format!("http://{addr}"),
            client,
            cookie: None,
        }
    }

    /// Logs in as `name`; the reply's status.
    async fn login(&mut self, name: &str, token: &str) -> StatusCode {
        let res = self
            .post_raw("/login", &[("name", name), ("token", token)], &[])
            .await;
        if let Some(c) = res.headers().get("set-cookie") {
            let c = c.to_str().expect("an ASCII cookie");
            assert!(
                c.contains("HttpOnly") && c.contains("SameSite=Strict"),
                "{c}"
            );
            self.cookie = c.split(';').next().map(str::to_owned);
        }
        res.status()
    }

    async fn get(&self, path: &str) -> (StatusCode, String) {
        let mut req = self.client.get(format!("{}{path}", self.base));
        if let Some(c) = &self.cookie {
            req = req.header("Cookie", c);
        }
        let res = req.send().await.expect("GET the console");
        let status = res.status();
        (status, res.text().await.unwrap_or_default())
    }

    async fn post_raw(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        let mut req = self
            .client
            .post(format!("{}{path}", self.base))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body);
        if let Some(c) = &self.cookie {
            req = req.header("Cookie", c);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.send().await.expect("POST to the console")
    }

    async fn post(&self, path: &str, fields: &[(&str, &str)]) -> (StatusCode, String) {
        let res = self.post_raw(path, fields, &[]).await;
        let status = res.status();
        (status, res.text().await.unwrap_or_default())
    }

    /// The CSRF token in the forms of `path`.
    async fn csrf(&self, path: &str) -> String {
        let (_, page) = self.get(path).await;
        let start = page.find("name=\"csrf\" value=\"").expect("a CSRF field") + 19;
        page[start..].chars().take_while(|c| *c != '"').collect()
    }
}

/// Polls `check` until it holds or `TIMEOUT` passes.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + TIMEOUT;
    while !check().await {
        assert!(Instant::now() < deadline, "{what} within {TIMEOUT:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn pages_need_the_token_and_the_ports_stay_apart() {
    let (server, addr) = start(TempDb::seeded(), &[]).await;
    let mut b = Browser::new(&addr);
    let (status, _) = b.get("/tools").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "no login: to the login form");
    let (status, _) = b.post("/tools/enabled", &[("name", "x")]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        b.login("Ann", "wrong-token").await,
        StatusCode::UNAUTHORIZED
    );
    assert!(b.cookie.is_none(), "a wrong token opens no session");

    // A script may send the token as a bearer token.
    let res = b
        .client
        .get(format!("{}/tools", b.base))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .expect("GET with the token");
    assert_eq!(res.status(), StatusCode::OK);
    let h = res.headers();
    let csp = h["content-security-policy"].to_str().unwrap_or("");
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "same-origin");

    assert_eq!(b.login("Ann", TOKEN).await, StatusCode::SEE_OTHER);
    let (status, page) = b.get("/tools").await;
    assert_eq!(status, StatusCode::OK);
    for name in TOOL_NAMES {
        assert!(
            page.contains(&format!("<code>{name}</code>")),
            "{name} listed"
        );
    }
    assert_eq!(
        page.matches("action=\"/tools/enabled\"").count(),
        8,
        "{page}"
    );

    let (status, health) = b.get("/health").await;
    assert_eq!(status, StatusCode::OK);
    assert!(health.contains("<strong>ready</strong>"), "{health}");
    assert!(health.contains("<td>"), "counters listed: {health}");

    // The console has no /mcp; the MCP port has no console.
    let (status, _) = b.get("/mcp").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let mcp = Browser::new(&server.addr);
    for path in ["/tools", "/login", "/audit", "/health"] {
        let (status, _) = mcp.get(path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path} on the MCP port");
    }
    // Another Host (DNS rebinding) is refused.
    let res = b
        .client
        .get(format!("{}/login", b.base))
        .header("Host", "evil.example")
        .send()
        .await
        .expect("GET with another Host");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
}

/// `tools list --json` rows of the database at `url`.
fn tools_list(url: &str) -> Vec<Value> {
    let out = Command::new(BIN)
        .args(["tools", "list", "--json", "--database", url])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run tools list");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test]
async fn a_tool_disabled_on_the_page_leaves_tools_list_and_needs_csrf() {
    let (server, addr) = start(TempDb::seeded(), &[]).await;
    let tool = "get-team-members";
    let mut b = Browser::new(&addr);
    assert_eq!(b.login("Ann Operator", TOKEN).await, StatusCode::SEE_OTHER);
    let disable = [("name", tool), ("enabled", "false")];
    let (status, _) = b.post("/tools/enabled", &disable).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "no CSRF token");
    let csrf = b.csrf("/tools").await;
    let (status, _) = b
        .post(
            "/tools/enabled",
            &[("name", tool), ("enabled", "false"), ("csrf", "0000")],
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a wrong CSRF token");
    let with_csrf = [
        ("name", tool),
        ("enabled", "false"),
        ("csrf", csrf.as_str()),
    ];
    let res = b
        .post_raw(
            "/tools/enabled",
            &with_csrf,
            &[("Origin", "http://evil.example")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN, "another origin");
    assert!(server.tool_names().await.contains(&tool.to_owned()));

    let origin = format!("http://{addr}");
    let res = b
        .post_raw("/tools/enabled", &with_csrf, &[("Origin", origin.as_str())])
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let page = res.text().await.unwrap_or_default();
    assert!(page.contains(&format!("{tool} disabled")), "{page}");
    eventually("the tool leaves tools/list", || async {
        !server.tool_names().await.contains(&tool.to_owned())
    })
    .await;
    let rows = tools_list(&server.db().url());
    let row = rows.iter().find(|r| r["name"] == tool).expect("listed");
    assert_eq!(row["enabled"], false, "{row}");
    assert_eq!(row["updated_by"], "console:Ann Operator", "{row}");

    let enable = [("name", tool), ("enabled", "true"), ("csrf", csrf.as_str())];
    assert_eq!(b.post("/tools/enabled", &enable).await.0, StatusCode::OK);
    eventually("the tool is served again", || async {
        server.tool_names().await.contains(&tool.to_owned())
    })
    .await;
}

fn approval_id(result: &Value) -> String {
    let text = result["content"][0]["text"].as_str().unwrap_or("");
    let start = text
        .find("apr-")
        .unwrap_or_else(|| panic!("no approval id: {result}"));
    text[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

#[tokio::test]
async fn an_operator_approves_a_waiting_call_on_the_page_but_not_their_own() {
    let issuer = Issuer::start();
    let db = TempDb::seeded();
    set_approval(&db.url(), SALARY, "operator");
    let mut args = issuer.flags();
    args.extend(["--approval-wait".into(), "0".into()]);
    let (server, addr) = start(db, &args).await;
    let alice = issuer.token("alice", "hr:compensation", None);
    let salary = json!({"role": "Software Engineer", "level": "senior"});
    let first = server.call_as(SALARY, salary.clone(), Some(&alice)).await;
    assert_eq!(first.result()["isError"], true, "{}", first.text);
    let id = approval_id(first.result());

    let mut own = Browser::new(&addr);
    own.login("alice", TOKEN).await;
    let csrf = own.csrf("/approvals").await;
    let decide = |csrf: &str| {
        vec![
            ("id".to_owned(), id.clone()),
            ("decision".to_owned(), "approve".to_owned()),
            ("reason".to_owned(), "quarterly review".to_owned()),
            ("csrf".to_owned(), csrf.to_owned()),
        ]
    };
    let fields = decide(&csrf);
    let fields: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let (status, page) = own.post("/approvals/decide", &fields).await;
    assert_eq!(status, StatusCode::CONFLICT, "{page}");
    assert!(page.contains("own call"), "{page}");

    let mut bob = Browser::new(&addr);
    bob.login("bob", TOKEN).await;
    let (_, listed) = bob.get("/approvals").await;
    assert!(listed.contains(&id) && listed.contains("alice"), "{listed}");
    let csrf = bob.csrf("/approvals").await;
    let fields = decide(&csrf);
    let fields: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let (status, page) = bob.post("/approvals/decide", &fields).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains(&format!("{id} approved")), "{page}");
    assert!(
        page.contains("console:bob"),
        "decided by, in the decided list: {page}"
    );

    let served = server.call_as(SALARY, salary, Some(&alice)).await;
    assert_ne!(served.result()["isError"], true, "{}", served.text);
    assert!(
        served.result()["structuredContent"].is_object(),
        "{}",
        served.text
    );
}

/// A skill search whose client calls itself `client` and looks for `skill`.
async fn search_as(server: &Server, client: &str, skill: &str) {
    let params = json!({"name": "search-employees-by-skill", "arguments": {"skill": skill}});
    let mut body = modern_body(next_id(), "tools/call", params);
    body["params"]["_meta"][meta::CLIENT_INFO] = json!({"name": client, "version": "1"});
    let reply = server.post_modern(&body, &[]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

#[tokio::test]
async fn hr_values_are_escaped_exports_neutralise_formulas_and_calls_stream_live() {
    let (server, addr) = start(TempDb::seeded(), &[]).await;
    let mut b = Browser::new(&addr);
    b.login("Ann", TOKEN).await;
    // Open the live stream first: the call below must arrive on it.
    let mut live = b
        .client
        .get(format!("{}/live/events?after=0", b.base))
        .header("Cookie", b.cookie.clone().unwrap_or_default())
        .send()
        .await
        .expect("open the live stream");
    assert_eq!(live.status(), StatusCode::OK);
    search_as(&server, FORMULA, XSS).await;
    search_as(&server, "second", "Rust").await;

    let search = "/audit?tool=search-employees-by-skill";
    eventually("both calls in the audit page", || async {
        b.get(search).await.1.matches("<tr>").count() >= 3
    })
    .await;
    let (_, page) = b.get(search).await;
    assert!(!page.contains("<img"), "{page}");
    assert!(
        page.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{page}"
    );
    // One row a page: the cursor pages on to the older one.
    let (_, first) = b.get(&format!("{search}&limit=1")).await;
    let at = first.find("before=").expect("an older-rows link");
    let before: String = first[at + 7..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let (_, older) = b.get(&format!("{search}&limit=1&before={before}")).await;
    assert!(older.contains("&lt;img"), "{older}");

    let (status, csv) = b.get("/audit.csv?tool=search-employees-by-skill").await;
    assert_eq!(status, StatusCode::OK);
    assert!(csv.contains("\"'=HYPERLINK("), "{csv}");
    assert!(
        !csv.contains(",\"=HYPERLINK") && !csv.contains(",=HYPERLINK"),
        "{csv}"
    );
    let (_, lines) = b.get("/audit.jsonl?tool=search-employees-by-skill").await;
    let rows: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(rows.len(), 2, "{lines}");
    assert_eq!(rows[0]["arguments"]["skill"], XSS);

    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.contains("Rust") {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, live.chunk()).await;
        let Ok(Ok(Some(chunk))) = chunk else {
            panic!("the live stream did not bring the calls: {seen}");
        };
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.contains("data: {"), "{seen}");
}

#[tokio::test]
async fn failed_logins_are_bounded_for_the_form_and_bearer_tokens() {
    let flags = ["--console-login-failures".to_owned(), "2".to_owned()];
    let (_server, addr) = start(TempDb::seeded(), &flags).await;
    let mut b = Browser::new(&addr);
    assert_eq!(
        b.login("Ann", "wrong-token-1").await,
        StatusCode::UNAUTHORIZED
    );
    let res = b
        .client
        .get(format!("{}/tools", b.base))
        .header("Authorization", "Bearer wrong-token-2")
        .send()
        .await
        .expect("GET with a wrong bearer token");
    // A page asked with a wrong bearer token is a page asked without a login.
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "a wrong bearer token");

    // The bucket is empty: every login waits, the right token too.
    let res = b
        .post_raw("/login", &[("name", "Ann"), ("token", TOKEN)], &[])
        .await;
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = res.headers()["retry-after"]
        .to_str()
        .ok()
        .and_then(|s| s.parse().ok())
        .expect("a Retry-After in seconds");
    assert!((1..=31).contains(&wait), "{wait}");
    let page = res.text().await.unwrap_or_default();
    assert!(page.contains("Too many failed logins"), "{page}");
    assert!(b.cookie.is_none(), "no session while limited");
    let res = b
        .client
        .get(format!("{}/tools", b.base))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .expect("GET with the token");
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "bearer too");
}

#[tokio::test]
async fn the_health_page_charts_the_last_hour_of_calls_from_the_audit_trail() {
    health_charts_the_last_hour(Backend::Sqlite).await;
}

#[tokio::test]
async fn on_postgres_the_health_page_charts_the_last_hour_of_calls() {
    health_charts_the_last_hour(Backend::Postgres).await;
}

async fn health_charts_the_last_hour(backend: Backend) {
    let db = tokio::task::spawn_blocking(move || TempDb::seeded_on(backend))
        .await
        .expect("create the test database");
    let (server, addr) = start(db, &[]).await;
    let mut b = Browser::new(&addr);
    b.login("Ann", TOKEN).await;
    for skill in ["Rust", "Python", "Go"] {
        search_as(&server, "health-test", skill).await;
    }
    let unknown = server
        .modern(
            "tools/call",
            json!({"name": "no-such-tool", "arguments": {}}),
        )
        .await;
    assert!(unknown.text.contains("unknown tool"), "{}", unknown.text);
    let (status, page) = b.get("/health").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("4 calls, 1 errors, 0 refused in the last hour"),
        "{page}"
    );
    // One bar a minute of the hour (61 minutes counting the current one),
    // holding the calls (two minutes if the calls straddled one's end).
    let calls_chart = page
        .split("id=\"calls-chart\"")
        .nth(1)
        .and_then(|rest| rest.split("</svg>").next())
        .unwrap_or_default();
    assert_eq!(calls_chart.matches("<rect").count(), 61, "{calls_chart}");
    let bars: i64 = calls_chart
        .split("data-value=\"")
        .skip(1)
        .filter_map(|v| v.split('"').next()?.parse::<i64>().ok())
        .sum();
    assert_eq!(bars, 4, "{calls_chart}");
    let table = page.split("id=\"hour-table\"").nth(1).unwrap_or_default();
    assert!(
        table.contains("<td>4</td><td>1</td><td>0</td>") || table.matches("<tr><td>").count() == 2,
        "the minute's numbers: {table}"
    );
}

#[tokio::test]
async fn the_directory_page_counts_each_entity_now() {
    directory_counts_each_entity_now(Backend::Sqlite).await;
}

#[tokio::test]
async fn on_postgres_the_directory_page_counts_each_entity_now() {
    directory_counts_each_entity_now(Backend::Postgres).await;
}

/// The employees row matches what `export` writes.
async fn directory_counts_each_entity_now(backend: Backend) {
    let db = tokio::task::spawn_blocking(move || TempDb::seeded_on(backend))
        .await
        .expect("create the test database");
    let out_dir = common::temp_path("console-export", "d");
    let exported = Command::new(BIN)
        .args([
            "export",
            "--format",
            "jsonl",
            "--database",
            &db.url(),
            "--out",
        ])
        .arg(&out_dir)
        .output()
        .expect("run export");
    assert!(exported.status.success(), "{exported:?}");
    let employees = std::fs::read_to_string(out_dir.join("employees.jsonl"))
        .expect("employees.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    let _ = std::fs::remove_dir_all(&out_dir);
    let (_server, addr) = start(db, &[]).await;
    let mut b = Browser::new(&addr);
    b.login("Ann", TOKEN).await;
    let (status, page) = b.get("/directory").await;
    assert_eq!(status, StatusCode::OK);
    let table = page.split("id=\"row-counts\"").nth(1).unwrap_or_default();
    assert!(
        table.contains(&format!(
            "<tr data-entity=\"employees\"><td>employees</td><td>{employees}</td></tr>"
        )),
        "{table}"
    );
    assert!(table.contains("data-entity=\"departments\""), "{table}");
}

/// One step of a login through the issuer: a GET of `url` (with `cookie`),
/// its status, `Location` and the `Set-Cookie` values.
async fn hop(url: &str, cookie: Option<&str>) -> (StatusCode, String, Vec<String>) {
    let client = common::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let mut req = client.get(url);
    if let Some(c) = cookie {
        req = req.header("Cookie", c);
    }
    let res = req.send().await.expect("GET");
    let location = res
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let cookies = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().to_owned())
        .collect();
    (res.status(), location, cookies)
}

/// The console's login through the issuer, up to its callback: the
/// callback URL and the flow cookie.
async fn begin_issuer_login(addr: &str) -> (String, String) {
    let (status, to_issuer, cookies) = hop(&format!("http://{addr}/oidc/start"), None).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{to_issuer}");
    for part in [
        "code_challenge_method=S256",
        "client_id=console-test",
        "resource=",
        "state=",
    ] {
        assert!(to_issuer.contains(part), "{part} in {to_issuer}");
    }
    let flow = cookies
        .into_iter()
        .find(|c| c.starts_with("console_oidc="))
        .expect("the flow cookie");
    let (status, back, _) = hop(&to_issuer, None).await;
    assert_eq!(
        status,
        StatusCode::FOUND,
        "the issuer sends the browser back"
    );
    (back, flow)
}

#[tokio::test]
async fn with_an_issuer_people_log_in_through_it_with_pkce_and_need_the_console_scope() {
    let issuer = Issuer::start();
    let mut flags = issuer.flags();
    flags.extend([
        "--console-oidc-client-id".to_owned(),
        "console-test".to_owned(),
    ]);
    let (_server, addr) = start(TempDb::seeded(), &flags).await;
    let mut b = Browser::new(&addr);
    let (_, page) = b.get("/login").await;
    assert!(page.contains("id=\"oidc-login\""), "{page}");
    assert!(!page.contains("name=\"token\""), "no token form: {page}");
    assert_eq!(
        b.login("Ann", TOKEN).await,
        StatusCode::FORBIDDEN,
        "the token is off"
    );

    // Priya, an HR admin, logs in: a session under her subject.
    issuer.log_in_as(Some(("priya", "hr:admin")));
    let (callback, flow) = begin_issuer_login(&addr).await;
    assert!(callback.contains("/oidc/callback?code="), "{callback}");
    let (status, to, cookies) = hop(&callback, Some(&flow)).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{to}");
    assert_eq!(to, "/tools");
    b.cookie = cookies
        .into_iter()
        .find(|c| c.starts_with("console_session="));
    let (status, tools) = b.get("/tools").await;
    assert_eq!(status, StatusCode::OK);
    assert!(tools.contains("priya"), "the operator is named: {tools}");
    // The same callback again, or from a browser that did not begin it.
    let (status, _, _) = hop(&callback, Some(&flow)).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a code's flow serves once"
    );
    let (callback, _) = begin_issuer_login(&addr).await;
    let (status, _, _) = hop(&callback, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "no flow cookie");

    // Without the console scope, or when the person refuses.
    issuer.log_in_as(Some(("bob", "hr:directory")));
    let (callback, flow) = begin_issuer_login(&addr).await;
    let (status, _, cookies) = hop(&callback, Some(&flow)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(!cookies.iter().any(|c| c.starts_with("console_session=")));
    issuer.log_in_as(None);
    let (callback, flow) = begin_issuer_login(&addr).await;
    assert!(callback.contains("error=access_denied"), "{callback}");
    let (status, _, _) = hop(&callback, Some(&flow)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Five logins begun, one read of the issuer's metadata.
    assert_eq!(issuer.metadata_reads(), 1, "the metadata is reused");

    // Scripts send the issuer's access token; the console token is no key.
    let client = common::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let with = |token: String| {
        client
            .get(format!("http://{addr}/tools"))
            .header("Authorization", format!("Bearer {token}"))
            .send()
    };
    let admin = with(issuer.token("priya", "hr:admin", None))
        .await
        .expect("GET");
    assert_eq!(admin.status(), StatusCode::OK);
    let reader = with(issuer.token("bob", "hr:directory", None))
        .await
        .expect("GET");
    assert_eq!(reader.status(), StatusCode::SEE_OTHER, "no console scope");
    let console_token = with(TOKEN.to_owned()).await.expect("GET");
    assert_eq!(console_token.status(), StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn the_health_page_shows_every_replica_on_the_database() {
    health_shows_every_replica(Backend::Sqlite).await;
}

#[tokio::test]
async fn on_postgres_the_health_page_shows_every_replica() {
    health_shows_every_replica(Backend::Postgres).await;
}

/// Two servers on one database: each console lists both, ready; one
/// stopped leaves the list, one killed is shown silent (not here: that
/// takes 35 s) — its row stays until renewed or pruned.
async fn health_shows_every_replica(backend: Backend) {
    let db = tokio::task::spawn_blocking(move || TempDb::seeded_on(backend))
        .await
        .expect("create the test database");
    let second = db.share();
    let (_first, addr) = start(db, &[]).await;
    let other = Server::start_on(second, &[]).await;
    let mut b = Browser::new(&addr);
    b.login("Ann", TOKEN).await;
    let rows = |page: &str| {
        page.split("id=\"replicas\"")
            .nth(1)
            .and_then(|t| t.split("</table>").next())
            .unwrap_or_default()
            .matches("<tr data-replica=")
            .count()
    };
    let mut seen = String::new();
    let deadline = Instant::now() + TIMEOUT;
    while Instant::now() < deadline {
        let (_, page) = b.get("/health").await;
        if rows(&page) == 2 {
            seen = page;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(rows(&seen), 2, "both replicas report: {seen}");
    let table = seen.split("id=\"replicas\"").nth(1).unwrap_or_default();
    assert_eq!(
        table.matches("<strong>ready</strong>").count(),
        2,
        "{table}"
    );
    assert!(table.contains(&addr), "the first one's console: {table}");
    let (status, _) = other.stop().await;
    assert!(status.success());
    let (_, page) = b.get("/health").await;
    assert_eq!(rows(&page), 1, "a stopped replica says goodbye: {page}");
}
