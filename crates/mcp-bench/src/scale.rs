//! The company-size axis (`--employees`, `--cache`): one run
//! measures the selected workloads against servers seeded with companies
//! of several sizes, with the directory cache off and/or on, and a summary
//! puts the sizes beside each other with their ratios.
//!
//! Each point of the axis (a company size and a cache setting) gets its
//! own server on a fresh SQLite file: started with `--demo-employees N`
//! (nothing for the demo) and `--directory-cache-mib 0` for `off`, waited
//! for while it seeds, measured over every wire, and stopped (which deletes
//! the database) before the next point starts. The ceiling does not depend
//! on the company, so it is measured once per wire, first.

mod summary;

use std::io::Write;
use std::time::{Duration, Instant};

use serde::Serialize;

pub use summary::SummaryRow;

use crate::bench::CellResult;
use crate::company::{Cache, Company};
use crate::{Args, READY_TIMEOUT, Run};

/// Time a started server may take to seed, per person, on top of
/// [`READY_TIMEOUT`] (a generous bound: a crashed server is noticed at
/// once, whatever the timeout).
const READY_PER_PERSON: Duration = Duration::from_millis(3);

/// The points of the axis: every company with every cache setting.
#[derive(Debug, Clone)]
pub struct Axis {
    /// In the order given; the first is the base of the summary's ratios.
    pub companies: Vec<Company>,
    /// In the order given.
    pub caches: Vec<Cache>,
}

impl Axis {
    /// The axis `--employees` and `--cache` ask for, `None` when neither is
    /// given. Refuses a size or setting listed twice, and a `--server-arg`
    /// that would set what the axis sets.
    pub fn from_args(args: &Args) -> Result<Option<Self>, String> {
        if args.employees.is_empty() && args.cache.is_empty() {
            return Ok(None);
        }
        if let Some(dup) = first_duplicate(&args.employees) {
            return Err(format!("--employees lists {dup} twice"));
        }
        if let Some(dup) = first_duplicate(&args.cache) {
            return Err(format!("--cache lists {} twice", dup.name()));
        }
        let clashes = |flag: &str| {
            args.server_args
                .iter()
                .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
        };
        if !args.employees.is_empty() && clashes("--demo-employees") {
            return Err("--employees sets --demo-employees: drop that --server-arg".to_owned());
        }
        if !args.cache.is_empty() && clashes("--directory-cache-mib") {
            return Err("--cache sets --directory-cache-mib: drop that --server-arg".to_owned());
        }
        Ok(Some(Self {
            companies: or_default(&args.employees, Company::Demo),
            caches: or_default(&args.cache, Cache::On),
        }))
    }
}

/// `given`, or just `default` when nothing was given.
fn or_default<T: Clone>(given: &[T], default: T) -> Vec<T> {
    if given.is_empty() {
        vec![default]
    } else {
        given.to_vec()
    }
}

/// The first item of `items` that also appears earlier.
fn first_duplicate<T: PartialEq + Copy>(items: &[T]) -> Option<T> {
    items
        .iter()
        .enumerate()
        .find(|(i, item)| items[..*i].contains(item))
        .map(|(_, item)| *item)
}

/// One started server of the axis.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Its company.
    pub company: Company,
    /// Its cache setting.
    pub cache: Cache,
    /// Seconds from starting the process until it answered `tools/list`:
    /// mostly seeding the company into the empty database.
    pub ready_s: f64,
}

/// The axis in the JSON report.
#[derive(Debug, Serialize)]
pub struct ScaleReport {
    /// Every server started, in order.
    pub points: Vec<Point>,
    /// Concurrency of the summary's latencies (`None` without c=1).
    pub p50_concurrency: Option<usize>,
    /// Concurrency of the summary's throughput: the highest measured.
    pub rps_concurrency: usize,
    /// With more than one company: per wire, cache setting and workload,
    /// the sizes beside each other.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<SummaryRow>,
}

/// Runs the axis: the ceiling of each wire, then every point in turn, then
/// (with more than one company) the summary. Returns every cell and the
/// report.
pub async fn run(
    run: &Run<'_>,
    axis: &Axis,
    out: &mut Box<dyn Write>,
) -> Result<(Vec<CellResult>, ScaleReport), Box<dyn std::error::Error>> {
    let mut cells = Vec::new();
    for &wire in &run.args.wires {
        let ceiling = run.ceiling(wire, out).await?;
        cells.extend(ceiling);
    }
    let mut points = Vec::new();
    for &company in &axis.companies {
        for &cache in &axis.caches {
            let (point, measured) = measure_point(run, company, cache, &cells, out).await?;
            points.push(point);
            cells.extend(measured);
        }
    }
    let levels = summary::Levels::of(&run.args.concurrency);
    let summary = if axis.companies.len() > 1 {
        summary::rows(&cells, axis, &run.args.wires, &run.workloads, levels)
    } else {
        Vec::new()
    };
    if !summary.is_empty() {
        summary::print(out, &summary, axis, levels)?;
    }
    let report = ScaleReport {
        points,
        p50_concurrency: levels.p50,
        rps_concurrency: levels.rps,
        summary,
    };
    Ok((cells, report))
}

/// One point: starts its server, waits while it seeds, measures every
/// wire (rows printed as they finish, after a line naming the point) and
/// stops the server.
async fn measure_point(
    run: &Run<'_>,
    company: Company,
    cache: Cache,
    ceilings: &[CellResult],
    out: &mut Box<dyn Write>,
) -> Result<(Point, Vec<CellResult>), Box<dyn std::error::Error>> {
    let name = format!("company {}, cache {}", company.describe(), cache.name());
    writeln!(out, "== {name}: starting a server on a fresh database …")?;
    out.flush()?;
    let extra = [company.server_args(), cache.server_args()].concat();
    let timeout = READY_TIMEOUT + READY_PER_PERSON * company.people();
    let started = Instant::now();
    let server = crate::spawn_server(run.args, &extra, timeout)
        .await
        .map_err(|e| format!("{name}: {e}"))?;
    let ready_s = started.elapsed().as_secs_f64();
    writeln!(out, "== {name}: seeded and ready in {ready_s:.1} s")?;
    let mut measured = Vec::new();
    for &wire in &run.args.wires {
        let cells = run.server_cells(wire, &server, ceilings, out).await?;
        measured.extend(cells.into_iter().map(|mut cell| {
            cell.company = Some(company);
            cell.cache = Some(cache);
            cell
        }));
    }
    // Stops the server and deletes its database before the next point.
    drop(server);
    let point = Point {
        company,
        cache,
        ready_s: (ready_s * 1e3).round() / 1e3,
    };
    Ok((point, measured))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_found() {
        assert_eq!(first_duplicate(&[1, 2, 3]), None);
        assert_eq!(first_duplicate(&[1, 2, 1]), Some(1));
        assert_eq!(first_duplicate::<u8>(&[]), None);
    }
}
