//! Which wire a request is on, and whether its version and headers hold.
//!
//! A request is on the stateless 2026-07-28 wire when its `_meta` claims a
//! version, or (HTTP) when `MCP-Protocol-Version` names a modern or unknown
//! version outside a legacy session. Otherwise it belongs to the legacy
//! session of its connection or `Mcp-Session-Id`, or it is an `initialize`
//! opening one. Without either, the modern rules apply and name what is
//! missing.

use std::sync::Arc;

use http::HeaderMap;
use mcpwire_protocol::error::ErrorStatus;
use mcpwire_protocol::headers::{self, SESSION_ID, single};
use mcpwire_protocol::jsonrpc::ResultPayload;
use mcpwire_protocol::{ProtocolError, ProtocolVersion, Request, Response, meta};
use serde_json::{Map, Value};

use super::Engine;
use super::{Accepted, Answer, Looked, Origin, Pending, bad};
use crate::access::{ClientAddress, Principal, caller_key};
use crate::dispatch::Wire;
use crate::registry::RegisteredTool;
use crate::session::Session;

/// Every version this server speaks, for -32022's `data.supported`.
fn unsupported(requested: &str) -> ProtocolError {
    ProtocolError::unsupported_version(requested, ProtocolVersion::supported_strings())
        .with_status(ErrorStatus::BadRequest)
}

impl Engine {
    pub(super) async fn accept_request(
        self: &Arc<Self>,
        request: Request,
        origin: &Origin<'_>,
        looked: Looked,
        version: Result<Option<VersionHeader>, ProtocolError>,
    ) -> Result<Accepted, Box<Answer>> {
        let id = Some(request.id.clone());
        // `_meta`'s version is read here once; dispatch reads the rest.
        let claimed = meta::claimed_version(&request.params);
        let wire = match origin.headers {
            Some(headers) => self.http_wire(headers, &request, claimed, looked, version),
            None => Ok(self.stream_wire(&request, claimed.is_some(), origin)),
        }
        .map_err(|e| bad(id.clone(), e))?;
        let wire = match wire {
            Decided::Wire(w, tool) => (w, tool),
            Decided::Initialize => {
                let answer = self.accept_initialize(request, origin).await;
                return Ok(Accepted::Answer(answer));
            }
            Decided::Ping => {
                let r =
                    Response::result(request.id, ResultPayload::Json(Value::Object(Map::new())));
                return Ok(Accepted::Answer(Answer {
                    response: r,
                    status: ErrorStatus::Answered,
                    session: None,
                }));
            }
        };
        let (wire, tool) = wire;
        Ok(Accepted::Request(Pending::one(
            Arc::clone(self),
            request,
            (wire, tool),
            origin,
        )))
    }

    /// The wire of a Streamable HTTP request, with its header checks.
    fn http_wire(
        &self,
        headers: &HeaderMap,
        request: &Request,
        claimed: Option<&str>,
        looked: Looked,
        version: Result<Option<VersionHeader>, ProtocolError>,
    ) -> Result<Decided, ProtocolError> {
        let version = version?;
        let header_version = version.as_ref().map(|v| v.text.as_str());
        let parsed = version.as_ref().map(|v| v.parsed);
        let claims_modern = claimed.is_some()
            || match parsed {
                Some(Some(v)) => v.is_modern(),
                Some(None) => !headers.contains_key(SESSION_ID),
                None => false,
            };
        if claims_modern {
            // An unknown version is -32022 before any other header rule.
            if let (Some(h), Some(None)) = (&header_version, parsed) {
                return Err(unsupported(h));
            }
            let tool = self.check_modern_headers(headers, request, claimed)?;
            return Ok(Decided::Wire(Wire::Modern, tool));
        }
        let session = looked?;
        if let (Some(h), Some(v)) = (&header_version, parsed)
            && v.is_none_or(ProtocolVersion::is_modern)
        {
            return Err(unsupported(h));
        }
        if request.method == "initialize" {
            return Ok(Decided::Initialize);
        }
        let version = session
            .as_ref()
            .map(|s| s.version())
            .or(parsed.flatten())
            // What the spec says to assume without a header.
            .unwrap_or(ProtocolVersion::V2025_03_26);
        Ok(Decided::Wire(Wire::Legacy { version, session }, None))
    }

    /// The wire of a message on a stream transport (no headers): the
    /// connection's history decides.
    fn stream_wire(&self, request: &Request, claims_modern: bool, origin: &Origin<'_>) -> Decided {
        if claims_modern {
            return Decided::Wire(Wire::Modern, None);
        }
        if request.method == "initialize" {
            return Decided::Initialize;
        }
        match origin.connection.and_then(|c| c.session()) {
            Some(s) => Decided::Wire(
                Wire::Legacy {
                    version: s.version(),
                    session: Some(s),
                },
                None,
            ),
            // Legacy clients may ping before initializing.
            None if request.method == "ping" => Decided::Ping,
            // Neither modern `_meta` nor a session: the modern rules apply
            // and name what is missing.
            None => Decided::Wire(Wire::Modern, None),
        }
    }

