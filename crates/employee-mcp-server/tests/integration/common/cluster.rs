//! The cluster under test: one PostgreSQL database, N replicas of the real
//! binary on it and nginx in front, all started by `scripts/cluster` (the
//! same command operators use) under a private prefix with private ports,
//! so tests run side by side. Dropping the [`Cluster`] runs
//! `scripts/cluster down` on that prefix.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use mcpwire_server::protocol::sse::SseParser;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::{BIN, Server, TIMEOUT, pg};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where a cluster's database comes from.
pub enum Database {
    /// A fresh database on the shared scratch PostgreSQL (`pg::fresh_database`).
    Fresh,
    /// The `employee` database of a dedicated scratch cluster of this name,
    /// which the test may stop and restart (`scripts/pg-scratch … NAME`).
    Own(&'static str),
}

/// PostgreSQL + replicas + nginx. Replicas and the balancer are
/// [`Server::at`] endpoints, so every harness helper works on them.
pub struct Cluster {
    /// One cluster at a time per test process: three replicas, nginx and
    /// the test's own load already fill two cores, and the fault tests
    /// time what they measure.
    _turn: MutexGuard<'static, ()>,
    prefix: PathBuf,
    /// The `--database` URL every replica uses.
    pub database: String,
    /// nginx, the way clients reach the cluster.
    pub balancer: Server,
    /// Each replica, reached directly (bypassing nginx).
    pub replicas: Vec<Server>,
    pids: Vec<u32>,
}

impl Cluster {
    /// `replicas` replicas on a fresh database, with extra server `flags`.
    pub fn start(replicas: usize, flags: &[&str]) -> Cluster {
        Cluster::start_on(Database::Fresh, replicas, flags)
    }

