//! Human approval of tool calls: the policy a tool declares, and where
//! pending approvals live.
//!
//! A tool's [`Approval`] says who must say yes before its handler runs:
//! nobody, the user in their client (`confirm`, an elicitation), or an
//! operator at the company (`operator`, a pending approval someone decides
//! out of band). The engine enforces it; an [`ApprovalStore`] keeps what
//! must outlive one request (pending approvals, spent confirmations), so
//! replicas sharing a store honour each other's decisions.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::{Map, Value};

/// Who must agree before a tool runs. Ordered: a stricter policy compares
/// greater, so the effective policy of a call is the maximum of the rules
/// that apply to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// The call runs without asking anyone.
    #[default]
    None,
    /// The user confirms in their client (an elicitation) first.
    Confirm,
    /// An operator approves the exact call first.
    Operator,
}

impl Approval {
    /// The stored and command-line spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Confirm => "confirm",
            Self::Operator => "operator",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s spelling.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "none" => Some(Self::None),
            "confirm" => Some(Self::Confirm),
            "operator" => Some(Self::Operator),
            _ => None,
        }
    }
}

/// A stricter approval for one argument value (e.g. the compensation
/// report of a report tool).
#[derive(Clone, Debug, PartialEq)]
pub struct ArgumentApproval {
    /// The argument name.
    pub argument: String,
    /// The value the rule applies to.
    pub value: Value,
    /// The approval calls with that value need.
    pub approval: Approval,
}

/// The approval rules of one tool, next to its scopes in
/// [`ToolPolicy`](super::ToolPolicy).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApprovalPolicy {
    /// What every call needs.
    pub base: Approval,
    /// Stricter rules for particular argument values.
    pub arguments: Vec<ArgumentApproval>,
    /// A call about the caller's own record (the tool's self argument
    /// equals the principal's self id) needs no approval.
    pub exempt_self: bool,
    /// Changes whenever the policy does (the tool catalogue's counter):
    /// a confirmation or approval given under another version is void.
    pub version: u64,
}

impl ApprovalPolicy {
    /// A policy of `base` for every call.
    pub fn new(base: Approval) -> Self {
        Self {
            base,
            ..Self::default()
        }
    }

    /// The approval this call needs. `is_self` says whether the call is
    /// about the caller's own record.
    pub fn effective(&self, arguments: &Map<String, Value>, is_self: bool) -> Approval {
        if self.exempt_self && is_self {
            return Approval::None;
        }
        self.arguments
            .iter()
            .filter(|r| arguments.get(&r.argument) == Some(&r.value))
            .map(|r| r.approval)
            .fold(self.base, Approval::max)
    }
}

/// When a client cannot confirm (it declared no `elicitation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ApprovalFallback {
    /// Refuse the call with a tool error that says why.
    #[default]
    Deny,
    /// Ask an operator instead.
    Operator,
}

/// How the engine runs approvals.
#[derive(Clone, Debug)]
pub struct ApprovalOptions {
    /// How long a pending approval, and a confirmation question, stay
    /// good (also how long a call made as a task waits for an operator).
    pub ttl: Duration,
    /// How long a call without a task waits for an operator before it is
    /// answered with the approval id to retry with.
    pub wait: Duration,
    /// How often a waiting call looks at the store.
    pub poll: Duration,
    /// What a `confirm` call of a client that cannot elicit gets.
    pub fallback: ApprovalFallback,
}

impl Default for ApprovalOptions {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(600),
            wait: Duration::from_secs(30),
            poll: Duration::from_millis(500),
            fallback: ApprovalFallback::Deny,
        }
    }
}

/// One call waiting for (or given) an operator's decision.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// Who asked (the token subject), if authenticated.
    pub subject: Option<String>,
    /// The OAuth client, if known.
    pub client_id: Option<String>,
    /// The client's self-reported name.
    pub client_name: Option<String>,
    /// The tool.
    pub tool: String,
    /// The arguments, redacted as in the audit trail.
    pub arguments: Value,
    /// Digest of the full arguments: the approval is for these only.
    pub digest: String,
    /// The policy version the approval is asked under.
    pub policy_version: u64,
    /// A human-readable summary of what the call will read.
    pub summary: String,
    /// When it was asked.
    pub requested_at: SystemTime,
    /// When it stops being good.
    pub expires_at: SystemTime,
}

