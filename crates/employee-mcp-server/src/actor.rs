//! Who makes a change from the command line (`tools`, `approvals`), for
//! the catalogue's history and the audit trail.

/// Who makes a change: `--actor`, else the OS user.
pub fn actor(explicit: Option<&str>) -> String {
    explicit
        .map(str::to_owned)
        .or_else(|| std::env::var("USER").ok())
        .or_else(|| std::env::var("LOGNAME").ok())
        .filter(|a| !a.trim().is_empty())
        .unwrap_or_else(|| "unknown".into())
        .chars()
        .filter(|c| !c.is_control())
        .take(128)
        .collect()
}
