//! A small connection pool that runs rusqlite work on blocking threads.
//!
//! rusqlite is synchronous, so every query runs inside
//! `tokio::task::spawn_blocking`. A semaphore bounds concurrency (acquired
//! asynchronously with a timeout, so async threads never block and calls
//! never queue forever); idle connections are kept in a
//! `std::sync::Mutex<Vec<_>>` that is only touched on the blocking thread and
//! never held across an await.
//!
//! # Faults on a file database
//!
//! Only [`Pool::bootstrap`] (run once by `Directory::open`) may create the
//! file; its connection is closed after it, and the file it created is
//! then pinned ([`PinnedFile`]). Every checkout checks (one `stat`) that
//! the pinned file is still at the path: a deleted file is reported as
//! missing instead of silently replaced by an empty database, and a file
//! replaced while serving (another file renamed onto the path, a backup
//! copied back) is refused until restart, never opened: a connection on
//! it could be paired with the old file's WAL. Online restores go through
//! the server's `restore` subcommand instead.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::Instrument;

use super::migrate;
use crate::PoolStats;
use crate::error::{DirectoryError, UnavailableReason};
use crate::options::DirectoryOptions;
use crate::pinned::{PinError, PinnedConnection, PinnedFile};
use crate::trace::query_span;

/// This backend's `db.system.name` in query spans.
const DB_SYSTEM: &str = "sqlite";

/// Which database the pool talks to.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// A database file, created by [`Pool::bootstrap`] if missing.
    File(PathBuf),
    /// A private in-memory database. It lives as long as its single
    /// connection, so the pool is sized to one and never drops it.
    Memory,
}

/// Identity of a database file; a restored or replaced file has a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// Device and inode, as the read cache's source.
    pub(crate) fn pair(self) -> (u64, u64) {
        (self.dev, self.ino)
    }
}

/// A connection and the identity of the file it was opened on (`None` for
/// the in-memory database).
struct Pooled {
    conn: PinnedConnection,
    file: Option<FileId>,
}

/// How a new connection to a file database is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    /// At startup: create the file if missing; the schema is not checked
    /// because the caller migrates it.
    Create,
    /// While serving: the file must exist and hold the current schema.
    Existing,
}

pub(crate) struct Pool {
    target: Target,
    options: DirectoryOptions,
    size: usize,
    idle: Mutex<Vec<Pooled>>,
    /// The file served from, pinned once bootstrapped (file targets).
    pin: OnceLock<Arc<PinnedFile>>,
    permits: Arc<Semaphore>,
    /// Queries that found every connection busy and had to wait.
    waits: AtomicU64,
    /// Waits that ran out of `acquire_timeout`.
    timeouts: AtomicU64,
}

impl Pool {
    /// Creates a pool; for [`Target::Memory`] this opens the one connection.
    pub(crate) fn new(
        target: Target,
        size: usize,
        options: DirectoryOptions,
    ) -> Result<Pool, DirectoryError> {
        let (size, idle) = match &target {
            Target::Memory => (1, vec![open_memory(&options)?]),
            Target::File(_) => (size.max(1), Vec::new()),
        };
        Ok(Pool {
            target,
            options,
            size,
            idle: Mutex::new(idle),
            pin: OnceLock::new(),
            permits: Arc::new(Semaphore::new(size)),
            waits: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
        })
    }

    /// A short description of the database for messages.
    pub(crate) fn describe(&self) -> String {
        match &self.target {
            Target::File(path) => path.display().to_string(),
            Target::Memory => ":memory:".to_string(),
        }
    }

    /// Pins the file the bootstrap created or opened: from now on the pool
    /// serves from that file only. No-op for the in-memory database.
    pub(crate) fn pin_file(&self) -> Result<(), DirectoryError> {
        if let Target::File(path) = &self.target {
            let pin = PinnedFile::pin(path).map_err(pin_error)?;
            let _ = self.pin.set(Arc::new(pin));
        }
        Ok(())
    }

    /// The pinned file, for the server's other connections to it.
    pub(crate) fn pinned(&self) -> Option<Arc<PinnedFile>> {
        self.pin.get().cloned()
    }

    /// Runs read-only `work` with a pooled connection on a blocking thread
    /// (never on the caller's: a heavy report would stall every request
    /// sharing that runtime worker).
    pub(crate) async fn run<T, F>(self: &Arc<Self>, work: F) -> Result<T, DirectoryError>
    where
        F: FnOnce(&mut Connection) -> Result<T, DirectoryError> + Send + 'static,
        T: Send + 'static,
    {
        self.run_with(Open::Existing, work)
            .instrument(query_span(DB_SYSTEM))
            .await
    }

