//! Directory cost per call, without HTTP, JSON-RPC or the audit trail:
//! how much of a tool call's CPU the directory itself accounts for.
//!
//! `cargo run --release -p employee-directory --example query_cost [DB]`
//! (default: a fresh database in the temp dir). Prints the process's CPU
//! time per call (user + system, from /proc/self/stat, so a busy machine
//! does not inflate it the way wall-clock time would), one call at a time;
//! a measurement, not a test. Linux only.

use std::sync::Arc;
use std::time::Duration;

use employee_directory::{Directory, LeaveType, Level, ReportType, SystemClock};

/// CPU time to spend on each query (the clock ticks every 10 ms).
const CPU_BUDGET: Duration = Duration::from_millis(500);

/// User + system CPU time of this process (USER_HZ is 100 in the proc ABI).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rfind(')').map_or("", |i| &stat[i + 1..]);
    let ticks: u64 = after_name
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        let p = std::env::temp_dir().join(format!("query-cost-{}.db", std::process::id()));
        p.display().to_string()
    });
    let directory = Directory::open(&format!("sqlite://{path}"), Arc::new(SystemClock)).await?;
    macro_rules! measure {
        ($label:expr, $call:expr) => {{
            $call.await?; // warm the statement cache
            let start = cpu_time();
            let mut calls = 0u32;
            while cpu_time() - start < CPU_BUDGET {
                for _ in 0..50 {
                    std::hint::black_box($call.await?);
                }
                calls += 50;
            }
            let us = (cpu_time() - start).as_secs_f64() * 1e6 / f64::from(calls);
            println!("{:<34} {us:>8.1} µs/call", $label);
        }};
    }
    measure!("employee(AliceJohnson)", directory.employee("AliceJohnson"));
    measure!(
        "department_employees(engineering)",
        directory.department_employees("engineering")
    );
    measure!("tenure(AliceJohnson)", directory.tenure("AliceJohnson"));
    measure!("team_members(backend)", directory.team_members("backend"));
    measure!("search_by_skill(Go)", directory.search_by_skill("Go"));
    measure!(
        "compensation_band(SE, senior)",
        directory.compensation_band("Software Engineer", Level::Senior)
    );
    measure!(
        "leave_balance(AliceJohnson, annual)",
        directory.leave_balance("AliceJohnson", LeaveType::Annual)
    );
    measure!("report(headcount)", directory.report(ReportType::Headcount));
    Ok(())
}
