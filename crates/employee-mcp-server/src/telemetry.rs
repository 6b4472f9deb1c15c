//! OpenTelemetry traces, exported over OTLP/HTTP with protobuf bodies.
//!
//! On when `OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and neither
//! `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`); the other
//! standard variables apply as usual (`OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`).
//! Off, nothing is created per request.
//!
//! Spans come from `tracing` (the engine's request spans, the directory's
//! query spans, the audit commit) through `tracing-opentelemetry`; the
//! exporter's HTTP client is the workspace's reqwest (rustls on ring), so
//! no second HTTP or TLS stack is compiled in.

use std::sync::LazyLock;
use std::time::Duration;

use bytes::Bytes;
use mcpwire_server::observe::TraceContext;
use opentelemetry::propagation::{Extractor, TextMapCompositePropagator, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TracerProvider};
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::WithHttpConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

/// Service name unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names one.
const SERVICE_NAME: &str = "employee-mcp-server";
/// Longest an export request may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The trace pipeline, while it runs.
pub struct Tracing {
    provider: SdkTracerProvider,
}

/// Why tracing could not be set up from `OTEL_*`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The exporter's HTTP client could not be built.
    #[error("cannot build the OTLP HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    /// The exporter refused the settings.
    #[error(
        "invalid OpenTelemetry exporter settings (only OTLP over HTTP with protobuf is supported): {0}"
    )]
    Exporter(#[source] opentelemetry_otlp::ExporterBuildError),
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl Tracing {
    /// Builds the pipeline from `OTEL_*` variables; `None` when tracing is
    /// not configured. Must run inside the Tokio runtime.
    pub fn from_env() -> Result<Option<Tracing>, Error> {
        let endpoint = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT"));
        let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
        if endpoint.is_none() || disabled {
            return Ok(None);
        }
        // reqwest is built without a default TLS provider: install ring
        // (a no-op when the application already chose one).
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(Error::Client)?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(ReqwestExporter {
                client,
                runtime: tokio::runtime::Handle::current(),
            })
            .build()
            .map_err(Error::Exporter)?;
        let mut resource = Resource::builder();
        let named = env("OTEL_SERVICE_NAME").is_some()
            || env("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|a| a.contains("service.name"));
        if !named {
            resource = resource.with_service_name(SERVICE_NAME);
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        mcpwire_server::observe::enable_request_spans(adopt_parent);
        Ok(Some(Tracing { provider }))
    }

    /// The `tracing` layer feeding the exporter. Its own filter takes only
    /// the request, query and audit spans, whatever `RUST_LOG` says, and
    /// the log layer never sees them.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        let tracer = self.provider.tracer(SERVICE_NAME);
        let spans = Targets::new()
            .with_target("mcpwire_server::request", Level::INFO)
            .with_target("employee_directory", Level::INFO);
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(spans)
    }

    /// Exports what is buffered and stops the exporter.
    pub async fn shutdown(self) {
        let provider = self.provider;
        // Shutdown blocks until the export thread is done; the export
        // itself runs on this runtime, so do not block a worker on it.
        let done = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(e)) = done {
            tracing::warn!(error = %e, "flushing traces at shutdown failed");
        }
    }
}

/// Reads a [`TraceContext`] as a propagation carrier.
struct Carrier<'a>(&'a TraceContext<'a>);

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(self.0.traceparent),
            "tracestate" => self.0.tracestate,
            "baggage" => self.0.baggage,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate", "baggage"]
    }
}

/// The engine's [`mcpwire_server::observe::AdoptParent`] hook: a valid W3C
/// context becomes the span's remote parent; anything else is ignored and
/// the span starts a new trace.
fn adopt_parent(span: &tracing::Span, cx: &TraceContext<'_>) {
    // Built once: this runs for every traced request.
    static PROPAGATOR: LazyLock<TextMapCompositePropagator> = LazyLock::new(|| {
        TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ])
    });
    let parent = PROPAGATOR.extract_with_context(&opentelemetry::Context::new(), &Carrier(cx));
    if parent.span().span_context().is_valid() {
        let _ = span.set_parent(parent);
    }
}

/// OTLP export through the workspace's async reqwest. The SDK's batch
/// processor runs exports on its own thread, outside Tokio, so each
/// request is spawned onto the server's runtime and awaited from there.
#[derive(Debug)]
struct ReqwestExporter {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl HttpClient for ReqwestExporter {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let task = self.runtime.spawn(async move {
            let request = reqwest::Request::try_from(request)?;
            let response = client.execute(request).await?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = response.bytes().await?;
            let mut out = http::Response::new(body);
            *out.status_mut() = status;
            *out.headers_mut() = headers;
            Ok::<_, HttpError>(out)
        });
        task.await?
    }
}
