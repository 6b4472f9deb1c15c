//! A file written beside its target and renamed over it when complete: a
//! reader (or a crash) never sees half a file, and a symbolic link planted
//! at the target is replaced, never followed, so an export cannot be made
//! to overwrite a file elsewhere.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::ExchangeError;

/// A temporary file in the target's folder; removed unless
/// [`Staged::commit`] renames it over the target.
pub struct Staged {
    temp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl Staged {
    /// Creates a new temporary file next to `target` (never an existing
    /// path, not even a link: `O_CREAT | O_EXCL`).
    pub fn create(target: &Path) -> Result<(Staged, File), ExchangeError> {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = target.parent().unwrap_or(Path::new("."));
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let n = N.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| ExchangeError::io(&temp, e))?;
        let staged = Staged {
            temp,
            target: target.to_path_buf(),
            committed: false,
        };
        Ok((staged, file))
    }

    /// Flushes `file` to disk and renames it over the target (replacing a
    /// link there, not what it points at), then makes the rename durable.
    pub fn commit(mut self, file: File) -> Result<(), ExchangeError> {
        file.sync_all()
            .map_err(|e| ExchangeError::io(&self.target, e))?;
        drop(file);
        std::fs::rename(&self.temp, &self.target)
            .map_err(|e| ExchangeError::io(&self.target, e))?;
        self.committed = true;
        sync_dir(&self.target).map_err(|e| ExchangeError::io(&self.target, e))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Makes a rename in `path`'s folder durable (a no-op where folders
/// cannot be opened).
fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    match File::open(dir) {
        Ok(d) => d.sync_all().or(Ok(())),
        Err(_) => Ok(()),
    }
}
