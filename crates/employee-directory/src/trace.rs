//! The `db.query` span every backend opens around its queries, apart from
//! the backends so they share it without importing each other or the seam
//! above them.

/// A `db.query` child span for a query on `system` (the OpenTelemetry
/// `db.system.name`), only inside a traced request: no span (and no cost)
/// when the caller has none.
pub(crate) fn query_span(system: &'static str) -> tracing::Span {
    if tracing::Span::current().is_disabled() {
        return tracing::Span::none();
    }
    tracing::info_span!("db.query", otel.kind = "client", "db.system.name" = system)
}
