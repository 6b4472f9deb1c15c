//! `mcp-bench`: drives an MCP server over Streamable HTTP with concurrent
//! requests and prints throughput and latency percentiles per workload and
//! concurrency level. See README.md for usage and how to read the numbers.

mod bench;
mod ceiling;
mod cluster;
mod company;
mod handlers;
mod procstat;
mod scale;
mod server;
mod stats;
mod stdio;
mod stubs;
mod wire;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use reqwest::Url;
use serde::Serialize;

use bench::{CellResult, Stop, Workload};
use company::{Cache, Company};
use procstat::ProcStat;
use server::ServerGuard;
use wire::{McpClient, Wire};

/// Benchmark an MCP server (Streamable HTTP) with concurrent requests.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// MCP endpoint of an already running server, e.g. http://127.0.0.1:8080/mcp.
    /// Without it the bench starts `--server-bin` itself on a free port.
    #[arg(long)]
    url: Option<Url>,

    /// Server binary to start when --url is not given
    /// [default: target/release/employee-mcp-server under the workspace root].
    #[arg(long, conflicts_with = "url")]
    server_bin: Option<PathBuf>,

    /// Extra argument for the started server (repeatable), e.g.
    /// `--server-arg=--rate-limit-per-minute=0` to measure without limits.
    #[arg(
        long = "server-arg",
        conflicts_with = "url",
        allow_hyphen_values = true
    )]
    server_args: Vec<String>,

    /// Seconds to measure each cell (workload x concurrency) [default: 5].
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    duration: Option<Duration>,

    /// Measure each cell for this many requests instead of a duration.
    #[arg(long, value_name = "N", conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..))]
    requests: Option<u64>,

    /// Concurrency levels (number of in-flight requests), comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64", value_parser = clap::value_parser!(u32).range(1..=4096))]
    concurrency: Vec<u32>,

    /// Seconds of warm-up before each cell; its results are discarded.
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = parse_secs)]
    warmup: Duration,

    /// Wire formats, comma separated: modern (2026-07-28, sessionless)
    /// and/or legacy (2025-11-25, sessions).
    #[arg(
        long = "wire",
        value_enum,
        value_delimiter = ',',
        default_value = "modern,legacy"
    )]
    wires: Vec<Wire>,

    /// Workloads to run, comma separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "list,details,department,tenure,team,search,compensation,leave,report,mixed"
    )]
    workloads: Vec<Workload>,

    /// Skip the bare axum ceiling (measured by default, per wire and
    /// concurrency, with the get-employee-details request).
    #[arg(long)]
    no_ceiling: bool,

    /// Keep the started server's rate and concurrency limits (by default
    /// they are lifted so the bench measures the server, not the limiter).
    #[arg(long, conflicts_with = "url")]
    keep_limits: bool,

    /// Process ids of the server behind --url (comma separated or
    /// repeated; the replicas of a cluster are summed), to report CPU time
    /// per call and peak memory.
    #[arg(long, requires = "url", value_delimiter = ',')]
    server_pid: Vec<u32>,

    /// Database URL for the started server (e.g. a PostgreSQL
    /// `postgres://…` URL) instead of a fresh SQLite file.
    #[arg(long, conflicts_with = "url")]
    database: Option<String>,

    /// Helper processes whose CPU per call is reported apart (`aux µs`):
    /// nginx, the PostgreSQL postmaster. Their direct children (nginx
    /// workers, PostgreSQL backends) are included.
    #[arg(long, value_delimiter = ',')]
    aux_pid: Vec<u32>,

    /// A cluster started by `scripts/cluster up --prefix DIR`: its balancer
    /// URL, replica pids (server CPU), nginx and PostgreSQL (aux CPU).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["url", "server_bin", "database"])]
    cluster: Option<PathBuf>,

    /// Name for the server's rows in the table and the JSON (default
    /// `server`), e.g. `pg-3x`.
    #[arg(long, default_value = "server")]
    label: String,

    /// Internal: serve the ceiling endpoint on this address (the bench
    /// starts itself this way).
    #[arg(long, hide = true, value_name = "ADDR")]
    serve_ceiling: Option<std::net::SocketAddr>,

    /// Instead of the HR server: start the stub server (a typed and a raw
    /// handler answering with the same bytes), run the `stub-typed` and
    /// `stub-raw` workloads and print their typed/raw ratios.
    #[arg(long, conflicts_with_all = [
        "url", "server_bin", "server_args", "database", "cluster",
        "keep_limits", "label", "workloads", "stdio",
    ])]
    handlers: bool,

    /// Serve the stub server of `--handlers` on this address (for a
    /// side-by-side run with `--url` against it and bench/rmcp-http).
    #[arg(long, value_name = "ADDR")]
    serve_stubs: Option<std::net::SocketAddr>,

    /// Per-request timeout in seconds; a timed-out request counts as an error.
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_secs)]
    timeout: Duration,

    /// Tokio worker threads for the client [default: number of CPUs].
    #[arg(long)]
    threads: Option<usize>,

    /// Also print machine-readable JSON results on stdout (the table then
    /// goes to stderr).
    #[arg(long)]
    json: bool,

    /// Instead of HTTP: spawn this stdio server (with --server-arg
    /// arguments), send sequential tools/call lines (--requests, default
    /// 5000) and report microseconds per round trip, next to a bare line
    /// echo and the rmcp stub (--rmcp) measured the same way. Repeatable,
    /// to compare builds (rows are labelled by file name).
    #[arg(long, value_name = "BIN", conflicts_with = "url")]
    stdio: Vec<PathBuf>,

    /// The rmcp stub server of the stdio comparison
    /// (bench/rmcp-stdio/target/release/rmcp-stdio-stub); measured with
    /// rmcp's `stdio()` and `stdio_pipes()`. Skipped with a note when absent.
    #[arg(long, value_name = "BIN", requires = "stdio")]
    rmcp: Option<PathBuf>,

    /// Rounds of the stdio comparison.
    #[arg(long, default_value = "3", value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,

    /// Tool the stdio mode calls.
    #[arg(long, default_value = "greet")]
    stdio_tool: String,

    /// Its arguments, as JSON.
    #[arg(long, default_value = r#"{"name":"bench"}"#)]
    stdio_arguments: String,

    /// Internal: act as the line-echo child of the stdio mode.
    #[arg(long, hide = true)]
    echo_child: bool,

    /// Company sizes to measure, comma separated: `demo` (the ~1,400-person
    /// demo) or a number of people (33 to 1,000,000). For each size the
    /// bench starts a server on a fresh SQLite file seeded with
    /// `--demo-employees N`, runs every cell, and stops it; with more than
    /// one size a summary compares them.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        value_parser = company::parse_company,
        conflicts_with_all = ["url", "cluster", "database", "handlers", "stdio"]
    )]
    employees: Vec<Company>,

    /// Directory cache settings to measure, comma separated: `off` starts
    /// the server with `--directory-cache-mib 0`, `on` with its default
    /// [default: on]. Each setting gets its own server (and, with
    /// --employees, its own freshly seeded database).
    #[arg(
        long,
        value_name = "LIST",
        value_enum,
        value_delimiter = ',',
        conflicts_with_all = ["url", "cluster", "handlers", "stdio"]
    )]
    cache: Vec<Cache>,
}

