//! The `tools` subcommand: list, enable, disable, add, remove, show,
//! validate, history. Every change is one transaction that also records
//! who made it and bumps the generation the servers poll.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use employee_directory::{Directory, SystemClock};
use serde_json::json;

use super::{Store, open_rw, store};
use crate::cli::{ToolsAction, ToolsArgs};
use crate::custom::spec::{self, ToolSpec};
use crate::custom::sqlite::open_read_only;
use crate::custom::{self, Checked};

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

/// Runs `tools …`.
pub async fn run(args: &ToolsArgs) -> Result<(), String> {
    // Opening the directory creates and migrates the database, so a
    // statement can be checked against its real schema.
    let directory = Directory::open(&args.database, Arc::new(SystemClock))
        .await
        .map_err(|e| format!("cannot open the employee database: {e}"))?;
    let settings = crate::tools::Settings {
        max_result_bytes: usize::MAX,
    };
    let builtins: Vec<String> = crate::tools::all(&directory, settings)
        .iter()
        .map(|t| t.definition().name.clone())
        .collect();
    let store = Store::open(&args.database).await?;
    let actor = actor(args.actor.as_deref());
    if let ToolsAction::Remove { name } = &args.action
        && builtins.contains(name)
    {
        return Err(format!(
            "{name:?} is a built-in tool; built-ins cannot be removed, only disabled (tools disable {name})"
        ));
    }
    match ToolsAction::clone(&args.action) {
        ToolsAction::List { json } => list(&store.entries().await?, &builtins, json),
        ToolsAction::Enable { name } | ToolsAction::Disable { name } if name.is_empty() => {
            Err("give a tool name".into())
        }
        ToolsAction::Enable { name } => toggle(&store, &builtins, &name, true, &actor).await,
        ToolsAction::Disable { name } => toggle(&store, &builtins, &name, false, &actor).await,
        ToolsAction::History { limit } => {
            for c in store.changes(limit).await? {
                println!("{}", serde_json::to_string(&c).map_err(|e| e.to_string())?);
            }
            Ok(())
        }
        // Custom SQL tools: SQLite only for now.
        action => {
            let path = store
                .sqlite_path()
                .ok_or(super::POSTGRES_LIMITATION)?
                .to_owned();
            tokio::task::spawn_blocking(move || custom_blocking(&path, &builtins, &actor, action))
                .await
                .map_err(|e| e.to_string())?
        }
    }
}

/// The custom-tool actions (SQLite only).
fn custom_blocking(
    path: &Path,
    builtins: &[String],
    actor: &str,
    action: ToolsAction,
) -> Result<(), String> {
    let mut conn = open_rw(path)?;
    let db = |e: rusqlite::Error| format!("tool catalogue: {e}");
    match action {
        ToolsAction::Validate { file } => {
            let checked = check_file(path, &file, builtins, &conn)?;
            for c in &checked {
                println!(
                    "ok: {} ({} parameter(s), {} column(s))",
                    c.spec.name,
                    c.spec.parameter_names().len(),
                    c.columns.len()
                );
            }
            Ok(())
        }
        ToolsAction::Add {
            file,
            max_custom_tools,
        } => {
            let checked = check_file(path, &file, builtins, &conn)?;
            let specs: Vec<ToolSpec> = checked.into_iter().map(|c| c.spec).collect();
            store::put_custom(&mut conn, &specs, "cli", false, actor, max_custom_tools)?;
            for s in &specs {
                println!("added {}", s.name);
            }
            Ok(())
        }
        ToolsAction::Remove { name } => {
            match store::remove_custom(&mut conn, &name, actor).map_err(db)? {
                true => {
                    println!("removed {name}");
                    Ok(())
                }
                false => Err(format!("no custom tool named {name:?}; see `tools list`")),
            }
        }
        ToolsAction::Show { name } => show(&conn, &name),
        ToolsAction::List { .. }
        | ToolsAction::Enable { .. }
        | ToolsAction::Disable { .. }
        | ToolsAction::History { .. } => Err("handled by the store".into()),
    }
}

