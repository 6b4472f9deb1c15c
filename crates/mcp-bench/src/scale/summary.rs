//! The summary of the company-size axis: per wire, cache setting and
//! workload, the p50 latency at c=1 and the req/s at the highest
//! concurrency for each company, the ratio of the largest company to the
//! first, and the largest answer seen.

use std::io::Write;

use serde::Serialize;

use super::Axis;
use crate::bench::{CellResult, Workload};
use crate::company::{Cache, Company};
use crate::wire::Wire;

/// The concurrencies the summary reads.
#[derive(Debug, Clone, Copy)]
pub struct Levels {
    /// c=1, when measured: latency without queueing.
    pub p50: Option<usize>,
    /// The highest concurrency: throughput.
    pub rps: usize,
}

impl Levels {
    /// The levels of a run measured at `concurrency`.
    pub fn of(concurrency: &[u32]) -> Self {
        Self {
            p50: concurrency.contains(&1).then_some(1),
            rps: concurrency.iter().copied().max().unwrap_or(1) as usize,
        }
    }
}

/// One company's numbers in a [`SummaryRow`].
#[derive(Debug, Clone, Serialize)]
pub struct SizeCell {
    /// The company.
    pub company: Company,
    /// Median latency at c=1, ms.
    pub p50_ms: Option<f64>,
    /// Requests per second at the highest concurrency.
    pub requests_per_s: Option<f64>,
    /// Median answer size at the highest concurrency, bytes.
    pub answer_bytes: Option<u64>,
}

/// One workload at one wire and cache setting, across the companies.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryRow {
    /// Wire format.
    pub wire: Wire,
    /// Cache setting.
    pub cache: Cache,
    /// Workload label.
    pub workload: &'static str,
    /// One entry per company, in `--employees` order.
    pub sizes: Vec<SizeCell>,
    /// p50 of the largest company over the first's (above 1: slower).
    pub p50_ratio: Option<f64>,
    /// req/s of the largest company over the first's (below 1: slower).
    pub rps_ratio: Option<f64>,
    /// The largest answer any cell of the row's companies returned, bytes.
    pub answer_max_bytes: Option<u64>,
}

/// Index of the largest company (the last of equals).
fn largest(companies: &[Company]) -> usize {
    (0..companies.len())
        .max_by_key(|&i| companies[i].people())
        .unwrap_or(0)
}

/// `values[to] / values[0]`, when both are there and the base is not 0.
fn ratio(values: &[Option<f64>], to: usize) -> Option<f64> {
    match (
        values.first().copied().flatten(),
        values.get(to).copied().flatten(),
    ) {
        (Some(base), Some(v)) if base > 0.0 => Some(v / base),
        _ => None,
    }
}

/// The summary rows, in the order wire, cache setting, workload; a
/// workload with no measured cell in a row's companies is left out.
pub fn rows(
    cells: &[CellResult],
    axis: &Axis,
    wires: &[Wire],
    workloads: &[Workload],
    levels: Levels,
) -> Vec<SummaryRow> {
    let top = largest(&axis.companies);
    let mut rows = Vec::new();
    for &wire in wires {
        for &cache in &axis.caches {
            for workload in workloads {
                let of_row = |c: &&CellResult| {
                    c.company.is_some()
                        && c.wire == wire
                        && c.cache == Some(cache)
                        && c.workload == workload.label()
                };
                let row: Vec<&CellResult> = cells.iter().filter(of_row).collect();
                if row.is_empty() {
                    continue;
                }
                let sizes: Vec<SizeCell> = axis
                    .companies
                    .iter()
                    .map(|&company| size_cell(&row, company, levels))
                    .collect();
                let p50: Vec<Option<f64>> = sizes.iter().map(|s| s.p50_ms).collect();
                let rps: Vec<Option<f64>> = sizes.iter().map(|s| s.requests_per_s).collect();
                rows.push(SummaryRow {
                    wire,
                    cache,
                    workload: workload.label(),
                    p50_ratio: ratio(&p50, top),
                    rps_ratio: ratio(&rps, top),
                    answer_max_bytes: row.iter().filter_map(|c| c.answer_max_bytes).max(),
                    sizes,
                });
            }
        }
    }
    rows
}

/// One company's numbers among the cells of a row.
fn size_cell(row: &[&CellResult], company: Company, levels: Levels) -> SizeCell {
    let at = |concurrency: usize| {
        row.iter()
            .find(|c| c.company == Some(company) && c.concurrency == concurrency)
    };
    let top = at(levels.rps);
    SizeCell {
        company,
        p50_ms: levels
            .p50
            .and_then(at)
            .and_then(|c| c.latency)
            .map(|l| l.p50_ms),
        requests_per_s: top.map(|c| c.requests_per_s),
        answer_bytes: top.and_then(|c| c.answer_bytes),
    }
}

