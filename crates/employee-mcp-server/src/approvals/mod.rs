//! Operator approvals in the database: the calls waiting for a person's
//! yes (tools whose policy is `operator`, or `confirm` for a client that
//! cannot ask with `--approval-fallback operator`), and the user
//! confirmations already spent. Every replica and the `approvals` CLI see
//! the same rows: on SQLite they live in the audit trail's file (so a
//! decision and its audit row commit together, and an import's lock on the
//! directory never delays them), on PostgreSQL in the shared database.
//!
//! The engine enforces the policy (`mcpwire_server::access::ApprovalStore`);
//! this module only stores. Every step outside a call — approved, denied
//! (by whom and why), expired undecided, voided by a policy change — is an
//! `audit_log` row written in the same transaction as the change.

pub mod command;
mod error;
mod postgres;
mod sql;
mod sqlite;

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use deadpool_postgres::Pool;
use employee_directory::DatabaseUrl;
use mcpwire_server::access::{
    ApprovalError, ApprovalFuture, ApprovalLimits, ApprovalRequest, ApprovalStatus, ApprovalStore,
    ApprovalTicket, CallOutcome,
};
use serde::Serialize;

pub use error::Error;

/// Connections the store keeps on PostgreSQL.
const PG_POOL_SIZE: usize = 4;