impl ApprovalRequest {
    /// The call this request is for, as a key: same subject, tool,
    /// arguments and policy version.
    pub fn same_call(&self, other: &ApprovalRequest) -> bool {
        self.subject == other.subject
            && self.tool == other.tool
            && self.digest == other.digest
            && self.policy_version == other.policy_version
    }
}

/// Where an approval stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for an operator.
    Pending,
    /// Approved, not yet served.
    Approved,
    /// Denied by an operator.
    Denied,
    /// Approved and served once (used up).
    Served,
    /// Not decided in time.
    Expired,
    /// The tool's policy changed or it was disabled.
    Void,
}

impl ApprovalStatus {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Served => "served",
            Self::Expired => "expired",
            Self::Void => "void",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s spelling.
    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Pending,
            Self::Approved,
            Self::Denied,
            Self::Served,
            Self::Expired,
            Self::Void,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// A stored approval as the engine sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalTicket {
    /// Its id (what operators approve, what a retrying model quotes).
    pub id: String,
    /// Where it stands.
    pub status: ApprovalStatus,
    /// Who decided, once decided.
    pub decided_by: Option<String>,
    /// The reason they gave.
    pub reason: Option<String>,
    /// When it stops being good.
    pub expires_at: SystemTime,
}

/// Why the store could not answer.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// The caller, or everyone together, has as many pending approvals as
    /// allowed.
    #[error("{0}")]
    Full(String),
    /// The store failed; the call is refused (fail closed).
    #[error("approval store unavailable: {0}")]
    Unavailable(String),
}

/// The future an approval store returns.
pub type ApprovalFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, ApprovalError>> + Send + 'a>>;

/// Where pending approvals and spent confirmations live. Replicas given
/// one shared store (a database) serve each other's approved calls.
pub trait ApprovalStore: Send + Sync + 'static {
    /// The live approval for this exact call ([`ApprovalRequest::same_call`],
    /// not expired, not served): pending, approved or denied; or a new
    /// pending one. [`ApprovalError::Full`] when the bounds are reached.
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture<'_, ApprovalTicket>;

    /// The approval `id`, if it exists.
    fn ticket(&self, id: &str) -> ApprovalFuture<'_, Option<ApprovalTicket>>;

    /// Turns an approved approval into served; `false` if it was not
    /// approved any more (already served by another call or replica). The
    /// one place a yes is used up, so it must be atomic.
    fn redeem(&self, id: &str) -> ApprovalFuture<'_, bool>;

    /// Spends a user confirmation (a one-time number the engine put in a
    /// signed request state); `false` if it was spent before.
    fn spend_confirmation(&self, nonce: &str, expires_at: SystemTime) -> ApprovalFuture<'_, bool>;
}

/// Bounds of a [`MemoryApprovals`].
#[derive(Clone, Copy, Debug)]
pub struct ApprovalLimits {
    /// Most pending approvals of all callers together.
    pub max_pending: usize,
    /// Most pending approvals of one subject.
    pub max_pending_per_subject: usize,
    /// Most unexpired spent confirmations remembered.
    pub max_confirmations: usize,
}

impl Default for ApprovalLimits {
    fn default() -> Self {
        Self {
            max_pending: 1_000,
            max_pending_per_subject: 20,
            max_confirmations: 100_000,
        }
    }
}

impl ApprovalLimits {
    /// The message when `pending` of one subject (or `total`) are at the
    /// bound; `None` while there is room.
    pub fn refuse(&self, pending_of_subject: usize, total: usize) -> Option<String> {
        if pending_of_subject >= self.max_pending_per_subject {
            return Some(format!(
                "you have {pending_of_subject} calls waiting for an operator's approval (the limit); wait for them to be decided or to expire"
            ));
        }
        (total >= self.max_pending).then(|| {
            format!(
                "{total} calls are waiting for an operator's approval (this server's limit); retry later"
            )
        })
    }
}

