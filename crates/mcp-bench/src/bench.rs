//! Running one benchmark cell: a workload at a concurrency level.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::ValueEnum;
use serde::Serialize;

use crate::company::{Cache, Company};
use crate::procstat::ProcStat;
use crate::stats::{LatencySummary, median};
use crate::wire::{CallError, McpClient, Op, Session, Wire};

/// A request mix to benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// `tools/list` only.
    List,
    /// `get-employee-details` only.
    Details,
    /// `list-department-employees` only.
    Department,
    /// `calculate-employee-tenure` only.
    Tenure,
    /// `get-team-members` only.
    Team,
    /// `search-employees-by-skill` only.
    Search,
    /// `search-employees-by-skill` with a one-letter substring (`"o"`).
    SearchLetter,
    /// `get-compensation-info` only.
    Compensation,
    /// `check-leave-balance` only.
    Leave,
    /// `generate-employee-report` only (the headcount report).
    Report,
    /// The headcount report, under its own label.
    ReportHeadcount,
    /// The turnover report.
    ReportTurnover,
    /// The compensation report.
    ReportCompensation,
    /// Round-robin over `tools/list` and the eight tools.
    Mixed,
    /// `stub-typed` only: the stub server's typed handler (`--handlers`).
    StubTyped,
    /// `stub-raw` only: the stub server's raw handler (`--handlers`).
    StubRaw,
}

/// The operations [`Workload::Mixed`] rotates over.
const MIX: [Op; 9] = [
    Op::ListTools,
    Op::GetEmployee,
    Op::Department,
    Op::Tenure,
    Op::Team,
    Op::SearchBySkill,
    Op::Compensation,
    Op::Leave,
    Op::Report,
];

impl Workload {
    /// The workloads of `--handlers`, typed first.
    pub const STUBS: [Workload; 2] = [Workload::StubTyped, Workload::StubRaw];

    /// Whether this workload exists only on the stub server.
    pub fn is_stub(self) -> bool {
        Self::STUBS.contains(&self)
    }

    /// Label used in the table and JSON output: the tool's name, or for
    /// a workload calling a tool with other arguments than its default
    /// one, the workload's own name.
    pub fn label(self) -> &'static str {
        match self {
            Workload::SearchLetter => "search-letter",
            Workload::ReportHeadcount => "report-headcount",
            Workload::ReportTurnover => "report-turnover",
            Workload::ReportCompensation => "report-compensation",
            _ => match self.single() {
                Some(Op::ListTools) => "tools/list",
                Some(op) => op.tool().unwrap_or("?"),
                None => "mixed",
            },
        }
    }

    /// The one operation of a single-operation workload.
    fn single(self) -> Option<Op> {
        Some(match self {
            Workload::List => Op::ListTools,
            Workload::Details => Op::GetEmployee,
            Workload::Department => Op::Department,
            Workload::Tenure => Op::Tenure,
            Workload::Team => Op::Team,
            Workload::Search => Op::SearchBySkill,
            Workload::SearchLetter => Op::SearchLetter,
            Workload::Compensation => Op::Compensation,
            Workload::Leave => Op::Leave,
            Workload::Report | Workload::ReportHeadcount => Op::Report,
            Workload::ReportTurnover => Op::ReportTurnover,
            Workload::ReportCompensation => Op::ReportCompensation,
            Workload::StubTyped => Op::StubTyped,
            Workload::StubRaw => Op::StubRaw,
            Workload::Mixed => return None,
        })
    }

    /// The `n`-th operation a worker sends.
    pub fn op(self, n: u64) -> Op {
        self.single()
            .unwrap_or(MIX[(n % MIX.len() as u64) as usize])
    }
}

/// When a measurement phase ends.
#[derive(Debug, Clone, Copy)]
pub enum Stop {
    /// Stop starting requests after this long (in-flight ones finish).
    After(Duration),
    /// Stop after this many requests in total across all workers.
    Requests(u64),
}

