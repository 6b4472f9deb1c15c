//! CPU time and peak memory of a process, read from Linux `/proc`.
//!
//! The bench samples the server's CPU time before and after each
//! measurement phase: CPU per call is the honest cost of a request on a
//! shared, noisy machine where wall-clock throughput varies between runs.

use std::time::Duration;

/// Ticks per second of `utime`/`stime` in `/proc/PID/stat`. This is the
/// kernel's USER_HZ, which the proc ABI fixes at 100 on every architecture
/// Linux supports (it is independent of the kernel's internal HZ).
const USER_HZ: u64 = 100;

/// A set of processes whose resource usage is sampled as one: a server,
/// the replicas of a cluster, or nginx and PostgreSQL (with their worker
/// and backend children).
#[derive(Debug, Clone)]
pub struct ProcStat {
    pids: Vec<u32>,
    /// Also count the direct children of each pid (nginx workers,
    /// PostgreSQL backends), as they are at sampling time.
    children: bool,
}

impl ProcStat {
    /// Samples process `pid`.
    pub fn new(pid: u32) -> Self {
        Self::group(vec![pid], false)
    }

    /// Samples the sum of `pids` (and of their direct children if
    /// `children`).
    pub fn group(pids: Vec<u32>, children: bool) -> Self {
        Self { pids, children }
    }

    /// Every pid sampled now.
    fn members(&self) -> Vec<u32> {
        let mut all = self.pids.clone();
        if self.children {
            for pid in &self.pids {
                all.extend(children_of(*pid));
            }
        }
        all
    }

    /// User + system CPU time used so far by all threads of every member
    /// (10 ms resolution); `None` if `/proc` is unavailable or a listed
    /// process is gone (children come and go and are summed as found).
    pub fn cpu_time(&self) -> Option<Duration> {
        let ticks = |pid: u32| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_cpu_ticks(&stat)
        };
        let mut total = 0;
        for pid in &self.pids {
            total += ticks(*pid)?;
        }
        if self.children {
            total += self
                .pids
                .iter()
                .flat_map(|p| children_of(*p))
                .filter_map(ticks)
                .sum::<u64>();
        }
        Some(Duration::from_millis(total * 1000 / USER_HZ))
    }

    /// Sum of the members' peak resident set sizes so far (`VmHWM`), in
    /// KiB (an upper bound of the group's peak).
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let mut total = 0;
        for pid in self.members() {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            total += parse_kib(&status, "VmHWM:")?;
        }
        Some(total)
    }
}

/// Direct children of `pid`, from `/proc/PID/task/*/children`.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// `utime + stime` from the contents of `/proc/PID/stat`. The command name
/// (field 2) may contain spaces and parentheses, so fields are counted from
/// the last `)`.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // After the name: state is field 3, utime field 14, stime field 15.
    let mut fields = after_name.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The value of a `Key:   1234 kB` line of `/proc/PID/status`.
fn parse_kib(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_awkward_name() {
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 9 0 1 2 3";
        assert_eq!(parse_cpu_ticks(stat), Some(280));
        assert_eq!(parse_cpu_ticks("garbage"), None);
    }

    #[test]
    fn parses_status_line() {
        let status = "Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t   20480 kB\n";
        assert_eq!(parse_kib(status, "VmHWM:"), Some(20480));
        assert_eq!(parse_kib(status, "VmRSS:"), None);
    }

    #[test]
    fn sums_a_group_with_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("spawn sleep");
        let me = std::process::id();
        assert!(children_of(me).contains(&child.id()));
        let alone = ProcStat::new(me).peak_rss_kib().expect("own rss");
        let group = ProcStat::group(vec![me], true)
            .peak_rss_kib()
            .expect("group rss");
        assert!(
            group > alone,
            "{group} KiB with children vs {alone} KiB alone"
        );
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn reads_own_process() {
        let me = ProcStat::new(std::process::id());
        assert!(me.cpu_time().is_some());
        assert!(me.peak_rss_kib().is_some_and(|kib| kib > 0));
    }
}
