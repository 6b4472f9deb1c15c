//! Starting and stopping the server under test when no `--url` is given.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::Url;

use crate::wire::{McpClient, Op, Wire};

/// Default server binary, relative to the workspace root.
pub const DEFAULT_SERVER_BIN: &str = "target/release/employee-mcp-server";

/// Why the server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// No binary at any of the candidate paths.
    #[error("server binary not found (looked at: {}); build it with `cargo build --release -p employee-mcp-server` or pass --server-bin / --url", .0.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NotFound(Vec<PathBuf>),
    /// Local I/O failure (port probe, log file, spawn).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The server exited or did not answer in time.
    #[error("server did not become ready: {reason}\n--- server log ({log}) ---\n{tail}")]
    NotReady {
        /// Exit status or timeout.
        reason: String,
        /// Path of the kept log file.
        log: String,
        /// Last lines of the log.
        tail: String,
    },
}

/// Resolves the server binary. An explicit path is taken relative to the
/// current directory; the default is looked up under the current directory
/// and under the workspace root this crate was built from.
pub fn locate_binary(explicit: Option<&Path>) -> Result<PathBuf, ServerError> {
    let candidates: Vec<PathBuf> = match explicit {
        Some(p) => vec![p.to_path_buf()],
        None => {
            let mut c = vec![PathBuf::from(DEFAULT_SERVER_BIN)];
            // crates/mcp-bench -> workspace root
            if let Some(root) = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2) {
                c.push(root.join(DEFAULT_SERVER_BIN));
            }
            c
        }
    };
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or(ServerError::NotFound(candidates))
}

/// A running server child process. Dropping it kills the process and removes
/// its database; the log is kept only if startup failed.
#[derive(Debug)]
pub struct ServerGuard {
    child: Child,
    /// The database to delete on drop (`None` for the ceiling).
    db_path: Option<PathBuf>,
    log_path: PathBuf,
    keep_log: bool,
    /// The MCP endpoint, e.g. `http://127.0.0.1:PORT/mcp`.
    pub url: Url,
}

impl ServerGuard {
    /// Spawns `bin` on a free loopback port with `database`, or a fresh
    /// SQLite database in the temp dir (deleted on drop). Does not wait for
    /// readiness; see [`Self::wait_ready`].
    pub fn spawn(
        bin: &Path,
        extra_args: &[String],
        database: Option<&str>,
    ) -> Result<Self, ServerError> {
        let (database, db_path) = match database {
            Some(url) => (url.to_owned(), None),
            None => {
                let path = std::env::temp_dir().join(format!("bench-{}.db", std::process::id()));
                remove_db_files(&path); // a stale file from a crashed run with our pid
                (format!("sqlite://{}", path.display()), Some(path))
            }
        };
        Self::start(bin, "server", db_path, |cmd, listen| {
            cmd.arg("--listen")
                .arg(listen)
                .arg("--database")
                .arg(&database)
                .args(extra_args);
        })
    }

    /// Spawns this bench binary as the bare ceiling endpoint (see
    /// `ceiling.rs`) on a free loopback port.
    pub fn spawn_ceiling() -> Result<Self, ServerError> {
        Self::spawn_self("ceiling", "--serve-ceiling")
    }

    /// Spawns this bench binary as the stub server of `--handlers` (see
    /// `stubs.rs`) on a free loopback port.
    pub fn spawn_stubs() -> Result<Self, ServerError> {
        Self::spawn_self("stubs", "--serve-stubs")
    }

    /// Spawns this bench binary with `flag ADDR` (a hidden serving mode).
    fn spawn_self(role: &str, flag: &str) -> Result<Self, ServerError> {
        let exe = std::env::current_exe().map_err(|source| ServerError::Io {
            what: "locating the bench binary".into(),
            source,
        })?;
        Self::start(&exe, role, None, |cmd, listen| {
            cmd.arg(flag).arg(listen);
        })
    }

