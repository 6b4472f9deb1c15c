//! The approvals on PostgreSQL, shared by every replica: filings are
//! serialised by an advisory lock (find-or-file and the bounds hold across
//! replicas), statements from [`super::sql`].

use deadpool_postgres::{Object, Pool, Transaction};
use mcpwire_server::access::{ApprovalError, ApprovalLimits, ApprovalTicket};
use tokio_postgres::Row;

use super::{AuditStep, Decision, Error, Filing, Spend, Stored, sql};

fn unavailable(e: tokio_postgres::Error) -> ApprovalError {
    store_down(Error::Postgres(e))
}

/// No connection, as the engine's `ApprovalError` carries it.
fn store_down(e: Error) -> ApprovalError {
    ApprovalError::Unavailable(e.to_string())
}

/// PostgreSQL text cannot hold NUL; a client-chosen string may.
fn text(s: &str) -> String {
    s.replace('\0', "\u{FFFD}")
}

fn opt(s: Option<&str>) -> Option<String> {
    s.map(text)
}

async fn client(pool: &Pool) -> Result<Object, Error> {
    Ok(pool.get().await?)
}

/// Creates the tables if missing.
pub(super) async fn migrate(pool: &Pool) -> Result<(), Error> {
    let mut c = client(pool).await?;
    let tx = c.transaction().await.map_err(Error::Postgres)?;
    tx.batch_execute(&sql::postgres_schema())
        .await
        .map_err(Error::Postgres)?;
    tx.commit().await.map_err(Error::Postgres)
}

fn stored(row: &Row) -> Result<Stored, tokio_postgres::Error> {
    let arguments: String = row.try_get(6)?;
    Ok(Stored {
        id: row.try_get(0)?,
        status: row.try_get(1)?,
        subject: row.try_get(2)?,
        client_id: row.try_get(3)?,
        client_name: row.try_get(4)?,
        tool: row.try_get(5)?,
        arguments: serde_json::from_str(&arguments).unwrap_or(serde_json::Value::Null),
        digest: row.try_get(7)?,
        policy_version: row.try_get(8)?,
        summary: row.try_get(9)?,
        requested_at_ms: row.try_get(10)?,
        expires_at_ms: row.try_get(11)?,
        decided_by: row.try_get(12)?,
        decided_at_ms: row.try_get(13)?,
        reason: row.try_get(14)?,
    })
}

fn all_stored(rows: &[Row]) -> Result<Vec<Stored>, tokio_postgres::Error> {
    rows.iter().map(stored).collect()
}

async fn audit(tx: &Transaction<'_>, step: &AuditStep) -> Result<(), tokio_postgres::Error> {
    tx.execute(
        sql::AUDIT_STEP,
        &[
            &step.at,
            &step.at_ms,
            &opt(step.subject.as_deref()),
            &opt(step.client_id.as_deref()),
            &opt(step.client_name.as_deref()),
            &text(&step.tool),
            &text(&step.arguments),
            &step.outcome,
            &text(&step.detail),
        ],
    )
    .await
    .map(drop)
}

/// Closes every approval past its expiry, each with its audit row.
async fn expire_due(tx: &Transaction<'_>, now_ms: i64) -> Result<(), tokio_postgres::Error> {
    let gone = all_stored(&tx.query(sql::EXPIRE_DUE, &[&now_ms]).await?)?;
    for row in &gone {
        if let Some(step) = row.closing_step(now_ms) {
            audit(tx, &step).await?;
        }
    }
    Ok(())
}

/// Finds the approval binding this call, or files it (within the bounds).
pub(super) async fn file(
    pool: &Pool,
    filing: &Filing,
    limits: &ApprovalLimits,
    forget_before: i64,
) -> Result<ApprovalTicket, ApprovalError> {
    let mut c = client(pool).await.map_err(store_down)?;
    let tx = c.transaction().await.map_err(unavailable)?;
    let now = filing.requested_at_ms;
    let r = &filing.request;
    let step = async {
        tx.execute(sql::PG_FILING_LOCK, &[]).await?;
        expire_due(&tx, now).await?;
        tx.execute(sql::FORGET_OLD, &[&forget_before]).await?;
        if let Some(row) = tx
            .query_opt(&sql::by_live_key(), &[&filing.live_key])
            .await?
        {
            return Ok(Err(stored(&row)?.ticket(now)));
        }
        let counts = tx
            .query_one(sql::PENDING_COUNTS, &[&opt(r.subject.as_deref())])
            .await?;
        Ok(Ok((
            counts.try_get::<_, i64>(0)?,
            counts.try_get::<_, i64>(1)?,
        )))
    };
    let (mine, total) = match step.await.map_err(unavailable)? {
        Ok(counts) => counts,
        Err(found) => {
            tx.commit().await.map_err(unavailable)?;
            return Ok(found);
        }
    };
    let count = |n: i64| usize::try_from(n).unwrap_or(usize::MAX);
    if let Some(why) = limits.refuse(count(mine), count(total)) {
        return Err(ApprovalError::Full(why));
    }
    let version = i64::try_from(r.policy_version).unwrap_or(i64::MAX);
    tx.execute(
        sql::INSERT,
        &[
            &filing.id,
            &text(&filing.live_key),
            &opt(r.subject.as_deref()),
            &opt(r.client_id.as_deref()),
            &opt(r.client_name.as_deref()),
            &text(&r.tool),
            &text(&filing.arguments),
            &r.digest,
            &version,
            &text(&r.summary),
            &filing.requested_at_ms,
            &filing.expires_at_ms,
        ],
    )
    .await
    .map_err(unavailable)?;
    tx.commit().await.map_err(unavailable)?;
    Ok(filing.ticket())
}

