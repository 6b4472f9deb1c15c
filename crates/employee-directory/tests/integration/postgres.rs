//! PostgreSQL-only behaviour: replicas starting together on an empty
//! database, reopening without re-seeding or re-migrating, and faults (the
//! server unreachable or restarted) on a dedicated scratch cluster.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::pg::{cluster_url, fresh_database, psql, seeded_database};
use common::{clock, today};
use employee_directory::{Directory, DirectoryError, DirectoryOptions, UnavailableReason};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_starting_together_seed_once() {
    let url = tokio::task::spawn_blocking(fresh_database).await.unwrap();
    let mut opening = Vec::new();
    for _ in 0..6 {
        let url = url.clone();
        opening.push(tokio::spawn(async move {
            Directory::open(&url, clock(today())).await
        }));
    }
    let mut directories = Vec::new();
    for task in opening {
        directories.push(task.await.unwrap().expect("every replica opens"));
    }
    let health = directories[0].ping().await.unwrap();
    assert_eq!(health.backend, "postgres");
    assert_eq!(health.schema_version, Directory::expected_schema_version());
    for d in &directories {
        assert_eq!(d.ping().await.unwrap(), health);
    }
    // One seed: no duplicated rows anywhere.
    assert_eq!(
        psql(&url, "SELECT COUNT(*) FROM schema_migrations"),
        Directory::expected_schema_version().to_string()
    );
    assert_eq!(
        psql(&url, "SELECT COUNT(*) FROM directory_meta"),
        "2",
        "seeded more than once"
    );
    assert_eq!(
        psql(&url, "SELECT COUNT(*) FROM employees")
            .parse::<u32>()
            .unwrap(),
        health.total_employees
    );
}

#[tokio::test]
async fn reopening_neither_reseeds_nor_remigrates() {
    let url = tokio::task::spawn_blocking(seeded_database).await.unwrap();
    let dir = Directory::open(&url, clock(today())).await.unwrap();
    let before = dir.ping().await.unwrap();
    drop(dir);
    psql(
        &url,
        "UPDATE employees SET phone = '+1-555-9999' WHERE id = 'JohnDoe'",
    );
    psql(
        &url,
        "UPDATE schema_migrations SET applied_at = '2000-01-01' WHERE version = 1",
    );
    let dir = Directory::open(&url, clock(today())).await.unwrap();
    assert_eq!(dir.ping().await.unwrap(), before);
    let john = dir.employee("JohnDoe").await.unwrap().unwrap();
    assert_eq!(john.phone, "+1-555-9999", "database was re-seeded");
    assert_eq!(
        psql(
            &url,
            "SELECT COUNT(*) || ' ' || MIN(applied_at)::date FROM schema_migrations"
        ),
        format!("{} 2000-01-01", Directory::expected_schema_version()),
        "migrations ran again"
    );
}

#[tokio::test]
async fn a_database_without_the_schema_is_refused_clearly() {
    let url = tokio::task::spawn_blocking(seeded_database).await.unwrap();
    let dir = Directory::open(&url, clock(today())).await.unwrap();
    psql(&url, "DROP TABLE leave_balances");
    let err = dir
        .leave_balance("JohnDoe", employee_directory::LeaveType::Annual)
        .await
        .unwrap_err();
    assert_eq!(
        err.unavailable_reason(),
        Some(UnavailableReason::NotEmployeeDatabase),
        "{err}"
    );
    // Other queries keep working.
    assert!(dir.employee("JohnDoe").await.unwrap().is_some());
}

#[tokio::test]
async fn a_missing_database_or_server_is_reported_not_hung() {
    let root = cluster_url().rsplit_once('/').unwrap().0.to_owned();
    let started = Instant::now();
    let err = Directory::open(&format!("{root}/no_such_database"), clock(today()))
        .await
        .unwrap_err();
    assert_eq!(
        err.unavailable_reason(),
        Some(UnavailableReason::Missing),
        "{err}"
    );
    assert!(err.to_string().contains("does not exist"), "{err}");

    // Nothing listens on port 1.
    let err = Directory::open("postgres://postgres@127.0.0.1:1/employee", clock(today()))
        .await
        .unwrap_err();
    assert_eq!(
        err.unavailable_reason(),
        Some(UnavailableReason::Unreachable),
        "{err}"
    );
    assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn slow_queries_are_cancelled_by_the_statement_timeout() {
    let url = tokio::task::spawn_blocking(seeded_database).await.unwrap();
    let options = DirectoryOptions {
        statement_timeout: Duration::from_millis(300),
        ..DirectoryOptions::default()
    };
    let dir = Directory::open_with(&url, clock(today()), options)
        .await
        .unwrap();
    // Another session holds a lock the query needs.
    let locker = std::process::Command::new("psql")
        .args([
            url.as_str(),
            "-c",
            "BEGIN; LOCK TABLE employees IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(5); COMMIT;",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the lock is held.
    let deadline = Instant::now() + Duration::from_secs(10);
    while psql(
        &url,
        "SELECT COUNT(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND granted \
         AND relation = 'employees'::regclass",
    ) != "1"
    {
        assert!(Instant::now() < deadline, "the lock was never taken");
        std::thread::sleep(Duration::from_millis(50));
    }
    let started = Instant::now();
    let err = dir.employee("JohnDoe").await.unwrap_err();
    assert_eq!(
        err.unavailable_reason(),
        Some(UnavailableReason::TimedOut),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let mut locker = locker;
    locker.wait().unwrap();
    assert!(dir.employee("JohnDoe").await.unwrap().is_some());
}

/// `scripts/pg-scratch CMD faults-pg`: a cluster of its own, so stopping it
/// does not disturb the other tests.
fn scratch(cmd: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/pg-scratch");
    let out = Command::new(script)
        .args([cmd, "faults-pg"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pg-scratch {cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_recovers_after_a_restart_and_an_outage() {
    let url = tokio::task::spawn_blocking(|| scratch("start"))
        .await
        .unwrap();
    let options = DirectoryOptions {
        acquire_timeout: Duration::from_secs(2),
        ..DirectoryOptions::default()
    };
    let dir = Directory::open_with(&url, clock(today()), options)
        .await
        .unwrap();
    assert!(dir.employee("JohnDoe").await.unwrap().is_some());

    // A restart drops every pooled connection: the next call reconnects.
    tokio::task::spawn_blocking(|| scratch("restart"))
        .await
        .unwrap();
    assert!(dir.employee("JohnDoe").await.unwrap().is_some());

    // Down: calls fail fast with an actionable reason, none hangs.
    tokio::task::spawn_blocking(|| scratch("stop"))
        .await
        .unwrap();
    for _ in 0..3 {
        let started = Instant::now();
        let err: DirectoryError = dir.team_members("backend").await.unwrap_err();
        assert_eq!(
            err.unavailable_reason(),
            Some(UnavailableReason::Unreachable),
            "{err}"
        );
        assert!(err.unavailable_reason().unwrap().is_transient());
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    // Back: the same directory answers again, without being reopened.
    tokio::task::spawn_blocking(|| scratch("start"))
        .await
        .unwrap();
    assert!(dir.team_members("backend").await.unwrap().is_some());
    assert!(dir.ping().await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cached_answer_follows_changes() {
    let url = tokio::task::spawn_blocking(seeded_database).await.unwrap();
    let dir = Directory::open(&url, clock(today())).await.unwrap();
    common::answers_follow_changes(&dir, |sql| {
        psql(&url, sql);
    })
    .await;
}