    /// Picks a port, lets `args` add the command line for it and starts
    /// `bin` with its output in a log file.
    fn start(
        bin: &Path,
        role: &str,
        db_path: Option<PathBuf>,
        args: impl FnOnce(&mut Command, &str),
    ) -> Result<Self, ServerError> {
        let io = |what: &str| {
            let what = what.to_owned();
            move |source| ServerError::Io { what, source }
        };
        // Let the OS pick a free port, then release it for the server. There
        // is a tiny race with other processes, acceptable for a bench tool.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(io("finding a free port"))?
            .port();
        let log_path =
            std::env::temp_dir().join(format!("bench-{}-{role}.log", std::process::id()));
        let log = File::create(&log_path).map_err(io("creating server log"))?;
        let log_err = log.try_clone().map_err(io("creating server log"))?;

        let mut cmd = Command::new(bin);
        args(&mut cmd, &format!("127.0.0.1:{port}"));
        cmd.stdin(Stdio::null()).stdout(log).stderr(log_err);
        // Per-request logging would cost the server CPU the bench is trying
        // to measure; keep it quiet unless the caller asked otherwise.
        if std::env::var_os("RUST_LOG").is_none() {
            cmd.env("RUST_LOG", "warn");
        }
        let child = cmd
            .spawn()
            .map_err(io(&format!("starting {}", bin.display())))?;
        let url = Url::parse(&format!("http://127.0.0.1:{port}/mcp"))
            .map_err(|e| io("building URL")(std::io::Error::other(e)))?;
        Ok(Self {
            child,
            db_path,
            log_path,
            keep_log: false,
            url,
        })
    }

    /// Process id of the child, for CPU and memory sampling.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the port accepts TCP connections and a `tools/list`
    /// succeeds over `wire`, or fails after `timeout` or if the child exits.
    pub async fn wait_ready(&mut self, wire: Wire, timeout: Duration) -> Result<(), ServerError> {
        let deadline = Instant::now() + timeout;
        let client =
            McpClient::new(self.url.clone(), wire, Duration::from_secs(10)).map_err(|e| {
                ServerError::Io {
                    what: "building HTTP client".into(),
                    source: std::io::Error::other(e),
                }
            })?;
        let addr = format!(
            "{}:{}",
            self.url.host_str().unwrap_or("127.0.0.1"),
            self.url.port().unwrap_or(80)
        );
        let mut last = String::from("no attempt yet");
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(self.not_ready(format!("server exited with {status}")));
            }
            if Instant::now() >= deadline {
                return Err(self.not_ready(format!(
                    "timed out after {}s; last attempt: {last}",
                    timeout.as_secs()
                )));
            }
            match tokio::net::TcpStream::connect(&addr).await {
                Err(e) => last = format!("connect: {e}"),
                Ok(_) => match probe(&client).await {
                    Ok(()) => return Ok(()),
                    Err(e) => last = e,
                },
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn not_ready(&mut self, reason: String) -> ServerError {
        self.keep_log = true;
        ServerError::NotReady {
            reason,
            log: self.log_path.display().to_string(),
            tail: log_tail(&self.log_path, 4096),
        }
    }
}

/// One `tools/list` round trip (with session setup on the legacy wire);
/// the error says which step failed.
pub async fn probe(client: &McpClient) -> Result<(), String> {
    let session = client.open().await.map_err(|e| format!("open: {e}"))?;
    let result = client.call(&session, Op::ListTools).await.map(drop);
    client.close(&session).await;
    result.map_err(|e| format!("tools/list: {e}"))
}

impl Drop for ServerGuard {
    fn drop(&mut self) {
        // SIGKILL: the database is thrown away anyway, so there is nothing a
        // graceful shutdown would save, and it cannot hang.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(db) = &self.db_path {
            remove_db_files(db);
        }
        if self.keep_log {
            eprintln!("server log kept at {}", self.log_path.display());
        } else {
            let _ = std::fs::remove_file(&self.log_path);
        }
    }
}

/// Removes the SQLite file and its journal side files, ignoring absence.
fn remove_db_files(db: &Path) {
    let _ = std::fs::remove_file(db);
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut side = db.as_os_str().to_owned();
        side.push(suffix);
        let _ = std::fs::remove_file(side);
    }
}

/// Last `max` bytes of a file, for error messages.
fn log_tail(path: &Path, max: u64) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::from("<log unreadable>");
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(max)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}
