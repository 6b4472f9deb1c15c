//! The operator console (`--console-listen`): server-rendered pages on a
//! listener of their own where the people running the HR server see the
//! tools the models get, change them, decide pending approvals, search the
//! audit trail and watch calls live. Off by default: it can change what
//! models may read. See docs/console.md.

mod audit_pages;
mod directory;
mod error;
mod health;
mod limit;
mod live;
mod oidc;
mod pages;
mod session;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use clap::Args;
use employee_directory::DatabaseUrl;
use maud::{DOCTYPE, Markup, html};
use mcpwire_server::observe::ReadinessCheck;
use mcpwire_server::transport::http::auth::Authenticator;
use mcpwire_server::transport::http::{ConnectionLimits, serve_with};
use mcpwire_server::{Server, Tool};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, oneshot};

use crate::{approvals, catalog};
use error::ConsoleError;
pub use error::Error;
use limit::LoginLimit;
use session::{Operator, Sessions};

/// Flags of the console.
#[derive(Debug, Args)]
pub struct ConsoleArgs {
    /// Serve the operator console on this address (loopback only), e.g.
    /// 127.0.0.1:8090. Off by default: the console can enable and disable
    /// tools and approve calls, so it must be asked for.
    #[arg(long, env = "EMPLOYEE_MCP_CONSOLE_LISTEN", value_name = "ADDR")]
    pub console_listen: Option<SocketAddr>,

    /// The console token, read from this file (default: a random token
    /// printed once to stderr at start).
    #[arg(long, env = "EMPLOYEE_MCP_CONSOLE_TOKEN_FILE", value_name = "FILE")]
    pub console_token_file: Option<PathBuf>,

    /// Write the console's bound address (useful with port 0) to this file.
    #[arg(long, hide = true)]
    pub console_port_file: Option<PathBuf>,

    /// Failed console logins (wrong token, in the form or as a bearer
    /// token) allowed in a burst and per minute; past it every login waits.
    #[arg(long, env = "EMPLOYEE_MCP_CONSOLE_LOGIN_FAILURES", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub console_login_failures: u32,

    /// With --auth-issuer: the console's client id at that issuer. People
    /// then log in through the issuer (authorization code with PKCE) and
    /// need --console-scope; the console token is not used.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_CONSOLE_OIDC_CLIENT_ID",
        value_name = "ID",
        requires = "auth_issuer"
    )]
    pub console_oidc_client_id: Option<String>,

    /// The client secret for --console-oidc-client-id, read from this file
    /// (a public client with PKCE needs none).
    #[arg(
        long,
        env = "EMPLOYEE_MCP_CONSOLE_OIDC_CLIENT_SECRET_FILE",
        value_name = "FILE",
        requires = "console_oidc_client_id"
    )]
    pub console_oidc_client_secret_file: Option<PathBuf>,

    /// The callback registered at the issuer, as the browser reaches the
    /// console (default: http://CONSOLE-ADDRESS/oidc/callback).
    #[arg(
        long,
        env = "EMPLOYEE_MCP_CONSOLE_OIDC_REDIRECT_URL",
        value_name = "URL",
        requires = "console_oidc_client_id"
    )]
    pub console_oidc_redirect_url: Option<String>,

    /// The scope a person's token must carry to log in to the console
    /// through the issuer.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_CONSOLE_SCOPE",
        value_name = "SCOPE",
        default_value = "hr:admin"
    )]
    pub console_scope: String,
}

/// The server's OAuth issuer, for the console's OpenID Connect login.
pub struct ConsoleIssuer {
    /// `--auth-issuer`.
    pub issuer: String,
    /// `--auth-audience`: the resource a token is asked for.
    pub audience: String,
    /// The checks `/mcp` applies to bearer tokens.
    pub authenticator: Arc<Authenticator>,
}

/// Largest request body the console reads.
const MAX_BODY_BYTES: usize = 64 * 1024;
/// Connections the console keeps open at once.
const MAX_CONNECTIONS: usize = 64;
/// Live streams open at once.
const MAX_STREAMS: usize = 16;
/// Shortest console token accepted from a file.
const MIN_TOKEN_CHARS: usize = 16;

