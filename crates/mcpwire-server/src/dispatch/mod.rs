//! Dispatch: from one JSON-RPC request to one reply, for either wire.
//!
//! The engine's front door ([`crate::engine`]) decides which wire a request
//! is on and hands it here with a [`Wire`]; this module checks `_meta` and
//! the version, gates capabilities, routes, and shapes results.

mod approve;
mod completion;
mod forward;
mod lifecycle;
mod listen;
mod mirrored;
mod prompts;
mod resources;
mod task_methods;
mod task_run;
mod tools;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use mcpwire_protocol::jsonrpc::{Notification, PeerResponse, ResultPayload};
use mcpwire_protocol::meta::{self, RequestMeta};
use mcpwire_protocol::{ProtocolError, ProtocolVersion, Request, RequestId, Response, shape};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub use listen::Listener;

use crate::access::CallOutcome;
use crate::context::RequestContext;
use crate::observe::metrics::{self, CallNote};
use crate::observe::trace::{self, HttpTraceHeaders, MetaTrace, SpanFacts};
use crate::registry::RegisteredTool;
use crate::session::Session;
use crate::state::State;

/// Which wire a request arrived on, as the transport classified it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Wire {
    /// The stateless 2026-07-28 wire: `_meta` carries version and capabilities.
    Modern,
    /// A legacy revision, inside a session or (HTTP only) without one.
    Legacy {
        /// The negotiated (or assumed) revision.
        version: ProtocolVersion,
        /// The session, when the client initialized one.
        session: Option<Arc<Session>>,
    },
}

/// One request as handed over by a transport.
pub struct Inbound {
    /// The request.
    pub request: Request,
    /// Its wire.
    pub wire: Wire,
    /// Where request-scoped messages (progress, logs, and on legacy
    /// sessions server→client requests) go; `None` if the transport cannot
    /// stream for this request.
    pub outbound: Option<mpsc::Sender<String>>,
    /// Fires when the client cancels or disconnects.
    pub cancel: CancellationToken,
    /// Values for handlers (e.g. the authenticated principal).
    pub extensions: Arc<http::Extensions>,
}

/// What the transport sends back.
#[non_exhaustive]
pub enum Reply {
    /// One response.
    Response(Response),
    /// Nothing: the request was cancelled.
    Cancelled,
    /// A long-lived `subscriptions/listen` stream.
    Listen(Listener),
    /// The responses to a 2025-03-26 batch, sent as one JSON array
    /// (nothing at all when the batch held no requests).
    Batch(Vec<Response>),
}

/// Request dispatch over the core state: every method handler of this
/// module is a method of it. Cheap to clone (one `Arc`).
#[derive(Clone)]
pub(crate) struct Dispatcher {
    pub(crate) state: Arc<State>,
}

/// The per-request state dispatch handlers share.
pub(crate) struct Call {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    pub(crate) params: Map<String, Value>,
    pub(crate) version: ProtocolVersion,
    pub(crate) session: Option<Arc<Session>>,
    pub(crate) ctx: RequestContext,
    /// What the handler learned for the metrics (tool, tool error).
    pub(crate) note: CallNote,
    /// The trace context of `_meta` (spans on only), for the request span.
    pub(crate) trace: Option<MetaTrace>,
    /// The tool a `tools/call` names, when the engine looked it up for
    /// its header checks (else dispatch looks it up).
    pub(crate) tool: Option<Arc<RegisteredTool>>,
}

impl Call {
    /// Shapes a result map for this request's revision and wraps it.
    pub(crate) fn finish(&self, server: &Dispatcher, result: Map<String, Value>) -> ResultPayload {
        ResultPayload::Json(Value::Object(shape::finish_result(
            result,
            self.version,
            Some(&server.state.info_json),
        )))
    }
}

impl Dispatcher {
    /// Handles one request. Never fails: protocol errors become error
    /// responses with the request's id. Each request is counted (see
    /// [`crate::observe`]) and, when spans are on, traced. `tool` is the
    /// tool a `tools/call` names when the engine already looked it up.
    pub(crate) async fn handle(
        &self,
        inbound: Inbound,
        tool: Option<Arc<RegisteredTool>>,
    ) -> Reply {
        let started = Instant::now();
        let metrics = &self.state.metrics;
        let _in_flight = metrics.in_flight();
        let method = metrics::method_index(&inbound.request.method);
        let id = inbound.request.id.clone();
        let call = match self.prepare(inbound, tool) {
            Ok(call) => call,
            Err(e) => {
                let outcome = CallOutcome::of_error(e.code);
                metrics.record(method, &CallNote::default(), outcome, started.elapsed());
                return Reply::Response(Response::error(Some(id), e));
            }
        };
        let span = trace::request_span(&SpanFacts {
            method: &call.method,
            target: call.params.get("name").and_then(Value::as_str),
            version: call.version,
            session: call.session.as_ref().map(|s| s.id()),
            id: &call.id,
            meta: call.trace.as_ref(),
            http: call.ctx.extension::<HttpTraceHeaders>(),
        });
        let reply = self.run(&call).instrument(span.clone()).await;
        let (outcome, error) = match &reply {
            Reply::Response(r) => match &r.body {
                Ok(_) if call.note.tool_error() => (CallOutcome::ToolError, None),
                Ok(_) => (CallOutcome::Success, None),
                Err(e) => (CallOutcome::of_error(e.code), Some(e)),
            },
            Reply::Cancelled => (CallOutcome::Cancelled, None),
            Reply::Listen(_) | Reply::Batch(_) => (CallOutcome::Success, None),
        };
        trace::record_outcome(&span, outcome, error);
        metrics.record(method, &call.note, outcome, started.elapsed());
        reply
    }

