//! The approval tables and the statements on them, said once: the
//! statements are written with PostgreSQL's `$N` parameters and run on
//! SQLite as `?N` ([`sqlite`](super::sqlite) rewrites them once).
//!
//! `live_key` is the call's key (subject, tool, argument digest, policy
//! version) while the approval binds that call — pending, approved, or
//! denied and not expired — and NULL after. Its unique index makes
//! find-or-file race-free on both backends (NULLs are distinct), and the
//! same call can be asked again once its approval is over.

/// The tables, once: `{int}` is each backend's 64-bit integer type.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tool_approvals (
    id              TEXT  NOT NULL PRIMARY KEY,
    status          TEXT  NOT NULL,
    live_key        TEXT  UNIQUE,
    subject         TEXT,
    client_id       TEXT,
    client_name     TEXT,
    tool            TEXT  NOT NULL,
    arguments       TEXT  NOT NULL,
    digest          TEXT  NOT NULL,
    policy_version  {int} NOT NULL,
    summary         TEXT  NOT NULL,
    requested_at_ms {int} NOT NULL,
    expires_at_ms   {int} NOT NULL,
    decided_by      TEXT,
    decided_at_ms   {int},
    reason          TEXT
);
CREATE INDEX IF NOT EXISTS tool_approvals_open ON tool_approvals (status, subject)
    WHERE live_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS tool_approvals_due ON tool_approvals (expires_at_ms)
    WHERE live_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS tool_approvals_requested ON tool_approvals (requested_at_ms);
CREATE TABLE IF NOT EXISTS tool_approval_confirmations (
    nonce         TEXT  NOT NULL PRIMARY KEY,
    expires_at_ms {int} NOT NULL
);
CREATE INDEX IF NOT EXISTS tool_approval_confirmations_due
    ON tool_approval_confirmations (expires_at_ms);
";

/// The tables on SQLite (in the audit trail's file).
pub fn sqlite_schema() -> String {
    SCHEMA.replace("{int}", "INTEGER")
}

/// The tables on PostgreSQL (the shared database), created under an
/// advisory lock so replicas starting together do not race.
pub fn postgres_schema() -> String {
    format!(
        "SELECT pg_advisory_xact_lock(7402117020);{}",
        SCHEMA.replace("{int}", "BIGINT")
    )
}

/// Serialises filings on PostgreSQL, so the bounds are exact.
pub const PG_FILING_LOCK: &str = "SELECT pg_advisory_xact_lock(7402117021)";

/// The columns of [`super::Stored`], in its order.
const COLUMNS: &str = "id, status, subject, client_id, client_name, tool, arguments, digest, \
     policy_version, summary, requested_at_ms, expires_at_ms, decided_by, decided_at_ms, reason";

/// Live approvals past their expiry become `expired` (a denial stays
/// `denied`) and stop binding their call. `$1`: now.
pub const EXPIRE_DUE: &str = "
UPDATE tool_approvals
   SET status = CASE WHEN status = 'denied' THEN 'denied' ELSE 'expired' END, live_key = NULL
 WHERE live_key IS NOT NULL AND expires_at_ms <= $1
RETURNING id, status, subject, client_id, client_name, tool, arguments, digest, \
     policy_version, summary, requested_at_ms, expires_at_ms, decided_by, decided_at_ms, reason";

/// The approval binding a call. `$1`: its live key.
pub fn by_live_key() -> String {
    format!("SELECT {COLUMNS} FROM tool_approvals WHERE live_key = $1")
}

/// One approval. `$1`: its id.
pub fn by_id() -> String {
    format!("SELECT {COLUMNS} FROM tool_approvals WHERE id = $1")
}

/// Pending approvals of one subject (`$1`, NULL matching NULL) and of
/// everyone.
pub const PENDING_COUNTS: &str = "
SELECT COALESCE(SUM(CASE WHEN subject IS NOT DISTINCT FROM $1 THEN 1 ELSE 0 END), 0),
       COUNT(*)
  FROM tool_approvals
 WHERE live_key IS NOT NULL AND status = 'pending'";

/// Files a pending approval.
pub const INSERT: &str = "
INSERT INTO tool_approvals (id, status, live_key, subject, client_id, client_name, tool,
                            arguments, digest, policy_version, summary, requested_at_ms,
                            expires_at_ms)
VALUES ($1, 'pending', $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";

/// Uses an approval up. `$1`: id, `$2`: now.
pub const REDEEM: &str = "
UPDATE tool_approvals SET status = 'served', live_key = NULL
 WHERE id = $1 AND status = 'approved' AND live_key IS NOT NULL AND expires_at_ms > $2";

/// Records a decision on a pending approval. `$1`: id, `$2`: the new
/// status, `$3`: who, `$4`: when, `$5`: why.
pub const DECIDE: &str = "
UPDATE tool_approvals SET status = $2, decided_by = $3, decided_at_ms = $4, reason = $5
 WHERE id = $1 AND status = 'pending' AND live_key IS NOT NULL";

/// Voids a tool's live approvals (its policy changed, or it was
/// disabled). `$1`: tool, `$2`: why, `$3`: when.
pub const VOID_TOOL: &str = "
UPDATE tool_approvals SET status = 'void', live_key = NULL, reason = $2, decided_at_ms = $3
 WHERE tool = $1 AND live_key IS NOT NULL AND status IN ('pending', 'approved')
RETURNING id, status, subject, client_id, client_name, tool, arguments, digest, \
     policy_version, summary, requested_at_ms, expires_at_ms, decided_by, decided_at_ms, reason";

/// Approvals newest first, pending only (`$1` true) or all, at most `$2`.
pub fn listing() -> String {
    format!(
        "SELECT {COLUMNS} FROM tool_approvals
          WHERE (NOT $1) OR (status = 'pending' AND live_key IS NOT NULL)
          ORDER BY requested_at_ms DESC, id DESC LIMIT $2"
    )
}

/// Finished approvals older than `$1` are forgotten (the audit trail keeps
/// every step).
pub const FORGET_OLD: &str =
    "DELETE FROM tool_approvals WHERE live_key IS NULL AND expires_at_ms < $1";

/// Forgets spent confirmations past their expiry (`$1`: now).
pub const FORGET_CONFIRMATIONS: &str =
    "DELETE FROM tool_approval_confirmations WHERE expires_at_ms <= $1";

/// How many confirmations are remembered.
pub const COUNT_CONFIRMATIONS: &str = "SELECT COUNT(*) FROM tool_approval_confirmations";

/// Spends a confirmation; one row changed when it was fresh.
pub const SPEND_CONFIRMATION: &str = "
INSERT INTO tool_approval_confirmations (nonce, expires_at_ms) VALUES ($1, $2)
ON CONFLICT (nonce) DO NOTHING";

/// One step of an approval, in the audit trail, linked to the call by
/// subject, client, tool, arguments and the approval id in `detail`.
pub const AUDIT_STEP: &str = "
INSERT INTO audit_log (at, at_unix_ms, subject, client_id, client_name, remote_addr, tool,
                       arguments, outcome, detail, latency_ms, protocol_version)
VALUES ($1, $2, $3, $4, $5, NULL, $6, $7, $8, $9, 0, '-')";