/// What every console request reads.
pub struct Console {
    database: DatabaseUrl,
    catalog: catalog::Store,
    approvals: Option<approvals::Store>,
    builtins: Vec<Tool>,
    token: String,
    sessions: Sessions,
    /// Failed logins allowed.
    logins: LoginLimit,
    /// `Host` values (and Origins, after `http://`) that name the console.
    hosts: Vec<String>,
    streams: Arc<Semaphore>,
    /// The server, for the Health page's counters.
    server: Server,
    /// What `/readyz` checks.
    readiness: Arc<dyn ReadinessCheck>,
    /// The Health page's last reading of the trail's hour.
    activity: health::ActivityCache,
    /// The login through the issuer, when configured (the token is then
    /// not accepted).
    oidc: Option<oidc::Oidc>,
}

/// The running console; it stops when dropped.
pub struct ConsoleListener {
    _stop: oneshot::Sender<()>,
    /// Where it listens (the port chosen for port 0).
    addr: SocketAddr,
}

/// The stores the server has already opened, shared with the console
/// rather than opened a second time (on PostgreSQL each is a pool and a
/// migration).
pub struct Stores {
    /// The tool catalogue; `None` on an in-memory database, which has none.
    pub catalog: Option<catalog::Store>,
    /// The calls waiting for an operator (`None` where there is none).
    pub approvals: Option<approvals::Store>,
}

impl ConsoleListener {
    /// The address the console listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// The console token: the file's (trimmed), or a new random one printed
/// once to stderr.
fn console_token(args: &ConsoleArgs) -> Result<String, Error> {
    let Some(path) = &args.console_token_file else {
        let token = session::random_hex()?;
        eprintln!("console token (log in with it; shown once): {token}");
        return Ok(token);
    };
    let text = std::fs::read_to_string(path).map_err(|source| Error::TokenFile {
        path: path.clone(),
        source,
    })?;
    let token = text.trim().to_owned();
    if token.chars().count() < MIN_TOKEN_CHARS || token.chars().any(char::is_control) {
        return Err(Error::WeakToken {
            path: path.clone(),
            min: MIN_TOKEN_CHARS,
        });
    }
    Ok(token)
}

/// The OpenID Connect login, when `--console-oidc-client-id` is given.
fn console_oidc(
    args: &ConsoleArgs,
    issuer: Option<ConsoleIssuer>,
    bound: SocketAddr,
) -> Result<Option<oidc::Oidc>, Error> {
    let (Some(client_id), Some(issuer)) = (&args.console_oidc_client_id, issuer) else {
        return Ok(None);
    };
    let client_secret = match &args.console_oidc_client_secret_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|source| Error::SecretFile {
                    path: path.clone(),
                    source,
                })?
                .trim()
                .to_owned(),
        ),
        None => None,
    };
    let settings = oidc::Settings {
        issuer: issuer.issuer,
        client_id: client_id.clone(),
        client_secret,
        redirect_uri: args
            .console_oidc_redirect_url
            .clone()
            .unwrap_or_else(|| format!("http://{bound}/oidc/callback")),
        resource: issuer.audience,
        scope: args.console_scope.clone(),
    };
    oidc::Oidc::new(settings, issuer.authenticator).map(Some)
}

impl Console {
    /// The scope the OpenID Connect login requires.
    fn scope(&self) -> &str {
        self.oidc.as_ref().map_or("", oidc::Oidc::scope)
    }

    /// With the OpenID Connect login: the subject of a bearer access token
    /// from the issuer with the console scope (`Some(None)` if it is not
    /// one); `None` when the console logs in with its token instead.
    async fn issuer_bearer(&self, token: &str) -> Option<Option<String>> {
        let oidc = self.oidc.as_ref()?;
        Some(oidc::bearer_subject(oidc, token).await)
    }
}

