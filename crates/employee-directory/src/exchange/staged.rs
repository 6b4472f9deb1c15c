//! A file written beside its target and renamed over it when complete: a
//! reader (or a crash) never sees half a file, and a symbolic link planted
//! at the target is replaced, never followed, so an export cannot be made
//! to overwrite a file elsewhere.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::ExchangeError;

/// Numbers the temporary files of this process.
static N: AtomicU32 = AtomicU32::new(0);

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

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("staged-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn an_unfinished_file_leaves_the_old_one_and_no_temporary() {
        let dir = folder("unfinished");
        let target = dir.join("employees.csv");
        std::fs::write(&target, "old\n").expect("old");
        let (staged, mut file) = Staged::create(&target).expect("create");
        file.write_all(b"half a fi").expect("write");
        // An error between rows drops the writer before the rename.
        drop((staged, file));
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "old\n");
        assert_eq!(names(&dir), ["employees.csv"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_at_the_target_is_replaced_not_followed() {
        let dir = folder("link");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious\n").expect("victim");
        let target = dir.join("employees.csv");
        std::os::unix::fs::symlink(&victim, &target).expect("link");
        let (staged, mut file) = Staged::create(&target).expect("create");
        file.write_all(b"new\n").expect("write");
        staged.commit(file).expect("commit");
        assert_eq!(
            std::fs::read_to_string(&victim).expect("victim"),
            "precious\n"
        );
        assert_eq!(std::fs::read_to_string(&target).expect("target"), "new\n");
        assert!(std::fs::symlink_metadata(&target).expect("meta").is_file());
        assert_eq!(names(&dir), ["employees.csv", "victim"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_temporary_name_taken_by_a_link_is_not_followed() {
        let dir = folder("taken");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious\n").expect("victim");
        let target = dir.join("employees.csv");
        // Whoever guesses the next temporary name cannot redirect it.
        let n = N.load(Ordering::Relaxed);
        let guess = dir.join(format!(".employees.csv.{}.{n}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&victim, &guess).expect("link");
        match Staged::create(&target) {
            Ok((staged, mut file)) => {
                file.write_all(b"x").expect("write");
                drop((staged, file));
            }
            Err(e) => assert!(e.to_string().contains("exists"), "{e}"),
        }
        assert_eq!(
            std::fs::read_to_string(&victim).expect("victim"),
            "precious\n"
        );
    }
}
