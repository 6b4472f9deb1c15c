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

/// A process whose resource usage can be sampled.
#[derive(Debug, Clone, Copy)]
pub struct ProcStat {
    pid: u32,
}

impl ProcStat {
    /// Samples process `pid`.
    pub fn new(pid: u32) -> Self {
        Self { pid }
    }

    /// User + system CPU time used so far by all threads (10 ms
    /// resolution); `None` if `/proc` is unavailable or the process is gone.
    pub fn cpu_time(&self) -> Option<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).ok()?;
        parse_cpu_ticks(&stat).map(|ticks| Duration::from_millis(ticks * 1000 / USER_HZ))
    }

    /// Peak resident set size so far (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        parse_kib(&status, "VmHWM:")
    }
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
    fn reads_own_process() {
        let me = ProcStat::new(std::process::id());
        assert!(me.cpu_time().is_some());
        assert!(me.peak_rss_kib().is_some_and(|kib| kib > 0));
    }
}
