//! A small connection pool that runs rusqlite work on blocking threads.
//!
//! rusqlite is synchronous, so every query runs inside
//! `tokio::task::spawn_blocking`. A semaphore bounds concurrency (acquired
//! asynchronously, so async threads never block); idle connections are kept
//! in a `std::sync::Mutex<Vec<_>>` that is only touched on the blocking
//! thread and never held across an await.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::Semaphore;

use crate::error::DirectoryError;

/// How long a connection waits on a locked database before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Which database the pool talks to.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// A database file, created if missing.
    File(PathBuf),
    /// A private in-memory database. It lives as long as its single
    /// connection, so the pool is sized to one and never drops it.
    Memory,
}

pub(crate) struct Pool {
    target: Target,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
}

impl Pool {
    /// Creates a pool; for [`Target::Memory`] this opens the one connection.
    pub(crate) fn new(target: Target, size: usize) -> Result<Pool, DirectoryError> {
        let (size, idle) = match &target {
            Target::Memory => (1, vec![open(&target)?]),
            Target::File(_) => (size.max(1), Vec::new()),
        };
        Ok(Pool {
            target,
            idle: Mutex::new(idle),
            permits: Arc::new(Semaphore::new(size)),
        })
    }

    /// A short description of the database for messages.
    pub(crate) fn describe(&self) -> String {
        match &self.target {
            Target::File(path) => path.display().to_string(),
            Target::Memory => ":memory:".to_string(),
        }
    }

    /// Runs `work` with a pooled connection on a blocking thread.
    pub(crate) async fn run<T, F>(self: &Arc<Self>, work: F) -> Result<T, DirectoryError>
    where
        F: FnOnce(&mut Connection) -> Result<T, DirectoryError> + Send + 'static,
        T: Send + 'static,
    {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| DirectoryError::Unavailable {
                message: "the connection pool has been shut down".to_string(),
                source: None,
            })?;
        let pool = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            // Held until the work is done, even if the caller stops waiting.
            let _permit = permit;
            let mut conn = pool.checkout()?;
            let result = work(&mut conn);
            pool.checkin(conn);
            result
        })
        .await?
    }

    fn checkout(&self) -> Result<Connection, DirectoryError> {
        let reused = self.idle.lock().map(|mut idle| idle.pop()).unwrap_or(None);
        match (reused, &self.target) {
            (Some(conn), _) => Ok(conn),
            (None, Target::File(_)) => open(&self.target),
            (None, Target::Memory) => Err(DirectoryError::Unavailable {
                message: "the in-memory database connection was lost after a failed query; \
                          reopen the directory"
                    .to_string(),
                source: None,
            }),
        }
    }

    fn checkin(&self, conn: Connection) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(conn);
        }
    }
}

/// Opens and configures one connection.
fn open(target: &Target) -> Result<Connection, DirectoryError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = match target {
        Target::File(path) => Connection::open_with_flags(path, flags),
        Target::Memory => Connection::open_in_memory_with_flags(flags),
    }
    .map_err(|source| DirectoryError::Unavailable {
        message: match target {
            Target::File(path) => format!(
                "cannot open SQLite database {}: {source}; check that the directory exists \
                 and is writable",
                path.display()
            ),
            Target::Memory => format!("cannot open an in-memory SQLite database: {source}"),
        },
        source: Some(source),
    })?;
    configure(&conn, target)?;
    Ok(conn)
}

fn configure(conn: &Connection, target: &Target) -> Result<(), DirectoryError> {
    let fail = |source: rusqlite::Error| DirectoryError::Unavailable {
        message: format!("cannot configure SQLite connection: {source}"),
        source: Some(source),
    };
    conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(fail)?;
    if let Target::File(_) = target {
        // WAL lets readers run while a writer works; it persists in the file.
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(fail)?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(%mode, "SQLite did not switch to WAL journal mode");
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(fail)?;
    }
    Ok(())
}