/// One approval.
pub(super) async fn by_id(pool: &Pool, id: &str) -> Result<Option<Stored>, Error> {
    let c = client(pool).await?;
    let row = c
        .query_opt(&sql::by_id(), &[&text(id)])
        .await
        .map_err(Error::Postgres)?;
    row.as_ref()
        .map(stored)
        .transpose()
        .map_err(Error::Postgres)
}

/// Uses an approved approval up; `false` if it was not approved (any more).
pub(super) async fn redeem(pool: &Pool, id: &str, now_ms: i64) -> Result<bool, Error> {
    let c = client(pool).await?;
    let changed = c
        .execute(sql::REDEEM, &[&text(id), &now_ms])
        .await
        .map_err(Error::Postgres)?;
    Ok(changed == 1)
}

/// Spends a confirmation once.
pub(super) async fn spend(pool: &Pool, spend: &Spend) -> Result<bool, ApprovalError> {
    let mut c = client(pool).await.map_err(store_down)?;
    let tx = c.transaction().await.map_err(unavailable)?;
    let fresh = async {
        tx.execute(sql::FORGET_CONFIRMATIONS, &[&spend.now_ms])
            .await?;
        let held: i64 = tx
            .query_one(sql::COUNT_CONFIRMATIONS, &[])
            .await?
            .try_get(0)?;
        if held >= spend.max {
            return Ok(None);
        }
        let n = tx
            .execute(
                sql::SPEND_CONFIRMATION,
                &[&text(&spend.nonce), &spend.expires_at_ms],
            )
            .await?;
        Ok(Some(n == 1))
    };
    let fresh = fresh.await.map_err(unavailable)?;
    tx.commit().await.map_err(unavailable)?;
    fresh.ok_or_else(Spend::full)
}

/// Approvals newest first (expired ones closed first).
pub(super) async fn list(
    pool: &Pool,
    all: bool,
    limit: u32,
    now_ms: i64,
) -> Result<Vec<Stored>, Error> {
    let mut c = client(pool).await?;
    let tx = c.transaction().await.map_err(Error::Postgres)?;
    let rows = async {
        expire_due(&tx, now_ms).await?;
        let rows = tx
            .query(&sql::listing(), &[&!all, &i64::from(limit)])
            .await?;
        all_stored(&rows)
    };
    let rows = rows.await.map_err(Error::Postgres)?;
    tx.commit().await.map_err(Error::Postgres)?;
    Ok(rows)
}

/// Records a decision and its audit row, in one transaction.
pub(super) async fn decide(pool: &Pool, d: &Decision) -> Result<Stored, Error> {
    let store = Error::Postgres;
    let mut c = client(pool).await?;
    let tx = c.transaction().await.map_err(store)?;
    expire_due(&tx, d.now_ms).await.map_err(store)?;
    let row = tx
        .query_opt(&format!("{} FOR UPDATE", sql::by_id()), &[&text(&d.id)])
        .await
        .map_err(store)?;
    let row = row.as_ref().map(stored).transpose().map_err(store)?;
    let mut row = d.check(row)?;
    let reason = opt(d.reason.as_deref());
    tx.execute(
        sql::DECIDE,
        &[&d.id, &d.status(), &text(&d.actor), &d.now_ms, &reason],
    )
    .await
    .map_err(store)?;
    audit(&tx, &d.step(&row)).await.map_err(store)?;
    tx.commit().await.map_err(store)?;
    row.status = d.status().to_owned();
    row.decided_by = Some(d.actor.clone());
    row.decided_at_ms = Some(d.now_ms);
    row.reason.clone_from(&d.reason);
    Ok(row)
}

/// Voids a tool's live approvals, each with its audit row.
pub(super) async fn void_tool(
    pool: &Pool,
    tool: &str,
    why: &str,
    now_ms: i64,
) -> Result<usize, Error> {
    let mut c = client(pool).await?;
    let tx = c.transaction().await.map_err(Error::Postgres)?;
    let gone = async {
        let gone = all_stored(
            &tx.query(sql::VOID_TOOL, &[&text(tool), &text(why), &now_ms])
                .await?,
        )?;
        for row in &gone {
            if let Some(step) = row.closing_step(now_ms) {
                audit(&tx, &step).await?;
            }
        }
        Ok::<_, tokio_postgres::Error>(gone.len())
    };
    let n = gone.await.map_err(Error::Postgres)?;
    tx.commit().await.map_err(Error::Postgres)?;
    Ok(n)
}
