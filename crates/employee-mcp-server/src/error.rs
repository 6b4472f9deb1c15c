//! Every way the binary can fail, in one type: each module's own error
//! passes through unchanged (its text is the message), and the server's
//! startup adds its own. `main.rs` prints it as `error: …` and exits 1, in
//! one place.

use std::net::SocketAddr;
use std::path::PathBuf;

use employee_directory::DirectoryError;
use mcpwire_server::RegistrationError;

use crate::{
    approvals, audit, auth, backup, catalog, console, custom, exchange, ops, replicas, telemetry,
};

/// A failure of the server or of a subcommand.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The tool catalogue or the `tools` command.
    #[error(transparent)]
    Catalog(#[from] catalog::Error),
    /// The approvals store or the `approvals` command.
    #[error(transparent)]
    Approvals(#[from] approvals::Error),
    /// The replica registry.
    #[error(transparent)]
    Replicas(#[from] replicas::Error),
    /// Custom SQL tools' setup.
    #[error(transparent)]
    Custom(#[from] custom::Error),
    /// The audit trail or the `audit` command.
    #[error(transparent)]
    Audit(#[from] audit::Error),
    /// `export` or `import`.
    #[error(transparent)]
    Exchange(#[from] exchange::Error),
    /// `backup` or `restore`.
    #[error(transparent)]
    Backup(#[from] backup::BackupError),
    /// The operator console's startup.
    #[error(transparent)]
    Console(#[from] console::Error),
    /// How callers are identified.
    #[error(transparent)]
    Auth(#[from] auth::Error),
    /// The metrics listener.
    #[error(transparent)]
    Ops(#[from] ops::Error),
    /// The OTLP trace pipeline.
    #[error(transparent)]
    Telemetry(#[from] telemetry::Error),
    /// The employee database did not open.
    #[error("cannot open the employee database: {0}")]
    Directory(#[from] DirectoryError),
    /// A JSON line could not be written.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Writing a subcommand's output failed.
    #[error("cannot write to stdout: {0}")]
    Stdout(#[source] std::io::Error),
    /// The async runtime did not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// A public address without OAuth and without the explicit opt-out.
    #[error(
        "refusing to serve HR data on {0} without authentication; configure OAuth with --auth-issuer and --auth-audience, bind a loopback address (e.g. 127.0.0.1:8080), or pass --i-understand-this-exposes-hr-data-without-auth"
    )]
    Unauthenticated(SocketAddr),
    /// `--listen` could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// The reason.
        source: std::io::Error,
    },
    /// The bound address could not be read back.
    #[error("cannot read the bound address: {0}")]
    BoundAddr(#[source] std::io::Error),
    /// `--port-file` could not be written.
    #[error("cannot write {}: {source}", path.display())]
    PortFile {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// The stdio transport failed.
    #[error("stdio transport failed: {0}")]
    Stdio(#[source] std::io::Error),
    /// The HTTP transport failed.
    #[error("HTTP server failed: {0}")]
    Http(#[source] std::io::Error),
    /// The library refused a tool, view or option.
    #[error("invalid tool definition: {0}")]
    InvalidTool(#[source] RegistrationError),
    /// `--shared-state-url` is not a PostgreSQL URL.
    #[error("--shared-state-url must be a postgres:// or postgresql:// URL")]
    SharedStateUrl,
    /// The shared state or its key file (the cluster crate's text).
    #[error("{0}")]
    Cluster(String),
    /// `--custom-reader-role` is not a plain role name.
    #[error("--custom-reader-role {0:?}: use lowercase letters, digits and '_' (at most 63)")]
    ReaderRole(String),
    /// `--tools-file` cannot be served.
    #[error("--tools-file: {0}")]
    ToolsFile(#[source] catalog::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts the command line printed before these types existed
    /// (integration tests compare stderr; these pin a few without a run).
    #[test]
    fn messages_read_as_before() {
        let listen: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert_eq!(
            Error::Unauthenticated(listen).to_string(),
            "refusing to serve HR data on 0.0.0.0:8080 without authentication; configure OAuth with --auth-issuer and --auth-audience, bind a loopback address (e.g. 127.0.0.1:8080), or pass --i-understand-this-exposes-hr-data-without-auth"
        );
        assert_eq!(
            Error::ToolsFile(catalog::Error::InMemory).to_string(),
            "--tools-file: the tool catalogue needs a database file (sqlite://PATH), not an in-memory database"
        );
        assert_eq!(
            Error::from(catalog::Error::NameTaken {
                name: "t".into(),
                kind: "builtin".into(),
                owner: "cli".into(),
            })
            .to_string(),
            "tool \"t\", field `name`: a builtin tool with this name already exists (source cli); remove it first or pick another name"
        );
        assert_eq!(
            Error::from(catalog::Error::TooMany { count: 3, max: 2 }).to_string(),
            "the catalogue would hold 3 custom tools, over the limit of 2 (--max-custom-tools); remove some first"
        );
        assert_eq!(
            Error::from(approvals::Error::NoApproval("apr-1".into())).to_string(),
            "no approval apr-1"
        );
        assert_eq!(
            Error::from(exchange::Error::Invalid {
                total: 2,
                dir: "in".into(),
            })
            .to_string(),
            "2 problem(s) in in; nothing was imported"
        );
        assert_eq!(
            Error::ReaderRole("Bad".into()).to_string(),
            "--custom-reader-role \"Bad\": use lowercase letters, digits and '_' (at most 63)"
        );
    }
}
