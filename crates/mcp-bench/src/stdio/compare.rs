//! The stdio comparison run: in rounds, the bare line echo, each of our
//! servers and the rmcp stub, one after the other, so a machine busy with
//! something else slows all of them alike; ratios within a round are what
//! to compare between runs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{RoundTrips, measure};

/// One child the comparison measures.
pub struct Target {
    /// Row label.
    pub label: String,
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// What to run and how much.
pub struct Plan {
    pub targets: Vec<Target>,
    pub tool: String,
    pub arguments: Value,
    pub calls: u64,
    pub warmup: u64,
    pub rounds: u32,
}

/// The rmcp stub's two ways of serving stdio, as two targets; none (and
/// a note) when the stub is not built.
pub fn rmcp_targets(stub: Option<&Path>) -> Vec<Target> {
    let Some(stub) = stub else {
        println!("note: no --rmcp stub given; rmcp not measured (see bench/rmcp-stdio)");
        return Vec::new();
    };
    if !stub.is_file() {
        println!(
            "note: {} not found; rmcp not measured (build it: cargo build --release --manifest-path bench/rmcp-stdio/Cargo.toml)",
            stub.display()
        );
        return Vec::new();
    }
    [
        ("rmcp stdio", vec![]),
        ("rmcp pipes", vec!["--pipes".to_owned()]),
    ]
    .into_iter()
    .map(|(label, args)| Target {
        label: label.to_owned(),
        program: stub.to_path_buf(),
        args,
    })
    .collect()
}

/// Runs every round and prints each, then the medians and ratios.
/// `results[t][r]` is target `t` in round `r`.
pub fn run(plan: &Plan) -> std::io::Result<Vec<Vec<RoundTrips>>> {
    let (calls, warmup) = (plan.calls, plan.warmup);
    println!(
        "stdio round trips: {calls} sequential tools/call ({warmup} warm-up) x {} rounds",
        plan.rounds
    );
    let mut results: Vec<Vec<RoundTrips>> = plan.targets.iter().map(|_| Vec::new()).collect();
    for round in 1..=plan.rounds {
        println!("round {round}");
        println!(
            "  {:<22} {:>9} {:>9} {:>9}",
            "", "mean µs", "p50 µs", "p99 µs"
        );
        for (t, target) in plan.targets.iter().enumerate() {
            let r = measure(
                &target.program,
                &target.args,
                &plan.tool,
                &plan.arguments,
                calls,
                warmup,
            )
            .map_err(|e| std::io::Error::other(format!("{}: {e}", target.label)))?;
            println!(
                "  {:<22} {:>9.1} {:>9.1} {:>9.1}",
                target.label, r.mean_us, r.p50_us, r.p99_us
            );
            results[t].push(r);
        }
    }
    print_summary(plan, &results);
    Ok(results)
}

/// Reads one figure of a round.
type Metric = fn(&RoundTrips) -> f64;

/// Per target, the median over rounds of the mean and of the p50, and
/// its ratio to each reference row (the echo, then the rmcp rows) in the
/// same round (median, and min–max over rounds). On a busy machine the
/// means carry scheduling spikes; the p50s show the steady path.
fn print_summary(plan: &Plan, results: &[Vec<RoundTrips>]) {
    let refs: Vec<usize> = plan
        .targets
        .iter()
        .enumerate()
        .filter(|(i, t)| *i == 0 || t.label.starts_with("rmcp"))
        .map(|(i, _)| i)
        .collect();
    let metrics: [(&str, Metric); 2] = [("mean", |r| r.mean_us), ("p50", |r| r.p50_us)];
    for (name, metric) in metrics {
        println!("by {name}: median over rounds, ratio to each reference (min–max over rounds)");
        for (t, target) in plan.targets.iter().enumerate() {
            let own = median(results[t].iter().map(metric).collect());
            let mut line = format!("  {:<22} {own:>8.1} µs", target.label);
            for &r in refs.iter().filter(|&&r| r != t) {
                let ratios: Vec<f64> = results[t]
                    .iter()
                    .zip(&results[r])
                    .map(|(a, b)| metric(a) / metric(b))
                    .collect();
                let (lo, hi) = min_max(&ratios);
                let mid = median(ratios);
                line += &format!("  {mid:.2}x {} ({lo:.2}–{hi:.2})", plan.targets[r].label);
            }
            println!("{line}");
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}
