//! Command-line interface.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use employee_directory::DatabaseUrl;
use mcpwire_server::access::CallOutcome;

use crate::approvals::command::ApprovalsArgs;
use crate::audit::{DEFAULT_RETENTION, Retention};
use crate::catalog::command::ToolsArgs;

/// The serve defaults, shared by every subcommand's `--database`.
pub(crate) use employee_directory::DEFAULT_DATABASE_URL as DEFAULT_DATABASE;

/// An HR directory served to language models over the Model Context Protocol.
///
/// Without a subcommand the server serves: Streamable HTTP at
/// http://127.0.0.1:8080/mcp by default, on an embedded SQLite database in
/// the working directory (created, migrated and filled with a demo company
/// on first start). Every tool call is recorded in the audit trail (on
/// SQLite its own file beside the database's, `NAME.audit.db`; on
/// PostgreSQL the audit_log table); read it with `employee-mcp-server audit`.
///
/// Access control: with --auth-issuer, every HTTP request needs an OAuth
/// bearer token from that issuer for this server (--auth-audience), tools
/// are filtered and enforced by scope (hr:directory, hr:contact,
/// hr:compensation, hr:leave, hr:reports, hr:admin), and the server may bind
/// a public address. Without it the server only binds loopback and every
/// tool is open to whoever can reach it.
///
/// On --stdio, credentials come from the environment:
/// EMPLOYEE_MCP_STDIO_SCOPES (space-separated; when set, scopes are
/// enforced), EMPLOYEE_MCP_STDIO_SUBJECT (who, for the audit trail; default
/// "stdio") and EMPLOYEE_MCP_STDIO_SELF_ID (the caller's employee id, for
/// self-service leave balance).
///
/// Logs go to stderr (colour only on a terminal; --log-format json for
/// JSON lines); set RUST_LOG (e.g. RUST_LOG=debug) to change the level.
/// Arguments of calls are never logged: the audit trail holds them,
/// redacted and size-capped, for --audit-retention (90 days by default).
#[derive(Debug, Parser)]
#[command(
    name = "employee-mcp-server",
    version,
    about,
    long_about,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// What to do instead of serving.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Serving flags (the default action).
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the audit trail: one row per tool call, oldest first (the newest
    /// --limit rows). Rate-limited calls are one row per caller, tool and
    /// minute, with the number of calls in COUNT.
    Audit(AuditArgs),
    /// Change the tool set of every server on the database, at runtime:
    /// list, enable and disable tools, set who must approve their calls
    /// (`tools approval`), add, show and remove custom SQL tools (validate a
    /// definition file first with `tools validate`). Running servers apply a
    /// change within a second and announce list_changed.
    Tools(ToolsArgs),
    /// The calls waiting for an operator's approval (tools whose policy is
    /// operator): list and show them, approve or deny one. Every replica
    /// sees the decision at once; each is an audit row.
    Approvals(ApprovalsArgs),
    /// Write the directory's HR data (not the audit trail) into a folder,
    /// one file per entity, CSV or JSON Lines (see docs/import.md).
    Export(crate::exchange::ExportArgs),
    /// Load HR data from a folder of entity files (as written by `export`),
    /// validated first and applied in one transaction; running servers see
    /// it within a second. `--history` lists past imports.
    Import(crate::exchange::ImportArgs),
    /// Write a consistent copy of a SQLite database while servers serve it
    /// (VACUUM INTO); never overwrites a file.
    Backup(BackupArgs),
    /// Bring a backup's directory and tool catalogue back into the live
    /// SQLite database while servers serve it, in one transaction; the
    /// audit trail is kept. Never replace the file under a running server.
    Restore(RestoreArgs),
}

/// How calls that need a person's yes are held (docs/approvals.md).
#[derive(Debug, Args)]
pub struct ApprovalArgs {
    /// How long a pending operator approval (and a user's confirmation
    /// question) stays good: 10m, 1h, 90s….
    #[arg(long, env = "EMPLOYEE_MCP_APPROVAL_TTL", value_name = "DURATION", default_value = "10m", value_parser = span)]
    pub approval_ttl: Duration,