/// Prints the summary table after the run's rows.
pub fn print(
    out: &mut Box<dyn Write>,
    rows: &[SummaryRow],
    axis: &Axis,
    levels: Levels,
) -> std::io::Result<()> {
    let company = |i: usize| axis.companies.get(i).copied().unwrap_or(Company::Demo);
    let (top, first) = (company(largest(&axis.companies)), company(0));
    let p50_desc = levels.p50.map_or_else(
        || "no p50 (c=1 not measured)".to_owned(),
        |c| format!("p50 ms at c={c}"),
    );
    writeln!(out)?;
    writeln!(
        out,
        "company-size summary: {p50_desc}, req/s at c={}; × = company {top} over company {first}",
        levels.rps
    )?;
    let columns = Columns::new(&axis.companies, levels.p50.is_some());
    writeln!(out, "{}", columns.header())?;
    for row in rows {
        writeln!(out, "{}", columns.line(row))?;
    }
    out.flush()
}

/// The summary table's layout: one column per company for each number.
struct Columns {
    /// `p50 demo`, `p50 100000`, … (empty without c=1).
    p50: Vec<String>,
    /// `req/s demo`, …
    rps: Vec<String>,
}

impl Columns {
    fn new(companies: &[Company], with_p50: bool) -> Self {
        let names = |what: &str| -> Vec<String> {
            companies.iter().map(|c| format!("{what} {c}")).collect()
        };
        Self {
            p50: if with_p50 { names("p50") } else { Vec::new() },
            rps: names("req/s"),
        }
    }

    fn header(&self) -> String {
        let mut line = format!("{:<6} {:<5} {:<26}", "wire", "cache", "workload");
        for name in &self.p50 {
            line += &format!(" {name:>w$}", w = width(name));
        }
        if !self.p50.is_empty() {
            line += &format!(" {:>7}", "× p50");
        }
        for name in &self.rps {
            line += &format!(" {name:>w$}", w = width(name));
        }
        line + &format!(" {:>7} {:>12}", "× req/s", "max answer B")
    }

    fn line(&self, row: &SummaryRow) -> String {
        let num = |v: Option<f64>, digits: usize| {
            v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
        };
        let mut line = format!(
            "{:<6} {:<5} {:<26}",
            row.wire.name(),
            row.cache.name(),
            row.workload
        );
        for (name, size) in self.p50.iter().zip(&row.sizes) {
            line += &format!(" {:>w$}", num(size.p50_ms, 2), w = width(name));
        }
        if !self.p50.is_empty() {
            line += &format!(" {:>7}", num(row.p50_ratio, 2));
        }
        for (name, size) in self.rps.iter().zip(&row.sizes) {
            line += &format!(" {:>w$}", num(size.requests_per_s, 0), w = width(name));
        }
        let answer = row
            .answer_max_bytes
            .map_or_else(|| "-".to_owned(), |b| b.to_string());
        line + &format!(" {:>7} {answer:>12}", num(row.rps_ratio, 2))
    }
}

/// A number column's width: its name, at least 10.
fn width(name: &str) -> usize {
    name.chars().count().max(10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::LatencySummary;

    fn cell(company: Company, concurrency: usize, p50: f64, rps: f64, bytes: u64) -> CellResult {
        CellResult {
            target: "server",
            wire: Wire::Modern,
            workload: "get-employee-details",
            concurrency,
            requests: 10,
            errors: 0,
            elapsed_s: 1.0,
            requests_per_s: rps,
            latency: Some(LatencySummary {
                p50_ms: p50,
                ..LatencySummary::default()
            }),
            first_error: None,
            cpu_us_per_call: None,
            peak_rss_mib: None,
            aux_cpu_us_per_call: None,
            ceiling_ratio: None,
            answer_bytes: Some(bytes),
            answer_max_bytes: Some(bytes + 1),
            company: Some(company),
            cache: Some(Cache::On),
        }
    }

    #[test]
    fn ratios_compare_the_largest_company_with_the_first() {
        let (demo, big) = (Company::Demo, Company::People(100_000));
        let cells = [
            cell(demo, 1, 1.0, 900.0, 3_000),
            cell(demo, 16, 4.0, 2_000.0, 3_000),
            cell(big, 1, 3.0, 300.0, 9_000),
            cell(big, 16, 12.0, 500.0, 9_000),
        ];
        let axis = Axis {
            companies: vec![demo, big],
            caches: vec![Cache::On],
        };
        let levels = Levels::of(&[1, 16]);
        let rows = rows(&cells, &axis, &[Wire::Modern], &[Workload::Details], levels);
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row.sizes[0].p50_ms, Some(1.0));
        assert_eq!(row.sizes[1].requests_per_s, Some(500.0));
        assert_eq!(row.p50_ratio, Some(3.0));
        assert_eq!(row.rps_ratio, Some(0.25));
        assert_eq!(row.answer_max_bytes, Some(9_001));
        let columns = Columns::new(&axis.companies, true);
        let chars = |s: String| s.chars().count();
        assert_eq!(chars(columns.header()), chars(columns.line(row)));
    }

    #[test]
    fn largest_counts_the_demo_as_its_size() {
        let companies = [Company::People(3000), Company::Demo, Company::People(500)];
        assert_eq!(largest(&companies), 0);
        assert_eq!(largest(&[Company::People(500), Company::Demo]), 1);
        assert_eq!(ratio(&[None, Some(2.0)], 1), None);
        assert_eq!(ratio(&[Some(0.0), Some(2.0)], 1), None);
    }

    #[test]
    fn without_c1_there_is_no_latency() {
        let levels = Levels::of(&[4, 64, 16]);
        assert_eq!((levels.p50, levels.rps), (None, 64));
    }
}
