//! The Prometheus text exposition format (version 0.0.4), written by hand
//! from atomics: a scrape is rare, so rendering may allocate; recording
//! never does. Hand-rendering keeps the dependency tree unchanged.

use std::fmt::Write;

use super::histogram::{BOUNDS_MICROS, Snapshot};

/// The `Content-Type` of a scrape response.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Writes metric families into one text body. Each family's `# HELP` and
/// `# TYPE` lines are written once, by [`Encoder::family`], before its
/// samples.
#[derive(Debug, Default)]
pub struct Encoder {
    out: String,
}

/// One label pair; values are escaped on output.
pub type Label<'a> = (&'a str, &'a str);

impl Encoder {
    /// Starts a metric family. `kind` is `counter`, `gauge` or `histogram`.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// One sample line.
    pub fn sample(&mut self, name: &str, labels: &[Label<'_>], value: impl std::fmt::Display) {
        self.out.push_str(name);
        write_labels(&mut self.out, labels, None);
        let _ = writeln!(self.out, " {value}");
    }

    /// A family with a single unlabelled sample.
    pub fn single(&mut self, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }

    /// The `_bucket`, `_sum` (seconds) and `_count` lines of one histogram
    /// series; call [`Encoder::family`] with the base name first.
    pub fn histogram(&mut self, name: &str, labels: &[Label<'_>], s: &Snapshot) {
        for (i, n) in s.cumulative.iter().enumerate() {
            let le = BOUNDS_MICROS
                .get(i)
                .map_or_else(|| "+Inf".to_owned(), |b| seconds(*b));
            let _ = write!(self.out, "{name}_bucket");
            write_labels(&mut self.out, labels, Some(&le));
            let _ = writeln!(self.out, " {n}");
        }
        let _ = write!(self.out, "{name}_sum");
        write_labels(&mut self.out, labels, None);
        let _ = writeln!(self.out, " {}", seconds(s.sum_micros));
        let _ = write!(self.out, "{name}_count");
        write_labels(&mut self.out, labels, None);
        let _ = writeln!(self.out, " {}", s.count);
    }

    /// The finished body.
    pub fn finish(self) -> String {
        self.out
    }
}

/// Microseconds as decimal seconds without float rounding noise.
fn seconds(micros: u64) -> String {
    let (s, frac) = (micros / 1_000_000, micros % 1_000_000);
    if frac == 0 {
        return s.to_string();
    }
    let text = format!("{s}.{frac:06}");
    text.trim_end_matches('0').to_owned()
}

fn write_labels(out: &mut String, labels: &[Label<'_>], le: Option<&str>) {
    if labels.is_empty() && le.is_none() {
        return;
    }
    out.push('{');
    let mut first = true;
    for (k, v) in labels.iter().copied().chain(le.map(|l| ("le", l))) {
        if !first {
            out.push(',');
        }
        first = false;
        let _ = write!(out, "{k}=\"");
        for c in v.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push('}');
}

fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_labels_escaped_and_seconds_exact() {
        let mut e = Encoder::default();
        e.family("x_total", "counter", "An x.");
        e.sample("x_total", &[("a", "q\"\\\n")], 3);
        let text = e.finish();
        assert!(text.contains("x_total{a=\"q\\\"\\\\\\n\"} 3\n"), "{text}");
        assert_eq!(seconds(100), "0.0001");
        assert_eq!(seconds(2_500_000), "2.5");
        assert_eq!(seconds(60_000_000), "60");
    }
}
