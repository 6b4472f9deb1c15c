//! Errors of console requests, as values that render as a small page,
//! and why the console could not start.

use std::net::SocketAddr;
use std::path::PathBuf;

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
    /// The directory's import history or row counts could not be read.
    #[error(transparent)]
    Exchange(#[from] employee_directory::exchange::ExchangeError),
    /// An audit row could not be written as JSON (the export).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The tool catalogue failed.
    #[error(transparent)]
    Catalog(#[from] crate::catalog::Error),
    /// The approvals store failed.
    #[error(transparent)]
    Approvals(#[from] crate::approvals::Error),
    /// The audit trail could not be read.
    #[error(transparent)]
    Audit(#[from] crate::audit::Error),
    /// A blocking read died.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
    /// No random bytes for a session, CSRF token or login state.
    #[error("no randomness: {0}")]
    Randomness(#[from] getrandom::Error),
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
            Self::Exchange(_)
            | Self::Json(_)
            | Self::Catalog(_)
            | Self::Approvals(_)
            | Self::Audit(_)
            | Self::Task(_)
            | Self::Randomness(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Issuer(_) => StatusCode::BAD_GATEWAY,
        }
    }
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        let status = self.status();
        // A failing store or issuer is worth a log line; a refused
        // request is the caller's business.
        if matches!(
            status,
            StatusCode::INTERNAL_SERVER_ERROR | StatusCode::BAD_GATEWAY
        ) {
            let reason = self.to_string();
            tracing::warn!(%reason, "console request failed");
        }
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

/// Why `--console-listen` could not start the console.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Plain HTTP with a token login is for loopback only.
    #[error(
        "--console-listen {0}: the console serves plain HTTP with a token login, so only a loopback address is accepted (reach it through an SSH tunnel)"
    )]
    NotLoopback(SocketAddr),
    /// No other process could share an in-memory database's stores.
    #[error("--console-listen needs a database file or PostgreSQL, not :memory:")]
    InMemory,
    /// `--console-token-file` could not be read.
    #[error("--console-token-file {}: {source}", path.display())]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// The token file holds no usable token.
    #[error(
        "--console-token-file {}: the token must be one line of at least {min} characters",
        path.display()
    )]
    WeakToken {
        /// The file.
        path: PathBuf,
        /// The shortest token accepted.
        min: usize,
    },
    /// `--console-oidc-client-secret-file` could not be read.
    #[error("--console-oidc-client-secret-file {}: {source}", path.display())]
    SecretFile {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// The console's address could not be bound.
    #[error("cannot listen for the console on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// The reason.
        source: std::io::Error,
    },
    /// The bound address could not be read back.
    #[error(transparent)]
    LocalAddr(std::io::Error),
    /// `--console-port-file` could not be written.
    #[error("cannot write {}: {source}", path.display())]
    PortFile {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// The HTTP client for the OpenID Connect issuer could not be built.
    #[error("cannot build the HTTP client for the issuer: {0}")]
    IssuerClient(#[source] reqwest::Error),
    /// No random bytes for the console token.
    #[error("no randomness: {0}")]
    Randomness(#[from] getrandom::Error),
    /// The tool catalogue did not open.
    #[error(transparent)]
    Catalog(#[from] crate::catalog::Error),
    /// The approvals did not open.
    #[error(transparent)]
    Approvals(#[from] crate::approvals::Error),
}
