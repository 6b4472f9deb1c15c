//! Sequential round trips over a stdio server: one `tools/call` line out,
//! its response line back, 5,000 times by default; plus the ceiling of
//! the same loop against a bare line echo (`mcp-bench --echo-child`), so
//! the server's own cost is the difference.
//!
//! The client side is plain blocking std I/O on purpose: no runtime in the
//! measured path, the same for the server and the echo.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

pub mod compare;

/// `_meta` keys of a modern request (see mcpwire-protocol's `meta` module;
/// the bench does not depend on the library).
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";

/// Timings of one sequential run, in microseconds per round trip.
pub struct RoundTrips {
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

/// A child process speaking lines on stdin/stdout; killed on drop.
struct LineChild {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for LineChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl LineChild {
    fn spawn(program: &Path, args: &[String]) -> std::io::Result<Self> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        Ok(Self {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    /// Sends one line and reads lines until one carries `"id":<id>`.
    fn round_trip(&mut self, line: &str, id_marker: &str, buf: &mut String) -> std::io::Result<()> {
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.flush()?;
        loop {
            buf.clear();
            if self.stdout.read_line(buf)? == 0 {
                return Err(std::io::Error::other("the child closed stdout"));
            }
            if buf.contains(id_marker) {
                return Ok(());
            }
        }
    }
}

/// Runs `warmup` then `n` sequential `tools/call` round trips.
pub fn measure(
    program: &Path,
    args: &[String],
    tool: &str,
    arguments: &Value,
    n: u64,
    warmup: u64,
) -> std::io::Result<RoundTrips> {
    let mut child = LineChild::spawn(program, args)?;
    let mut buf = String::new();
    let mut samples = Vec::with_capacity(n as usize);
    for i in 0..warmup + n {
        let id = i + 1;
        let line = request_line(id, tool, arguments);
        let marker = format!("\"id\":{id},");
        let start = Instant::now();
        child.round_trip(&line, &marker, &mut buf)?;
        if i >= warmup {
            samples.push(start.elapsed().as_secs_f64() * 1e6);
        }
        if buf.contains("\"error\"") && i == 0 {
            return Err(std::io::Error::other(format!(
                "the server answered an error: {buf}"
            )));
        }
    }
    Ok(summarize(samples))
}

fn request_line(id: u64, tool: &str, arguments: &Value) -> String {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": { META_VERSION: "2026-07-28", META_CAPS: {} }
        }
    });
    format!("{body}\n")
}

fn summarize(mut samples: Vec<f64>) -> RoundTrips {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    RoundTrips {
        mean_us: samples.iter().sum::<f64>() / samples.len() as f64,
        p50_us: at(0.5),
        p99_us: at(0.99),
    }
}

/// The echo child: copies stdin lines to stdout, flushing each, like `cat`
/// on a pipe.
pub fn echo() -> std::io::Result<()> {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lines() {
        let line = line?;
        stdout.write_all(line.as_bytes())?;
        stdout.write_all(b"\n")?;
        stdout.flush()?;
    }
    Ok(())
}