    /// Runs `work` (migrations, seeding) on a new connection that may create
    /// the database file. Only `Directory::open` calls this, once.
    pub(crate) async fn bootstrap<T, F>(self: &Arc<Self>, work: F) -> Result<T, DirectoryError>
    where
        F: FnOnce(&mut Connection) -> Result<T, DirectoryError> + Send + 'static,
        T: Send + 'static,
    {
        self.run_with(Open::Create, work).await
    }

    /// Runs a read of a few microseconds (one indexed row) on the caller's
    /// thread when a connection slot and an idle connection are free at
    /// once: the hop to a blocking thread costs more than such a read.
    /// `None` when none is free; the caller then uses [`Self::run`].
    /// `work` also gets the identity of the connection's file (`None` for
    /// the in-memory database), so callers can key caches by it.
    pub(crate) fn try_run_inline<T, F>(&self, work: F) -> Option<Result<T, DirectoryError>>
    where
        F: FnOnce(&mut Connection, Option<FileId>) -> Result<T, DirectoryError>,
    {
        let _permit = Arc::clone(&self.permits).try_acquire_owned().ok()?;
        let idle = match &self.target {
            Target::Memory => self.lock_idle().pop(),
            Target::File(_) => match self.pinned_checked() {
                Ok(_) => self.lock_idle().pop(),
                Err(e) => return Some(Err(e)),
            },
        };
        let mut pooled = idle?;
        let result = work(&mut pooled.conn, pooled.file).map_err(|e| self.explain(e));
        self.checkin(pooled);
        Some(result)
    }

