//! Database faults while serving: the file deleted, replaced or locked by
//! another process. Each failure must be clear and bounded; a lock or a
//! file moved away and back recovers by itself, a replaced file is refused
//! until the directory is reopened (the file is pinned).

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{TempDb, clock, today};
use employee_directory::{Directory, DirectoryError, DirectoryOptions, UnavailableReason};

/// An employee every seed contains.
const ALICE: &str = "AliceJohnson";

async fn open(db: &TempDb, options: DirectoryOptions) -> Directory {
    let directory = Directory::open_with(&db.url(), clock(today()), options)
        .await
        .expect("open the directory");
    assert_found(&directory).await;
    directory
}

/// The seeded database's bytes (the seed is checkpointed into the file).
fn snapshot(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("read the database file")
}

#[track_caller]
fn assert_unavailable(result: Result<impl std::fmt::Debug, DirectoryError>) -> DirectoryError {
    match result {
        Err(e @ DirectoryError::Unavailable { .. }) => e,
        other => panic!("expected an Unavailable error, got {other:?}"),
    }
}

async fn assert_found(directory: &Directory) {
    let alice = directory.employee(ALICE).await.expect("query succeeds");
    assert_eq!(alice.map(|a| a.employee_id).as_deref(), Some(ALICE));
}

#[tokio::test]
async fn deleted_file_is_reported_not_recreated_and_a_copy_put_back_is_refused() {
    let db = TempDb::new("deleted");
    let directory = open(&db, DirectoryOptions::default()).await;
    let bytes = snapshot(&db.path);

    std::fs::remove_file(&db.path).expect("delete the database");
    let error = assert_unavailable(directory.employee(ALICE).await);
    assert_eq!(error.unavailable_reason(), Some(UnavailableReason::Missing));
    let message = error.to_string();
    assert!(message.contains("missing"), "{message}");
    assert!(
        message.contains(&db.path.display().to_string()),
        "{message}"
    );
    assert!(!db.path.exists(), "the database file was recreated");
    // Every query fails the same way, not only the first one.
    let again = assert_unavailable(directory.ping().await);
    assert_eq!(again.unavailable_reason(), Some(UnavailableReason::Missing));
    assert!(!db.path.exists(), "the database file was recreated");

    // A copy put back is another file: refused until reopened, untouched.
    std::fs::write(&db.path, &bytes).expect("put a copy back");
    let error = assert_unavailable(directory.employee(ALICE).await);
    assert_eq!(
        error.unavailable_reason(),
        Some(UnavailableReason::Replaced)
    );
    assert!(error.to_string().contains("restarted"), "{error}");
    assert_eq!(snapshot(&db.path), bytes, "the copy was written to");
    drop(directory);
    let reopened = open(&db, DirectoryOptions::default()).await;
    assert!(reopened.ping().await.is_ok());
}

#[tokio::test]
async fn the_same_file_moved_away_and_back_is_served_again() {
    let db = TempDb::new("moved");
    let directory = open(&db, DirectoryOptions::default()).await;
    let away = db.path.with_file_name("away.db");
    std::fs::rename(&db.path, &away).expect("move the database away");
    let error = assert_unavailable(directory.employee(ALICE).await);
    assert_eq!(error.unavailable_reason(), Some(UnavailableReason::Missing));
    std::fs::rename(&away, &db.path).expect("move it back");
    assert_found(&directory).await;
}

#[tokio::test]
async fn replaced_file_is_refused_until_reopened() {
    let db = TempDb::new("replaced");
    let directory = open(&db, DirectoryOptions::default()).await;

    // A changed copy, moved into place the way a careless restore would be.
    let copy = db.path.with_file_name("copy.db");
    std::fs::write(&copy, snapshot(&db.path)).expect("copy the database");
    {
        let conn = rusqlite::Connection::open(&copy).expect("open the copy");
        conn.execute(
            "UPDATE employees SET first_name = 'Alicia' WHERE id = ?1",
            [ALICE],
        )
        .expect("edit the copy");
    }
    let copied = snapshot(&copy);
    std::fs::rename(&copy, &db.path).expect("move the copy into place");

    let error = assert_unavailable(directory.employee(ALICE).await);
    assert_eq!(
        error.unavailable_reason(),
        Some(UnavailableReason::Replaced)
    );
    assert!(error.to_string().contains("replaced"), "{error}");
    // Refused for good, and the new file is not touched.
    let again = assert_unavailable(directory.ping().await);
    assert_eq!(
        again.unavailable_reason(),
        Some(UnavailableReason::Replaced)
    );
    assert_eq!(snapshot(&db.path), copied, "the new file was written to");

    drop(directory);
    let reopened = open(&db, DirectoryOptions::default()).await;
    let alice = reopened.employee(ALICE).await.expect("query succeeds");
    assert_eq!(alice.map(|a| a.first_name).as_deref(), Some("Alicia"));
}

