//! Database faults while serving: the file deleted, replaced, emptied or
//! locked by another process. Each failure must be clear and bounded, and
//! the directory must recover without being reopened.

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
async fn deleted_file_is_reported_not_recreated_and_recovers_when_restored() {
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

    std::fs::write(&db.path, &bytes).expect("restore the database");
    assert_found(&directory).await;
    assert!(directory.ping().await.is_ok());
}

#[tokio::test]
async fn replaced_file_is_served_instead_of_the_old_one() {
    let db = TempDb::new("replaced");
    let directory = open(&db, DirectoryOptions::default()).await;

    // A changed copy, moved into place the way a restore would be.
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
    std::fs::rename(&copy, &db.path).expect("move the copy into place");

    let alice = directory.employee(ALICE).await.expect("query succeeds");
    assert_eq!(alice.map(|a| a.first_name).as_deref(), Some("Alicia"));
}

#[tokio::test]
async fn empty_or_foreign_file_is_not_an_employee_database() {
    let db = TempDb::new("empty");
    let directory = open(&db, DirectoryOptions::default()).await;
    let bytes = snapshot(&db.path);

    for (what, content) in [
        ("an empty file", Vec::new()),
        (
            "a text file",
            b"not a database at all, just some text".repeat(200),
        ),
    ] {
        std::fs::remove_file(&db.path).expect("delete the database");
        std::fs::write(&db.path, &content).expect("write the replacement");
        let error = assert_unavailable(directory.employee(ALICE).await);
        assert_eq!(
            error.unavailable_reason(),
            Some(UnavailableReason::NotEmployeeDatabase),
            "{what}: {error}"
        );
        assert!(
            error.to_string().contains("not an employee database"),
            "{what}: {error}"
        );
        assert_eq!(
            std::fs::read(&db.path).ok(),
            Some(content),
            "{what} was modified"
        );
    }

    std::fs::write(&db.path, &bytes).expect("restore the database");
    assert_found(&directory).await;
}

#[tokio::test]
async fn empty_database_with_sqlite_tables_but_no_migrations_is_refused() {
    let db = TempDb::new("foreign");
    let directory = open(&db, DirectoryOptions::default()).await;
    let other = db.path.with_file_name("other.db");
    {
        let conn = rusqlite::Connection::open(&other).expect("create another database");
        conn.execute_batch("CREATE TABLE notes (body TEXT)")
            .expect("create a table");
    }
    std::fs::rename(&other, &db.path).expect("move it into place");
    let error = assert_unavailable(directory.department_ids().await);
    assert_eq!(
        error.unavailable_reason(),
        Some(UnavailableReason::NotEmployeeDatabase)
    );
    assert!(error.to_string().contains("migrations"), "{error}");
}

/// Another process holding an exclusive lock on the database at
/// `directory`'s path, as a maintenance tool in exclusive locking mode
/// would (in WAL mode, nothing else keeps readers out).
///
/// Every open connection holds a shared lock in WAL mode, so the file is
/// first taken away (the directory closes its connections when it sees
/// that) and put back.
async fn lock_exclusively(directory: &Directory, path: &Path) -> rusqlite::Connection {
    let bytes = snapshot(path);
    std::fs::remove_file(path).expect("delete the database");
    assert_unavailable(directory.ping().await);
    std::fs::write(path, bytes).expect("restore the database");
    lock_file(path)
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
    let directory = open(&db, options).await;

    let locker = lock_exclusively(&directory, &db.path).await;
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
    let directory = open(&db, options).await;

    // Every pooled connection stuck behind the lock (more calls than the
    // largest pool; the extra ones fail to get a connection).
    let locker = lock_exclusively(&directory, &db.path).await;
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