    /// Same, on the given database.
    pub fn start_on(db: Database, replicas: usize, flags: &[&str]) -> Cluster {
        static N: AtomicU32 = AtomicU32::new(0);
        static TURN: Mutex<()> = Mutex::new(());
        // A failed test poisons the lock; the next one still gets its turn.
        let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let prefix = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "cluster-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&prefix);
        let mut cmd = Command::new(workspace().join("scripts/cluster"));
        cmd.arg("up")
            .arg("--replicas")
            .arg(replicas.to_string())
            .arg("--prefix")
            .arg(&prefix)
            .arg("--bin")
            .arg(BIN);
        match db {
            Database::Fresh => cmd.arg("--database").arg(pg::fresh_database()),
            Database::Own(name) => cmd.arg("--pg").arg(name),
        };
        let out = cmd
            .arg("--")
            .args(flags)
            .output()
            .expect("run scripts/cluster up");
        let read = |name: &str| {
            std::fs::read_to_string(prefix.join(name))
                .map(|s| s.trim().to_owned())
                .unwrap_or_default()
        };
        if !out.status.success() {
            // Stop whatever did start before failing the test.
            let _ = Command::new(workspace().join("scripts/cluster"))
                .args(["down", "--prefix"])
                .arg(&prefix)
                .output();
            panic!(
                "scripts/cluster up failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let balancer_addr = url
            .strip_prefix("http://")
            .and_then(|u| u.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("unexpected cluster URL {url:?}"))
            .to_owned();
        let replicas_addr: Vec<String> = (1..=replicas)
            .map(|i| read(&format!("replica-{i}.addr")))
            .collect();
        let pids = (1..=replicas)
            .map(|i| {
                read(&format!("replica-{i}.pid"))
                    .parse()
                    .expect("replica pid")
            })
            .collect();
        Cluster {
            _turn: turn,
            database: read("database"),
            balancer: Server::at(&balancer_addr),
            replicas: replicas_addr.iter().map(|a| Server::at(a)).collect(),
            pids,
            prefix,
        }
    }

    /// `scripts/cluster status` of this cluster: whether every part runs,
    /// and its report.
    pub fn status(&self) -> (bool, String) {
        let out = Command::new(workspace().join("scripts/cluster"))
            .args(["status", "--prefix"])
            .arg(&self.prefix)
            .output()
            .expect("run scripts/cluster status");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    /// The process id of replica `i` (0-based).
    pub fn replica_pid(&self, i: usize) -> u32 {
        self.pids[i]
    }

    /// Runs the binary's `tools` subcommand against the cluster's database.
    pub fn tools(&self, args: &[&str]) -> Output {
        let out = Command::new(BIN)
            .arg("tools")
            .args(args)
            .arg("--database")
            .arg(&self.database)
            .output()
            .expect("run employee-mcp-server tools");
        assert!(
            out.status.success(),
            "tools {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Every audit record of `tool` from the last hour, via the `audit`
    /// subcommand (its JSON lines).
    pub fn audit_rows(&self, tool: &str) -> Vec<Value> {
        let args = ["--since", "1h", "--limit", "1000000", "--tool", tool];
        super::access::audit_rows_at(&self.database, &args)
    }

    /// nginx's access log (`upstream=` names the replica of each request).
    pub fn access_log(&self) -> String {
        std::fs::read_to_string(self.prefix.join("nginx/logs/access.log")).unwrap_or_default()
    }

    /// The tail of replica `i`'s log, for failure messages.
    pub fn replica_log(&self, i: usize) -> String {
        let bytes =
            std::fs::read(self.prefix.join(format!("replica-{}.log", i + 1))).unwrap_or_default();
        let start = bytes.len().saturating_sub(4000);
        String::from_utf8_lossy(&bytes[start..]).into_owned()
    }
}

/// Kills a process with SIGKILL: no graceful anything.
pub fn kill(pid: u32) {
    let status = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -KILL {pid} failed");
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(workspace().join("scripts/cluster"))
            .args(["down", "--prefix"])
            .arg(&self.prefix)
            .output();
    }
}

/// A Server-Sent Events response read as it arrives: a `POST`
/// (`subscriptions/listen`) or a legacy `GET` stream, on its own connection.
pub struct EventStream {
    reader: BufReader<TcpStream>,
    chunked: bool,
    /// Bytes of the current chunk not yet consumed.
    left: usize,
    /// Events split from the body so far.
    parser: SseParser,
    /// Event data read but not handed out yet.
    ready: VecDeque<String>,
}

impl EventStream {
    /// Sends `method` with `headers` and optional `body` to `addr`; reads the
    /// response head. Panics unless the status is 200.
    pub async fn open(
        addr: &str,
        method: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> EventStream {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let mut head = format!("{method} /mcp HTTP/1.1\r\nHost: {addr}\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(b) = body {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                b.len()
            ));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.expect("write head");
        if let Some(b) = body {
            stream.write_all(b).await.expect("write body");
        }
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(TIMEOUT, reader.read_line(&mut line))
                .await
                .expect("response head in time")
                .expect("read head");
            assert!(n > 0, "connection closed before the head ended: {head}");
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        assert!(head.starts_with("HTTP/1.1 200"), "stream refused: {head}");
        let chunked = head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked");
        EventStream {
            reader,
            chunked,
            left: 0,
            parser: SseParser::new(),
            ready: VecDeque::new(),
        }
    }

    /// Reads more body bytes into `text`; false at the end of the stream.
    async fn fill(&mut self) -> bool {
        if self.chunked && self.left == 0 {
            let mut size = String::new();
            while size.trim().is_empty() {
                size.clear();
                if self.reader.read_line(&mut size).await.expect("chunk size") == 0 {
                    return false;
                }
            }
            let hex = size.trim().split(';').next().unwrap_or_default();
            self.left = usize::from_str_radix(hex, 16).expect("chunk size is hex");
            if self.left == 0 {
                return false;
            }
        }
        let mut buf = vec![
            0u8;
            if self.chunked {
                self.left.min(8192)
            } else {
                8192
            }
        ];
        let n = self.reader.read(&mut buf).await.expect("read stream");
        if n == 0 {
            return false;
        }
        if self.chunked {
            self.left -= n;
        }
        let events = self.parser.push(&buf[..n]);
        self.ready.extend(events);
        true
    }

    /// The next JSON message (`data:` of the next event with data), or
    /// `None` when the stream ended or `wait` passed first.
    pub async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        tokio::time::timeout(wait, self.next_message())
            .await
            .ok()
            .flatten()
    }

    /// The next JSON message, `None` at the end of the stream (events are
    /// framed by the library's SSE parser).
    pub async fn next_message(&mut self) -> Option<Value> {
        loop {
            if let Some(data) = self.ready.pop_front() {
                if data.is_empty() {
                    continue; // a priming event
                }
                return Some(serde_json::from_str(&data).expect("event data is JSON"));
            }
            if !self.fill().await {
                let last = self.parser.finish();
                self.ready.extend(last);
                if self.ready.is_empty() {
                    return None;
                }
            }
        }
    }

    /// Reads messages until one with `method` arrives within `wait`.
    pub async fn expect_method(&mut self, method: &str, wait: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_within(left).await {
                Some(m) if m["method"] == method => return m,
                Some(_) => continue,
                None => panic!("no {method} within {wait:?}"),
            }
        }
    }
}