/// Parses and checks a definition file against the database; every
/// check runs before anything changes.
fn check_file(
    db_path: &Path,
    file: &Path,
    builtins: &[String],
    conn: &rusqlite::Connection,
) -> Result<Vec<Checked>, String> {
    let meta =
        std::fs::metadata(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    if meta.len() > spec::MAX_FILE_BYTES as u64 {
        return Err(format!(
            "{} is over the limit of {} bytes",
            file.display(),
            spec::MAX_FILE_BYTES
        ));
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let specs = spec::parse_file(&text).map_err(|e| e.to_string())?;
    let mut taken = builtins.to_vec();
    let entries = store::entries(conn).map_err(|e| format!("tool catalogue: {e}"))?;
    taken.extend(entries.into_iter().map(|e| e.name));
    let checker = open_read_only(db_path)?;
    custom::check_all(&checker, specs, &taken).map_err(|e| e.to_string())
}

async fn toggle(
    store: &Store,
    builtins: &[String],
    name: &str,
    enabled: bool,
    actor: &str,
) -> Result<(), String> {
    let builtin = builtins.iter().any(|b| b == name);
    let entries = store.entries().await?;
    if !builtin && !entries.iter().any(|e| e.name == name) {
        return Err(format!("no tool named {name:?}; see `tools list`"));
    }
    let changed = store.set_enabled(name, builtin, enabled, actor).await?;
    let state = if enabled { "enabled" } else { "disabled" };
    if changed {
        println!("{name} {state}");
    } else {
        println!("{name} was already {state}");
    }
    Ok(())
}

fn list(entries: &[store::Entry], builtins: &[String], as_json: bool) -> Result<(), String> {
    let mut rows: Vec<serde_json::Value> = builtins
        .iter()
        .map(|name| match entries.iter().find(|e| &e.name == name) {
            Some(e) => serde_json::to_value(e).unwrap_or_default(),
            None => json!({"name": name, "kind": "builtin", "enabled": true, "source": "-",
                           "updated_at": "-", "updated_by": "-"}),
        })
        .collect();
    rows.extend(
        entries
            .iter()
            .filter(|e| e.kind == "custom")
            .map(|e| serde_json::to_value(e).unwrap_or_default()),
    );
    let mut out = std::io::stdout().lock();
    let w = |out: &mut std::io::StdoutLock<'_>, line: String| {
        writeln!(out, "{line}").map_err(|e| format!("cannot write to stdout: {e}"))
    };
    if !as_json {
        w(
            &mut out,
            format!(
                "{:<32}  {:<8}  {:<9}  {:<26}  {}",
                "NAME", "KIND", "STATE", "CHANGED", "BY"
            ),
        )?;
    }
    for r in rows {
        let line = if as_json {
            r.to_string()
        } else {
            let state = if r["enabled"] == true {
                "enabled"
            } else {
                "disabled"
            };
            format!(
                "{:<32}  {:<8}  {:<9}  {:<26}  {}",
                r["name"].as_str().unwrap_or("-"),
                r["kind"].as_str().unwrap_or("-"),
                state,
                r["updated_at"].as_str().unwrap_or("-"),
                r["updated_by"].as_str().unwrap_or("-"),
            )
        };
        w(&mut out, line)?;
    }
    Ok(())
}

fn show(conn: &rusqlite::Connection, name: &str) -> Result<(), String> {
    let entries = store::entries(conn).map_err(|e| format!("tool catalogue: {e}"))?;
    let entry = entries
        .iter()
        .find(|e| e.name == name && e.kind == "custom")
        .ok_or_else(|| format!("no custom tool named {name:?}; see `tools list`"))?;
    let spec: ToolSpec = serde_json::from_str(entry.definition.as_deref().unwrap_or(""))
        .map_err(|e| format!("stored definition unreadable: {e}"))?;
    println!(
        "# {} tool, {}, source {}, changed {} by {}",
        entry.kind,
        if entry.enabled { "enabled" } else { "disabled" },
        entry.source,
        entry.updated_at,
        entry.updated_by
    );
    let file = json!({ "tool": [spec] });
    match toml::to_string_pretty(&file) {
        Ok(text) => println!("{text}"),
        Err(_) => println!(
            "{}",
            serde_json::to_string_pretty(&file).unwrap_or_default()
        ),
    }
    Ok(())
}
