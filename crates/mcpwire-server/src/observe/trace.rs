//! Request spans for distributed tracing, named and attributed after the
//! OpenTelemetry semantic conventions for MCP (SERVER span
//! `{mcp.method.name} {target}`, `mcp.method.name`, `gen_ai.tool.name`,
//! `mcp.protocol.version`, `mcp.session.id`, `jsonrpc.request.id`,
//! `error.type`).
//!
//! The engine only uses `tracing`: spans carry `otel.*` fields that the
//! `tracing-opentelemetry` layer understands, and the application, which
//! owns the exporter, installs an [`AdoptParent`] hook that turns the W3C
//! trace context into the span's remote parent. Without the hook no span
//! is created at all ([`tracing::Span::none`]), so tracing costs nothing
//! when it is off.

use std::sync::OnceLock;

use mcpwire_protocol::{ProtocolError, ProtocolVersion, RequestId};
use serde_json::{Map, Value};
use tracing::Span;

use crate::access::CallOutcome;

/// What a request span is named and attributed after: plain values, so
/// tracing knows nothing of dispatch.
pub(crate) struct SpanFacts<'a> {
    pub(crate) method: &'a str,
    /// `params.name` (the tool or prompt), if any.
    pub(crate) target: Option<&'a str>,
    pub(crate) version: ProtocolVersion,
    pub(crate) session: Option<&'a str>,
    pub(crate) id: &'a RequestId,
    /// The trace context in the request's `_meta`, if it had one.
    pub(crate) meta: Option<&'a MetaTrace>,
    /// The HTTP request's trace headers, when it came over HTTP.
    pub(crate) http: Option<&'a HttpTraceHeaders>,
}

/// The W3C trace context of a request's `_meta`, taken in dispatch's one
/// `_meta` lookup (and only while spans are on).
#[derive(Clone, Debug)]
pub(crate) struct MetaTrace {
    traceparent: String,
    tracestate: Option<String>,
    baggage: Option<String>,
}

impl MetaTrace {
    /// The context in `meta`, when spans are on and it has a `traceparent`.
    pub(crate) fn read(meta: Option<&Map<String, Value>>) -> Option<MetaTrace> {
        if !spans_enabled() {
            return None;
        }
        let meta = meta?;
        let text = |k: &str| meta.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(MetaTrace {
            traceparent: text("traceparent")?,
            tracestate: text("tracestate"),
            baggage: text("baggage"),
        })
    }

    fn context(&self) -> TraceContext<'_> {
        TraceContext {
            traceparent: &self.traceparent,
            tracestate: self.tracestate.as_deref(),
            baggage: self.baggage.as_deref(),
        }
    }
}

/// W3C trace context of one request: from its `params._meta`
/// (`traceparent`, `tracestate`, `baggage`, reserved by the 2026-07-28
/// revision), else from the HTTP request's headers of the same names.
#[derive(Clone, Copy, Debug)]
pub struct TraceContext<'a> {
    /// `traceparent` (W3C Trace Context), unchecked: the hook validates.
    pub traceparent: &'a str,
    /// `tracestate`, if present.
    pub tracestate: Option<&'a str>,
    /// `baggage` (W3C Baggage), if present.
    pub baggage: Option<&'a str>,
}

/// Sets `span`'s parent from a trace context. Invalid context must be
/// ignored (the span then starts a new trace), never reported as an error.
pub type AdoptParent = fn(&Span, &TraceContext<'_>);

static ADOPT: OnceLock<AdoptParent> = OnceLock::new();

/// Turns request spans on for this process; `false` if already on.
pub fn enable_request_spans(adopt: AdoptParent) -> bool {
    ADOPT.set(adopt).is_ok()
}

/// Whether request spans are on.
pub fn spans_enabled() -> bool {
    ADOPT.get().is_some()
}

/// The HTTP request's own trace headers, kept as a request extension (only
/// while spans are on) for requests whose `_meta` has none.
#[derive(Clone, Debug)]
pub struct HttpTraceHeaders {
    /// `traceparent`.
    pub traceparent: String,
    /// `tracestate`.
    pub tracestate: Option<String>,
    /// `baggage`.
    pub baggage: Option<String>,
}

impl HttpTraceHeaders {
    /// The headers of `headers`, when spans are on and a `traceparent` is there.
    pub fn from_headers(headers: &http::HeaderMap) -> Option<HttpTraceHeaders> {
        if !spans_enabled() {
            return None;
        }
        let get = |n: &str| headers.get(n)?.to_str().ok().map(str::to_owned);
        Some(HttpTraceHeaders {
            traceparent: get("traceparent")?,
            tracestate: get("tracestate"),
            baggage: get("baggage"),
        })
    }
}

/// The SERVER span of one request, or [`Span::none`] when spans are off.
pub(crate) fn request_span(call: &SpanFacts<'_>) -> Span {
    let Some(adopt) = ADOPT.get() else {
        return Span::none();
    };
    let target = match call.method {
        "tools/call" | "prompts/get" => call.target.filter(|n| low_cardinality(n)),
        _ => None,
    };
    let tool = (call.method == "tools/call").then_some(target).flatten();
    let name = match target {
        Some(t) => format!("{} {t}", call.method),
        None => call.method.to_owned(),
    };
    let span = tracing::info_span!(
        target: "mcpwire_server::request",
        "mcp.server.request",
        otel.name = %name,
        otel.kind = "server",
        "mcp.method.name" = %call.method,
        "gen_ai.tool.name" = tool,
        "gen_ai.prompt.name" = (call.method == "prompts/get").then_some(target).flatten(),
        "gen_ai.operation.name" = tool.map(|_| "execute_tool"),
        "mcp.protocol.version" = call.version.as_str(),
        "mcp.session.id" = call.session,
        "jsonrpc.request.id" = %call.id,
        "error.type" = tracing::field::Empty,
        "rpc.response.status_code" = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    );
    let cx = call.meta.map(MetaTrace::context).or_else(|| {
        call.http.map(|h| TraceContext {
            traceparent: &h.traceparent,
            tracestate: h.tracestate.as_deref(),
            baggage: h.baggage.as_deref(),
        })
    });
    if let Some(cx) = cx {
        adopt(&span, &cx);
    }
    span
}

/// A tool or prompt name safe to put in a span name: client-supplied
/// names outside the registry's alphabet are left out.
fn low_cardinality(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./".contains(&b))
}

/// Records how the request ended on its span.
pub(crate) fn record_outcome(span: &Span, outcome: CallOutcome, error: Option<&ProtocolError>) {
    if span.is_disabled() {
        return;
    }
    match (outcome, error) {
        (CallOutcome::Success, _) => {}
        (_, Some(e)) => {
            let code = e.code.to_string();
            span.record("error.type", code.as_str());
            span.record("rpc.response.status_code", code.as_str());
            span.record("otel.status_code", "error");
            span.record("otel.status_description", e.message.as_str());
        }
        (other, None) => {
            span.record("error.type", other.as_str());
            span.record("otel.status_code", "error");
        }
    }
}

/// A child span around the audit trail's commit of a call, when the call
/// has a span.
pub(crate) fn audit_span() -> Span {
    if Span::current().is_disabled() {
        return Span::none();
    }
    tracing::info_span!(
        target: "mcpwire_server::request",
        "audit.commit",
        otel.kind = "internal"
    )
}
