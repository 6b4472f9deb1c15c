//! Reading a cluster started by `scripts/cluster up --prefix DIR`: the
//! balancer's URL and which processes to sample.

use std::path::Path;

use reqwest::Url;

/// A server the bench did not start.
pub struct External {
    /// The MCP endpoint.
    pub url: Url,
    /// Processes whose CPU counts as the server's (the replicas).
    pub server_pids: Vec<u32>,
    /// Helper processes measured apart (nginx, PostgreSQL).
    pub aux_pids: Vec<u32>,
}

fn read_trimmed(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn pid_in(path: &Path) -> Result<u32, String> {
    let text = read_trimmed(path)?;
    let first = text.lines().next().unwrap_or_default();
    first
        .trim()
        .parse()
        .map_err(|_| format!("{} does not start with a pid", path.display()))
}

/// The cluster under `dir`: `url`, `replica-*.pid`, nginx's pid and, when
/// the cluster started its own scratch PostgreSQL, the postmaster's pid.
pub fn read(dir: &Path) -> Result<External, String> {
    let url_text = read_trimmed(&dir.join("url"))
        .map_err(|e| format!("{e} (is a cluster running? scripts/cluster up)"))?;
    let url = Url::parse(&url_text).map_err(|e| format!("bad URL {url_text:?}: {e}"))?;
    let mut server_pids = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("replica-") && name.ends_with(".pid") {
            server_pids.push(pid_in(&entry.path())?);
        }
    }
    let mut aux_pids = vec![pid_in(&dir.join("nginx/nginx.pid.started"))?];
    // Written by scripts/cluster when it started its own scratch PostgreSQL.
    if let Ok(pidfile) = read_trimmed(&dir.join("pg-pidfile")) {
        aux_pids.push(pid_in(Path::new(&pidfile))?);
    }
    Ok(External {
        url,
        server_pids,
        aux_pids,
    })
}
