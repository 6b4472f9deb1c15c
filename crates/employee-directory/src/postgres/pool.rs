//! Connection pool (deadpool-postgres) and the mapping of driver errors to
//! actionable [`DirectoryError`]s.
//!
//! Every call is bounded: at most `acquire_timeout` to get a connection
//! (including connecting), then the server cancels a statement after
//! `statement_timeout`, and the client gives up on a server that stopped
//! answering a little after that. A connection the server dropped (restart,
//! failover) is discarded on its next checkout and the call is retried once
//! on a fresh one, so the pool recovers by itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use deadpool_postgres::{
    Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime, Timeouts,
};
use tokio_postgres::NoTls;
use tokio_postgres::error::SqlState;

use crate::PoolStats;
use crate::database_url::redact;
use crate::error::{DirectoryError, UnavailableReason};
use crate::options::DirectoryOptions;

/// A pool of PostgreSQL connections with wait counters.
pub(crate) struct PgPool {
    pool: Pool,
    /// `host:port/database`, for messages (never the password).
    target: String,
    /// The connection settings (timeouts included), for connections of
    /// its own (the generation listener).
    config: tokio_postgres::Config,
    /// Upper bound of one call once it has a connection.
    call_timeout: Duration,
    waits: AtomicU64,
    timeouts: AtomicU64,
}

impl PgPool {
    /// Builds the pool; connects lazily (the first checkout connects).
    pub(crate) fn new(url: &str, options: &DirectoryOptions) -> Result<PgPool, DirectoryError> {
        let mut config: tokio_postgres::Config =
            url.parse().map_err(|e| DirectoryError::UnsupportedUrl {
                url: format!("{} ({e})", redact(url)),
            })?;
        let target = describe(&config);
        // One option string for the server; keep whatever the URL set.
        let timeout_ms = options.statement_timeout.as_millis().max(1);
        let mut server_options = config.get_options().unwrap_or_default().to_string();
        server_options.push_str(&format!(" -c statement_timeout={timeout_ms}"));
        config.options(server_options.trim());
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.acquire_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("employee-directory");
        }
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.max_connections.max(1))
            .runtime(Runtime::Tokio1)
            .timeouts(Timeouts {
                wait: Some(options.acquire_timeout),
                create: Some(options.acquire_timeout),
                recycle: Some(options.acquire_timeout),
            })
            .build()
            .map_err(|e| {
                DirectoryError::unavailable(
                    UnavailableReason::Other,
                    format!("cannot build the PostgreSQL pool for {target}: {e}"),
                )
            })?;
        Ok(PgPool {
            pool,
            target,
            config,
            call_timeout: options.statement_timeout + Duration::from_secs(2),
            waits: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
        })
    }

    /// `host:port/database`, for messages.
    pub(crate) fn target(&self) -> &str {
        &self.target
    }

    /// The pool's connection settings.
    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// Checks a connection out of the pool, connecting if needed.
    pub(crate) async fn get(&self) -> Result<Object, DirectoryError> {
        let status = self.pool.status();
        if status.available == 0 && status.size >= status.max_size {
            self.waits.fetch_add(1, Ordering::Relaxed);
        }
        self.pool.get().await.map_err(|e| self.pool_error(e))
    }

    /// Bounds one call (after checkout) so that a server that stopped
    /// answering cannot hang it.
    pub(crate) async fn bounded<T>(
        &self,
        work: impl Future<Output = Result<T, DirectoryError>>,
    ) -> Result<T, DirectoryError> {
        match tokio::time::timeout(self.call_timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(DirectoryError::unavailable(
                UnavailableReason::TimedOut,
                format!(
                    "PostgreSQL at {} did not answer within {} s; check the server and the \
                     network, or raise --db-statement-timeout",
                    self.target,
                    self.call_timeout.as_secs()
                ),
            )),
        }
    }

    pub(crate) fn stats(&self) -> PoolStats {
        PoolStats {
            waits: self.waits.load(Ordering::Relaxed),
            timeouts: self.timeouts.load(Ordering::Relaxed),
        }
    }

    fn pool_error(&self, error: PoolError) -> DirectoryError {
        let target = &self.target;
        match error {
            PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => {
                self.timeouts.fetch_add(1, Ordering::Relaxed);
                DirectoryError::unavailable(
                    UnavailableReason::Overloaded,
                    format!(
                        "no PostgreSQL connection became free in time (pool of {}); raise \
                         --db-pool-size or lower the load",
                        self.pool.status().max_size
                    ),
                )
            }
            PoolError::Timeout(_) => DirectoryError::unavailable(
                UnavailableReason::Unreachable,
                format!(
                    "connecting to PostgreSQL at {target} timed out; check that the server is \
                     running and reachable"
                ),
            ),
            PoolError::Backend(e) => classify_connect(target, e),
            other => DirectoryError::unavailable(
                UnavailableReason::Other,
                format!("PostgreSQL pool for {target} failed: {other}"),
            ),
        }
    }
}

/// An error while connecting: unreachable, refused login, missing database.
fn classify_connect(target: &str, error: tokio_postgres::Error) -> DirectoryError {
    let (reason, hint) = match error.code() {
        Some(code) if *code == SqlState::INVALID_CATALOG_NAME => (
            UnavailableReason::Missing,
            "the database does not exist; create it (createdb) or fix the URL",
        ),
        Some(code)
            if *code == SqlState::INVALID_PASSWORD
                || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
        {
            (
                UnavailableReason::Other,
                "the server refused the login; check the user and password in the URL",
            )
        }
        Some(code) if *code == SqlState::TOO_MANY_CONNECTIONS => (
            UnavailableReason::Overloaded,
            "the server has no free connection slot; lower --db-pool-size or raise the \
             server's max_connections",
        ),
        _ => (
            UnavailableReason::Unreachable,
            "check that the server is running and reachable",
        ),
    };
    DirectoryError::Unavailable {
        reason,
        message: format!("cannot connect to PostgreSQL at {target} ({error}); {hint}"),
        source: Some(Box::new(error)),
    }
}

/// Whether retrying the call on a new connection may succeed.
pub(crate) fn is_connection_lost(error: &DirectoryError) -> bool {
    error.unavailable_reason() == Some(UnavailableReason::Unreachable)
}

/// `host:port/database` of a config.
fn describe(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or("(default database)");
    format!("{host}:{port}/{db}")
}