/// The stdio round-trip mode: in each round the echo ceiling, every
/// `--stdio` server and the rmcp stub (`--rmcp`), then medians and ratios.
fn run_stdio(servers: &[PathBuf], args: &Args) -> ExitCode {
    let Ok(arguments) = serde_json::from_str::<serde_json::Value>(&args.stdio_arguments) else {
        eprintln!("mcp-bench: --stdio-arguments is not JSON");
        return ExitCode::FAILURE;
    };
    let me = match std::env::current_exe() {
        Ok(me) => me,
        Err(e) => {
            eprintln!("mcp-bench: cannot find my own binary for the echo child: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut targets = vec![stdio::compare::Target {
        label: "line echo".to_owned(),
        program: me,
        args: vec!["--echo-child".to_owned()],
    }];
    for (i, bin) in servers.iter().enumerate() {
        let name = bin.file_name().map(|n| n.to_string_lossy().into_owned());
        targets.push(stdio::compare::Target {
            label: name.unwrap_or_else(|| format!("server {}", i + 1)),
            program: bin.clone(),
            args: args.server_args.clone(),
        });
    }
    targets.extend(stdio::compare::rmcp_targets(args.rmcp.as_deref()));
    let calls = args.requests.unwrap_or(5000);
    let plan = stdio::compare::Plan {
        targets,
        tool: args.stdio_tool.clone(),
        arguments,
        calls,
        warmup: (calls / 10).max(100),
        rounds: args.rounds,
    };
    match stdio::compare::run(&plan) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-bench: stdio mode failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|e| format!("{e}"))?;
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{s} is not a valid number of seconds"))
}