/// Result of one cell.
#[derive(Debug, Clone, Serialize)]
pub struct CellResult {
    /// What was measured: `ceiling`, or the server's label (`server`,
    /// `--label`, `stubs` with `--handlers`).
    pub target: &'static str,
    /// Wire format of the requests.
    pub wire: Wire,
    /// Workload label.
    pub workload: &'static str,
    /// Number of concurrent workers.
    pub concurrency: usize,
    /// Requests completed in the measurement phase (successes + errors).
    pub requests: u64,
    /// Requests that failed (transport, HTTP status, JSON-RPC or tool error).
    pub errors: u64,
    /// Wall-clock length of the measurement phase in seconds.
    pub elapsed_s: f64,
    /// `requests / elapsed_s`.
    pub requests_per_s: f64,
    /// Latency of successful requests; `None` if none succeeded.
    pub latency: Option<LatencySummary>,
    /// First error seen, for diagnosis.
    pub first_error: Option<String>,
    /// Server CPU time (user + system) per request during the measurement
    /// phase, in microseconds; `None` without a process to sample.
    pub cpu_us_per_call: Option<f64>,
    /// The server's peak resident set size so far, in MiB.
    pub peak_rss_mib: Option<f64>,
    /// CPU time per request of the helper processes (`--aux-pid`: nginx,
    /// PostgreSQL and their children), in microseconds.
    pub aux_cpu_us_per_call: Option<f64>,
    /// `requests_per_s` as a fraction of the ceiling's at the same wire and
    /// concurrency, when the ceiling was measured.
    pub ceiling_ratio: Option<f64>,
    /// Median size of the successful answers' HTTP bodies, in bytes.
    pub answer_bytes: Option<u64>,
    /// Largest successful answer's HTTP body, in bytes.
    pub answer_max_bytes: Option<u64>,
    /// With `--employees`: the company the server was seeded with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub company: Option<Company>,
    /// With `--employees` or `--cache`: the directory cache setting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<Cache>,
}

/// What one worker gathered during a phase.
#[derive(Default)]
struct WorkerTally {
    latencies_ns: Vec<u64>,
    /// Body size of each successful answer.
    body_bytes: Vec<u64>,
    requests: u64,
    errors: u64,
    first_error: Option<String>,
}

#[derive(Clone)]
enum PhaseEnd {
    Deadline(Instant),
    Budget(Arc<AtomicU64>, u64),
}

impl PhaseEnd {
    /// Whether the worker may start another request (and claims it).
    fn take(&self) -> bool {
        match self {
            PhaseEnd::Deadline(at) => Instant::now() < *at,
            PhaseEnd::Budget(used, total) => used.fetch_add(1, Ordering::Relaxed) < *total,
        }
    }
}