    /// Like [`Self::run`], with the identity of the connection's file.
    pub(crate) async fn run_on_file<T, F>(self: &Arc<Self>, work: F) -> Result<T, DirectoryError>
    where
        F: FnOnce(&mut Connection, Option<FileId>) -> Result<T, DirectoryError> + Send + 'static,
        T: Send + 'static,
    {
        let permit = self.acquire().await?;
        let pool = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let mut pooled = pool.checkout(Open::Existing)?;
            let result = work(&mut pooled.conn, pooled.file).map_err(|e| pool.explain(e));
            pool.checkin(pooled);
            result
        })
        .instrument(query_span(DB_SYSTEM))
        .await?
    }

    /// Counters for metrics: (waits, timeouts).
    pub(crate) fn stats(&self) -> PoolStats {
        PoolStats {
            waits: self.waits.load(Ordering::Relaxed),
            timeouts: self.timeouts.load(Ordering::Relaxed),
        }
    }

    async fn run_with<T, F>(self: &Arc<Self>, mode: Open, work: F) -> Result<T, DirectoryError>
    where
        F: FnOnce(&mut Connection) -> Result<T, DirectoryError> + Send + 'static,
        T: Send + 'static,
    {
        let permit = self.acquire().await?;
        let pool = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            // Held until the work is done, even if the caller stops waiting.
            let _permit = permit;
            let mut pooled = pool.checkout(mode)?;
            let result = work(&mut pooled.conn).map_err(|e| pool.explain(e));
            // The bootstrap's connection to a file is closed: the file is
            // pinned after it, and every later one is opened through the
            // pin. The in-memory database lives only in its one connection.
            if mode == Open::Existing || matches!(pool.target, Target::Memory) {
                pool.checkin(pooled);
            }
            result
        })
        .await?
    }

    /// Waits at most `acquire_timeout` for a connection slot.
    async fn acquire(&self) -> Result<OwnedSemaphorePermit, DirectoryError> {
        let wait = self.options.acquire_timeout;
        let permits = Arc::clone(&self.permits);
        if let Ok(permit) = Arc::clone(&permits).try_acquire_owned() {
            return Ok(permit);
        }
        self.waits.fetch_add(1, Ordering::Relaxed);
        match tokio::time::timeout(wait, permits.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_closed)) => Err(DirectoryError::unavailable(
                UnavailableReason::Other,
                "the connection pool has been shut down".to_string(),
            )),
            Err(_elapsed) => Err(self.timed_out(DirectoryError::unavailable(
                UnavailableReason::Overloaded,
                format!(
                    "all {} connections to {} stayed busy for {wait:?} (the server is \
                     overloaded or a query is stuck); retry later",
                    self.size,
                    self.describe()
                ),
            ))),
        }
    }

    fn timed_out(&self, e: DirectoryError) -> DirectoryError {
        self.timeouts.fetch_add(1, Ordering::Relaxed);
        e
    }

    fn checkout(&self, mode: Open) -> Result<Pooled, DirectoryError> {
        match (&self.target, mode) {
            (Target::Memory, _) => self.checkout_memory(),
            (Target::File(path), Open::Create) => self.open_file(path, Open::Create, None),
            (Target::File(path), Open::Existing) => self.checkout_file(path),
        }
    }

    /// Reuses an idle connection to the pinned file, or opens one.
    fn checkout_file(&self, path: &Path) -> Result<Pooled, DirectoryError> {
        let pin = self.pinned_checked()?;
        match self.lock_idle().pop() {
            Some(pooled) => Ok(pooled),
            None => self.open_file(path, Open::Existing, Some(pin)),
        }
    }

    /// The pinned file, checked to be still at its path (one `stat`).
    /// Idle connections stay as they are: they are on the pinned file.
    fn pinned_checked(&self) -> Result<Arc<PinnedFile>, DirectoryError> {
        let pin = self.pin.get().ok_or_else(|| {
            DirectoryError::unavailable(
                UnavailableReason::Other,
                "the database file was not opened yet".to_string(),
            )
        })?;
        pin.check().map_err(pin_error)?;
        Ok(Arc::clone(pin))
    }

    fn checkout_memory(&self) -> Result<Pooled, DirectoryError> {
        self.lock_idle().pop().ok_or_else(|| {
            DirectoryError::unavailable(
                UnavailableReason::Other,
                "the in-memory database connection was lost after a failed query; reopen the \
                 directory"
                    .to_string(),
            )
        })
    }

    fn checkin(&self, pooled: Pooled) {
        self.lock_idle().push(pooled);
    }

    /// The idle list is valid even if a holder panicked, so poisoning is
    /// ignored.
    fn lock_idle(&self) -> MutexGuard<'_, Vec<Pooled>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens, checks and configures a connection to the file at `path`:
    /// through `pin` while serving, directly (creating it) at bootstrap.
    fn open_file(
        &self,
        path: &Path,
        mode: Open,
        pin: Option<Arc<PinnedFile>>,
    ) -> Result<Pooled, DirectoryError> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if mode == Open::Create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn = match &pin {
            Some(pin) => pin.open(flags).map_err(|e| match e {
                PinError::Open(_, source) => self.open_error(path, mode, source),
                other => pin_error(other),
            })?,
            None => Connection::open_with_flags(path, flags)
                .map_err(|source| self.open_error(path, mode, source))?,
        };
        // A connection that fails below is closed by `PinnedConnection`,
        // which leaves it open if the file was replaced meanwhile.
        let file = pin.as_ref().map(|p| {
            let (dev, ino) = p.identity();
            FileId { dev, ino }
        });
        let conn = PinnedConnection::new(conn, pin);
        let prepare = || {
            configure_common(&conn, &self.options)?;
            if mode == Open::Existing {
                // Before configuring: setting WAL would write to a foreign file.
                check_schema(&conn, path)?;
            }
            configure_file(&conn)
        };
        prepare().map_err(|e| self.explain(e))?;
        Ok(Pooled { conn, file })
    }

    fn open_error(&self, path: &Path, mode: Open, source: rusqlite::Error) -> DirectoryError {
        if mode == Open::Existing && source.sqlite_error_code() == Some(ErrorCode::CannotOpen) {
            // Deleted between the stat and the open.
            return pin_error(PinError::Missing(path.to_path_buf()));
        }
        DirectoryError::Unavailable {
            reason: UnavailableReason::Other,
            message: format!(
                "cannot open SQLite database {}: {source}; check that the directory exists and \
                 is writable",
                path.display()
            ),
            source: Some(Box::new(source)),
        }
    }

    /// Turns driver errors that an operator or caller can act on (a lock
    /// held too long, a file that is not a database) into
    /// [`DirectoryError::Unavailable`] with a clear message.
    fn explain(&self, error: DirectoryError) -> DirectoryError {
        let code = match &error {
            DirectoryError::Database { source, .. } => source.sqlite_error_code(),
            DirectoryError::Unavailable {
                reason: UnavailableReason::Other,
                source: Some(source),
                ..
            } => source
                .downcast_ref::<rusqlite::Error>()
                .and_then(rusqlite::Error::sqlite_error_code),
            _ => None,
        };
        let (reason, message) = match code {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => (
                UnavailableReason::Locked,
                format!(
                    "the database {} is locked by another process (waited {:?}); retry later",
                    self.describe(),
                    self.options.busy_timeout
                ),
            ),
            Some(ErrorCode::NotADatabase) => (
                UnavailableReason::NotEmployeeDatabase,
                format!(
                    "{} is not an employee database (not a SQLite file); restore the database \
                     file from a backup",
                    self.describe()
                ),
            ),
            _ => return error,
        };
        let source = match error {
            DirectoryError::Database { source, .. } => {
                Some(Box::new(source) as Box<dyn std::error::Error + Send + Sync>)
            }
            DirectoryError::Unavailable { source, .. } => source,
            _ => None,
        };
        DirectoryError::Unavailable {
            reason,
            message,
            source,
        }
    }
}