/// Exit code when the run completed but some requests failed, so scripts can
/// tell a clean run from a broken server without parsing the table.
const EXIT_REQUEST_ERRORS: u8 = 3;

fn main() -> ExitCode {
    let args = Args::parse();
    if args.echo_child {
        return match stdio::echo() {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    if !args.stdio.is_empty() {
        return run_stdio(&args.stdio, &args);
    }
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(n) = args.threads.filter(|&n| n > 0) {
        rt.worker_threads(n);
    }
    // reqwest is built without a default TLS provider in this workspace;
    // install ring's (ignored if one is already installed).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = match rt.build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-bench: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The hidden serving modes: this binary as a child of the bench.
    let serving = match (args.serve_ceiling, args.serve_stubs) {
        (Some(addr), _) => Some(("ceiling", addr, rt.block_on(ceiling::serve(addr)))),
        (None, Some(addr)) => Some(("stub server", addr, rt.block_on(stubs::serve(addr)))),
        (None, None) => None,
    };
    if let Some((what, addr, result)) = serving {
        return match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mcp-bench: {what} on {addr}: {e}");
                ExitCode::FAILURE
            }
        };
    }
    rt.block_on(async {
        // Dropping `run` on Ctrl-C drops the server guard, which kills the
        // spawned server: no orphaned process.
        tokio::select! {
            code = run(args) => code,
            _ = tokio::signal::ctrl_c() => {
                eprintln!("mcp-bench: interrupted");
                ExitCode::from(130)
            }
        }
    })
}

/// Machine-readable output of a whole run.
#[derive(Serialize)]
struct Report<'a> {
    url: String,
    duration_s: Option<f64>,
    requests_per_cell: Option<u64>,
    warmup_s: f64,
    results: &'a [CellResult],
    /// `--handlers`: typed over raw per wire and concurrency.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    handlers: &'a [handlers::Ratio],
    /// `--employees` / `--cache`: the servers started and the summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    scale: Option<&'a scale::ScaleReport>,
}

