//! The `tools` subcommand: list, enable, disable, approval, add, remove,
//! show, validate, history. Every change is one transaction that also
//! records who made it and bumps the generation the servers poll.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand, ValueEnum};
use employee_directory::{DEFAULT_DATABASE_URL, DatabaseUrl, Directory, SystemClock};
use mcpwire_server::Tool;
use mcpwire_server::access::{Approval, ApprovalPolicy};
use serde_json::json;

use crate::actor::actor;

use super::{Error, Store, describe_approval, effective_approval, sqlite, stored_approval};
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
    /// Set who must agree before a tool's calls run, for every call:
    /// none, confirm (the user, in their client), operator (an operator
    /// approves each call), or default (the tool's declared policy again).
    /// Confirmations and approvals given before are void.
    Approval {
        /// Tool name (built-in or custom).
        name: String,
        /// The policy.
        #[arg(value_enum)]
        level: ApprovalLevel,
        /// Why, for the catalogue's history.
        #[arg(long)]
        reason: Option<String>,
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

/// The policies `tools approval` sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ApprovalLevel {
    /// Nobody is asked.
    None,
    /// The user confirms each call in their client.
    Confirm,
    /// An operator approves each call.
    Operator,
    /// The tool's declared policy (clears the override).
    Default,
}

impl ApprovalLevel {
    /// The override it stores; `None` for `default`.
    pub fn to_override(self) -> Option<Approval> {
        match self {
            Self::None => Some(Approval::None),
            Self::Confirm => Some(Approval::Confirm),
            Self::Operator => Some(Approval::Operator),
            Self::Default => None,
        }
    }
}

/// Longest `--reason` kept, in characters.
const MAX_REASON_CHARS: usize = 500;

/// Runs `tools …`.
pub async fn run(args: &ToolsArgs) -> Result<(), Error> {
    // Opening the directory creates and migrates the database, so a
    // statement can be checked against its real schema.
    let directory = Directory::open_url(&args.database, Arc::new(SystemClock), Default::default())
        .await
        .map_err(Error::Directory)?;
    let settings = crate::tools::Settings {
        max_result_bytes: usize::MAX,
        report_task_grace: crate::tools::REPORT_TASK_GRACE,
    };
    let builtin_tools = crate::tools::all(&directory, settings);
    let builtins: Vec<String> = builtin_tools
        .iter()
        .map(|t| t.definition().name.clone())
        .collect();
    let store = Store::open(&args.database).await?;
    let actor = actor(args.actor.as_deref());
    if let ToolsAction::Remove { name } = &args.action
        && builtins.contains(name)
    {
        return Err(Error::BuiltinRemoval { name: name.clone() });
    }
    match ToolsAction::clone(&args.action) {
        ToolsAction::List { json } => list(&store.entries().await?, &builtin_tools, json),
        ToolsAction::Enable { name }
        | ToolsAction::Disable { name }
        | ToolsAction::Approval { name, .. }
            if name.is_empty() =>
        {
            Err(Error::NoName)
        }
        ToolsAction::Approval {
            name,
            level,
            reason,
        } => {
            let change = ApprovalArgs {
                name: &name,
                level,
                reason: reason.as_deref(),
                actor: &actor,
            };
            print_lines(set_approval(&args.database, &store, &builtin_tools, change).await?)
        }
        ToolsAction::Enable { name } => {
            print_lines(toggle(&args.database, &store, &builtins, &name, true, &actor).await?)
        }
        ToolsAction::Disable { name } => {
            print_lines(toggle(&args.database, &store, &builtins, &name, false, &actor).await?)
        }
        ToolsAction::History { limit } => {
            for c in store.changes(limit).await? {
                println!("{}", serde_json::to_string(&c)?);
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
) -> Result<(), Error> {
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
            false => Err(Error::NoCustomTool { name }),
        },
        ToolsAction::Show { name } => show(&store.entries().await?, &name),
        ToolsAction::List { .. }
        | ToolsAction::Enable { .. }
        | ToolsAction::Disable { .. }
        | ToolsAction::Approval { .. }
        | ToolsAction::History { .. } => Err(Error::Misrouted),
    }
}

/// Parses and checks a definition file against the database; every
/// check runs before anything changes.
async fn check_file(
    store: &Store,
    role: &str,
    file: &Path,
    builtins: &[String],
) -> Result<Vec<Checked>, Error> {
    let text = spec::read_file(file).map_err(Error::Custom)?;
    let specs = spec::parse_file(&text)?;
    let mut taken = builtins.to_vec();
    taken.extend(store.entries().await?.into_iter().map(|e| e.name));
    store.ensure_reader(role).await?;
    Ok(store.checker(role).check_all(specs, &taken).await?)
}

/// Prints what a change reports, a line each.
fn print_lines(lines: Vec<String>) -> Result<(), Error> {
    for line in lines {
        println!("{line}");
    }
    Ok(())
}

/// Enables or disables `name` as `actor` (disabling voids its pending
/// approvals); returns what happened, a line each. The `tools` CLI and
/// the console both change tools through here.
pub async fn toggle(
    database: &DatabaseUrl,
    store: &Store,
    builtins: &[String],
    name: &str,
    enabled: bool,
    actor: &str,
) -> Result<Vec<String>, Error> {
    let builtin = builtins.iter().any(|b| b == name);
    let entries = store.entries().await?;
    if !builtin && !entries.iter().any(|e| e.name == name) {
        return Err(Error::NoTool {
            name: name.to_owned(),
        });
    }
    let changed = store.set_enabled(name, builtin, enabled, actor).await?;
    let state = if enabled { "enabled" } else { "disabled" };
    let mut lines = Vec::new();
    if changed {
        lines.push(format!("{name} {state}"));
        if !enabled {
            lines.extend(void_approvals(database, name, "the tool was disabled").await?);
        }
    } else {
        lines.push(format!("{name} was already {state}"));
    }
    Ok(lines)
}

/// Voids the calls of `name` waiting for (or given) an operator's yes:
/// a yes asked under the old policy, or for a tool no longer served,
/// serves nothing.
async fn void_approvals(
    database: &DatabaseUrl,
    name: &str,
    why: &str,
) -> Result<Option<String>, Error> {
    let Some(approvals) = crate::approvals::Store::open(database).await? else {
        return Ok(None);
    };
    let voided = approvals.void_tool(name, why).await?;
    Ok((voided > 0).then(|| format!("{voided} pending approval(s) of {name} void: {why}")))
}

/// What `tools approval` was asked.
pub struct ApprovalArgs<'a> {
    /// The tool.
    pub name: &'a str,
    /// The policy wanted.
    pub level: ApprovalLevel,
    /// Why, for the history.
    pub reason: Option<&'a str>,
    /// Who asks.
    pub actor: &'a str,
}