    /// How long a call without a task waits for an operator before it is
    /// answered with the approval id to retry with (progress notifications
    /// meanwhile, when asked for). 0 answers at once.
    #[arg(long, env = "EMPLOYEE_MCP_APPROVAL_WAIT", value_name = "DURATION", default_value = "30s", value_parser = span_or_zero)]
    pub approval_wait: Duration,

    /// What a `confirm` call of a client that cannot ask its user
    /// (no elicitation capability) gets: deny (a tool error that says so)
    /// or operator (it waits for an operator's approval instead).
    #[arg(long, env = "EMPLOYEE_MCP_APPROVAL_FALLBACK", value_enum, default_value_t = Fallback::Deny)]
    pub approval_fallback: Fallback,

    /// Most calls waiting for an operator, of all callers together.
    #[arg(long, env = "EMPLOYEE_MCP_MAX_PENDING_APPROVALS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_pending_approvals: u64,

    /// Most calls waiting for an operator, of one caller.
    #[arg(long, env = "EMPLOYEE_MCP_MAX_PENDING_APPROVALS_PER_SUBJECT", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_pending_approvals_per_subject: u64,
}

/// `--approval-fallback`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Fallback {
    /// Refuse with a tool error that says a person must confirm.
    Deny,
    /// Wait for an operator's approval instead.
    Operator,
}

/// A positive duration: 90s, 10m, 1h, 1d.
fn span(text: &str) -> Result<Duration, String> {
    match crate::audit::parse_duration(text.trim()) {
        Some(d) if !d.is_zero() => Ok(d),
        _ => Err(format!("{text:?}: use a duration such as 90s, 10m or 1h")),
    }
}

/// A duration, or 0.
fn span_or_zero(text: &str) -> Result<Duration, String> {
    if text.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    span(text)
}

/// Flags of `backup`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// Database URL, as given to the server (sqlite://PATH).
    #[arg(long, env = "EMPLOYEE_MCP_DATABASE", default_value = DEFAULT_DATABASE)]
    pub database: DatabaseUrl,
    /// The backup file to write (must not exist).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// Flags of `restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// Database URL, as given to the server (sqlite://PATH).
    #[arg(long, env = "EMPLOYEE_MCP_DATABASE", default_value = DEFAULT_DATABASE)]
    pub database: DatabaseUrl,
    /// The backup file to restore from (written by `backup`).
    #[arg(long, value_name = "FILE")]
    pub from: PathBuf,
}