async fn run(args: Args) -> ExitCode {
    match run_inner(args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(EXIT_REQUEST_ERRORS),
        Err(e) => {
            eprintln!("mcp-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Server flags that lift the per-caller limits: every bench request
/// comes from one address, so the limiter would otherwise be measured.
const LIFTED_LIMITS: [&str; 4] = [
    "--rate-limit-per-minute=1000000000",
    "--rate-limit-burst=1000000000",
    "--max-concurrent-calls=1000000",
    "--initialize-per-minute=0",
];

/// The server under test: its URL and, when known, its processes.
struct Target {
    url: Url,
    process: Option<ProcStat>,
    /// nginx / PostgreSQL, measured apart.
    aux: Option<ProcStat>,
    /// Keeps a started server alive; dropping it stops the server.
    _guard: Option<ServerGuard>,
}

/// `--aux-pid` as a sampled group.
fn aux_of(pids: &[u32]) -> Option<ProcStat> {
    (!pids.is_empty()).then(|| ProcStat::group(pids.to_vec(), true))
}

/// How long a started server may take to seed its database and answer.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// Starts the server (or uses `--url`) and waits until it answers.
async fn start_server(args: &Args) -> Result<Target, Box<dyn std::error::Error>> {
    let wire = args.wires.first().copied().unwrap_or(Wire::Modern);
    let external = match &args.cluster {
        Some(dir) => Some(cluster::read(dir)?),
        None => args.url.clone().map(|url| cluster::External {
            url,
            server_pids: args.server_pid.clone(),
            aux_pids: args.aux_pid.clone(),
        }),
    };
    let Some(ext) = external else {
        return spawn_server(args, &[], READY_TIMEOUT).await;
    };
    let client = McpClient::new(ext.url.clone(), wire, args.timeout)?;
    // Fail fast on a wrong URL or wire instead of timing a stream of errors.
    server::probe(&client)
        .await
        .map_err(|e| format!("preflight against {} failed: {e}", ext.url))?;
    let process = (!ext.server_pids.is_empty()).then(|| ProcStat::group(ext.server_pids, false));
    Ok(Target {
        url: ext.url,
        process,
        aux: aux_of(&ext.aux_pids),
        _guard: None,
    })
}

/// Starts `--server-bin` with the lifted limits, `--server-arg`s and
/// `extra` arguments, and waits up to `ready_timeout` until it answers.
async fn spawn_server(
    args: &Args,
    extra: &[String],
    ready_timeout: Duration,
) -> Result<Target, Box<dyn std::error::Error>> {
    let wire = args.wires.first().copied().unwrap_or(Wire::Modern);
    let bin = server::locate_binary(args.server_bin.as_deref())?;
    eprintln!("starting {} …", bin.display());
    let mut server_args: Vec<String> = Vec::new();
    if !args.keep_limits {
        server_args.extend(LIFTED_LIMITS.iter().map(|s| (*s).to_owned()));
    }
    server_args.extend(args.server_args.iter().cloned());
    server_args.extend(extra.iter().cloned());
    let mut guard = ServerGuard::spawn(&bin, &server_args, args.database.as_deref())?;
    // First start seeds the database, which can take a while.
    guard.wait_ready(wire, ready_timeout).await?;
    eprintln!("server ready at {}", guard.url);
    Ok(Target {
        url: guard.url.clone(),
        process: Some(ProcStat::new(guard.pid())),
        aux: aux_of(&args.aux_pid),
        _guard: Some(guard),
    })
}

/// Starts this binary in a serving mode (`ServerGuard::spawn_ceiling` or
/// `spawn_stubs`) as a child process and waits until it answers.
async fn start_self(
    spawn: fn() -> Result<ServerGuard, server::ServerError>,
    wire: Wire,
) -> Result<Target, Box<dyn std::error::Error>> {
    let mut guard = spawn()?;
    guard.wait_ready(wire, Duration::from_secs(30)).await?;
    Ok(Target {
        url: guard.url.clone(),
        process: Some(ProcStat::new(guard.pid())),
        aux: None,
        _guard: Some(guard),
    })
}

/// The workloads of the run: the two stub workloads with `--handlers`,
/// else `--workloads`, which may name them only with `--url` (a stub
/// server started apart: `--serve-stubs`, or rmcp's in bench/rmcp-http);
/// the HR server has no such tools, so every request would fail.
fn workloads(args: &Args) -> Result<Vec<Workload>, String> {
    if args.handlers {
        return Ok(Workload::STUBS.to_vec());
    }
    if args.url.is_some() {
        return Ok(args.workloads.clone());
    }
    match args.workloads.iter().find(|w| w.is_stub()) {
        Some(w) => Err(format!(
            "workload {} exists only on the stub server: use --handlers, or --url of a stub server (--serve-stubs ADDR)",
            w.label()
        )),
        None => Ok(args.workloads.clone()),
    }
}

/// What every cell of a run shares.
struct Run<'a> {
    args: &'a Args,
    stop: Stop,
    workloads: Vec<Workload>,
    ceiling: Option<Target>,
    /// Name of the server's rows.
    label: &'static str,
}

/// What the run measures: one server, or a server per point of the
/// company-size axis.
enum Subject {
    Server(Box<Target>),
    Scale(scale::Axis),
}

/// Runs all cells; `Ok(false)` means some requests failed.
async fn run_inner(args: Args) -> Result<bool, Box<dyn std::error::Error>> {
    let workloads = workloads(&args)?;
    let first_wire = args.wires.first().copied().unwrap_or(Wire::Modern);
    let subject = match scale::Axis::from_args(&args)? {
        Some(axis) => Subject::Scale(axis),
        None if args.handlers => Subject::Server(Box::new(
            start_self(ServerGuard::spawn_stubs, first_wire).await?,
        )),
        None => Subject::Server(Box::new(start_server(&args).await?)),
    };
    let ceiling = if args.no_ceiling {
        None
    } else {
        Some(start_self(ServerGuard::spawn_ceiling, first_wire).await?)
    };
    let stop = match (args.requests, args.duration) {
        (Some(n), _) => Stop::Requests(n),
        (None, d) => Stop::After(d.unwrap_or(Duration::from_secs(5))),
    };
    let label = if args.handlers {
        handlers::TARGET
    } else {
        // One small leak per run: rows carry the label as `&'static str`.
        Box::leak(args.label.clone().into_boxed_str())
    };
    let run = Run {
        args: &args,
        stop,
        workloads,
        ceiling,
        label,
    };

    // With --json, stdout is reserved for the JSON document.
    let mut out: Box<dyn Write> = if args.json {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let url = match &subject {
        Subject::Server(server) => server.url.to_string(),
        Subject::Scale(_) => "(a server per company size and cache setting)".to_owned(),
    };
    run.print_header(&mut out, &url)?;
    let (results, scale) = run.all_cells(&subject, &mut out).await?;
    let ratios = handlers::ratios(&results);
    for ratio in &ratios {
        writeln!(out, "{}", ratio.line())?;
    }

    let total_errors: u64 = results.iter().map(|r| r.errors).sum();
    if total_errors > 0 {
        eprintln!("warning: {total_errors} request(s) failed; rows with errors are not comparable");
    }
    if args.json {
        let report = Report {
            url,
            duration_s: match stop {
                Stop::After(d) => Some(d.as_secs_f64()),
                Stop::Requests(_) => None,
            },
            requests_per_cell: args.requests,
            warmup_s: args.warmup.as_secs_f64(),
            results: &results,
            handlers: &ratios,
            scale: scale.as_ref(),
        };
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(total_errors == 0)
}

impl Run<'_> {
    /// Every cell of the run: per wire the ceiling, then the server; or
    /// the company-size axis with its report.
    async fn all_cells(
        &self,
        subject: &Subject,
        out: &mut Box<dyn Write>,
    ) -> Result<(Vec<CellResult>, Option<scale::ScaleReport>), Box<dyn std::error::Error>> {
        match subject {
            Subject::Server(server) => {
                let mut results = Vec::new();
                for &wire in &self.args.wires {
                    results.extend(self.ceiling(wire, out).await?);
                    let cells = self.server_cells(wire, server, &results, out).await?;
                    results.extend(cells);
                }
                Ok((results, None))
            }
            Subject::Scale(axis) => {
                let (results, report) = scale::run(self, axis, out).await?;
                Ok((results, Some(report)))
            }
        }
    }

    /// The line naming the run, then the table header.
    fn print_header(&self, out: &mut Box<dyn Write>, url: &str) -> std::io::Result<()> {
        let stop_desc = match self.stop {
            Stop::After(d) => format!("{}s/cell", d.as_secs_f64()),
            Stop::Requests(n) => format!("{n} requests/cell"),
        };
        let threads = self
            .args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        writeln!(
            out,
            "mcp-bench  url={}  {}  warmup={}s  client threads={}",
            url,
            stop_desc,
            self.args.warmup.as_secs_f64(),
            threads,
        )?;
        writeln!(out, "{}", header())
    }

    /// The ceiling at every concurrency over `wire` (none when skipped),
    /// each row printed as it finishes.
    async fn ceiling(
        &self,
        wire: Wire,
        out: &mut Box<dyn Write>,
    ) -> Result<Vec<CellResult>, Box<dyn std::error::Error>> {
        let Some(ceiling) = &self.ceiling else {
            return Ok(Vec::new());
        };
        let (args, stop) = (self.args, self.stop);
        let client = McpClient::new(ceiling.url.clone(), wire, args.timeout)?;
        let mut results = Vec::new();
        for &concurrency in &args.concurrency {
            let mut cell =
                measure(&client, Workload::Details, concurrency, args, stop, ceiling).await?;
            cell.target = "ceiling";
            report_cell(out, &cell)?;
            results.push(cell);
        }
        Ok(results)
    }

    /// The server's cells over `wire`, each row printed as it finishes,
    /// with its share of the matching cell in `ceilings` (the ceiling at
    /// the same wire and concurrency) when there is one.
    async fn server_cells(
        &self,
        wire: Wire,
        server: &Target,
        ceilings: &[CellResult],
        out: &mut Box<dyn Write>,
    ) -> Result<Vec<CellResult>, Box<dyn std::error::Error>> {
        let (args, stop) = (self.args, self.stop);
        let client = McpClient::new(server.url.clone(), wire, args.timeout)?;
        let cells = handlers::cell_order(&self.workloads, &args.concurrency, args.handlers);
        let mut results = Vec::new();
        for (workload, concurrency) in cells {
            let mut cell = measure(&client, workload, concurrency, args, stop, server).await?;
            cell.target = self.label;
            cell.ceiling_ratio = ceilings
                .iter()
                .find(|c| {
                    c.target == "ceiling" && c.wire == wire && c.concurrency == cell.concurrency
                })
                .filter(|c| c.requests_per_s > 0.0)
                .map(|c| cell.requests_per_s / c.requests_per_s);
            report_cell(out, &cell)?;
            results.push(cell);
        }
        Ok(results)
    }
}

/// Runs one cell against `target`.
async fn measure(
    client: &std::sync::Arc<McpClient>,
    workload: Workload,
    concurrency: u32,
    args: &Args,
    stop: Stop,
    target: &Target,
) -> Result<CellResult, String> {
    bench::run_cell(
        client,
        workload,
        concurrency as usize,
        args.warmup,
        stop,
        target.process.as_ref(),
        target.aux.as_ref(),
    )
    .await
    .map_err(|e| {
        format!(
            "{} c={concurrency}: opening sessions failed: {e}",
            workload.label()
        )
    })
}

/// Prints one row (and the cell's first error, if any).
fn report_cell(out: &mut Box<dyn Write>, cell: &CellResult) -> std::io::Result<()> {
    writeln!(out, "{}", row(cell))?;
    out.flush()?;
    if let Some(err) = &cell.first_error {
        eprintln!("  first error: {err}");
    }
    Ok(())
}

/// The table's header line.
fn header() -> String {
    format!(
        "{:<8} {:<6} {:<26} {:>4} {:>9} {:>6} {:>8} {:>8} {:>8} {:>9} {:>8} {:>7} {:>7} {:>6}",
        "target",
        "wire",
        "workload",
        "conc",
        "req/s",
        "%ceil",
        "p50 ms",
        "p99 ms",
        "max ms",
        "answer B",
        "cpu µs",
        "aux µs",
        "rss MiB",
        "errors"
    )
}

/// One cell as a table row.
fn row(c: &CellResult) -> String {
    let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
    let opt = |v: Option<f64>, digits: usize| {
        v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
    };
    let l = c.latency;
    format!(
        "{:<8} {:<6} {:<26} {:>4} {:>9.0} {:>6} {:>8} {:>8} {:>8} {:>9} {:>8} {:>7} {:>7} {:>6}",
        c.target,
        c.wire.name(),
        c.workload,
        c.concurrency,
        c.requests_per_s,
        opt(c.ceiling_ratio.map(|r| r * 100.0), 1),
        ms(l.map(|l| l.p50_ms)),
        ms(l.map(|l| l.p99_ms)),
        ms(l.map(|l| l.max_ms)),
        c.answer_bytes
            .map_or_else(|| "-".to_owned(), |b| b.to_string()),
        opt(c.cpu_us_per_call, 0),
        opt(c.aux_cpu_us_per_call, 0),
        opt(c.peak_rss_mib, 1),
        c.errors,
    )
}