/// The policy a tool declares: a built-in's from its code, a custom
/// tool's from its stored definition (`None` when that is unreadable).
fn declared_approval(
    builtins: &[Tool],
    entry: Option<&sqlite::Entry>,
    name: &str,
) -> Option<ApprovalPolicy> {
    if let Some(tool) = builtins.iter().find(|t| t.definition().name == name) {
        return Some(tool.policy().approval.clone());
    }
    let spec: ToolSpec = serde_json::from_str(entry?.definition.as_deref()?).ok()?;
    Some(ApprovalPolicy::new(spec.approval()))
}

/// `tools approval NAME LEVEL`: the override, its record and the
/// generation bump in one transaction (voiding what waits under the old
/// policy); says what the policy is now, a line each. The console sets
/// approval policies through here too.
pub async fn set_approval(
    database: &DatabaseUrl,
    store: &Store,
    builtin_tools: &[Tool],
    args: ApprovalArgs<'_>,
) -> Result<Vec<String>, Error> {
    let name = args.name;
    let builtin = builtin_tools.iter().any(|t| t.definition().name == name);
    let entries = store.entries().await?;
    let entry = entries.iter().find(|e| e.name == name);
    if !builtin && entry.is_none() {
        let mut names: Vec<&str> = builtin_tools
            .iter()
            .map(|t| t.definition().name.as_str())
            .collect();
        names.extend(
            entries
                .iter()
                .filter(|e| e.kind == "custom")
                .map(|e| e.name.as_str()),
        );
        return Err(Error::UnknownTool {
            name: name.to_owned(),
            known: names.join(", "),
        });
    }
    let declared = declared_approval(builtin_tools, entry, name).ok_or_else(|| {
        Error::UnreadableDefinition {
            name: name.to_owned(),
        }
    })?;
    let wanted = args.level.to_override();
    let now = describe_approval(&effective_approval(&declared, wanted));
    let reason: Option<String> = args
        .reason
        .map(|r| {
            r.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .take(MAX_REASON_CHARS)
                .collect::<String>()
        })
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty());
    let detail = {
        let (declared, now) = (declared.clone(), now.clone());
        let default = args.level == ApprovalLevel::Default;
        move |previous: Option<&str>| {
            let before = previous.map(|p| Approval::parse(p).unwrap_or(Approval::Operator));
            let was = describe_approval(&effective_approval(&declared, before));
            let mut detail = if default {
                format!("{now}, the declared default (was {was})")
            } else {
                format!("{now} (was {was})")
            };
            if let Some(reason) = reason {
                detail.push_str(": ");
                detail.push_str(&reason);
            }
            detail
        }
    };
    let change = store
        .set_approval(name, builtin, wanted, args.actor, detail)
        .await?;
    let source = if wanted.is_some() {
        "override"
    } else {
        "declared default"
    };
    let mut lines = Vec::new();
    if change.changed {
        lines.push(format!("{name} approval: {now} ({source})"));
        let why = format!("the approval policy changed to {now}");
        lines.extend(void_approvals(database, name, &why).await?);
    } else {
        lines.push(format!("{name} approval was already {now} ({source})"));
    }
    Ok(lines)
}

