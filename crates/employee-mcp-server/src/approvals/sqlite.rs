//! The approvals on SQLite, in the audit trail's file: short
//! `BEGIN IMMEDIATE` transactions (one writer at a time, so find-or-file
//! and the bounds hold across processes), statements from [`super::sql`].

use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use mcpwire_server::access::{ApprovalError, ApprovalLimits, ApprovalTicket};
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, Transaction, TransactionBehavior};

use super::{AuditStep, Decision, Error, Filing, Spend, Stored, sql};

/// How long a statement waits for another writer (the audit writer, a
/// second server, the CLI).
const BUSY: Duration = Duration::from_secs(5);

/// A statement of [`sql`] with `?N` parameters.
fn q(text: &str) -> String {
    text.replace('$', "?")
}

static EXPIRE_DUE: LazyLock<String> = LazyLock::new(|| q(sql::EXPIRE_DUE));
static BY_LIVE_KEY: LazyLock<String> = LazyLock::new(|| q(&sql::by_live_key()));
static BY_ID: LazyLock<String> = LazyLock::new(|| q(&sql::by_id()));
static PENDING_COUNTS: LazyLock<String> = LazyLock::new(|| q(sql::PENDING_COUNTS));
static INSERT: LazyLock<String> = LazyLock::new(|| q(sql::INSERT));
static REDEEM: LazyLock<String> = LazyLock::new(|| q(sql::REDEEM));
static DECIDE: LazyLock<String> = LazyLock::new(|| q(sql::DECIDE));
static VOID_TOOL: LazyLock<String> = LazyLock::new(|| q(sql::VOID_TOOL));
static LISTING: LazyLock<String> = LazyLock::new(|| q(&sql::listing()));
static FORGET_OLD: LazyLock<String> = LazyLock::new(|| q(sql::FORGET_OLD));
static FORGET_CONFIRMATIONS: LazyLock<String> = LazyLock::new(|| q(sql::FORGET_CONFIRMATIONS));
static SPEND: LazyLock<String> = LazyLock::new(|| q(sql::SPEND_CONFIRMATION));
static AUDIT_STEP: LazyLock<String> = LazyLock::new(|| q(sql::AUDIT_STEP));
static SCHEMA: LazyLock<String> = LazyLock::new(sql::sqlite_schema);

fn unavailable(e: rusqlite::Error) -> ApprovalError {
    ApprovalError::Unavailable(Error::Sqlite(e).to_string())
}

/// Opens the trail file (created here if no server made it yet) and
/// creates the approval tables if missing.
pub(super) fn open(file: &Path) -> Result<Connection, Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(file, flags).map_err(|source| Error::Open {
        path: file.to_owned(),
        source,
    })?;
    conn.busy_timeout(BUSY).map_err(Error::Sqlite)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(Error::Sqlite)?;
    conn.execute_batch(&SCHEMA).map_err(Error::Sqlite)?;
    Ok(conn)
}

fn stored(row: &Row<'_>) -> rusqlite::Result<Stored> {
    let arguments: String = row.get(6)?;
    Ok(Stored {
        id: row.get(0)?,
        status: row.get(1)?,
        subject: row.get(2)?,
        client_id: row.get(3)?,
        client_name: row.get(4)?,
        tool: row.get(5)?,
        arguments: serde_json::from_str(&arguments).unwrap_or(serde_json::Value::Null),
        digest: row.get(7)?,
        policy_version: row.get(8)?,
        summary: row.get(9)?,
        requested_at_ms: row.get(10)?,
        expires_at_ms: row.get(11)?,
        decided_by: row.get(12)?,
        decided_at_ms: row.get(13)?,
        reason: row.get(14)?,
    })
}

fn audit(tx: &Transaction<'_>, step: &AuditStep) -> rusqlite::Result<()> {
    tx.prepare_cached(&AUDIT_STEP)?.execute(rusqlite::params![
        step.at,
        step.at_ms,
        step.subject,
        step.client_id,
        step.client_name,
        step.tool,
        step.arguments,
        step.outcome,
        step.detail,
    ])?;
    Ok(())
}

/// Closes every approval past its expiry, each with its audit row.
fn expire_due(tx: &Transaction<'_>, now_ms: i64) -> rusqlite::Result<()> {
    let gone: Vec<Stored> = tx
        .prepare_cached(&EXPIRE_DUE)?
        .query_map([now_ms], stored)?
        .collect::<Result<_, _>>()?;
    for row in &gone {
        if let Some(step) = row.closing_step(now_ms) {
            audit(tx, &step)?;
        }
    }
    Ok(())
}

