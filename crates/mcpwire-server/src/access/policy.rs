//! Principals and per-tool access policy.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Duration;

use serde_json::{Map, Value};

use super::approval::ApprovalPolicy;
use super::limits::RateLimit;

/// The authenticated caller of a request, as established by the transport
/// (a validated OAuth token on HTTP, the environment on stdio). Handlers
/// can read it with `ctx.extension::<Principal>()`.
///
/// Built with [`Principal::new`] and the `with_*` methods (more fields may
/// come, such as the token's audience, without breaking callers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// The token subject (`sub`): stable identity of the user or service.
    pub subject: String,
    /// Granted scopes, with scope hierarchies already expanded.
    pub scopes: BTreeSet<String>,
    /// The OAuth client the token was issued to, if known.
    pub client_id: Option<String>,
    /// The employee (or other domain record) this subject is, for
    /// self-service rules.
    pub self_id: Option<String>,
}

impl Principal {
    /// A caller known by its token subject, with no scopes yet.
    pub fn new(subject: impl Into<String>) -> Self {
        Self {
            subject: subject.into(),
            ..Self::default()
        }
    }

    /// Grants `scopes` too (already expanded: no hierarchy is applied).
    #[must_use]
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The OAuth client the token was issued to.
    #[must_use]
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The record (e.g. an employee id) this subject is, for self-service
    /// rules ([`ToolPolicy::self_argument`]).
    #[must_use]
    pub fn with_self_id(mut self, self_id: impl Into<String>) -> Self {
        self.self_id = Some(self_id.into());
        self
    }

    /// Whether the principal holds `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }

    /// Whether the principal holds any of `scopes` (an empty list is open).
    pub fn has_any(&self, scopes: &[String]) -> bool {
        scopes.is_empty() || scopes.iter().any(|s| self.has_scope(s))
    }
}

/// The peer address, attached by the HTTP transport; the rate-limit key of
/// anonymous callers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClientAddress(pub(crate) IpAddr);

/// What a tool declares about who may call it and what they see.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ToolPolicy {
    /// Any one of these scopes grants the tool (empty: no scope needed).
    pub required_scopes: Vec<String>,
    /// An argument naming a record the caller may read about themselves
    /// without the scopes (e.g. `employeeId` for one's own leave balance).
    pub self_argument: Option<String>,
    /// Output fields (JSON pointers, `*` for every array item) removed
    /// unless the caller holds the paired scope.
    pub field_scopes: Vec<(String, String)>,
    /// Argument names whose values the audit trail must not store.
    pub redacted_arguments: Vec<String>,
    /// Overrides the server's default rate limit for this tool.
    pub rate_limit: Option<RateLimit>,
    /// Stricter rules for particular argument values.
    pub argument_scopes: Vec<ArgumentScopes>,
    /// Who must say yes before the handler runs (enforced by the engine).
    pub approval: ApprovalPolicy,
}

impl ToolPolicy {
    /// Whether the tool shows up in `tools/list` for this caller.
    pub fn visible_to(&self, principal: Option<&Principal>) -> bool {
        if self.required_scopes.is_empty() {
            return true;
        }
        match principal {
            Some(p) => {
                p.has_any(&self.required_scopes)
                    || (self.self_argument.is_some() && p.self_id.is_some())
            }
            None => false,
        }
    }

    /// Whether this caller may call the tool with these arguments;
    /// `Err` carries the scopes that would grant it (any one of them for
    /// the tool, all of them for an argument rule).
    pub fn check(
        &self,
        principal: Option<&Principal>,
        arguments: &Map<String, Value>,
    ) -> Result<(), Denied> {
        let tool_ok = self.required_scopes.is_empty()
            || principal.is_some_and(|p| {
                p.has_any(&self.required_scopes) || self.is_self_call(Some(p), arguments)
            });
        if !tool_ok {
            return Err(Denied {
                scopes: self.required_scopes.clone(),
                all_required: false,
            });
        }
        for rule in &self.argument_scopes {
            if arguments.get(&rule.argument) == Some(&rule.value)
                && !principal.is_some_and(|p| rule.all_of.iter().all(|s| p.has_scope(s)))
            {
                return Err(Denied {
                    scopes: rule.all_of.clone(),
                    all_required: true,
                });
            }
        }
        Ok(())
    }

    /// Whether the call is about the caller's own record: the tool's self
    /// argument equals the principal's self id (self-service rules).
    pub fn is_self_call(
        &self,
        principal: Option<&Principal>,
        arguments: &Map<String, Value>,
    ) -> bool {
        match (
            &self.self_argument,
            principal.and_then(|p| p.self_id.as_deref()),
        ) {
            (Some(arg), Some(me)) => arguments
                .get(arg)
                .and_then(Value::as_str)
                .is_some_and(|v| v.eq_ignore_ascii_case(me)),
            _ => false,
        }
    }

    /// Whether this caller may call the tool with these arguments.
    pub fn allows(&self, principal: Option<&Principal>, arguments: &Map<String, Value>) -> bool {
        self.check(principal, arguments).is_ok()
    }
}

/// Why a call was refused: the scopes that would grant it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denied {
    /// The scopes to ask for.
    pub scopes: Vec<String>,
    /// All of them are needed (an argument rule), not just one.
    pub all_required: bool,
}

/// A stricter rule for one argument value: calls where `argument` equals
/// `value` need every scope in `all_of` (e.g. the compensation report).
#[derive(Clone, Debug, PartialEq)]
pub struct ArgumentScopes {
    /// The argument name.
    pub argument: String,
    /// The value the rule applies to.
    pub value: Value,
    /// Every scope needed for that value.
    pub all_of: Vec<String>,
}