/// Flags of the server.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to serve Streamable HTTP on (port 0 picks a free port).
    #[arg(long, env = "EMPLOYEE_MCP_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Database URL: `sqlite://PATH` (created if missing), `sqlite::memory:`, or
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` (an existing
    /// database; the first server migrates and seeds it, replicas share it).
    #[arg(long, env = "EMPLOYEE_MCP_DATABASE", default_value = DEFAULT_DATABASE)]
    pub database: DatabaseUrl,

    /// Leave a new database empty instead of filling it with the demo
    /// company (for an `import` next).
    #[arg(long, env = "EMPLOYEE_MCP_NO_DEMO_DATA")]
    pub no_demo_data: bool,

    /// Threads that run requests (tokio workers). Default: one per core
    /// this process may use. Replicas sharing a host should split its
    /// cores between them: two replicas with a worker per core each spend
    /// more CPU per call than one (docs/performance.md).
    #[arg(
        long,
        env = "EMPLOYEE_MCP_WORKER_THREADS",
        value_name = "N",
        value_parser = clap::value_parser!(u16).range(1..=1024)
    )]
    pub worker_threads: Option<u16>,

    /// Most database connections this server opens (SQLite uses at most 8,
    /// fewer on small machines). On PostgreSQL, replicas × this must stay
    /// below the server's max_connections.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_DB_POOL_SIZE",
        default_value_t = 16,
        value_parser = clap::value_parser!(u32).range(1..=1000)
    )]
    pub db_pool_size: u32,

    /// PostgreSQL: seconds a directory query may run before the server
    /// cancels it.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_DB_STATEMENT_TIMEOUT",
        default_value_t = 30,
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub db_statement_timeout: u64,

    /// MiB of directory answers kept in memory while the directory is
    /// unchanged, so repeated reads run no query (each answer counts four
    /// times its JSON: the serialised tool output and its finished result
    /// are kept beside it); every
    /// change to the directory's tables empties it (exact, not a TTL).
    /// 0 turns it off.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_DIRECTORY_CACHE_MIB",
        default_value_t = 32,
        value_parser = clap::value_parser!(u32).range(0..=4096)
    )]
    pub directory_cache_mib: u32,

    /// People in the demo company seeded into an empty database: a
    /// deterministic company of exactly N people (teams of 3-15 under a
    /// management chain that deepens with N). Unset: the ~1,400-person
    /// demo. Ignored when the database already has employees.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_DEMO_EMPLOYEES",
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(
            i64::from(employee_directory::MIN_DEMO_EMPLOYEES)..=i64::from(employee_directory::MAX_DEMO_EMPLOYEES)
        )
    )]
    pub demo_employees: Option<u32>,

    /// Milliseconds a report called with the tasks extension may run
    /// before the call becomes a task (the client then polls); a report
    /// finished sooner is answered directly. 0 makes every such call a
    /// task.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_REPORT_TASK_GRACE_MS",
        value_name = "MS",
        default_value_t = 250,
        value_parser = clap::value_parser!(u64).range(0..=60_000)
    )]
    pub report_task_grace_ms: u64,

    /// Serve MCP on stdin/stdout instead of HTTP (for desktop clients).
    #[arg(long)]
    pub stdio: bool,

    /// Extra host names accepted in Host/Origin headers (loopback names
    /// always are). Needed when clients reach the server by another name.
    #[arg(
        long = "allowed-host",
        env = "EMPLOYEE_MCP_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,

    /// Extra browser origins accepted in the Origin header, e.g. `https://app.example.com`.
    #[arg(
        long = "allowed-origin",
        env = "EMPLOYEE_MCP_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    pub allowed_origins: Vec<String>,

    /// Largest accepted request body in bytes.
    #[arg(long, env = "EMPLOYEE_MCP_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Per-call time limit for tools, in seconds.
    #[arg(long, env = "EMPLOYEE_MCP_CALL_TIMEOUT_SECS", default_value_t = 30)]
    pub call_timeout_secs: u64,

    #[command(flatten)]
    pub auth: AuthArgs,

    #[command(flatten)]
    pub limits: LimitArgs,

    #[command(flatten)]
    pub cluster: ClusterArgs,

    #[command(flatten)]
    pub connections: ConnectionArgs,

    #[command(flatten)]
    pub console: crate::console::ConsoleArgs,

    #[command(flatten)]
    pub approvals: ApprovalArgs,

    /// How long audit_log rows are kept: 90d, 12h, 30m…, or off. Older
    /// rows are deleted at start and every 10 minutes, in small batches.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_AUDIT_RETENTION",
        value_name = "DURATION",
        default_value = DEFAULT_RETENTION
    )]
    pub audit_retention: Retention,

    /// Longest a call waits for its audit row's commit before it is
    /// answered with an error (no unaudited answer is sent). On SQLite the
    /// trail has its own file, so only another writer of the trail (a
    /// second server on the same file) adds to the wait.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_AUDIT_COMMIT_TIMEOUT_SECS",
        value_name = "SECS",
        default_value_t = crate::audit::COMMIT_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(10..=3600)
    )]
    pub audit_commit_timeout_secs: u64,

    /// Log line format on stderr.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    pub log_format: LogFormat,

    /// Serve on a non-loopback address WITHOUT any authentication. Anyone
    /// who can reach the port can read every employee's data. Not needed
    /// with --auth-issuer.
    #[arg(long = "i-understand-this-exposes-hr-data-without-auth")]
    pub insecure_public_bind: bool,

    /// Custom SQL tools to serve from this TOML file: loaded at start (a
    /// broken file stops the start), then watched; a valid edit is applied
    /// to every server on the database, a broken one is logged and ignored.
    #[arg(long, env = "EMPLOYEE_MCP_TOOLS_FILE", value_name = "FILE")]
    pub tools_file: Option<PathBuf>,

    /// Most custom tools served (and loaded from --tools-file).
    #[arg(
        long,
        env = "EMPLOYEE_MCP_MAX_CUSTOM_TOOLS",
        default_value_t = crate::catalog::DEFAULT_MAX_CUSTOM_TOOLS
    )]
    pub max_custom_tools: usize,

    /// Custom SQL tool queries running at once (each on its own read-only
    /// connection); further calls wait.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_CUSTOM_QUERY_CONNECTIONS",
        default_value_t = 4,
        value_parser = clap::value_parser!(u64).range(1..=64)
    )]
    pub custom_query_connections: u64,

    /// SQLite: MiB SQLite's heap may grow while a custom SQL tool's
    /// statement runs; past it the statement is stopped with a tool error.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_CUSTOM_QUERY_MEMORY_MIB",
        default_value_t = crate::custom::limits::DEFAULT_HEAP_MIB,
        value_parser = clap::value_parser!(u32).range(1..=4096)
    )]
    pub custom_query_memory_mib: u32,

    /// PostgreSQL: the role custom tools' statements run as, with SELECT on
    /// the directory tables only; created at start when the user may (else
    /// the log prints the SQL a DBA must run; see docs/custom-tools.md).
    #[arg(
        long,
        env = "EMPLOYEE_MCP_CUSTOM_READER_ROLE",
        default_value = crate::custom::postgres::DEFAULT_READER_ROLE
    )]
    pub custom_reader_role: String,

    /// Write the address actually bound (useful with port 0) to this file.
    #[arg(long, hide = true)]
    pub port_file: Option<PathBuf>,

    /// Serve Prometheus metrics at /metrics (plus /healthz and /readyz) on
    /// this separate address, e.g. 0.0.0.0:9464. Off by default: metrics
    /// describe the traffic, so they belong on a port only the scraper can
    /// reach, never behind (or beside) the public MCP endpoint. Works with
    /// --stdio too.
    #[arg(long, env = "EMPLOYEE_MCP_METRICS_LISTEN", value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
}

