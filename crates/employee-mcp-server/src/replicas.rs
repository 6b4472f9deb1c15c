//! The replicas serving one database, as each one reports itself: every
//! `serve` process writes a row to `server_replicas` every
//! [`BEAT`] (its address, version, start time and its own readiness check)
//! and deletes it when it stops, so the console's Health page can show the
//! readiness of every replica, not only its own. The table lives where
//! the replicas already share state: the shared PostgreSQL database, or the
//! audit trail's SQLite file beside the directory (an import's long write
//! lock on the directory file never delays a beat). Rows not renewed for
//! an hour (a replica killed without a goodbye) are pruned.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use employee_directory::DatabaseUrl;
use mcpwire_server::observe::ReadinessCheck;
use serde::Serialize;
use tokio::task::JoinHandle;

use crate::audit;

/// Why a replica's report could not be written, removed or read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The trail file could not be opened.
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The audit trail's file.
        path: PathBuf,
        /// SQLite's reason.
        source: rusqlite::Error,
    },
    /// PostgreSQL did not answer within the beat's wait.
    #[error("the database did not answer")]
    Timeout,
    /// PostgreSQL refused the connection.
    #[error("cannot connect: {0}")]
    Connect(#[source] tokio_postgres::Error),
    /// The table could not be created.
    #[error("cannot create server_replicas: {0}")]
    Create(#[source] Db),
    /// A report could not be written.
    #[error("cannot write server_replicas: {0}")]
    Write(#[source] Db),
    /// Old reports could not be deleted.
    #[error("cannot prune server_replicas: {0}")]
    Prune(#[source] Db),
    /// The reports could not be read.
    #[error("cannot read server_replicas: {0}")]
    Read(#[source] Db),
    /// Any other statement failed.
    #[error(transparent)]
    Db(#[from] Db),
    /// A blocking task died.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
    /// No random bytes for the replica's id.
    #[error("no randomness: {0}")]
    Randomness(#[source] getrandom::Error),
}

/// A database error of either backend.
#[derive(Debug, thiserror::Error)]
pub enum Db {
    /// SQLite (the audit trail's file).
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// The shared PostgreSQL database.
    #[error(transparent)]
    Postgres(#[from] tokio_postgres::Error),
}

/// How often a replica reports.
pub const BEAT: Duration = Duration::from_secs(10);
/// A replica not heard from for this long is shown as gone silent.
pub const SILENT_AFTER: Duration = Duration::from_secs(35);
/// Rows older than this are deleted.
const KEEP: Duration = Duration::from_secs(3600);
/// Longest a beat may wait for the database.
const BUSY: Duration = Duration::from_secs(2);
/// Longest readiness reason kept, in characters.
const MAX_REASON_CHARS: usize = 300;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS server_replicas (
    id         TEXT    PRIMARY KEY,
    listen     TEXT    NOT NULL,
    console    TEXT,
    version    TEXT    NOT NULL,
    started_ms BIGINT  NOT NULL,
    seen_ms    BIGINT  NOT NULL,
    ready      BOOLEAN NOT NULL,
    reason     TEXT
)";

/// The same statements on both backends (`$n` placeholders, `ON CONFLICT`).
const UPSERT: &str = "INSERT INTO server_replicas
    (id, listen, console, version, started_ms, seen_ms, ready, reason)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
    ON CONFLICT (id) DO UPDATE SET listen = excluded.listen, console = excluded.console,
        seen_ms = excluded.seen_ms, ready = excluded.ready, reason = excluded.reason";
const PRUNE: &str = "DELETE FROM server_replicas WHERE seen_ms < $1";
const LEAVE: &str = "DELETE FROM server_replicas WHERE id = $1";
const LIST: &str = "SELECT id, listen, console, version, started_ms, seen_ms, ready, reason
    FROM server_replicas ORDER BY started_ms, id";

/// One replica as it last reported.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Replica {
    /// Random per process: `r-PID-HEX`.
    pub id: String,
    /// Its `--listen` (or `stdio`).
    pub listen: String,
    /// Its console's address, when it serves one.
    pub console: Option<String>,
    /// The server's version.
    pub version: String,
    /// When it started, unix milliseconds.
    pub started_ms: i64,
    /// Its last report, unix milliseconds.
    pub seen_ms: i64,
    /// What its readiness check said then.
    pub ready: bool,
    /// Why not, when not ready.
    pub reason: Option<String>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Where the replicas' rows are.
#[derive(Clone, Debug)]
pub enum Registry {
    /// The audit trail's file of a SQLite directory.
    Sqlite(PathBuf),
    /// The shared PostgreSQL database.
    Postgres(String),
}

impl Registry {
    /// The registry of `database`; `None` for `:memory:` (one process).
    pub fn of(database: &DatabaseUrl) -> Option<Registry> {
        match database {
            DatabaseUrl::Sqlite { path, .. } => Some(Registry::Sqlite(audit::trail_file(path))),
            DatabaseUrl::Postgres(url) => Some(Registry::Postgres(url.clone())),
            DatabaseUrl::Memory => None,
        }
    }

    fn sqlite(path: &PathBuf) -> Result<rusqlite::Connection, Error> {
        let conn = rusqlite::Connection::open(path).map_err(|source| Error::Open {
            path: path.clone(),
            source,
        })?;
        conn.busy_timeout(BUSY).map_err(Db::from)?;
        conn.execute_batch(SCHEMA)
            .map_err(|e| Error::Create(e.into()))?;
        Ok(conn)
    }

    async fn postgres(url: &str) -> Result<tokio_postgres::Client, Error> {
        let connect = tokio_postgres::connect(url, tokio_postgres::NoTls);
        let (client, connection) = tokio::time::timeout(BUSY * 3, connect)
            .await
            .map_err(|_| Error::Timeout)?
            .map_err(Error::Connect)?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
            .batch_execute(&format!(
                "SELECT pg_advisory_xact_lock(7402117011); {SCHEMA}"
            ))
            .await
            .map_err(|e| Error::Create(e.into()))?;
        Ok(client)
    }

    /// Writes `replica`'s report and prunes long-silent rows.
    pub async fn beat(&self, replica: &Replica) -> Result<(), Error> {
        let prune_before = replica.seen_ms - ms(KEEP);
        match self {
            Registry::Sqlite(path) => {
                let (path, r) = (path.clone(), replica.clone());
                tokio::task::spawn_blocking(move || {
                    let conn = Self::sqlite(&path)?;
                    conn.execute(
                        UPSERT,
                        rusqlite::params![
                            r.id,
                            r.listen,
                            r.console,
                            r.version,
                            r.started_ms,
                            r.seen_ms,
                            r.ready,
                            r.reason
                        ],
                    )
                    .and_then(|_| conn.execute(PRUNE, [prune_before]))
                    .map(drop)
                    .map_err(|e| Error::Write(e.into()))
                })
                .await?
            }
            Registry::Postgres(url) => {
                let client = Self::postgres(url).await?;
                let r = replica;
                client
                    .execute(
                        UPSERT,
                        &[
                            &r.id,
                            &r.listen,
                            &r.console,
                            &r.version,
                            &r.started_ms,
                            &r.seen_ms,
                            &r.ready,
                            &r.reason,
                        ],
                    )
                    .await
                    .map_err(|e| Error::Write(e.into()))?;
                client
                    .execute(PRUNE, &[&prune_before])
                    .await
                    .map(drop)
                    .map_err(|e| Error::Prune(e.into()))
            }
        }
    }

    /// Removes replica `id` (it is stopping).
    pub async fn leave(&self, id: &str) -> Result<(), Error> {
        match self {
            Registry::Sqlite(path) => {
                let (path, id) = (path.clone(), id.to_owned());
                tokio::task::spawn_blocking(move || {
                    Self::sqlite(&path)?
                        .execute(LEAVE, [id])
                        .map(drop)
                        .map_err(|e| Error::Db(e.into()))
                })
                .await?
            }
            Registry::Postgres(url) => Self::postgres(url)
                .await?
                .execute(LEAVE, &[&id])
                .await
                .map(drop)
                .map_err(|e| Error::Db(e.into())),
        }
    }

    /// Every replica that reported in the last hour, oldest start first.
    pub async fn list(&self) -> Result<Vec<Replica>, Error> {
        match self {
            Registry::Sqlite(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || {
                    let conn = Self::sqlite(&path)?;
                    let mut stmt = conn.prepare(LIST).map_err(Db::from)?;
                    stmt.query_map([], |row| {
                        Ok(Replica {
                            id: row.get(0)?,
                            listen: row.get(1)?,
                            console: row.get(2)?,
                            version: row.get(3)?,
                            started_ms: row.get(4)?,
                            seen_ms: row.get(5)?,
                            ready: row.get(6)?,
                            reason: row.get(7)?,
                        })
                    })
                    .and_then(Iterator::collect)
                    .map_err(|e| Error::Read(e.into()))
                })
                .await?
            }
            Registry::Postgres(url) => {
                let client = Self::postgres(url).await?;
                let rows = client
                    .query(LIST, &[])
                    .await
                    .map_err(|e| Error::Read(e.into()))?;
                rows.iter()
                    .map(|row| {
                        Ok(Replica {
                            id: row.try_get(0)?,
                            listen: row.try_get(1)?,
                            console: row.try_get(2)?,
                            version: row.try_get(3)?,
                            started_ms: row.try_get(4)?,
                            seen_ms: row.try_get(5)?,
                            ready: row.try_get(6)?,
                            reason: row.try_get(7)?,
                        })
                    })
                    .collect::<Result<Vec<_>, tokio_postgres::Error>>()
                    .map_err(|e| Error::Read(e.into()))
            }
        }
    }
}

/// This process's report, renewed by [`Heartbeat`].
pub fn this_replica(listen: String, console: Option<String>) -> Result<Replica, Error> {
    let mut bytes = [0u8; 4];
    getrandom::fill(&mut bytes).map_err(Error::Randomness)?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(Replica {
        id: format!("r-{}-{hex}", std::process::id()),
        listen,
        console,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        started_ms: now_ms(),
        seen_ms: now_ms(),
        ready: false,
        reason: None,
    })
}

/// Reports this replica every [`BEAT`] until dropped; [`Heartbeat::stop`]
/// also removes its row.
pub struct Heartbeat {
    registry: Registry,
    id: String,
    task: JoinHandle<()>,
}

impl Heartbeat {
    /// Starts reporting `replica` (its readiness from `readiness`).
    pub fn start(
        registry: Registry,
        mut replica: Replica,
        readiness: Arc<dyn ReadinessCheck>,
    ) -> Heartbeat {
        let id = replica.id.clone();
        let beat_to = registry.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(BEAT);
            loop {
                tick.tick().await;
                let checked = readiness.check().await;
                replica.seen_ms = now_ms();
                replica.ready = checked.is_ok();
                replica.reason = checked
                    .err()
                    .map(|r| r.chars().take(MAX_REASON_CHARS).collect());
                if let Err(e) = beat_to.beat(&replica).await {
                    tracing::warn!(error = %e, "cannot report this replica for the console");
                }
            }
        });
        Heartbeat { registry, id, task }
    }

    /// Stops reporting and removes this replica's row.
    pub async fn stop(&self) {
        self.task.abort();
        if let Err(e) = self.registry.leave(&self.id).await {
            tracing::warn!(error = %e, "cannot remove this replica's row");
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
    }
}
