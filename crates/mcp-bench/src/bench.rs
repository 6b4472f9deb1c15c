//! Running one benchmark cell: a workload at a concurrency level.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::ValueEnum;
use serde::Serialize;

use crate::stats::LatencySummary;
use crate::wire::{CallError, McpClient, Op, Session};

/// A request mix to benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// `tools/list` only.
    List,
    /// `tools/call get-employee-details` only.
    Details,
    /// `tools/call search-employees-by-skill` only.
    Search,
    /// Round-robin over the three operations above.
    Mixed,
}

impl Workload {
    /// Label used in the table and JSON output.
    pub fn label(self) -> &'static str {
        match self {
            Workload::List => "tools/list",
            Workload::Details => "get-employee-details",
            Workload::Search => "search-employees-by-skill",
            Workload::Mixed => "mixed",
        }
    }

    /// The `n`-th operation a worker sends.
    fn op(self, n: u64) -> Op {
        const MIX: [Op; 3] = [Op::ListTools, Op::GetEmployee, Op::SearchBySkill];
        match self {
            Workload::List => Op::ListTools,
            Workload::Details => Op::GetEmployee,
            Workload::Search => Op::SearchBySkill,
            Workload::Mixed => MIX[(n % 3) as usize],
        }
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
}

/// What one worker gathered during a phase.
#[derive(Default)]
struct WorkerTally {
    latencies_ns: Vec<u64>,
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

    let start = Instant::now();
    let end = match stop {
        Stop::After(d) => PhaseEnd::Deadline(start + d),
        Stop::Requests(n) => PhaseEnd::Budget(Arc::new(AtomicU64::new(0)), n),
    };
    let tallies = run_phase(client, &sessions, workload, end).await;
    let elapsed = start.elapsed().as_secs_f64();

    futures_util::future::join_all(sessions.iter().map(|s| client.close(s))).await;

    let mut all = Vec::with_capacity(tallies.iter().map(|t| t.latencies_ns.len()).sum());
    let (mut requests, mut errors, mut first_error) = (0, 0, None);
    for t in tallies {
        all.extend_from_slice(&t.latencies_ns);
        requests += t.requests;
        errors += t.errors;
        first_error = first_error.or(t.first_error);
    }
    Ok(CellResult {
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
                        Ok(took) => tally
                            .latencies_ns
                            .push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX)),
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
        let ops: Vec<Op> = (0..6).map(|n| Workload::Mixed.op(n)).collect();
        assert_eq!(
            &ops[..3],
            &[Op::ListTools, Op::GetEmployee, Op::SearchBySkill]
        );
        assert_eq!(ops[..3], ops[3..]);
    }

    #[test]
    fn request_budget_is_shared() {
        let end = PhaseEnd::Budget(Arc::new(AtomicU64::new(0)), 3);
        let other = end.clone();
        assert!(end.take() && other.take() && end.take());
        assert!(!other.take());
    }
}
