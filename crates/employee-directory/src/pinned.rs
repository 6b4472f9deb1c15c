//! The database file a server serves from, pinned by identity.
//!
//! A SQLite file swapped under a running process cannot be followed
//! safely: its `-wal` and `-shm` are found by name, so a connection opened
//! on the new file may be paired with the old file's WAL (and corrupt it),
//! and closing the last connection on the old file checkpoints and unlinks
//! `<path>-wal` by name, whoever it belongs to by then. So a server pins
//! the (device, inode) of the file it opened at startup, and every part of
//! it that opens or uses the file ([`PinnedFile::check`] before using it,
//! [`PinnedFile::open`] to open it) refuses any other file until the
//! server is restarted. Connections are held in [`PinnedConnection`],
//! which never closes a connection once the file was replaced.
//!
//! An identity is unique while the file is open (a deleted file's inode
//! number is only reused once the last descriptor on it is closed); a
//! serving process always holds it open through its connections.
//!
//! The same file moved away and back keeps its identity and is served
//! again; a deleted file put back (a copy) or another file renamed onto
//! the path is a different file. Online restores go through the
//! `restore` subcommand, which changes the pinned file's rows in one
//! transaction instead.

use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::{Connection, OpenFlags};

/// Why the pinned file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// Nothing is at the path (deleted, or moved away).
    #[error(
        "the database file {0} is missing (deleted or moved while the server was running); it is \
         not recreated empty, and a copy put back is a different file that the server will not \
         serve until restarted; restore online with `employee-mcp-server restore` instead"
    )]
    Missing(PathBuf),
    /// Another file is at the path. Once seen, this stays until restart.
    #[error(
        "the HR database file {0} was replaced or removed while the server was running; the \
         server will not serve from it until restarted (a swapped SQLite file can be paired with \
         the old file's WAL and corrupted); restore online with `employee-mcp-server restore` \
         instead"
    )]
    Replaced(PathBuf),
    /// The path cannot be examined (permissions, I/O error).
    #[error("cannot access the database file {0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// Opening the (pinned) file failed.
    #[error("cannot open the database file {0}: {1}")]
    Open(PathBuf, rusqlite::Error),
}

/// A database file and the identity it had when the server opened it.
#[derive(Debug)]
pub struct PinnedFile {
    path: PathBuf,
    identity: (u64, u64),
    /// Set the first time another file is seen at the path: from then on
    /// every check fails, even if the pinned file comes back.
    replaced: AtomicBool,
    /// Identities of the pinned file's `-wal` and `-shm`, noted once they
    /// exist, to tell them from another file's.
    companions: [OnceLock<(u64, u64)>; 2],
}

/// The files SQLite keeps next to a WAL-mode database, by name.
const COMPANIONS: [&str; 2] = ["-wal", "-shm"];

