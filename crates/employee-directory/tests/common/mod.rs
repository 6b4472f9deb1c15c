//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod pg;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use chrono::NaiveDate;
use employee_directory::{Directory, FixedClock};

/// The date most tests pretend it is.
pub fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 30).unwrap()
}

pub fn clock(date: NaiveDate) -> Arc<FixedClock> {
    Arc::new(FixedClock(date))
}

pub async fn memory() -> Directory {
    Directory::open("sqlite::memory:", clock(today()))
        .await
        .unwrap()
}

/// A unique database path under the system temp dir; removed on drop.
pub struct TempDb {
    pub path: PathBuf,
}

impl TempDb {
    pub fn new(tag: &str) -> TempDb {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path = std::env::temp_dir()
            .join(format!(
                "employee-directory-test-{}-{nanos}-{n}",
                std::process::id()
            ))
            .join(format!("{tag}.db"));
        TempDb { path }
    }

    pub fn url(&self) -> String {
        format!("sqlite://{}", self.path.display())
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// FNV-1a, to fingerprint database content without extra dependencies.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}