impl ConsoleListener {
    /// Binds `--console-listen` (when given) and serves the console until
    /// dropped, on the stores the server opened.
    pub async fn start(
        args: &ConsoleArgs,
        database: &DatabaseUrl,
        server: &Server,
        builtins: Vec<Tool>,
        readiness: Arc<dyn ReadinessCheck>,
        issuer: Option<ConsoleIssuer>,
        stores: Stores,
    ) -> Result<Option<ConsoleListener>, Error> {
        let Some(addr) = args.console_listen else {
            return Ok(None);
        };
        if !addr.ip().is_loopback() {
            return Err(Error::NotLoopback(addr));
        }
        let catalog = match (database, stores.catalog) {
            (DatabaseUrl::Memory, _) | (_, None) => return Err(Error::InMemory),
            (_, Some(catalog)) => catalog,
        };
        let token = console_token(args)?;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Listen { addr, source })?;
        let bound = listener.local_addr().map_err(Error::LocalAddr)?;
        let oidc = console_oidc(args, issuer, bound)?;
        let console = Arc::new(Console {
            database: database.clone(),
            catalog,
            approvals: stores.approvals,
            builtins,
            token,
            sessions: Sessions::default(),
            logins: LoginLimit::new(args.console_login_failures, Instant::now()),
            hosts: vec![bound.to_string(), format!("localhost:{}", bound.port())],
            streams: Arc::new(Semaphore::new(MAX_STREAMS)),
            server: server.clone(),
            readiness,
            activity: health::ActivityCache::default(),
            oidc,
        });
        if let Some(path) = &args.console_port_file {
            std::fs::write(path, bound.to_string()).map_err(|source| Error::PortFile {
                path: path.clone(),
                source,
            })?;
        }
        let stop = spawn(listener, router(console), server.clone());
        tracing::info!("serving the operator console on http://{bound}/");
        Ok(Some(ConsoleListener {
            _stop: stop,
            addr: bound,
        }))
    }
}

/// Serves `router` on `listener` (bounded like the metrics listener)
/// until the returned sender is dropped.
fn spawn(listener: TcpListener, router: Router, server: Server) -> oneshot::Sender<()> {
    let (stop, stopped) = oneshot::channel::<()>();
    let limits = ConnectionLimits {
        max_connections: MAX_CONNECTIONS,
        ..ConnectionLimits::default()
    };
    tokio::spawn(async move {
        let stopped = async {
            let _ = stopped.await;
        };
        let stats = Arc::default();
        if let Err(e) = serve_with(listener, router, server, stopped, &limits, stats).await {
            tracing::error!(error = %e, "console listener failed");
        }
    });
    stop
}

/// The console's routes; there is no `/mcp` here.
fn router(console: Arc<Console>) -> Router {
    let private = Router::new()
        .route("/", get(|| async { Redirect::to("/tools") }))
        .route("/tools", get(pages::tools))
        .route("/tools/enabled", post(pages::set_enabled))
        .route("/tools/approval", post(pages::set_approval))
        .route("/approvals", get(pages::approvals))
        .route("/approvals/decide", post(pages::decide))
        .route("/audit", get(audit_pages::search))
        .route("/audit/row", get(audit_pages::row))
        .route("/audit.csv", get(audit_pages::csv))
        .route("/audit.jsonl", get(audit_pages::jsonl))
        .route("/live", get(live::live))
        .route("/live/events", get(live::events))
        .route("/health", get(health::health))
        .route("/directory", get(directory::directory))
        .route("/console.js", get(script))
        .route("/logout", post(logout))
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&console),
            session::require_login,
        ));
    Router::new()
        .route("/login", get(login_page).post(login))
        .route("/oidc/start", get(oidc::start))
        .route("/oidc/callback", get(oidc::callback))
        .route("/favicon.ico", get(favicon))
        .merge(private)
        .layer(middleware::from_fn_with_state(
            Arc::clone(&console),
            session::guard,
        ))
        .layer(middleware::from_fn(session::headers))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(console)
}

/// The Live page's script (the only JavaScript; the pages work without it).
async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("console.js"),
    )
        .into_response()
}

/// `GET /favicon.ico`: nothing (204), so a browser's automatic request
/// neither fails nor needs a login.
async fn favicon() -> StatusCode {
    StatusCode::NO_CONTENT
}

/// A form body's fields (`application/x-www-form-urlencoded`).
pub struct Form(Vec<(String, String)>);

impl Form {
    /// Parses `body` and checks its `csrf` field for `operator`.
    pub fn checked(operator: &Operator, body: &[u8]) -> Result<Form, ConsoleError> {
        let form = Form::parse(body);
        operator.check_csrf(form.get("csrf"))?;
        Ok(form)
    }