/// Finds the approval binding this call, or files it (within the bounds).
pub(super) fn file(
    conn: &mut Connection,
    filing: &Filing,
    limits: &ApprovalLimits,
    forget_before: i64,
) -> Result<ApprovalTicket, ApprovalError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(unavailable)?;
    let now = filing.requested_at_ms;
    expire_due(&tx, now).map_err(unavailable)?;
    tx.prepare_cached(&FORGET_OLD)
        .and_then(|mut s| s.execute([forget_before]))
        .map_err(unavailable)?;
    let found = tx
        .prepare_cached(&BY_LIVE_KEY)
        .and_then(|mut s| s.query_row([&filing.live_key], stored).optional())
        .map_err(unavailable)?;
    if let Some(row) = found {
        tx.commit().map_err(unavailable)?;
        return Ok(row.ticket(now));
    }
    let (mine, total): (i64, i64) = tx
        .prepare_cached(&PENDING_COUNTS)
        .and_then(|mut s| s.query_row([&filing.request.subject], |r| Ok((r.get(0)?, r.get(1)?))))
        .map_err(unavailable)?;
    let count = |n: i64| usize::try_from(n).unwrap_or(usize::MAX);
    if let Some(why) = limits.refuse(count(mine), count(total)) {
        return Err(ApprovalError::Full(why));
    }
    let r = &filing.request;
    tx.prepare_cached(&INSERT)
        .and_then(|mut s| {
            s.execute(rusqlite::params![
                filing.id,
                filing.live_key,
                r.subject,
                r.client_id,
                r.client_name,
                r.tool,
                filing.arguments,
                r.digest,
                i64::try_from(r.policy_version).unwrap_or(i64::MAX),
                r.summary,
                filing.requested_at_ms,
                filing.expires_at_ms,
            ])
        })
        .map_err(unavailable)?;
    tx.commit().map_err(unavailable)?;
    Ok(filing.ticket())
}

/// One approval.
pub(super) fn by_id(conn: &Connection, id: &str) -> Result<Option<Stored>, Error> {
    conn.prepare_cached(&BY_ID)
        .and_then(|mut s| s.query_row([id], stored).optional())
        .map_err(Error::Sqlite)
}

/// Uses an approved approval up; `false` if it was not approved (any more).
pub(super) fn redeem(conn: &Connection, id: &str, now_ms: i64) -> Result<bool, Error> {
    let changed = conn
        .prepare_cached(&REDEEM)
        .and_then(|mut s| s.execute(rusqlite::params![id, now_ms]))
        .map_err(Error::Sqlite)?;
    Ok(changed == 1)
}

/// Spends a confirmation once.
pub(super) fn spend(conn: &mut Connection, spend: &Spend) -> Result<bool, ApprovalError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(unavailable)?;
    tx.prepare_cached(&FORGET_CONFIRMATIONS)
        .and_then(|mut s| s.execute([spend.now_ms]))
        .map_err(unavailable)?;
    let held: i64 = tx
        .query_row(sql::COUNT_CONFIRMATIONS, [], |r| r.get(0))
        .map_err(unavailable)?;
    if held >= spend.max {
        return Err(Spend::full());
    }
    let fresh = tx
        .prepare_cached(&SPEND)
        .and_then(|mut s| s.execute(rusqlite::params![spend.nonce, spend.expires_at_ms]))
        .map_err(unavailable)?;
    tx.commit().map_err(unavailable)?;
    Ok(fresh == 1)
}

/// Approvals newest first (expired ones closed first).
pub(super) fn list(
    conn: &mut Connection,
    all: bool,
    limit: u32,
    now_ms: i64,
) -> Result<Vec<Stored>, Error> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(Error::Sqlite)?;
    expire_due(&tx, now_ms).map_err(Error::Sqlite)?;
    let rows = tx
        .prepare_cached(&LISTING)
        .and_then(|mut s| {
            s.query_map(rusqlite::params![!all, limit], stored)?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(Error::Sqlite)?;
    tx.commit().map_err(Error::Sqlite)?;
    Ok(rows)
}

/// Records a decision and its audit row, in one transaction.
pub(super) fn decide(conn: &mut Connection, d: &Decision) -> Result<Stored, Error> {
    let store = Error::Sqlite;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(store)?;
    expire_due(&tx, d.now_ms).map_err(store)?;
    let row = tx
        .prepare_cached(&BY_ID)
        .and_then(|mut s| s.query_row([&d.id], stored).optional())
        .map_err(store)?;
    let mut row = d.check(row)?;
    tx.prepare_cached(&DECIDE)
        .and_then(|mut s| {
            s.execute(rusqlite::params![
                d.id,
                d.status(),
                d.actor,
                d.now_ms,
                d.reason
            ])
        })
        .map_err(store)?;
    audit(&tx, &d.step(&row)).map_err(store)?;
    tx.commit().map_err(store)?;
    row.status = d.status().to_owned();
    row.decided_by = Some(d.actor.clone());
    row.decided_at_ms = Some(d.now_ms);
    row.reason.clone_from(&d.reason);
    Ok(row)
}

/// Voids a tool's live approvals, each with its audit row.
pub(super) fn void_tool(
    conn: &mut Connection,
    tool: &str,
    why: &str,
    now_ms: i64,
) -> Result<usize, Error> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(Error::Sqlite)?;
    let gone: Vec<Stored> = tx
        .prepare_cached(&VOID_TOOL)
        .and_then(|mut s| {
            s.query_map(rusqlite::params![tool, why, now_ms], stored)?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(Error::Sqlite)?;
    for row in &gone {
        if let Some(step) = row.closing_step(now_ms) {
            audit(&tx, &step).map_err(Error::Sqlite)?;
        }
    }
    tx.commit().map_err(Error::Sqlite)?;
    Ok(gone.len())
}