/// One process's approvals, in memory: the default store, and what a
/// library user decides on with [`decide`](Self::decide).
#[derive(Default)]
pub struct MemoryApprovals {
    inner: Mutex<Memory>,
    limits: ApprovalLimits,
}

#[derive(Default)]
struct Memory {
    next: u64,
    approvals: HashMap<String, (ApprovalRequest, ApprovalTicket)>,
    spent: HashMap<String, SystemTime>,
}

impl Memory {
    /// Marks expired approvals and forgets expired confirmations.
    fn prune(&mut self, now: SystemTime) {
        for (_, ticket) in self.approvals.values_mut() {
            let live = matches!(
                ticket.status,
                ApprovalStatus::Pending | ApprovalStatus::Approved
            );
            if live && ticket.expires_at <= now {
                ticket.status = ApprovalStatus::Expired;
            }
        }
        self.spent.retain(|_, expires| *expires > now);
    }
}

impl MemoryApprovals {
    /// A store with these bounds.
    pub fn new(limits: ApprovalLimits) -> Self {
        Self {
            inner: Mutex::default(),
            limits,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Approves or denies a pending approval as `actor`. Refused (with the
    /// reason) when it is not pending or the actor asked for it.
    pub fn decide(
        &self,
        id: &str,
        approve: bool,
        actor: &str,
        reason: Option<&str>,
    ) -> Result<(), String> {
        let mut memory = self.lock();
        memory.prune(SystemTime::now());
        let Some((request, ticket)) = memory.approvals.get_mut(id) else {
            return Err(format!("no approval {id}"));
        };
        if request.subject.as_deref() == Some(actor) {
            return Err("an approver cannot decide their own call".into());
        }
        if ticket.status != ApprovalStatus::Pending {
            return Err(format!("approval {id} is {}", ticket.status.as_str()));
        }
        ticket.status = if approve {
            ApprovalStatus::Approved
        } else {
            ApprovalStatus::Denied
        };
        ticket.decided_by = Some(actor.to_owned());
        ticket.reason = reason.map(str::to_owned);
        Ok(())
    }

    /// Every approval that is still pending, with what it asks.
    pub fn pending(&self) -> Vec<(ApprovalRequest, ApprovalTicket)> {
        let mut memory = self.lock();
        memory.prune(SystemTime::now());
        memory
            .approvals
            .values()
            .filter(|(_, t)| t.status == ApprovalStatus::Pending)
            .cloned()
            .collect()
    }
}

impl ApprovalStore for MemoryApprovals {
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture<'_, ApprovalTicket> {
        let answer = (|| {
            let mut memory = self.lock();
            memory.prune(SystemTime::now());
            let live = |t: &ApprovalTicket| {
                matches!(
                    t.status,
                    ApprovalStatus::Pending | ApprovalStatus::Approved | ApprovalStatus::Denied
                )
            };
            if let Some((_, t)) = memory
                .approvals
                .values()
                .find(|(r, t)| live(t) && r.same_call(&request))
            {
                return Ok(t.clone());
            }
            let pending: Vec<&ApprovalRequest> = memory
                .approvals
                .values()
                .filter(|(_, t)| t.status == ApprovalStatus::Pending)
                .map(|(r, _)| r)
                .collect();
            let mine = pending
                .iter()
                .filter(|r| r.subject == request.subject)
                .count();
            if let Some(why) = self.limits.refuse(mine, pending.len()) {
                return Err(ApprovalError::Full(why));
            }
            // Finished approvals are dropped oldest first past the bound.
            if memory.approvals.len() >= self.limits.max_pending.saturating_mul(4) {
                memory.approvals.retain(|_, (_, t)| live(t));
            }
            memory.next += 1;
            let id = format!("apr-{}", memory.next);
            let ticket = ApprovalTicket {
                id: id.clone(),
                status: ApprovalStatus::Pending,
                decided_by: None,
                reason: None,
                expires_at: request.expires_at,
            };
            memory.approvals.insert(id, (request, ticket.clone()));
            Ok(ticket)
        })();
        Box::pin(async move { answer })
    }

    fn ticket(&self, id: &str) -> ApprovalFuture<'_, Option<ApprovalTicket>> {
        let mut memory = self.lock();
        memory.prune(SystemTime::now());
        let ticket = memory.approvals.get(id).map(|(_, t)| t.clone());
        Box::pin(async move { Ok(ticket) })
    }

    fn redeem(&self, id: &str) -> ApprovalFuture<'_, bool> {
        let mut memory = self.lock();
        memory.prune(SystemTime::now());
        let redeemed = match memory.approvals.get_mut(id) {
            Some((_, t)) if t.status == ApprovalStatus::Approved => {
                t.status = ApprovalStatus::Served;
                true
            }
            _ => false,
        };
        Box::pin(async move { Ok(redeemed) })
    }