/// OAuth 2.1 resource-server settings (HTTP only).
#[derive(Debug, Args)]
#[command(next_help_heading = "Authentication (OAuth, HTTP)")]
pub struct AuthArgs {
    /// Authorization server (token issuer) URL. Enables bearer-token
    /// authentication, scope enforcement and public binds.
    #[arg(long, env = "EMPLOYEE_MCP_AUTH_ISSUER", value_name = "URL")]
    pub auth_issuer: Option<String>,

    /// This server's canonical resource URI, required in the tokens'
    /// audience (e.g. `https://hr.example.com/mcp`). Required with --auth-issuer.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_AUTH_AUDIENCE",
        value_name = "URI",
        requires = "auth_issuer"
    )]
    pub auth_audience: Option<String>,

    /// Where the issuer's signing keys are (default: discovered from the
    /// issuer's metadata).
    #[arg(
        long,
        env = "EMPLOYEE_MCP_AUTH_JWKS_URL",
        value_name = "URL",
        requires = "auth_issuer"
    )]
    pub auth_jwks_url: Option<String>,

    /// Token claim holding the caller's own employee id (for self-service
    /// leave balance).
    #[arg(
        long,
        env = "EMPLOYEE_MCP_AUTH_SELF_CLAIM",
        value_name = "NAME",
        default_value = "employee_id"
    )]
    pub auth_self_claim: String,
}

/// Abuse and size limits.
#[derive(Debug, Args)]
#[command(next_help_heading = "Limits")]
pub struct LimitArgs {
    /// Sustained tool calls per minute, per caller and tool (callers are
    /// token subjects, or client IP addresses without authentication).
    #[arg(
        long,
        env = "EMPLOYEE_MCP_RATE_LIMIT_PER_MINUTE",
        default_value_t = 120,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub rate_limit_per_minute: u32,

    /// Tool calls allowed in a burst, per caller and tool.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_RATE_LIMIT_BURST",
        default_value_t = 30,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub rate_limit_burst: u32,

    /// Tool calls one caller may have running at once.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_MAX_CONCURRENT_CALLS",
        default_value_t = 8,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub max_concurrent_calls: u64,

    /// Largest tool result in bytes; larger results are refused with a
    /// notice (the department roster pages itself to fit).
    #[arg(long, env = "EMPLOYEE_MCP_MAX_RESULT_BYTES", default_value_t = 512 * 1024)]
    pub max_result_bytes: usize,