/// One `tools list` row: the catalogue's state of a tool and its
/// effective approval policy.
pub fn list_row(builtins: &[Tool], entry: Option<&sqlite::Entry>, name: &str) -> serde_json::Value {
    let mut row = match entry {
        Some(e) => serde_json::to_value(e).unwrap_or_default(),
        None => json!({"name": name, "kind": "builtin", "enabled": true, "source": "-",
                       "updated_at": "-", "updated_by": "-", "approval_override": null,
                       "approval_version": 0}),
    };
    let override_ = entry.and_then(stored_approval);
    match declared_approval(builtins, entry, name) {
        Some(declared) => {
            let effective = effective_approval(&declared, override_);
            row["approval"] = json!(effective.base.as_str());
            row["approval_policy"] = json!(describe_approval(&effective));
        }
        None => {
            row["approval"] = json!(null);
            row["approval_policy"] = json!("unknown (stored definition unreadable)");
        }
    }
    row
}

fn list(entries: &[sqlite::Entry], builtins: &[Tool], as_json: bool) -> Result<(), Error> {
    let mut rows: Vec<serde_json::Value> = builtins
        .iter()
        .map(|t| {
            let name = &t.definition().name;
            list_row(builtins, entries.iter().find(|e| &e.name == name), name)
        })
        .collect();
    rows.extend(
        entries
            .iter()
            .filter(|e| e.kind == "custom")
            .map(|e| list_row(builtins, Some(e), &e.name)),
    );
    let mut out = std::io::stdout().lock();
    let w = |out: &mut std::io::StdoutLock<'_>, line: String| {
        writeln!(out, "{line}").map_err(Error::Stdout)
    };
    if !as_json {
        w(
            &mut out,
            format!(
                "{:<32}  {:<8}  {:<9}  {:<26}  {:<16}  {}",
                "NAME", "KIND", "STATE", "CHANGED", "BY", "APPROVAL"
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
            let overridden = if r["approval_override"].is_string() {
                " (override)"
            } else {
                ""
            };
            format!(
                "{:<32}  {:<8}  {:<9}  {:<26}  {:<16}  {}{overridden}",
                r["name"].as_str().unwrap_or("-"),
                r["kind"].as_str().unwrap_or("-"),
                state,
                r["updated_at"].as_str().unwrap_or("-"),
                r["updated_by"].as_str().unwrap_or("-"),
                r["approval_policy"].as_str().unwrap_or("-"),
            )
        };
        w(&mut out, line)?;
    }
    Ok(())
}

fn show(entries: &[sqlite::Entry], name: &str) -> Result<(), Error> {
    let entry = entries
        .iter()
        .find(|e| e.name == name && e.kind == "custom")
        .ok_or_else(|| Error::NoCustomTool {
            name: name.to_owned(),
        })?;
    let spec: ToolSpec = serde_json::from_str(entry.definition.as_deref().unwrap_or(""))
        .map_err(Error::StoredUnreadable)?;
    println!(
        "# {} tool, {}, source {}, changed {} by {}",
        entry.kind,
        if entry.enabled { "enabled" } else { "disabled" },
        entry.source,
        entry.updated_at,
        entry.updated_by
    );
    if let Some(level) = stored_approval(entry) {
        println!(
            "# approval overridden in the catalogue: {} (declared: {})",
            level.as_str(),
            spec.approval().as_str()
        );
    }
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