    /// The modern wire's header rules; for a `tools/call`, the tool it
    /// names (its `Mcp-Param-*` mirrors are checked here), handed on to
    /// dispatch so that the tool is looked up once.
    fn check_modern_headers(
        &self,
        headers: &HeaderMap,
        request: &Request,
        claimed: Option<&str>,
    ) -> Result<Option<Arc<RegisteredTool>>, ProtocolError> {
        headers::check_standard(headers, &request.method, &request.params, claimed)?;
        if request.method != "tools/call" {
            return Ok(None);
        }
        let Some(tool) = request
            .params
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| self.state.tool_set().get(name).cloned())
        else {
            return Ok(None);
        };
        if !tool.header_params.is_empty() {
            let empty = Map::new();
            let args = request
                .params
                .get("arguments")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            headers::check_params(headers, &tool.header_params, args)?;
        }
        Ok(Some(tool))
    }

    /// Whether one more HTTP session may be opened for this caller: a
    /// per-caller rate limit on `initialize`, so one client cannot churn
    /// the session table.
    fn admit_session(&self, origin: &Origin<'_>) -> Result<(), ProtocolError> {
        let Some(limit) = self.state.options.initialize_rate else {
            return Ok(());
        };
        let caller = caller_key(
            origin.extensions.get::<Principal>(),
            origin.extensions.get::<ClientAddress>(),
        );
        self.state
            .rate_limiter
            .check(&caller, "initialize", limit)
            .map_err(|wait| {
                let secs = wait.as_secs() + 1;
                ProtocolError::rate_limited(
                    format!("Too many new sessions from this client; retry in {secs} s."),
                    secs,
                )
            })
    }

    /// A legacy `initialize`: a new session, kept in the session table
    /// (HTTP) or on the connection (stream transports).
    async fn accept_initialize(&self, request: Request, origin: &Origin<'_>) -> Answer {
        if let Some(c) = origin.connection
            && c.session().is_some()
        {
            let e = ProtocolError::invalid_request(
                "Invalid request: this connection is already initialized.",
            );
            return Answer::from_error(Some(request.id), e, false);
        }
        if origin.connection.is_none()
            && let Err(e) = self.admit_session(origin)
        {
            return Answer::from_error(Some(request.id), e, false);
        }
        let owner = origin.principal().map(|p| p.subject.as_str());
        let (mut session, mut response) = self.dispatch.initialize(&request, owner);
        // HTTP sessions live in the (maybe shared) table; a stream
        // transport keeps its one session on the connection.
        if origin.connection.is_none()
            && let Some(s) = &session
            && let Err(e) = self.store_session(s).await
        {
            session = None;
            response = Response::error(Some(request.id.clone()), e);
        }
        if let (Some(s), Some(c)) = (&session, origin.connection) {
            c.open_session(Arc::clone(s));
        }
        let status = super::response_status(&response, false);
        Answer {
            response,
            status,
            session: session.filter(|_| origin.connection.is_none()),
        }
    }
}

/// An HTTP request's `MCP-Protocol-Version`, read and parsed once for the
/// session check and the wire decision.
#[derive(Clone, Debug)]
pub(crate) struct VersionHeader {
    /// As sent (trimmed), for error messages.
    text: String,
    /// The revision it names; `None` for an unknown one.
    parsed: Option<ProtocolVersion>,
}

impl VersionHeader {
    /// The header of `request_headers`, if there is one (-32600 when it
    /// is repeated or not text).
    pub(crate) fn read(request_headers: &HeaderMap) -> Result<Option<Self>, ProtocolError> {
        Ok(
            single(request_headers, headers::PROTOCOL_VERSION)?.map(|text| VersionHeader {
                parsed: ProtocolVersion::parse(&text),
                text,
            }),
        )
    }
}

/// A legacy session keeps the revision it negotiated: an
/// `MCP-Protocol-Version` naming another legacy revision is refused (400)
/// rather than served under rules the client did not negotiate. Unknown
/// and modern versions are left to the wire decision (-32022, or the
/// modern wire).
pub(crate) fn check_session_version(
    header: Option<&VersionHeader>,
    session: &Session,
) -> Result<(), ProtocolError> {
    match header {
        Some(VersionHeader {
            text,
            parsed: Some(v),
        }) if !v.is_modern() && *v != session.version() => Err(ProtocolError::invalid_request(
            format!(
                "Bad request: MCP-Protocol-Version is \"{text}\" but this session negotiated \"{}\"; send the negotiated version, or initialize a new session.",
                session.version().as_str()
            ),
        )
        .with_status(ErrorStatus::BadRequest)),
        _ => Ok(()),
    }
}

/// The outcome of the wire decision.
enum Decided {
    /// Run the request on this wire (with the tool a modern `tools/call`
    /// names, when the header checks looked it up).
    Wire(Wire, Option<Arc<RegisteredTool>>),
    /// Open a legacy session.
    Initialize,
    /// A legacy `ping` before `initialize`.
    Ping,
}