    fn parse(body: &[u8]) -> Form {
        Form(form_urlencoded::parse(body).into_owned().collect())
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first value of `name`, which must be there.
    pub fn need(&self, name: &str) -> Result<&str, ConsoleError> {
        self.get(name)
            .ok_or_else(|| ConsoleError::BadRequest(format!("the form has no {name} field")))
    }
}

/// A page: the navigation, an optional notice, the content.
pub fn layout(
    title: &str,
    operator: Option<&Operator>,
    notice: Option<&str>,
    body: Markup,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "HR console: " (title) }
            }
            body {
                @if let Some(op) = operator {
                    nav {
                        a href="/tools" { "Tools" } " · "
                        a href="/approvals" { "Approvals" } " · "
                        a href="/audit" { "Audit" } " · "
                        a href="/live" { "Live" } " · "
                        a href="/directory" { "Directory" } " · "
                        a href="/health" { "Health" } " · "
                        "signed in as " strong { (op.name) } " "
                        form method="post" action="/logout" {
                            (csrf_field(op))
                            button type="submit" { "Log out" }
                        }
                    }
                }
                h1 { (title) }
                @if let Some(n) = notice { p role="status" { strong { (n) } } }
                (body)
            }
        }
    }
}

/// The hidden CSRF field of every form.
pub fn csrf_field(operator: &Operator) -> Markup {
    html! { input type="hidden" name="csrf" value=(operator.csrf.as_deref().unwrap_or("")); }
}

fn login_form(console: &Console, notice: Option<&str>) -> Markup {
    if let Some(oidc) = &console.oidc {
        let body = html! {
            p { a id="oidc-login" href="/oidc/start" { "Log in with " (oidc.issuer()) } }
            p { "Your account needs the scope " code { (console.scope()) } "; changes are recorded with your name at the issuer." }
        };
        return layout("log in", None, notice, body);
    }
    let body = html! {
        form method="post" action="/login" {
            p { label { "Your name (recorded with every change) " input name="name" required maxlength="64"; } }
            p { label { "Console token " input name="token" type="password" required autocomplete="off"; } }
            button type="submit" { "Log in" }
        }
    };
    layout("log in", None, notice, body)
}

async fn login_page(axum::extract::State(console): axum::extract::State<Arc<Console>>) -> Markup {
    login_form(&console, None)
}

/// `POST /login`: the token opens a session for the name given.
async fn login(
    axum::extract::State(console): axum::extract::State<Arc<Console>>,
    body: axum::body::Bytes,
) -> Result<Response, ConsoleError> {
    if console.oidc.is_some() {
        let page = login_form(&console, Some("This console logs in through the issuer."));
        return Ok((StatusCode::FORBIDDEN, page).into_response());
    }
    let form = Form::parse(&body);
    let token = form.get("token").unwrap_or("");
    if let Err(wait) = console.logins.check(Instant::now()) {
        let notice = format!(
            "Too many failed logins; try again in {} s.",
            wait.as_secs() + 1
        );
        return Ok(session::too_many(wait, login_form(&console, Some(&notice))));
    }
    if !session::same_secret(token.trim(), &console.token) {
        console.logins.failed(Instant::now());
        let page = login_form(&console, Some("Wrong console token."));
        return Ok((StatusCode::UNAUTHORIZED, page).into_response());
    }
    let Some(name) = form.get("name").and_then(session::clean_name) else {
        let page = login_form(
            &console,
            Some("Give your name: changes are recorded with it."),
        );
        return Ok((StatusCode::BAD_REQUEST, page).into_response());
    };
    let id = console.sessions.open(name)?;
    Ok((
        [(header::SET_COOKIE, session::session_cookie(&id))],
        Redirect::to("/tools"),
    )
        .into_response())
}

/// `POST /logout`: ends the session.
async fn logout(
    axum::extract::State(console): axum::extract::State<Arc<Console>>,
    axum::Extension(operator): axum::Extension<Operator>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ConsoleError> {
    Form::checked(&operator, &body)?;
    if let Some(id) = session::session_id(&headers) {
        console.sessions.close(id);
    }
    Ok((
        [(header::SET_COOKIE, session::expired_cookie())],
        Redirect::to("/login"),
    )
        .into_response())
}