/// Server-wide access settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AccessOptions {
    /// Enforce tool scopes. Off when no authentication is configured (a
    /// loopback-only developer setup); then every tool is open.
    pub enforce_scopes: bool,
    /// Default per-principal, per-tool rate limit; `None` for no limit.
    pub rate_limit: Option<RateLimit>,
    /// Most calls one principal may have running at once.
    pub max_concurrent_calls: Option<usize>,
    /// Most distinct callers the rate limiter remembers (bounds memory).
    pub max_tracked_callers: usize,
    /// Largest tool result sent; bigger results are truncated or refused
    /// with a notice.
    pub max_result_bytes: usize,
    /// Strip control characters and terminal escapes from tool output.
    pub sanitize_output: bool,
    /// How long an idle rate-limit bucket is kept.
    pub idle_bucket_ttl: Duration,
}

impl Default for AccessOptions {
    fn default() -> Self {
        Self {
            enforce_scopes: false,
            rate_limit: None,
            max_concurrent_calls: None,
            max_tracked_callers: 100_000,
            max_result_bytes: 512 * 1024,
            sanitize_output: true,
            idle_bucket_ttl: Duration::from_secs(600),
        }
    }
}

/// Removes the fields at `pointer` (`/a/b`, `*` matches every array item).
pub(crate) fn strip_fields(value: &mut Value, pointer: &str) {
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    strip(value, &parts);
}

fn strip(value: &mut Value, parts: &[&str]) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    match value {
        Value::Array(items) if *first == "*" => {
            for i in items {
                strip(i, rest);
            }
        }
        Value::Object(m) if rest.is_empty() => {
            m.remove(*first);
        }
        Value::Object(m) => {
            if let Some(child) = m.get_mut(*first) {
                strip(child, rest);
            }
        }
        _ => {}
    }
}

/// Makes the fields at `pointer` optional in an output schema, so a
/// redacted result still conforms.
pub(crate) fn unrequire_fields(schema: &mut Map<String, Value>, pointer: &str) {
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    unrequire(schema, &parts);
}

fn unrequire(schema: &mut Map<String, Value>, parts: &[&str]) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    if *first == "*" {
        if let Some(Value::Object(items)) = schema.get_mut("items") {
            unrequire(items, rest);
        }
        return;
    }
    if rest.is_empty() {
        if let Some(Value::Array(req)) = schema.get_mut("required") {
            req.retain(|r| r.as_str() != Some(first));
        }
        return;
    }
    if let Some(Value::Object(props)) = schema.get_mut("properties")
        && let Some(Value::Object(child)) = props.get_mut(*first)
    {
        unrequire(child, rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn principal(scopes: &[&str], me: Option<&str>) -> Principal {
        let p = Principal::new("u").with_scopes(scopes.iter().copied());
        match me {
            Some(me) => p.with_self_id(me),
            None => p,
        }
    }

    #[test]
    fn principal_builders_set_each_field() {
        let p = Principal::new("alice")
            .with_scopes(["hr.read", "hr.leave"])
            .with_scopes(["hr.read"])
            .with_client_id("app")
            .with_self_id("E1");
        assert_eq!(p.subject, "alice");
        assert!(p.has_scope("hr.leave") && p.has_scope("hr.read"));
        assert_eq!(p.scopes.len(), 2);
        assert_eq!(p.client_id.as_deref(), Some("app"));
        assert_eq!(p.self_id.as_deref(), Some("E1"));
        assert_eq!(
            Principal::new("bob"),
            Principal {
                subject: "bob".into(),
                ..Principal::default()
            }
        );
    }

    #[test]
    fn scopes_and_self_service() {
        let p = ToolPolicy {
            required_scopes: vec!["hr.leave".into()],
            self_argument: Some("employeeId".into()),
            ..ToolPolicy::default()
        };
        let args = |id: &str| {
            json!({ "employeeId": id })
                .as_object()
                .cloned()
                .unwrap_or_default()
        };
        assert!(p.allows(Some(&principal(&["hr.leave"], None)), &args("X")));
        assert!(p.allows(Some(&principal(&[], Some("JohnDoe"))), &args("johndoe")));
        assert!(!p.allows(
            Some(&principal(&[], Some("JohnDoe"))),
            &args("AliceJohnson")
        ));
        assert!(!p.allows(None, &args("X")));
        assert!(p.visible_to(Some(&principal(&[], Some("JohnDoe")))));
        assert!(!p.visible_to(Some(&principal(&["other"], None))));
    }

    #[test]
    fn strips_and_unrequires_fields() {
        let mut v = json!({ "email": "a", "people": [{ "phone": "1", "name": "n" }] });
        strip_fields(&mut v, "/email");
        strip_fields(&mut v, "/people/*/phone");
        assert_eq!(v, json!({ "people": [{ "name": "n" }] }));
        let mut s = json!({ "type": "object", "required": ["email", "x"], "properties": {
            "people": { "type": "array", "items": { "type": "object", "required": ["phone"] } } } })
        .as_object()
        .cloned()
        .unwrap_or_default();
        unrequire_fields(&mut s, "/email");
        unrequire_fields(&mut s, "/people/*/phone");
        assert_eq!(s["required"], json!(["x"]));
        assert_eq!(s["properties"]["people"]["items"]["required"], json!([]));
    }
}
