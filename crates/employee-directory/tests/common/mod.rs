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

/// Which backend a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

impl Kind {
    /// The name `Health::backend` reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
        }
    }
}

/// A seeded directory on `kind` with the clock at `date`: a private
/// in-memory SQLite database, or a per-test copy of a seeded PostgreSQL
/// template.
pub async fn open(kind: Kind, date: NaiveDate) -> Directory {
    let url = match kind {
        Kind::Sqlite => "sqlite::memory:".to_string(),
        Kind::Postgres => tokio::task::spawn_blocking(pg::seeded_database)
            .await
            .expect("create a seeded PostgreSQL database"),
    };
    Directory::open(&url, clock(date)).await.unwrap()
}

/// Defines `sqlite::NAME` and `postgres::NAME` tests that run the async
/// function `NAME(kind: Kind)` on each backend.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::common::Kind::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::common::Kind::Postgres).await
                }
            )*
        }
    };
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
