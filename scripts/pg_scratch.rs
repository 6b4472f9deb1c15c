//! A fresh PostgreSQL database per test, on the throwaway cluster of
//! `scripts/pg-scratch` (started here on first use, so `cargo test` alone
//! runs the PostgreSQL tests; the script installs Debian's package when the
//! server is missing). The Rust side of that script, included by path by
//! every test harness that needs PostgreSQL (`mcpwire-cluster`,
//! `employee-directory`, `employee-mcp-server`).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// The workspace root (two levels above the including crate's manifest).
fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `postgres://…/employee` of the scratch cluster, started once per process.
pub fn cluster_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let out = Command::new(workspace().join("scripts/pg-scratch"))
            .arg("start")
            .output()
            .expect("run scripts/pg-scratch");
        assert!(
            out.status.success(),
            "scripts/pg-scratch start failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8(out.stdout)
            .expect("utf-8 url")
            .trim()
            .to_owned();
        drop_orphans(&url);
        url
    })
}

/// Drops the databases of test processes that have exited (their names carry
/// their pid), so the cluster holds at most the databases of the processes
/// still running: each one is a few MB, and a run makes many.
fn drop_orphans(base: &str) {
    let names = psql(
        base,
        "SELECT datname FROM pg_database WHERE datname ~ '^[tc]_[0-9]+_'",
    );
    for name in names.lines() {
        let pid = name.split('_').nth(1).unwrap_or_default();
        if !std::path::Path::new("/proc").join(pid).exists() {
            drop_named(base, name);
        }
    }
}

/// Drops the database at `url` (closing its sessions); errors are ignored,
/// as this runs when a test is done with it.
#[allow(dead_code)] // employee-mcp-server's `TempDb` calls it; this crate's tests do not.
pub fn drop_database(url: &str) {
    drop_named(cluster_url(), database_name(url));
}

/// `DROP DATABASE name WITH (FORCE)` through `base`; a failure is ignored
/// (the database is gone or still busy, and the next process retries).
fn drop_named(base: &str, name: &str) {
    let _ = try_psql(
        base,
        &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
    );
}

/// Runs one SQL statement on the cluster's `employee` database with psql.
pub fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([url, "-v", "ON_ERROR_STOP=1", "-Atqc", sql])
        .output()
        .expect("run psql");
    assert!(
        out.status.success(),
        "psql {sql:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A new, empty database on the scratch cluster; returns its URL. Names are
/// unique per process and call; a database outlives its test until
/// [`drop_database`] or the next test process's start (`drop_orphans`).
pub fn fresh_database() -> String {
    let base = cluster_url();
    let name = unique_name("t");
    psql(base, &format!("CREATE DATABASE {name}"));
    url_of(&name)
}

/// A database name no other call of this process or of another test
/// process uses: prefix, pid, a counter and the clock's nanoseconds.
pub fn unique_name(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}_{}_{n}_{nanos}", std::process::id())
}

/// The scratch cluster's URL for database `name`.
pub fn url_of(name: &str) -> String {
    let base = cluster_url();
    let root = base.rsplit_once('/').map(|(r, _)| r).unwrap_or(base);
    format!("{root}/{name}")
}

/// Runs one SQL statement with psql; the error output on failure.
pub fn try_psql(url: &str, sql: &str) -> Result<String, String> {
    let out = Command::new("psql")
        .args([url, "-v", "ON_ERROR_STOP=1", "-Atqc", sql])
        .output()
        .map_err(|e| format!("run psql: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The database name at the end of a URL.
pub fn database_name(url: &str) -> &str {
    url.rsplit_once('/').map(|(_, n)| n).unwrap_or(url)
}