#[tokio::test]
async fn a_foreign_file_put_in_place_is_refused_and_not_modified() {
    let db = TempDb::new("foreign");
    let directory = open(&db, DirectoryOptions::default()).await;
    let other = db.path.with_file_name("other.db");
    {
        let conn = rusqlite::Connection::open(&other).expect("create another database");
        conn.execute_batch("CREATE TABLE notes (body TEXT)")
            .expect("create a table");
    }
    let before = snapshot(&other);
    std::fs::rename(&other, &db.path).expect("move it into place");
    let error = assert_unavailable(directory.department_ids().await);
    assert_eq!(
        error.unavailable_reason(),
        Some(UnavailableReason::Replaced)
    );
    assert_eq!(snapshot(&db.path), before, "the foreign file was modified");
}

/// Another process holding an exclusive lock on the database at `path`,
/// as a maintenance tool in exclusive locking mode would (in WAL mode,
/// nothing else keeps readers out). Taken right after the directory is
/// opened: every open connection holds a shared lock in WAL mode, and the
/// directory holds none until its first query.
fn lock_exclusively(path: &Path) -> rusqlite::Connection {
    lock_file(path)
}

/// Opens the directory without querying it (see [`lock_exclusively`]).
async fn open_idle(db: &TempDb, options: DirectoryOptions) -> Directory {
    Directory::open_with(&db.url(), clock(today()), options)
        .await
        .expect("open the directory")
}

fn lock_file(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).expect("open a second connection");
    conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;")
        .expect("take the lock");
    conn
}

#[tokio::test]
async fn locked_database_fails_within_the_busy_timeout_then_recovers() {
    let db = TempDb::new("locked");
    let options = DirectoryOptions {
        busy_timeout: Duration::from_millis(300),
        ..DirectoryOptions::default()
    };
    let directory = open_idle(&db, options).await;

    let locker = lock_exclusively(&db.path);
    let started = Instant::now();
    let error = assert_unavailable(directory.employee(ALICE).await);
    let waited = started.elapsed();
    assert_eq!(error.unavailable_reason(), Some(UnavailableReason::Locked));
    assert!(
        error.to_string().contains("locked by another process"),
        "{error}"
    );
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(3),
        "waited {waited:?}"
    );

    drop(locker);
    assert_found(&directory).await;
}

#[tokio::test]
async fn waiting_for_a_connection_is_bounded() {
    let db = TempDb::new("overloaded");
    let options = DirectoryOptions {
        busy_timeout: Duration::from_millis(1500),
        acquire_timeout: Duration::from_millis(200),
        ..DirectoryOptions::default()
    };
    let directory = open_idle(&db, options).await;

    // Every pooled connection stuck behind the lock (more calls than the
    // largest pool; the extra ones fail to get a connection).
    let locker = lock_exclusively(&db.path);
    let stuck: Vec<_> = (0..8)
        .map(|_| {
            let d = directory.clone();
            tokio::spawn(async move { d.employee(ALICE).await.map(|_| ()) })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;

    let started = Instant::now();
    let error = assert_unavailable(directory.employee(ALICE).await);
    assert_eq!(
        error.unavailable_reason(),
        Some(UnavailableReason::Overloaded),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(1), "{error}");

    drop(locker);
    for task in stuck {
        let reason = task
            .await
            .expect("task")
            .err()
            .and_then(|e| e.unavailable_reason());
        assert!(
            matches!(
                reason,
                Some(UnavailableReason::Locked | UnavailableReason::Overloaded) | None
            ),
            "{reason:?}"
        );
    }
    assert_found(&directory).await;
}