    /// Most legacy (initialize) sessions kept at once. At the limit, sessions
    /// never used since their initialize make room first; sessions in use are
    /// never evicted by newcomers (a new session is refused instead).
    #[arg(
        long,
        env = "EMPLOYEE_MCP_MAX_SESSIONS",
        default_value_t = 10_000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub max_sessions: u64,

    /// Legacy sessions idle this long (seconds) are dropped.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_SESSION_IDLE_TIMEOUT_SECS",
        default_value_t = 3600
    )]
    pub session_idle_timeout_secs: u64,

    /// New legacy sessions per minute, per caller (token subject, else client
    /// address); bursts of a fifth of it are allowed. 0 disables the limit.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_INITIALIZE_PER_MINUTE",
        default_value_t = 600
    )]
    pub initialize_per_minute: u32,

    /// Most messages in one JSON-RPC batch (2025-03-26 sessions only).
    #[arg(
        long,
        env = "EMPLOYEE_MCP_MAX_BATCH_ITEMS",
        default_value_t = 64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub max_batch_items: u64,

    /// Address of a reverse proxy whose X-Forwarded-For is trusted (repeat or
    /// comma-separate). Without it every client behind a proxy shares the
    /// proxy's address for rate limits.
    #[arg(
        long = "trusted-proxy",
        env = "EMPLOYEE_MCP_TRUSTED_PROXIES",
        value_delimiter = ','
    )]
    pub trusted_proxies: Vec<std::net::IpAddr>,
}

/// Replicas on one PostgreSQL database (`--database postgres://…`).
#[derive(Debug, Args)]
#[command(next_help_heading = "Replicas (PostgreSQL)")]
pub struct ClusterArgs {
    /// PostgreSQL URL where replicas share legacy sessions, events and the
    /// request-state key. Defaults to --database when that is PostgreSQL;
    /// without either, the process keeps them in memory (one replica).
    #[arg(long, env = "EMPLOYEE_MCP_SHARED_STATE_URL", value_name = "URL")]
    pub shared_state_url: Option<DatabaseUrl>,

    /// File holding the requestState signing key: at least 32 random bytes,
    /// raw or hex (`openssl rand -hex 32`). Give every replica the same
    /// file. Without it: a random key per process on SQLite, one key shared
    /// through the database on PostgreSQL.
    #[arg(long, env = "EMPLOYEE_MCP_REQUEST_STATE_KEY_FILE", value_name = "PATH")]
    pub request_state_key_file: Option<PathBuf>,

    /// Connections of the pool for the shared state: sessions, the bus,
    /// tasks and limits (PostgreSQL).
    #[arg(
        long,
        env = "EMPLOYEE_MCP_SHARED_POOL_SIZE",
        default_value_t = 8,
        value_parser = clap::value_parser!(u64).range(1..=1000)
    )]
    pub shared_pool_size: u64,

    /// Milliseconds one read or write of the state shared by replicas
    /// (sessions, tasks, rate limits) may take. Past it the request fails
    /// (-32603, or 503 on GET/DELETE) rather than being admitted unchecked
    /// or left hanging.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_SHARED_STATE_TIMEOUT_MS",
        default_value_t = 2000,
        value_parser = clap::value_parser!(u64).range(50..=60_000)
    )]
    pub shared_state_timeout_ms: u64,
}

/// Bounds on HTTP connections (slow clients, idle keep-alive, shutdown).
#[derive(Debug, Args)]
#[command(next_help_heading = "Connections (HTTP)")]
pub struct ConnectionArgs {
    /// Seconds a client has to send a request's headers, from their first
    /// byte (for a new connection, from connecting); slower connections are
    /// closed.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_HEADER_READ_TIMEOUT_SECS",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub header_read_timeout_secs: u64,

    /// Seconds a client has to send a whole request body; slower requests
    /// get 408 and their connection is closed.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_BODY_READ_TIMEOUT_SECS",
        default_value_t = 30,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub body_read_timeout_secs: u64,

    /// Seconds a keep-alive connection may wait for its next request before
    /// it is closed (open streams are never idle).
    #[arg(
        long,
        env = "EMPLOYEE_MCP_IDLE_TIMEOUT_SECS",
        default_value_t = 60,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub idle_timeout_secs: u64,