/// A pinned-file failure as the directory reports it.
fn pin_error(error: PinError) -> DirectoryError {
    let reason = match &error {
        PinError::Missing(_) => UnavailableReason::Missing,
        PinError::Replaced(_) => UnavailableReason::Replaced,
        PinError::Io(..) | PinError::Open(..) => UnavailableReason::Other,
    };
    DirectoryError::unavailable(reason, error.to_string())
}

/// Refuses a file without the employee schema at the version this build
/// expects (an empty file, another application's database, an old backup).
fn check_schema(conn: &Connection, path: &Path) -> Result<(), DirectoryError> {
    let has_migrations: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master \
             WHERE type = 'table' AND name = 'schema_migrations')",
            [],
            |row| row.get(0),
        )
        .map_err(DirectoryError::db("check schema"))?;
    let version = if has_migrations {
        migrate::current_version(conn)?
    } else {
        0
    };
    let expected = crate::migrations::latest_version();
    let problem = match version {
        0 => "its migrations table is missing or empty".to_string(),
        v if v < expected => format!(
            "its schema is at version {v}, older than version {expected}; restart the server \
             to migrate it"
        ),
        v if v > expected => format!(
            "its schema is at version {v}, newer than version {expected} that this build knows"
        ),
        _ => return Ok(()),
    };
    Err(DirectoryError::unavailable(
        UnavailableReason::NotEmployeeDatabase,
        format!(
            "{} is not an employee database this server can use: {problem}; restore the \
             database file from a backup",
            path.display()
        ),
    ))
}

/// Opens the private in-memory database.
fn open_memory(options: &DirectoryOptions) -> Result<Pooled, DirectoryError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_in_memory_with_flags(flags).map_err(|source| {
        DirectoryError::Unavailable {
            reason: UnavailableReason::Other,
            message: format!("cannot open an in-memory SQLite database: {source}"),
            source: Some(Box::new(source)),
        }
    })?;
    configure_common(&conn, options)?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(configure_error)?;
    Ok(Pooled {
        conn: PinnedConnection::new(conn, None),
        file: None,
    })
}

/// Statements each connection keeps prepared. Every query is cached,
/// including the dynamic ones (one entry per distinct SQL text: the skill
/// search's IN list length, the suggestion's word count), so the default
/// of 16 would evict the hot ones.
const STATEMENT_CACHE_CAPACITY: usize = 128;

fn set_busy_timeout(conn: &Connection, options: &DirectoryOptions) -> Result<(), DirectoryError> {
    conn.busy_timeout(options.busy_timeout)
        .map_err(configure_error)
}

/// Settings of every new connection, file or memory.
fn configure_common(conn: &Connection, options: &DirectoryOptions) -> Result<(), DirectoryError> {
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
    // Query planner stability: without it, SQLite marks a cached statement
    // for re-preparation whenever a parameter it looked at while planning
    // (a LIKE pattern, a value compared with an indexed column) is bound
    // again, so most cached statements were parsed and planned on every
    // call anyway (sqlite3Reprepare was a fifth of the server's CPU).
    // Plans, not results, depend on it.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(configure_error)?;
    set_busy_timeout(conn, options)
}

fn configure_file(conn: &Connection) -> Result<(), DirectoryError> {
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(configure_error)?;
    // WAL lets readers run while a writer works; it persists in the file.
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(configure_error)?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(%mode, "SQLite did not switch to WAL journal mode");
    }
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(configure_error)
}

fn configure_error(source: rusqlite::Error) -> DirectoryError {
    DirectoryError::Unavailable {
        reason: UnavailableReason::Other,
        message: format!("cannot configure SQLite connection: {source}"),
        source: Some(Box::new(source)),
    }
}
