//! The `--handlers` comparison: the stub server's typed and raw tools
//! (`stubs.rs`), measured back to back at each wire and concurrency, and
//! their ratios (the goal: a typed handler within 1.15x of a raw
//! handler returning the same bytes).

use serde::Serialize;

use crate::bench::{CellResult, Workload};
use crate::stubs;
use crate::wire::Wire;

/// Label of the stub server's rows.
pub const TARGET: &str = "stubs";

/// The cells of one wire in the order they run. With `paired` (the
/// `--handlers` mode) typed and raw alternate at each concurrency, so a
/// shared machine's drift hits both sides of a ratio alike; otherwise
/// workload by workload.
pub fn cell_order(workloads: &[Workload], levels: &[u32], paired: bool) -> Vec<(Workload, u32)> {
    if paired {
        let by_level = levels
            .iter()
            .map(|&c| workloads.iter().map(move |&w| (w, c)));
        by_level.flatten().collect()
    } else {
        let by_workload = workloads
            .iter()
            .map(|&w| levels.iter().map(move |&c| (w, c)));
        by_workload.flatten().collect()
    }
}

/// Typed over raw at one wire and concurrency.
#[derive(Debug, Clone, Serialize)]
pub struct Ratio {
    /// Wire format of both cells.
    pub wire: Wire,
    /// Concurrency of both cells.
    pub concurrency: usize,
    /// Server CPU per typed call, µs.
    pub typed_cpu_us: Option<f64>,
    /// Server CPU per raw call, µs.
    pub raw_cpu_us: Option<f64>,
    /// `typed_cpu_us / raw_cpu_us`: the goal is at most 1.15.
    pub cpu_ratio: Option<f64>,
    /// Typed requests per second.
    pub typed_rps: f64,
    /// Raw requests per second.
    pub raw_rps: f64,
    /// `typed_rps / raw_rps`.
    pub rps_ratio: Option<f64>,
}

impl Ratio {
    /// The summary line printed after the table.
    pub fn line(&self) -> String {
        let num = |v: Option<f64>, digits: usize| {
            v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
        };
        format!(
            "{TARGET} {:<6} c={:<4} typed/raw CPU per call: {} (typed {} µs, raw {} µs)  typed/raw req/s: {} (typed {:.0}, raw {:.0})",
            self.wire.name(),
            self.concurrency,
            num(self.cpu_ratio, 2),
            num(self.typed_cpu_us, 0),
            num(self.raw_cpu_us, 0),
            num(self.rps_ratio, 2),
            self.typed_rps,
            self.raw_rps,
        )
    }
}

/// One [`Ratio`] per wire and concurrency where both stub cells ran, in
/// the order the typed cells ran.
pub fn ratios(results: &[CellResult]) -> Vec<Ratio> {
    let is = |c: &CellResult, tool: &str| c.target == TARGET && c.workload == tool;
    let quotient = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    results
        .iter()
        .filter(|c| is(c, stubs::TYPED))
        .filter_map(|typed| {
            let raw = results.iter().find(|c| {
                is(c, stubs::RAW) && c.wire == typed.wire && c.concurrency == typed.concurrency
            })?;
            Some(Ratio {
                wire: typed.wire,
                concurrency: typed.concurrency,
                typed_cpu_us: typed.cpu_us_per_call,
                raw_cpu_us: raw.cpu_us_per_call,
                cpu_ratio: quotient(typed.cpu_us_per_call, raw.cpu_us_per_call),
                typed_rps: typed.requests_per_s,
                raw_rps: raw.requests_per_s,
                rps_ratio: quotient(Some(typed.requests_per_s), Some(raw.requests_per_s)),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(workload: &'static str, wire: Wire, concurrency: usize, cpu: f64) -> CellResult {
        CellResult {
            target: TARGET,
            wire,
            workload,
            concurrency,
            requests: 100,
            errors: 0,
            elapsed_s: 1.0,
            requests_per_s: 1000.0 / cpu,
            latency: None,
            first_error: None,
            cpu_us_per_call: Some(cpu),
            peak_rss_mib: None,
            aux_cpu_us_per_call: None,
            ceiling_ratio: None,
            answer_bytes: None,
            answer_max_bytes: None,
            company: None,
            cache: None,
        }
    }

    #[test]
    fn pairs_typed_and_raw_per_wire_and_concurrency() {
        let results = [
            cell(stubs::TYPED, Wire::Modern, 1, 115.0),
            cell(stubs::RAW, Wire::Modern, 1, 100.0),
            cell(stubs::TYPED, Wire::Modern, 16, 50.0),
            cell(stubs::RAW, Wire::Legacy, 16, 10.0),
            cell(stubs::TYPED, Wire::Legacy, 16, 40.0),
            cell(stubs::RAW, Wire::Modern, 16, 40.0),
        ];
        let ratios = ratios(&results);
        let got: Vec<_> = ratios
            .iter()
            .map(|r| {
                (
                    r.wire,
                    r.concurrency,
                    r.cpu_ratio.map(|x| (x * 100.0).round()),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (Wire::Modern, 1, Some(115.0)),
                (Wire::Modern, 16, Some(125.0)),
                (Wire::Legacy, 16, Some(400.0)),
            ]
        );
        let line = ratios[0].line();
        assert!(
            line.contains("typed/raw CPU per call: 1.15 (typed 115 µs, raw 100 µs)"),
            "{line}"
        );
    }

    #[test]
    fn paired_order_alternates_at_each_level() {
        let order = cell_order(&Workload::STUBS, &[1, 16], true);
        let typed = Workload::StubTyped;
        let raw = Workload::StubRaw;
        assert_eq!(order, [(typed, 1), (raw, 1), (typed, 16), (raw, 16)]);
        let order = cell_order(&Workload::STUBS, &[1, 16], false);
        assert_eq!(order, [(typed, 1), (typed, 16), (raw, 1), (raw, 16)]);
    }
}
