//! The `tools` subcommand: list, enable, disable, add, remove, show,
//! validate, history. Every change is one transaction that also records
//! who made it and bumps the generation the servers poll.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand};
use employee_directory::{DEFAULT_DATABASE_URL, DatabaseUrl, Directory, SystemClock};
use serde_json::json;

use super::{Store, sqlite};
use crate::custom::Checked;
use crate::custom::spec::{self, ToolSpec};

/// Flags of `tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Database URL, as given to the server: sqlite://PATH or postgres://….
    #[arg(long, env = "EMPLOYEE_MCP_DATABASE", default_value = DEFAULT_DATABASE_URL, global = true)]
    pub database: DatabaseUrl,

    /// PostgreSQL: the role custom tools' statements run as (created with
    /// SELECT on the directory tables when the user may; see the README).
    #[arg(long, env = "EMPLOYEE_MCP_CUSTOM_READER_ROLE", default_value = crate::custom::postgres::DEFAULT_READER_ROLE, global = true)]
    pub custom_reader_role: String,

    /// Who makes the change, for the catalogue's history (default: the OS
    /// user, from USER or LOGNAME).
    #[arg(long, global = true)]
    pub actor: Option<String>,

    /// What to do.
    #[command(subcommand)]
    pub action: ToolsAction,
}

/// The `tools` actions.
#[derive(Clone, Debug, Subcommand)]
pub enum ToolsAction {
    /// Every tool, built-in and custom, with its state and last change.
    List {
        /// JSON lines instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Serve a tool again.
    Enable {
        /// Tool name.
        name: String,
    },
    /// Stop serving a tool (calls already running finish).
    Disable {
        /// Tool name.
        name: String,
    },
    /// Check a definition file and add its tools; nothing changes if any
    /// check fails.
    Add {
        /// The TOML definition file.
        #[arg(long)]
        file: PathBuf,
        /// Most custom tools the catalogue may hold.
        #[arg(long, env = "EMPLOYEE_MCP_MAX_CUSTOM_TOOLS", default_value_t = crate::catalog::DEFAULT_MAX_CUSTOM_TOOLS)]
        max_custom_tools: usize,
    },
    /// Remove a custom tool.
    Remove {
        /// Tool name.
        name: String,
    },
    /// Print a custom tool's stored definition.
    Show {
        /// Tool name.
        name: String,
    },
    /// Check a definition file against the database without changing anything.
    Validate {
        /// The TOML definition file.
        #[arg(long)]
        file: PathBuf,
    },
    /// The newest changes to the catalogue (JSON lines), oldest first.
    History {
        /// Most changes to print.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
}

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
    let directory = Directory::open_url(&args.database, Arc::new(SystemClock), Default::default())
        .await
        .map_err(|e| format!("cannot open the employee database: {e}"))?;
    let settings = crate::tools::Settings {
        max_result_bytes: usize::MAX,
        report_task_grace: crate::tools::REPORT_TASK_GRACE,
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
        action => custom(&store, &args.custom_reader_role, &builtins, &actor, action).await,
    }
}

/// The custom-tool actions.
async fn custom(
    store: &Store,
    role: &str,
    builtins: &[String],
    actor: &str,
    action: ToolsAction,
) -> Result<(), String> {
    match action {
        ToolsAction::Validate { file } => {
            let checked = check_file(store, role, &file, builtins).await?;
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
            let checked = check_file(store, role, &file, builtins).await?;
            let specs: Vec<ToolSpec> = checked.into_iter().map(|c| c.spec).collect();
            let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
            store
                .put_custom(specs, "cli".into(), false, actor, max_custom_tools)
                .await?;
            for name in names {
                println!("added {name}");
            }
            Ok(())
        }
        ToolsAction::Remove { name } => match store.remove_custom(&name, actor).await? {
            true => {
                println!("removed {name}");
                Ok(())
            }
            false => Err(format!("no custom tool named {name:?}; see `tools list`")),
        },
        ToolsAction::Show { name } => show(&store.entries().await?, &name),
        ToolsAction::List { .. }
        | ToolsAction::Enable { .. }
        | ToolsAction::Disable { .. }
        | ToolsAction::History { .. } => Err("handled by the store".into()),
    }
}

/// Parses and checks a definition file against the database; every
/// check runs before anything changes.
async fn check_file(
    store: &Store,
    role: &str,
    file: &Path,
    builtins: &[String],
) -> Result<Vec<Checked>, String> {
    let text = spec::read_file(file)?;
    let specs = spec::parse_file(&text).map_err(|e| e.to_string())?;
    let mut taken = builtins.to_vec();
    taken.extend(store.entries().await?.into_iter().map(|e| e.name));
    store.ensure_reader(role).await?;
    store
        .checker(role)
        .check_all(specs, &taken)
        .await
        .map_err(|e| e.to_string())
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

fn list(entries: &[sqlite::Entry], builtins: &[String], as_json: bool) -> Result<(), String> {
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

fn show(entries: &[sqlite::Entry], name: &str) -> Result<(), String> {
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