impl PinnedFile {
    /// Pins the file now at `path` (one `stat`).
    pub fn pin(path: &Path) -> Result<PinnedFile, PinError> {
        let identity = identity(path).map_err(|e| stat_error(path, e))?;
        Ok(PinnedFile {
            path: path.to_path_buf(),
            identity,
            replaced: AtomicBool::new(false),
            companions: [OnceLock::new(), OnceLock::new()],
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// (device, inode) of the pinned file.
    pub fn identity(&self) -> (u64, u64) {
        self.identity
    }

    /// Whether another file was seen at the path (no `stat`).
    pub fn was_replaced(&self) -> bool {
        self.replaced.load(Ordering::Relaxed)
    }

    /// Checks (one `stat`) that the pinned file is still at its path.
    pub fn check(&self) -> Result<(), PinError> {
        if self.was_replaced() {
            return Err(PinError::Replaced(self.path.clone()));
        }
        match identity(&self.path) {
            Ok(id) if id == self.identity => {
                self.note_companions();
                Ok(())
            }
            Ok(_) => {
                if !self.replaced.swap(true, Ordering::Relaxed) {
                    tracing::error!(
                        database = %self.path.display(),
                        "the database file was replaced while serving; refusing it until restart"
                    );
                    self.move_companions_aside();
                }
                Err(PinError::Replaced(self.path.clone()))
            }
            Err(e) => Err(stat_error(&self.path, e)),
        }
    }

    fn companion(&self, i: usize) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(COMPANIONS[i]);
        PathBuf::from(name)
    }

    /// Notes the identities of `-wal` and `-shm` while the file is the
    /// pinned one (a `stat` each until both were seen, then none).
    fn note_companions(&self) {
        for (i, slot) in self.companions.iter().enumerate() {
            if slot.get().is_none()
                && let Ok(id) = identity(&self.companion(i))
            {
                let _ = slot.set(id);
            }
        }
    }

    /// Once another file took the path, the pinned file's `-wal` and
    /// `-shm` still sit next to it by name: whoever opens the new file
    /// would pair it with them (and replay the old WAL into it). They are
    /// renamed aside (this process's descriptors stay valid); a companion
    /// that is not the pinned file's (another process already made its
    /// own) is left alone.
    fn move_companions_aside(&self) {
        for (i, slot) in self.companions.iter().enumerate() {
            let path = self.companion(i);
            let ours = slot
                .get()
                .is_some_and(|id| identity(&path).ok() == Some(*id));
            if !ours {
                continue;
            }
            let mut aside = path.as_os_str().to_owned();
            aside.push(format!(".replaced-{}", std::process::id()));
            match std::fs::rename(&path, &aside) {
                Ok(()) => tracing::warn!(
                    from = %path.display(),
                    to = %PathBuf::from(&aside).display(),
                    "moved the replaced database's file aside, so the new file is not paired with it"
                ),
                Err(e) => tracing::error!(
                    file = %path.display(),
                    error = %e,
                    "cannot move the replaced database's file aside; the new file may be paired with it"
                ),
            }
        }
    }

    /// Opens a connection on the pinned file: checked before opening and
    /// again after (SQLite opens the main file at once but the WAL only at
    /// the first read, so a file swapped in between is never read).
    pub fn open(&self, flags: OpenFlags) -> Result<Connection, PinError> {
        self.check()?;
        let conn = Connection::open_with_flags(&self.path, flags)
            .map_err(|e| PinError::Open(self.path.clone(), e))?;
        if let Err(e) = self.check() {
            // Nothing was read through it: closing touches no WAL.
            drop(conn);
            return Err(e);
        }
        Ok(conn)
    }
}

/// A connection that is only closed while its pinned file is in place.
///
/// Closing the last connection on a file checkpoints and deletes
/// `<path>-wal` by name; once the file was replaced that name may belong
/// to another file's WAL, so such a connection is leaked instead (the
/// process ends soon: it only refuses calls until restarted). Without a
/// pin (an in-memory database, tests) it is an ordinary connection.
pub struct PinnedConnection {
    conn: Option<Connection>,
    pin: Option<std::sync::Arc<PinnedFile>>,
}

impl PinnedConnection {
    /// Wraps `conn`, opened on `pin` (or on nothing pinned).
    pub fn new(conn: Connection, pin: Option<std::sync::Arc<PinnedFile>>) -> PinnedConnection {
        PinnedConnection {
            conn: Some(conn),
            pin,
        }
    }
}

impl Deref for PinnedConnection {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        // Only `drop` takes the connection out.
        self.conn.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl DerefMut for PinnedConnection {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for PinnedConnection {
    fn drop(&mut self) {
        let (Some(conn), Some(pin)) = (self.conn.take(), &self.pin) else {
            return;
        };
        if pin.check().is_err() {
            std::mem::forget(conn);
        }
    }
}

fn stat_error(path: &Path, error: std::io::Error) -> PinError {
    if error.kind() == std::io::ErrorKind::NotFound {
        PinError::Missing(path.to_path_buf())
    } else {
        PinError::Io(path.to_path_buf(), error)
    }
}

/// The (device, inode) of the file at `path`; one `stat`.
#[cfg(unix)]
fn identity(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}

/// Without inodes only a missing file is detected, not a replaced one.
#[cfg(not(unix))]
fn identity(path: &Path) -> std::io::Result<(u64, u64)> {
    std::fs::metadata(path).map(|_| (0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_put_back_is_refused_for_good_a_file_moved_back_is_not() {
        let dir = std::env::temp_dir().join(format!("pinned-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("live.db");
        std::fs::write(&path, b"one").unwrap();
        // Held open, as a serving process does: its inode is not reused.
        let _held = std::fs::File::open(&path).unwrap();
        let pin = PinnedFile::pin(&path).unwrap();
        assert!(pin.check().is_ok());

        let away = dir.join("away.db");
        std::fs::rename(&path, &away).unwrap();
        assert!(matches!(pin.check(), Err(PinError::Missing(_))));
        std::fs::rename(&away, &path).unwrap();
        assert!(pin.check().is_ok(), "the same file moved back is served");

        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"one").unwrap();
        assert!(matches!(pin.check(), Err(PinError::Replaced(_))));
        assert!(pin.open(OpenFlags::SQLITE_OPEN_READ_ONLY).is_err());
        assert!(pin.was_replaced());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
