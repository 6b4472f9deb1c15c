//! Helpers shared by the integration tests.

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

/// Asks every cached query twice (the second answer comes from the read
/// cache), changes the data behind the directory's back with `change` (SQL
/// both backends accept, run on another connection), and checks that every
/// answer follows the change.
pub async fn answers_follow_changes(dir: &Directory, change: impl Fn(&str)) {
    use employee_directory::{LeaveType, Report, ReportType};
    macro_rules! twice {
        ($call:expr) => {{
            let first = $call.await.expect("query runs");
            assert_eq!($call.await.expect("query runs"), first, "the cached answer");
            first
        }};
    }
    let john = twice!(dir.employee("JohnDoe")).expect("JohnDoe exists");
    let team_id = john.team_id.clone().expect("JohnDoe has a team");
    let skill = john
        .skills
        .first()
        .expect("JohnDoe has skills")
        .skill
        .clone();
    let named = |name: &str| name.contains("Cachebuster");
    twice!(dir.department_employees(&john.department_id)).expect("department");
    twice!(dir.team_members(&team_id)).expect("team");
    let tenure = twice!(dir.tenure("JohnDoe")).expect("tenure");
    let leave = twice!(dir.leave_balance("JohnDoe", LeaveType::Annual)).expect("leave");
    let search = twice!(dir.search_by_skill(&skill));
    let band = twice!(dir.compensation_band(&john.role, john.level)).expect("band");
    let report = twice!(dir.report(ReportType::Headcount));
    assert!(!named(&tenure.name) && !named(&leave.name));

    change("UPDATE employees SET last_name = 'Cachebuster' WHERE id = 'JohnDoe'");
    dir.sync().await.expect("sync");
    let john_in = |id: &str| id == "JohnDoe";
    let roster = dir
        .department_employees(&john.department_id)
        .await
        .unwrap()
        .unwrap();
    assert!(
        roster
            .employees
            .iter()
            .any(|e| john_in(&e.employee_id) && named(&e.name))
    );
    let team = dir.team_members(&team_id).await.unwrap().unwrap();
    assert!(
        team.members
            .iter()
            .any(|m| john_in(&m.employee_id) && named(&m.name))
    );
    assert!(named(&dir.tenure("JohnDoe").await.unwrap().unwrap().name));
    let leave_now = dir
        .leave_balance("JohnDoe", LeaveType::Annual)
        .await
        .unwrap()
        .unwrap();
    assert!(named(&leave_now.name));

    change(&format!(
        "UPDATE skills SET name = '{skill} Cachebuster' WHERE name = '{skill}'"
    ));
    dir.sync().await.expect("sync");
    let search_now = dir.search_by_skill(&skill).await.unwrap();
    assert!(
        search_now.matched_skills.iter().any(|s| named(s)),
        "{search_now:?}"
    );
    assert!(!search.matched_skills.iter().any(|s| named(s)));

    change(&format!(
        "UPDATE compensation_bands SET max_salary = max_salary + 1 \
         WHERE level = '{}' AND role_id = (SELECT role_id FROM employees WHERE id = 'JohnDoe')",
        serde_json::to_value(john.level).unwrap().as_str().unwrap()
    ));
    dir.sync().await.expect("sync");
    let band_now = dir
        .compensation_band(&john.role, john.level)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(band_now.max, band.max + 1);

    change(
        "UPDATE employees SET office_type = CASE WHEN office_type = 'remote' \
         THEN 'on-site' ELSE 'remote' END WHERE id = 'JohnDoe'",
    );
    dir.sync().await.expect("sync");
    let (Report::Headcount(before), Report::Headcount(after)) =
        (report, dir.report(ReportType::Headcount).await.unwrap())
    else {
        panic!("a headcount report");
    };
    assert_eq!(after.total_active, before.total_active);
    assert_ne!(after.by_office_type, before.by_office_type);
}
