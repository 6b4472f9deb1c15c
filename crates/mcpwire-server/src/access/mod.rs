//! Access control around tool calls: who the caller is, which scopes a
//! tool needs, rate and concurrency limits, the audit trail, and output
//! sanitization. The transport establishes the [`Principal`]; the engine
//! enforces the policy each tool declares, before its handler runs, so
//! handlers contain no authorization `if`s.

mod approval;
mod audit;
mod limits;
mod policy;
mod sanitize;

pub use approval::{
    Approval, ApprovalError, ApprovalFallback, ApprovalFuture, ApprovalLimits, ApprovalOptions,
    ApprovalPolicy, ApprovalRequest, ApprovalStatus, ApprovalStore, ApprovalTicket,
    ArgumentApproval, MemoryApprovals,
};
pub use audit::{
    AuditFuture, AuditRecord, AuditSink, CallOutcome, RedactionLimits, serialized_len,
};
pub use limits::{
    CallLimiter, LIMIT_TIMEOUT, LimitError, LimitFuture, MemoryLimiter, Permit, RateLimit,
};
pub use policy::{AccessOptions, ArgumentScopes, Denied, Principal, ToolPolicy};
pub use sanitize::{json_is_clean, sanitize_text, sanitize_value};

pub(crate) use audit::redact_arguments;
pub(crate) use limits::{RateLimiter, caller_key};
pub(crate) use policy::{ClientAddress, strip_fields, unrequire_fields};