    /// Most HTTP connections open at once; further clients wait (in the
    /// kernel's backlog) until one closes. Keep it below the file
    /// descriptor limit (ulimit -n).
    #[arg(
        long,
        env = "EMPLOYEE_MCP_MAX_CONNECTIONS",
        default_value_t = 10_000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub max_connections: u64,

    /// Connections accepted beyond --max-connections that serve only
    /// /healthz and /readyz (anything else gets 503 + Retry-After), so
    /// probes never wait behind clients. 0 turns the reserve off.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_PROBE_RESERVE_CONNECTIONS",
        default_value_t = 8
    )]
    pub probe_reserve_connections: u64,

    /// Most long-lived streams (subscriptions/listen, legacy GET streams,
    /// GET /sse) open at once, all clients together; further ones get 429.
    /// Default: half of --max-connections, so requests always find room.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_MAX_STREAMS",
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub max_streams: Option<u64>,

    /// Most long-lived streams one client (token subject, else client
    /// address) may have open at once; further ones get 429.
    #[arg(
        long,
        env = "EMPLOYEE_MCP_MAX_STREAMS_PER_CALLER",
        default_value_t = 16,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub max_streams_per_caller: u64,

    /// On SIGTERM or Ctrl-C, seconds requests in flight get to finish before
    /// the remaining connections are dropped.
    #[arg(long, env = "EMPLOYEE_MCP_SHUTDOWN_GRACE_SECS", default_value_t = 10)]
    pub shutdown_grace_secs: u64,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (coloured on a terminal).
    Text,
    /// One JSON object per line.
    Json,
}

/// `--outcome`: the spellings the audit trail stores for each
/// [`CallOutcome`].
fn outcome_parser() -> impl TypedValueParser<Value = CallOutcome> {
    PossibleValuesParser::new(CallOutcome::ALL.map(CallOutcome::as_str)).try_map(|name| {
        CallOutcome::ALL
            .into_iter()
            .find(|o| o.as_str() == name)
            .ok_or_else(|| format!("unknown outcome {name:?}"))
    })
}

/// Flags of `audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Database URL, as given to the server.
    #[arg(long, env = "EMPLOYEE_MCP_DATABASE", default_value = DEFAULT_DATABASE)]
    pub database: DatabaseUrl,

    /// Only calls at or after this time: RFC 3339 (2026-10-01T09:00:00Z) or
    /// a duration back from now (30m, 1h, 7d). Read as unix milliseconds.
    #[arg(long, value_name = "TIME", value_parser = crate::audit::parse_time_arg)]
    pub since: Option<i64>,

    /// Only calls before this time (same forms as --since).
    #[arg(long, value_name = "TIME", value_parser = crate::audit::parse_time_arg)]
    pub until: Option<i64>,

    /// Only calls of this tool.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,

    /// Only calls by this token subject.
    #[arg(long, value_name = "SUB")]
    pub subject: Option<String>,

    /// Only calls with this outcome.
    #[arg(long, value_name = "OUTCOME", value_parser = outcome_parser())]
    pub outcome: Option<CallOutcome>,

    /// Most rows to print (the newest ones).
    #[arg(long, default_value_t = 100)]
    pub limit: u32,

    /// Print JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn no_subcommand_serves() {
        let cli = Cli::try_parse_from(["x", "--listen", "127.0.0.1:0"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.serve.limits.rate_limit_per_minute, 120);
        assert_eq!(
            cli.serve.audit_retention,
            Retention(Some(std::time::Duration::from_secs(90 * 86_400)))
        );
        assert_eq!(cli.serve.log_format, LogFormat::Text);
        let cli =
            Cli::try_parse_from(["x", "--audit-retention", "off", "--log-format", "json"]).unwrap();
        assert_eq!(cli.serve.audit_retention, Retention(None));
        assert_eq!(cli.serve.log_format, LogFormat::Json);
        assert!(Cli::try_parse_from(["x", "--audit-retention", "soon"]).is_err());
        let cli = Cli::try_parse_from(["x", "audit", "--outcome", "rate_limited"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Audit(AuditArgs {
                outcome: Some(CallOutcome::RateLimited),
                ..
            }))
        ));
    }
}