/// Longest a PostgreSQL round trip of the store may take.
const PG_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a finished approval stays listed before it is forgotten (the
/// audit trail keeps every step for its retention).
const KEEP_FINISHED: Duration = Duration::from_secs(7 * 86_400);

/// Where the approvals live.
#[derive(Clone)]
pub enum Store {
    /// The audit trail's SQLite file.
    Sqlite(PathBuf),
    /// The shared PostgreSQL database.
    Postgres(Pool),
}

/// The store the engine asks, with the bounds of `--max-pending-approvals`
/// and `--max-pending-approvals-per-subject`.
pub struct DbApprovals {
    store: Store,
    limits: ApprovalLimits,
}

/// One approval as stored (what `approvals list` and `show` print).
#[derive(Clone, Debug, Serialize)]
pub struct Stored {
    /// Its id (`apr-…`).
    pub id: String,
    /// pending, approved, denied, served, expired or void.
    pub status: String,
    /// Who asked.
    pub subject: Option<String>,
    /// The OAuth client that asked.
    pub client_id: Option<String>,
    /// The client's self-reported name.
    pub client_name: Option<String>,
    /// The tool.
    pub tool: String,
    /// The arguments, redacted as in the audit trail.
    pub arguments: serde_json::Value,
    /// Digest of the full arguments.
    pub digest: String,
    /// The policy version it was asked under.
    pub policy_version: i64,
    /// What the call reads, in words.
    pub summary: String,
    /// When it was asked (unix ms).
    pub requested_at_ms: i64,
    /// When it stops being good (unix ms).
    pub expires_at_ms: i64,
    /// Who decided.
    pub decided_by: Option<String>,
    /// When (unix ms).
    pub decided_at_ms: Option<i64>,
    /// Why.
    pub reason: Option<String>,
}

impl Stored {
    /// The engine's view; a live approval past its expiry reads as expired
    /// (the next filing or listing writes it so).
    fn ticket(&self, now_ms: i64) -> ApprovalTicket {
        let mut status = ApprovalStatus::parse(&self.status).unwrap_or(ApprovalStatus::Void);
        let live = matches!(status, ApprovalStatus::Pending | ApprovalStatus::Approved);
        if live && self.expires_at_ms <= now_ms {
            status = ApprovalStatus::Expired;
        }
        ApprovalTicket {
            id: self.id.clone(),
            status,
            decided_by: self.decided_by.clone(),
            reason: self.reason.clone(),
            expires_at: UNIX_EPOCH
                + Duration::from_millis(u64::try_from(self.expires_at_ms).unwrap_or(0)),
        }
    }

    /// The audit row of a step of this approval.
    fn audit_step(&self, outcome: CallOutcome, detail: String, now_ms: i64) -> AuditStep {
        AuditStep {
            at: iso(now_ms),
            at_ms: now_ms,
            subject: self.subject.clone(),
            client_id: self.client_id.clone(),
            client_name: self.client_name.clone(),
            tool: self.tool.clone(),
            arguments: self.arguments.to_string(),
            outcome: outcome.as_str(),
            detail,
        }
    }

    /// The row an expiry or a voiding writes for this approval.
    fn closing_step(&self, now_ms: i64) -> Option<AuditStep> {
        let detail = match self.status.as_str() {
            "expired" => format!(
                "approval {} expired without an operator's decision",
                self.id
            ),
            "void" => format!(
                "approval {} void: {}",
                self.id,
                self.reason
                    .as_deref()
                    .unwrap_or("the tool's policy changed")
            ),
            _ => return None,
        };
        Some(self.audit_step(CallOutcome::ApprovalExpired, detail, now_ms))
    }
}

/// An `audit_log` row for an approval step ([`sql::AUDIT_STEP`]).
struct AuditStep {
    at: String,
    at_ms: i64,
    subject: Option<String>,
    client_id: Option<String>,
    client_name: Option<String>,
    tool: String,
    arguments: String,
    outcome: &'static str,
    detail: String,
}

/// A new approval's row.
struct Filing {
    id: String,
    live_key: String,
    request: ApprovalRequest,
    arguments: String,
    requested_at_ms: i64,
    expires_at_ms: i64,
}

impl Filing {
    fn new(request: ApprovalRequest) -> Result<Filing, ApprovalError> {
        Ok(Filing {
            id: new_id()?,
            live_key: live_key(&request),
            arguments: request.arguments.to_string(),
            requested_at_ms: unix_ms(request.requested_at),
            expires_at_ms: unix_ms(request.expires_at),
            request,
        })
    }

    fn ticket(&self) -> ApprovalTicket {
        ApprovalTicket {
            id: self.id.clone(),
            status: ApprovalStatus::Pending,
            decided_by: None,
            reason: None,
            expires_at: self.request.expires_at,
        }
    }
}

/// The call an approval binds: subject, tool, argument digest, policy
/// version (JSON, so no field can run into the next).
fn live_key(r: &ApprovalRequest) -> String {
    serde_json::json!([r.subject, r.tool, r.digest, r.policy_version]).to_string()
}

/// `apr-` and 16 random hex digits: unique across replicas without a
/// sequence, short enough for a person to type.
fn new_id() -> Result<String, ApprovalError> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| {
        ApprovalError::Unavailable(format!("no randomness for an approval id: {e}"))
    })?;
    Ok(format!(
        "apr-{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

/// Milliseconds since the epoch.
pub fn unix_ms(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// RFC 3339 in UTC, as the audit trail writes times.
pub fn iso(ms: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

impl Store {
    /// The approvals of the database at `url`, their tables created if
    /// missing. `None` for an in-memory database (the engine's own store
    /// serves it; no other process can reach it).
    pub async fn open(url: &DatabaseUrl) -> Result<Option<Store>, Error> {
        match url {
            DatabaseUrl::Postgres(_) => {
                let Some(pg) = url.postgres() else {
                    return Ok(None);
                };
                let pool =
                    mcpwire_cluster::pool(pg, PG_POOL_SIZE, PG_TIMEOUT).map_err(Error::Pool)?;
                postgres::migrate(&pool).await?;
                Ok(Some(Store::Postgres(pool)))
            }
            DatabaseUrl::Sqlite { path, .. } => {
                let file = crate::audit::trail_file(path);
                let f = file.clone();
                blocking(move || sqlite::open(&f).map(drop)).await?;
                Ok(Some(Store::Sqlite(file)))
            }
            DatabaseUrl::Memory => Ok(None),
        }
    }

    /// Approvals newest first: the pending ones, or (`all`) every one
    /// still kept, at most `limit`.
    pub async fn list(&self, all: bool, limit: u32) -> Result<Vec<Stored>, Error> {
        let now = unix_ms(SystemTime::now());
        match self {
            Store::Sqlite(file) => {
                let file = file.clone();
                blocking(move || sqlite::list(&mut sqlite::open(&file)?, all, limit, now)).await
            }
            Store::Postgres(pool) => postgres::list(pool, all, limit, now).await,
        }
    }

    /// One approval.
    pub async fn show(&self, id: &str) -> Result<Option<Stored>, Error> {
        match self {
            Store::Sqlite(file) => {
                let (file, id) = (file.clone(), id.to_owned());
                blocking(move || sqlite::by_id(&sqlite::open(&file)?, &id)).await
            }
            Store::Postgres(pool) => postgres::by_id(pool, id).await,
        }
    }

    /// Approves or denies pending approval `id` as `actor`, with its audit
    /// row.
    pub async fn decide(
        &self,
        id: &str,
        approve: bool,
        actor: &str,
        reason: Option<&str>,
    ) -> Result<Stored, Error> {
        let decision = Decision {
            id: id.to_owned(),
            approve,
            actor: actor.to_owned(),
            reason: reason.map(str::to_owned),
            now_ms: unix_ms(SystemTime::now()),
        };
        match self {
            Store::Sqlite(file) => {
                let file = file.clone();
                blocking(move || sqlite::decide(&mut sqlite::open(&file)?, &decision)).await
            }
            Store::Postgres(pool) => postgres::decide(pool, &decision).await,
        }
    }

    /// Voids the live approvals of `tool` (its policy changed, or it was
    /// disabled): a yes given under the old policy serves nothing. Returns
    /// how many.
    pub async fn void_tool(&self, tool: &str, why: &str) -> Result<usize, Error> {
        let now = unix_ms(SystemTime::now());
        match self {
            Store::Sqlite(file) => {
                let (file, tool, why) = (file.clone(), tool.to_owned(), why.to_owned());
                blocking(move || sqlite::void_tool(&mut sqlite::open(&file)?, &tool, &why, now))
                    .await
            }
            Store::Postgres(pool) => postgres::void_tool(pool, tool, why, now).await,
        }
    }
}

/// A decision of `approvals approve|deny`.
struct Decision {
    id: String,
    approve: bool,
    actor: String,
    reason: Option<String>,
    now_ms: i64,
}

impl Decision {
    fn status(&self) -> &'static str {
        if self.approve { "approved" } else { "denied" }
    }

    /// Checks `row` may be decided by this decision.
    fn check(&self, row: Option<Stored>) -> Result<Stored, Error> {
        let row = row.ok_or_else(|| Error::NotFound(self.id.clone()))?;
        if row.status != "pending" || row.expires_at_ms <= self.now_ms {
            let status = if row.status == "pending" {
                "expired".into()
            } else {
                row.status
            };
            return Err(Error::NotPending { id: row.id, status });
        }
        if row.subject.as_deref() == Some(self.actor.as_str()) {
            return Err(Error::OwnCall(self.actor.clone()));
        }
        Ok(row)
    }

    /// The audit row of this decision on `row`.
    fn step(&self, row: &Stored) -> AuditStep {
        let (outcome, verb) = if self.approve {
            (CallOutcome::ApprovalGranted, "approved")
        } else {
            (CallOutcome::ApprovalDenied, "denied")
        };
        let why = self
            .reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        let detail = format!("approval {} {verb} by {}{why}", row.id, self.actor);
        row.audit_step(outcome, detail, self.now_ms)
    }
}

impl DbApprovals {
    /// The engine's store on `store`, bounded by `limits`.
    pub fn new(store: Store, limits: ApprovalLimits) -> DbApprovals {
        DbApprovals { store, limits }
    }

    async fn file(&self, request: ApprovalRequest) -> Result<ApprovalTicket, ApprovalError> {
        let filing = Filing::new(request)?;
        let limits = self.limits;
        let forget_before = unix_ms(SystemTime::now() - KEEP_FINISHED);
        match &self.store {
            Store::Sqlite(file) => {
                let file = file.clone();
                tokio::task::spawn_blocking(move || {
                    let mut conn = sqlite::open(&file).map_err(unavailable)?;
                    sqlite::file(&mut conn, &filing, &limits, forget_before)
                })
                .await
                .map_err(|e| ApprovalError::Unavailable(e.to_string()))?
            }
            Store::Postgres(pool) => postgres::file(pool, &filing, &limits, forget_before).await,
        }
    }

    async fn get(&self, id: &str) -> Result<Option<ApprovalTicket>, ApprovalError> {
        let now = unix_ms(SystemTime::now());
        let row = self.store.show(id).await.map_err(unavailable)?;
        Ok(row.map(|r| r.ticket(now)))
    }

    async fn use_up(&self, id: &str) -> Result<bool, ApprovalError> {
        let now = unix_ms(SystemTime::now());
        match &self.store {
            Store::Sqlite(file) => {
                let (file, id) = (file.clone(), id.to_owned());
                blocking(move || sqlite::redeem(&sqlite::open(&file)?, &id, now))
                    .await
                    .map_err(unavailable)
            }
            Store::Postgres(pool) => postgres::redeem(pool, id, now).await.map_err(unavailable),
        }
    }

    async fn spend(&self, nonce: &str, expires_at: SystemTime) -> Result<bool, ApprovalError> {
        let spend = Spend {
            nonce: nonce.to_owned(),
            expires_at_ms: unix_ms(expires_at),
            now_ms: unix_ms(SystemTime::now()),
            max: i64::try_from(self.limits.max_confirmations).unwrap_or(i64::MAX),
        };
        match &self.store {
            Store::Sqlite(file) => {
                let file = file.clone();
                tokio::task::spawn_blocking(move || {
                    let mut conn = sqlite::open(&file).map_err(unavailable)?;
                    sqlite::spend(&mut conn, &spend)
                })
                .await
                .map_err(|e| ApprovalError::Unavailable(e.to_string()))?
            }
            Store::Postgres(pool) => postgres::spend(pool, &spend).await,
        }
    }
}

/// A confirmation to spend.
struct Spend {
    nonce: String,
    expires_at_ms: i64,
    now_ms: i64,
    max: i64,
}

impl Spend {
    fn full() -> ApprovalError {
        ApprovalError::Full("too many confirmations are in flight; retry in a few minutes".into())
    }
}

impl ApprovalStore for DbApprovals {
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture<'_, ApprovalTicket> {
        Box::pin(self.file(request))
    }

    fn ticket(&self, id: &str) -> ApprovalFuture<'_, Option<ApprovalTicket>> {
        let id = id.to_owned();
        Box::pin(async move { self.get(&id).await })
    }

    fn redeem(&self, id: &str) -> ApprovalFuture<'_, bool> {
        let id = id.to_owned();
        Box::pin(async move { self.use_up(&id).await })
    }

    fn spend_confirmation(&self, nonce: &str, expires_at: SystemTime) -> ApprovalFuture<'_, bool> {
        let nonce = nonce.to_owned();
        Box::pin(async move { self.spend(&nonce, expires_at).await })
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f).await?
}

/// The engine's view of a store failure: its text, as the library's
/// `ApprovalError` carries it.
fn unavailable(e: Error) -> ApprovalError {
    ApprovalError::Unavailable(e.to_string())
}
