//! The `approvals` subcommand: what waits for an operator, and the
//! operator's yes or no. Every decision is an audit row (who, why) written
//! with it; an approver cannot decide their own call.

use clap::{Args, Subcommand};
use employee_directory::{DEFAULT_DATABASE_URL, DatabaseUrl};

use super::{Error, Store, Stored, iso};
use crate::actor::actor;

/// Longest `--reason` kept, in characters.
const MAX_REASON_CHARS: usize = 500;

/// Flags of `approvals`.
#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    /// Database URL, as given to the server: sqlite://PATH or postgres://….
    #[arg(long, env = "EMPLOYEE_MCP_DATABASE", default_value = DEFAULT_DATABASE_URL, global = true)]
    pub database: DatabaseUrl,

    /// Who decides, for the audit trail (default: the OS user, from USER or
    /// LOGNAME).
    #[arg(long, global = true)]
    pub actor: Option<String>,

    /// What to do.
    #[command(subcommand)]
    pub action: ApprovalsAction,
}

/// The `approvals` actions.
#[derive(Clone, Debug, Subcommand)]
pub enum ApprovalsAction {
    /// The calls waiting for an operator, newest first (with --all, every
    /// approval of the last week, decided or not).
    List {
        /// Decided, served, expired and void ones too.
        #[arg(long)]
        all: bool,
        /// Most approvals to print.
        #[arg(long, default_value_t = 100)]
        limit: u32,
        /// JSON lines instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One approval, with the call's (redacted) arguments, as JSON.
    Show {
        /// Approval id (apr-…).
        id: String,
    },
    /// Let the call run: the same caller's retry of the same call (or its
    /// waiting task) is served once.
    Approve {
        /// Approval id (apr-…).
        id: String,
        /// Why, for the audit trail.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Refuse the call: the caller is told who denied it and why.
    Deny {
        /// Approval id (apr-…).
        id: String,
        /// Why, for the audit trail and the caller.
        #[arg(long)]
        reason: Option<String>,
    },
}

/// Runs `approvals …`.
pub async fn run(args: &ApprovalsArgs) -> Result<(), Error> {
    let Some(store) = Store::open(&args.database).await? else {
        return Err(Error::InMemory);
    };
    match &args.action {
        ApprovalsAction::List { all, limit, json } => {
            print_list(&store.list(*all, *limit).await?, *json)
        }
        ApprovalsAction::Show { id } => match store.show(id).await? {
            Some(row) => print_json(&row),
            None => Err(Error::NoApproval(id.clone())),
        },
        ApprovalsAction::Approve { id, reason } => {
            decide(&store, args, id, true, reason.as_deref()).await
        }
        ApprovalsAction::Deny { id, reason } => {
            decide(&store, args, id, false, reason.as_deref()).await
        }
    }
}

/// A decision's reason as stored: no control characters, at most
/// `MAX_REASON_CHARS` (the CLI and the console both decide with it).
pub fn clean_reason(reason: &str) -> String {
    reason
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_REASON_CHARS)
        .collect()
}

async fn decide(
    store: &Store,
    args: &ApprovalsArgs,
    id: &str,
    approve: bool,
    reason: Option<&str>,
) -> Result<(), Error> {
    let reason = reason.map(clean_reason);
    let actor = actor(args.actor.as_deref());
    let row = store.decide(id, approve, &actor, reason.as_deref()).await?;
    let verb = if approve { "approved" } else { "denied" };
    println!(
        "{} {verb} by {actor}: {} for {}",
        row.id,
        row.tool,
        row.subject.as_deref().unwrap_or("(anonymous)")
    );
    Ok(())
}

fn print_json(row: &Stored) -> Result<(), Error> {
    println!("{}", serde_json::to_string(row)?);
    Ok(())
}

fn print_list(rows: &[Stored], json: bool) -> Result<(), Error> {
    if json {
        return rows.iter().try_for_each(print_json);
    }
    if rows.is_empty() {
        println!("no approvals");
        return Ok(());
    }
    println!(
        "{:<20} {:<8} {:<24} {:<24} {:<24} SUMMARY",
        "ID", "STATUS", "SUBJECT", "TOOL", "EXPIRES"
    );
    for r in rows {
        println!(
            "{:<20} {:<8} {:<24} {:<24} {:<24} {}",
            r.id,
            r.status,
            r.subject.as_deref().unwrap_or("-"),
            r.tool,
            iso(r.expires_at_ms),
            r.summary
        );
    }
    Ok(())
}