/// Runs one cell: opens one session per worker, warms up for `warmup`
/// (results discarded), measures until `stop`, then closes the sessions.
/// Fails only if a session cannot be opened.
pub async fn run_cell(
    client: &Arc<McpClient>,
    workload: Workload,
    concurrency: usize,
    warmup: Duration,
    stop: Stop,
    process: Option<&ProcStat>,
    aux: Option<&ProcStat>,
) -> Result<CellResult, CallError> {
    let sessions: Vec<Arc<Session>> =
        futures_util::future::try_join_all((0..concurrency).map(|_| client.open()))
            .await?
            .into_iter()
            .map(Arc::new)
            .collect();

    if !warmup.is_zero() {
        let end = PhaseEnd::Deadline(Instant::now() + warmup);
        run_phase(client, &sessions, workload, end).await;
    }

    let cpu_before = process.and_then(ProcStat::cpu_time);
    let aux_before = aux.and_then(ProcStat::cpu_time);
    let start = Instant::now();
    let end = match stop {
        Stop::After(d) => PhaseEnd::Deadline(start + d),
        Stop::Requests(n) => PhaseEnd::Budget(Arc::new(AtomicU64::new(0)), n),
    };
    let tallies = run_phase(client, &sessions, workload, end).await;
    let elapsed = start.elapsed().as_secs_f64();
    let cpu_after = process.and_then(ProcStat::cpu_time);
    let aux_after = aux.and_then(ProcStat::cpu_time);

    futures_util::future::join_all(sessions.iter().map(|s| client.close(s))).await;

    let mut all = Vec::with_capacity(tallies.iter().map(|t| t.latencies_ns.len()).sum());
    let mut sizes = Vec::with_capacity(all.capacity());
    let (mut requests, mut errors, mut first_error) = (0, 0, None);
    for t in tallies {
        all.extend_from_slice(&t.latencies_ns);
        sizes.extend_from_slice(&t.body_bytes);
        requests += t.requests;
        errors += t.errors;
        first_error = first_error.or(t.first_error);
    }
    let per_call = |before: Option<Duration>, after: Option<Duration>| match (before, after) {
        (Some(before), Some(after)) if requests > 0 => {
            Some(after.saturating_sub(before).as_secs_f64() * 1e6 / requests as f64)
        }
        _ => None,
    };
    let cpu_us_per_call = per_call(cpu_before, cpu_after);
    let aux_cpu_us_per_call = per_call(aux_before, aux_after);
    Ok(CellResult {
        target: "server",
        wire: client.wire(),
        workload: workload.label(),
        concurrency,
        requests,
        errors,
        elapsed_s: elapsed,
        requests_per_s: if elapsed > 0.0 {
            requests as f64 / elapsed
        } else {
            0.0
        },
        latency: LatencySummary::from_samples(&mut all),
        first_error,
        cpu_us_per_call,
        peak_rss_mib: process
            .and_then(ProcStat::peak_rss_kib)
            .map(|kib| kib as f64 / 1024.0),
        aux_cpu_us_per_call,
        ceiling_ratio: None,
        answer_bytes: median(&mut sizes),
        answer_max_bytes: sizes.iter().max().copied(),
        company: None,
        cache: None,
    })
}

/// Runs one worker task per session until `end` and collects their tallies.
async fn run_phase(
    client: &Arc<McpClient>,
    sessions: &[Arc<Session>],
    workload: Workload,
    end: PhaseEnd,
) -> Vec<WorkerTally> {
    let handles: Vec<_> = sessions
        .iter()
        .enumerate()
        .map(|(worker, session)| {
            let (client, session, end) = (client.clone(), session.clone(), end.clone());
            tokio::spawn(async move {
                let mut tally = WorkerTally::default();
                // Offset the mix per worker so concurrent workers don't all
                // hit the same operation at the same moment.
                let mut n = worker as u64;
                while end.take() {
                    let op = workload.op(n);
                    n += 1;
                    let outcome = client.call(&session, op).await;
                    tally.requests += 1;
                    match outcome {
                        Ok(reply) => {
                            let ns = u64::try_from(reply.latency.as_nanos()).unwrap_or(u64::MAX);
                            tally.latencies_ns.push(ns);
                            tally.body_bytes.push(reply.body_bytes);
                        }
                        Err(e) => {
                            tally.errors += 1;
                            if tally.first_error.is_none() {
                                tally.first_error = Some(format!("{}: {e}", op.label()));
                            }
                        }
                    }
                }
                tally
            })
        })
        .collect();
    let mut tallies = Vec::with_capacity(handles.len());
    for h in handles {
        match h.await {
            Ok(t) => tallies.push(t),
            // A panicking worker is a bug in this tool; count it, don't hide it.
            Err(e) => tallies.push(WorkerTally {
                errors: 1,
                requests: 1,
                first_error: Some(format!("worker task failed: {e}")),
                ..WorkerTally::default()
            }),
        }
    }
    tallies
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_rotates_over_all_ops() {
        let ops: Vec<Op> = (0..18).map(|n| Workload::Mixed.op(n)).collect();
        assert_eq!(ops[0], Op::ListTools);
        assert_eq!(&ops[1..9], &MIX[1..]);
        assert!(ops[1..9].iter().all(|op| op.tool().is_some()));
        assert_eq!(ops[..9], ops[9..]);
    }

    #[test]
    fn request_budget_is_shared() {
        let end = PhaseEnd::Budget(Arc::new(AtomicU64::new(0)), 3);
        let other = end.clone();
        assert!(end.take() && other.take() && end.take());
        assert!(!other.take());
    }
}
