//! Errors of console requests, as values that render as a small page.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;

/// Why a console request failed; each is one status and a message.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// Refused: a missing or wrong CSRF token, a foreign Origin or Host.
    #[error("{0}")]
    Forbidden(&'static str),
    /// The request itself is wrong (a bad time, an unknown field value).
    #[error("{0}")]
    BadRequest(String),
    /// Too many at once (live streams).
    #[error("{0}")]
    Busy(&'static str),
    /// The database or a store failed.
    #[error("{0}")]
    Store(String),
    /// The tool catalogue failed.
    #[error(transparent)]
    Catalog(#[from] crate::catalog::Error),
    /// The approvals store failed.
    #[error(transparent)]
    Approvals(#[from] crate::approvals::Error),
    /// Not logged in, or a login that did not succeed.
    #[error("{0}")]
    Unauthorized(String),
    /// The OAuth issuer could not be reached or answered wrongly.
    #[error("{0}")]
    Issuer(String),
}

impl ConsoleError {
    fn status(&self) -> StatusCode {
        match self {
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Store(_) | Self::Catalog(_) | Self::Approvals(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Issuer(_) => StatusCode::BAD_GATEWAY,
        }
    }
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        match &self {
            Self::Store(reason) | Self::Issuer(reason) => {
                tracing::warn!(%reason, "console request failed");
            }
            Self::Catalog(reason) => tracing::warn!(%reason, "console request failed"),
            Self::Approvals(reason) => tracing::warn!(%reason, "console request failed"),
            _ => {}
        }
        let status = self.status();
        let page = html! {
            (maud::DOCTYPE)
            html lang="en" {
                head { meta charset="utf-8"; title { "Console: error" } }
                body {
                    h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) }
                    p { (self.to_string()) }
                    p { a href="/tools" { "Back to the console" } }
                }
            }
        };
        (status, page).into_response()
    }
}
