//! `employee-mcp-server`: wires the HR directory, the tools, access
//! control, the audit trail and a transport; `audit` reads the trail.

mod actor;
mod approvals;
mod audit;
mod audit_stats;
mod auth;
mod backup;
mod catalog;
mod cli;
mod console;
mod custom;
mod error;
mod exchange;
mod ops;
mod replicas;
mod scopes;
mod serve;
mod telemetry;
mod tools;
mod views;

use std::io::{IsTerminal, Write};

use clap::Parser;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use cli::{AuditArgs, Cli, Command, LogFormat, ServeArgs};
use error::Error;

/// mimalloc serves the Rust side: with glibc malloc, allocation and
/// free (fastbin consolidation, chunk unlinking) were a large share of a
/// call's CPU; mimalloc costs less CPU per call on every tool, for some
/// more RSS (`MIMALLOC_PURGE_DELAY=0` gives most of it back for a little
/// CPU; docs/performance.md, "Memory: mimalloc and two glibc arenas").
/// Transparent huge pages are off (`no_thp`): with them, RSS grew a lot
/// under load.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // Before any thread exists: glibc, which still serves SQLite, gives
    // each thread that allocates its own arena (docs/performance.md).
    limit_malloc_arenas();
    let cli = Cli::parse();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let (None, Some(n)) = (&cli.command, cli.serve.worker_threads) {
        runtime.worker_threads(usize::from(n));
    }
    match runtime.enable_all().build() {
        // Exit inside the runtime rather than by dropping it: a stdio
        // server stopped by a signal still has a blocking read on stdin
        // that the runtime's shutdown would wait for forever.
        Ok(runtime) => runtime.block_on(async { exit(run(cli).await) }),
        Err(e) => exit(Err(Error::Runtime(e))),
    }
}

/// The one place a failure becomes a message and an exit code: `error: …`
/// on stderr and 1 (clap's own argument errors exit 2 before this).
fn exit(result: Result<(), Error>) -> ! {
    let code = match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    };
    std::process::exit(code)
}

/// Two glibc malloc arenas instead of up to eight per core: every
/// blocking database thread otherwise kept its own arena of SQLite's freed
/// memory, for more peak RSS at the same CPU per call.
/// `MALLOC_ARENA_MAX` or `GLIBC_TUNABLES` in the environment win.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none()
        && std::env::var_os("GLIBC_TUNABLES").is_none()
    {
        // SAFETY: mallopt only sets an allocator parameter; called before
        // any other thread is started.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

/// Runs the subcommand, or the server.
async fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Some(Command::Audit(args)) => print_audit(&args),
        Some(Command::Tools(args)) => Ok(catalog::command::run(&args).await?),
        Some(Command::Approvals(args)) => Ok(approvals::command::run(&args).await?),
        Some(Command::Backup(args)) => {
            println!("{}", backup::backup(&args.database, &args.out)?);
            Ok(())
        }
        Some(Command::Restore(args)) => {
            println!("{}", backup::restore(&args.database, &args.from)?);
            Ok(())
        }
        Some(Command::Export(args)) => Ok(exchange::export(&args).await?),
        Some(Command::Import(args)) => Ok(exchange::import(&args).await?),
        None => serve_traced(cli.serve).await,
    }
}

/// The server, with traces (OTLP) when `OTEL_*` says so (see
/// telemetry.rs); a failure is logged too, for log collectors.
async fn serve_traced(args: ServeArgs) -> Result<(), Error> {
    let traces = telemetry::Tracing::from_env()?;
    init_logging(args.log_format, traces.as_ref());
    let served = serve::serve(args)
        .await
        .inspect_err(|e| tracing::error!("{e}"));
    if let Some(t) = traces {
        t.shutdown().await;
    }
    served
}

/// Logs go to stderr: on stdio, stdout carries only MCP messages. Colour
/// only on a terminal, so a redirected log file holds no escape codes.
///
/// The log filter is the log layer's own (not global), so `RUST_LOG`
/// never hides request spans from the trace layer, and the trace layer's
/// spans never show up in log lines.
fn init_logging(format: LogFormat, traces: Option<&telemetry::Tracing>) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs = match format {
        LogFormat::Text => layer
            .with_ansi(std::io::stderr().is_terminal())
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => layer.json().with_ansi(false).with_filter(filter).boxed(),
    };
    tracing_subscriber::registry()
        .with(logs)
        .with(traces.map(telemetry::Tracing::layer))
        .init();
}

/// The `audit` subcommand.
fn print_audit(args: &AuditArgs) -> Result<(), Error> {
    let filter = audit::Filter {
        since_ms: args.since,
        until_ms: args.until,
        tool: args.tool.clone(),
        subject: args.subject.clone(),
        outcome: args.outcome.map(|o| o.as_str().to_owned()),
        limit: args.limit,
        ..audit::Filter::default()
    };
    let rows = audit::query(&args.database, &filter)?;
    let mut out = std::io::stdout().lock();
    let write = |out: &mut std::io::StdoutLock<'_>, line: String| {
        writeln!(out, "{line}").map_err(Error::Stdout)
    };
    if args.json {
        for row in &rows {
            let line = serde_json::to_string(row)?;
            write(&mut out, line)?;
        }
        return Ok(());
    }
    write(
        &mut out,
        format!(
            "{:<24}  {:<20}  {:<26}  {:<13}  {:>5}  {:>7}  {:<15}  {}",
            "TIME", "SUBJECT", "TOOL", "OUTCOME", "COUNT", "MS", "CLIENT", "ARGUMENTS / DETAIL"
        ),
    )?;
    for r in &rows {
        let client = r
            .client_id
            .as_deref()
            .or(r.client_name.as_deref())
            .or(r.remote_addr.as_deref())
            .unwrap_or("-");
        let mut tail = match &r.via {
            Some(view) => format!("[from the view {view}] {}", r.arguments),
            None => r.arguments.to_string(),
        };
        if let Some(d) = &r.detail {
            tail.push_str("  ");
            tail.push_str(d);
        }
        write(
            &mut out,
            format!(
                "{:<24}  {:<20}  {:<26}  {:<13}  {:>5}  {:>7}  {:<15}  {}",
                r.at,
                clip(r.subject.as_deref().unwrap_or("-"), 20),
                clip(&r.tool, 26),
                r.outcome,
                r.count,
                r.latency_ms,
                clip(client, 15),
                clip(&tail, 160),
            ),
        )?;
    }
    if rows.is_empty() {
        eprintln!("no audit records match");
    }
    Ok(())
}

/// Cuts a cell to `max` characters and removes control characters (the
/// trail holds caller-supplied text; a terminal must not interpret it).
fn clip(s: &str, max: usize) -> String {
    let clean = mcpwire_server::access::sanitize_text(s).replace(['\n', '\r', '\t'], " ");
    if clean.chars().count() <= max {
        return clean;
    }
    let mut cut: String = clean.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