    fn spend_confirmation(&self, nonce: &str, expires_at: SystemTime) -> ApprovalFuture<'_, bool> {
        let mut memory = self.lock();
        memory.prune(SystemTime::now());
        let answer = if memory.spent.contains_key(nonce) {
            Ok(false)
        } else if memory.spent.len() >= self.limits.max_confirmations {
            Err(ApprovalError::Full(
                "too many confirmations are in flight; retry in a few minutes".into(),
            ))
        } else {
            memory.spent.insert(nonce.to_owned(), expires_at);
            Ok(true)
        };
        Box::pin(async move { answer })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn request(subject: &str, digest: &str) -> ApprovalRequest {
        let now = SystemTime::now();
        ApprovalRequest {
            subject: Some(subject.into()),
            client_id: None,
            client_name: None,
            tool: "t".into(),
            arguments: json!({}),
            digest: digest.into(),
            policy_version: 1,
            summary: "s".into(),
            requested_at: now,
            expires_at: now + Duration::from_secs(60),
        }
    }

    #[test]
    fn effective_policy_takes_the_strictest_rule_and_exempts_self() {
        let policy = ApprovalPolicy {
            base: Approval::None,
            arguments: vec![ArgumentApproval {
                argument: "reportType".into(),
                value: json!("compensation"),
                approval: Approval::Confirm,
            }],
            exempt_self: true,
            version: 0,
        };
        let comp = args(json!({ "reportType": "compensation" }));
        assert_eq!(policy.effective(&comp, false), Approval::Confirm);
        assert_eq!(policy.effective(&comp, true), Approval::None);
        let other = args(json!({ "reportType": "headcount" }));
        assert_eq!(policy.effective(&other, false), Approval::None);
        assert!(Approval::Operator > Approval::Confirm && Approval::Confirm > Approval::None);
        for a in [Approval::None, Approval::Confirm, Approval::Operator] {
            assert_eq!(Approval::parse(a.as_str()), Some(a));
        }
    }

    #[tokio::test]
    async fn memory_store_binds_decides_once_and_bounds_the_queue() {
        let store = MemoryApprovals::new(ApprovalLimits {
            max_pending: 3,
            max_pending_per_subject: 2,
            max_confirmations: 1,
        });
        let first = store.request(request("ann", "d1")).await.unwrap();
        let again = store.request(request("ann", "d1")).await.unwrap();
        assert_eq!(first.id, again.id, "the same call finds its approval");
        assert!(store.decide(&first.id, true, "ann", None).is_err());
        store.decide(&first.id, true, "olga", Some("ok")).unwrap();
        assert!(store.decide(&first.id, false, "olga", None).is_err());
        assert!(store.redeem(&first.id).await.unwrap());
        assert!(!store.redeem(&first.id).await.unwrap(), "single use");
        let next = store.request(request("ann", "d1")).await.unwrap();
        assert_ne!(next.id, first.id, "a used approval is not found again");
        store.request(request("ann", "d2")).await.unwrap();
        assert!(matches!(
            store.request(request("ann", "d3")).await,
            Err(ApprovalError::Full(_))
        ));
        store.request(request("bob", "d1")).await.unwrap();
        assert!(matches!(
            store.request(request("cy", "d1")).await,
            Err(ApprovalError::Full(_))
        ));
        let later = SystemTime::now() + Duration::from_secs(60);
        assert!(store.spend_confirmation("n", later).await.unwrap());
        assert!(!store.spend_confirmation("n", later).await.unwrap());
    }
}