    /// Runs a prepared request.
    async fn run(&self, call: &Call) -> Reply {
        let id = call.id.clone();
        if call.method == "subscriptions/listen" {
            return match self.listen(call) {
                Ok(l) => Reply::Listen(l),
                Err(e) => Reply::Response(Response::error(Some(id), e)),
            };
        }
        let cancel = call.ctx.cancel.clone();
        let outcome = tokio::select! {
            r = self.route(call) => r,
            _ = cancel.cancelled() => return Reply::Cancelled,
        };
        if cancel.is_cancelled() {
            return Reply::Cancelled;
        }
        Reply::Response(match outcome {
            Ok(result) => Response::result(id, result),
            Err(e) => Response::error(Some(id), e),
        })
    }

    /// Checks the envelope for the wire and builds the handler context.
    fn prepare(
        &self,
        inbound: Inbound,
        tool: Option<Arc<RegisteredTool>>,
    ) -> Result<Call, ProtocolError> {
        let Inbound {
            request,
            wire,
            outbound,
            cancel,
            extensions,
        } = inbound;
        // `_meta` is looked up once; every field below comes from it.
        let meta = meta::meta_of(&request.params);
        let progress_token = meta.and_then(meta::progress_token_in);
        let trace = MetaTrace::read(meta);
        let (version, session, caps, client_info, log_level) = match wire {
            Wire::Modern => {
                let m = RequestMeta::from_meta(meta)?;
                let version = ProtocolVersion::parse(&m.protocol_version)
                    .filter(|v| v.is_modern())
                    .ok_or_else(|| {
                        let supported = ProtocolVersion::ALL
                            .iter()
                            .filter(|v| v.is_modern())
                            .map(|v| v.as_str().to_owned())
                            .collect();
                        ProtocolError::unsupported_version(&m.protocol_version, supported)
                    })?;
                (
                    version,
                    None,
                    Arc::new(m.client_capabilities),
                    m.client_info,
                    m.log_level,
                )
            }
            Wire::Legacy { version, session } => match &session {
                Some(s) => {
                    let (caps, info, level) =
                        (s.client_capabilities(), s.client_info(), s.log_level());
                    (version, session, caps, info, level)
                }
                None => (version, None, Arc::new(Map::new()), None, None),
            },
        };
        let ctx = RequestContext {
            version,
            client_info,
            client_capabilities: caps,
            outbound,
            progress_token,
            last_progress: Arc::new(AtomicU64::new(f64::NEG_INFINITY.to_bits())),
            log_level,
            cancel,
            input_responses: None,
            request_state: None,
            extensions,
            task: None,
        };
        Ok(Call {
            id: request.id,
            method: request.method,
            params: request.params,
            version,
            session,
            ctx,
            note: CallNote::default(),
            trace,
            tool,
        })
    }

    async fn route(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let modern = call.version.is_modern();
        let gate = |cap: &str| {
            if self.state.has_capability(cap) {
                Ok(())
            } else {
                Err(ProtocolError::method_not_found(&call.method))
            }
        };
        match call.method.as_str() {
            "server/discover" if modern => Ok(self.discover(call)),
            "ping" if !modern => Ok(call.finish(self, Map::new())),
            "logging/setLevel" if !modern => {
                gate("logging")?;
                self.set_level(call)
            }
            "tools/list" => self.list_tools(call),
            "tools/call" => self.call_tool(call).await,
            "prompts/list" => {
                gate("prompts")?;
                self.list_prompts(call)
            }
            "prompts/get" => {
                gate("prompts")?;
                self.get_prompt(call).await
            }
            "resources/list" => {
                gate("resources")?;
                self.list_resources(call)
            }
            "resources/templates/list" => {
                gate("resources")?;
                self.list_templates(call)
            }
            "resources/read" => {
                gate("resources")?;
                self.read_resource(call).await
            }
            "resources/subscribe" | "resources/unsubscribe" if !modern => {
                gate("resources")?;
                self.subscribe_resource(call)
            }
            "completion/complete" => {
                gate("completions")?;
                self.complete(call).await
            }
            "tasks/get" | "tasks/update" | "tasks/cancel"
                if modern && self.state.tasks.is_some() =>
            {
                self.task_method(call).await
            }
            "initialize" if !modern => Err(ProtocolError::invalid_request(
                "Invalid request: this session is already initialized.",
            )),
            other => Err(ProtocolError::method_not_found(other)),
        }
    }

    /// Handles a client notification. Malformed ones are ignored (a
    /// notification never gets an error).
    pub(crate) fn handle_notification(
        &self,
        notification: &Notification,
        session: Option<&Session>,
    ) {
        match notification.method.as_str() {
            "notifications/initialized" => {
                if let Some(s) = session {
                    s.mark_initialized();
                }
            }
            "notifications/cancelled" => {
                let id = notification
                    .params
                    .get("requestId")
                    .and_then(RequestId::from_value);
                if let (Some(s), Some(id)) = (session, id) {
                    tracing::debug!(request = %id, reason = ?notification.params.get("reason"), "request cancelled by client");
                    s.cancel(&id);
                }
            }
            other => tracing::debug!(method = other, "ignoring notification"),
        }
    }

    /// Routes a client's response to our server→client request.
    pub(crate) fn handle_peer_response(
        &self,
        response: PeerResponse,
        session: Option<&Session>,
    ) -> bool {
        session.is_some_and(|s| s.resolve(response))
    }
}
