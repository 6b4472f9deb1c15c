//! The database file swapped under a running server: deleted and copied
//! back, or replaced by a rename with the old file's WAL still in place.
//! The server pins the file it opened: after the swap no call is
//! answered (built-ins get a tool error, a call that only needs its audit
//! row is withheld), `/readyz` says to restart, and
//! the new file is neither written to nor paired with the old WAL. Backup
//! and restore go through the subcommands instead, while serving.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::access::audit_rows;
use common::{BIN, Server, TempDb};
use mcpwire_server::client::ClientError;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Enough calls for the load; the default rate limit would refuse them.
const FLAGS: &[&str] = &[
    "--rate-limit-per-minute",
    "100000",
    "--rate-limit-burst",
    "100000",
];

fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A read of `path` that writes nothing (no `-wal`/`-shm` is created).
fn read_only(path: &Path) -> Connection {
    let uri = format!("file:{}?immutable=1", path.display());
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    Connection::open_with_flags(uri, flags).expect("open the database read-only")
}

fn integrity(path: &Path) -> String {
    read_only(path)
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check")
}

/// Audit rows inside the directory's own file (none: the trail has its
/// own file, and a replacement file must not gain any).
fn audit_count(conn: &Connection) -> i64 {
    let has: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'audit_log')",
            [],
            |r| r.get(0),
        )
        .expect("read the schema");
    if !has {
        return 0;
    }
    conn.query_row("SELECT COUNT(*) FROM audit_log", [], |r| r.get(0))
        .expect("count audit rows")
}

/// How one `tools/call` ended.
#[derive(Debug, PartialEq)]
enum Ended {
    Answered,
    ToolError(String),
    Withheld(i64, String),
}

async fn call(server: &Server, name: &str, arguments: Value) -> Ended {
    let reply = server
        .rpc("tools/call", json!({"name": name, "arguments": arguments}))
        .await;
    let result = match reply {
        Ok(result) => result,
        Err(ClientError::Rpc { code, message, .. }) => return Ended::Withheld(code, message),
        Err(e) => panic!("tools/call {name}: {e}"),
    };
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Ended::ToolError(result["content"][0]["text"].as_str().unwrap_or("").into());
    }
    Ended::Answered
}

async fn details(server: &Server) -> Ended {
    call(
        server,
        "get-employee-details",
        json!({"employeeId": "AliceJohnson"}),
    )
    .await
}

async fn readyz(server: &Server) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(&server.addr)
        .await
        .expect("connect");
    let head = format!(
        "GET /readyz HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        server.addr
    );
    stream.write_all(head.as_bytes()).await.expect("send");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.expect("read");
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Load on the server until stopped: (answered, refused) counts.
struct Load {
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(server: &Arc<Server>, clients: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicU64::new(0));
        let tasks = (0..clients)
            .map(|_| {
                let (server, stop, answered) =
                    (Arc::clone(server), Arc::clone(&stop), Arc::clone(&answered));
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        if details(&server).await == Ended::Answered {
                            answered.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        Load {
            stop,
            answered,
            tasks,
        }
    }

    async fn wait_for(&self, answered: u64) {
        while self.answered.load(Ordering::Relaxed) < answered {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    async fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            t.await.expect("load task");
        }
        self.answered.load(Ordering::Relaxed)
    }
}

/// After a swap: every call refused, the audit writer refuses too (a call
/// with invalid arguments needs nothing but its audit row), `/readyz` 503.
async fn assert_refusing(server: &Server) {
    for _ in 0..5 {
        match details(server).await {
            Ended::ToolError(text) => assert!(text.contains("restarted"), "{text}"),
            Ended::Withheld(code, _) => assert_eq!(code, -32603),
            Ended::Answered => panic!("a call was answered after the swap"),
        }
    }
    // The trail has its own file: a bad call is refused for its arguments
    // (and audited), not for want of an audit trail.
    let bad = call(server, "get-employee-details", json!({"employeeId": 42})).await;
    match &bad {
        Ended::Answered => panic!("a bad call was answered"),
        Ended::Withheld(_, m) | Ended::ToolError(m) => {
            assert!(!m.contains("audit trail"), "{bad:?}")
        }
    }
    assert_eq!(
        readyz(server).await,
        (
            503,
            "not ready: database file replaced; restart\n".to_owned()
        )
    );
}

#[tokio::test]
async fn a_file_deleted_and_copied_back_under_load_is_refused_not_audited_into() {
    let db = TempDb::seeded();
    let backup = std::fs::read(&db.path).expect("read the seeded file");
    let server = Arc::new(Server::start_on(db.share(), FLAGS).await);
    // Before: every answered call has its row.
    for _ in 0..5 {
        assert_eq!(details(&server).await, Ended::Answered);
    }
    let rows = audit_rows(&db, &["--tool", "get-employee-details"]);
    assert_eq!(rows.len(), 5);

    let load = Load::start(&server, 4);
    load.wait_for(20).await;
    std::fs::remove_file(&db.path).expect("delete the database");
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(companion(&db.path, suffix));
    }
    std::fs::write(&db.path, &backup).expect("copy the backup in place");
    let answered_at_swap = load.answered.load(Ordering::Relaxed);
    // Calls already past their audit commit may still be answered; new
    // ones are not.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let settled = load.answered.load(Ordering::Relaxed);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let total = load.finish().await;
    assert!(settled - answered_at_swap <= 4, "answered after the swap");
    assert_eq!(total, settled, "calls answered from the replaced file");
    assert_refusing(&server).await;

    // The new file: never written to, not paired with anything.
    assert_eq!(std::fs::read(&db.path).expect("read"), backup, "written to");
    assert!(!companion(&db.path, "-wal").exists(), "a WAL was created");
    let server = Arc::into_inner(server).expect("load finished");
    server.stop().await;
    assert_eq!(std::fs::read(&db.path).expect("read"), backup, "written to");
    assert_eq!(integrity(&db.path), "ok");
    assert_eq!(audit_count(&read_only(&db.path)), 0);
}

#[tokio::test]
async fn a_file_renamed_over_the_live_one_is_not_paired_with_its_wal() {
    let db = TempDb::seeded();
    let replacement = db.path.with_extension("repl");
    std::fs::copy(&db.path, &replacement).expect("copy the seeded file");
    let server = Arc::new(Server::start_on(db.share(), FLAGS).await);
    let load = Load::start(&server, 2);
    load.wait_for(30).await;
    // Calls only read the directory (the audit trail has its own file):
    // a write, as an import or a catalogue change makes, fills its WAL.
    let writer = Connection::open(&db.path).expect("open the live file");
    writer
        .execute_batch("UPDATE employees SET phone = phone")
        .expect("write to the live file");
    drop(writer);
    let wal = companion(&db.path, "-wal");
    assert!(
        std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0) > 0,
        "the old file has a WAL"
    );
    let expected = std::fs::read(&replacement).expect("read");
    std::fs::rename(&replacement, &db.path).expect("mv repl.db live.db");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let settled = load.answered.load(Ordering::Relaxed);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(load.finish().await, settled, "answered after the swap");
    assert_refusing(&server).await;
    // The old WAL is not left where the new file would pick it up.
    assert!(!wal.exists(), "the old WAL still sits next to the new file");

    let server = Arc::into_inner(server).expect("load finished");
    server.stop().await;
    assert_eq!(
        std::fs::read(&db.path).expect("read"),
        expected,
        "written to"
    );
    // Opened normally (as the next server would): sound, no foreign rows.
    let conn = Connection::open(&db.path).expect("open the new file");
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(check, "ok");
    assert_eq!(audit_count(&conn), 0);
    drop(conn);
    for leftover in std::fs::read_dir(db.path.parent().expect("dir")).expect("ls") {
        let path = leftover.expect("entry").path();
        if path.to_string_lossy().contains(".replaced-") {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn cli(args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("run the binary");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test]
async fn backup_and_restore_while_serving_keep_the_audit_trail() {
    let db = TempDb::seeded();
    let url = db.url();
    let server = Server::start_on(db.share(), FLAGS).await;
    let before = server
        .call_tool(
            "get-employee-details",
            json!({"employeeId": "AliceJohnson"}),
        )
        .await;
    let name = before["structuredContent"]["firstName"].clone();
    assert!(name.is_string(), "{before}");

    let out = db.path.with_extension("bak");
    let out_text = out.display().to_string();
    let (ok, text) = cli(&["backup", "--database", &url, "--out", &out_text]);
    assert!(ok, "{text}");
    // The audit trail's own file is copied beside the backup.
    let trail = common::audit_trail_file(&out);
    assert!(text.contains("backed up the audit trail"), "{text}");
    let copied: i64 = Connection::open(&trail)
        .and_then(|c| c.query_row("SELECT count(*) FROM audit_log", [], |r| r.get(0)))
        .expect("read the trail's backup");
    assert!(copied > 0, "the trail's backup is empty");
    let (ok, text) = cli(&["backup", "--database", &url, "--out", &out_text]);
    assert!(!ok && text.contains("already exists"), "{text}");

    // The live directory changes after the backup, and the change is
    // served (and cached).
    {
        let conn = Connection::open(&db.path).expect("open the live file");
        conn.execute(
            "UPDATE employees SET first_name = 'Alicia' WHERE id = 'AliceJohnson'",
            [],
        )
        .expect("edit the live file");
    }
    let edited = server
        .call_tool(
            "get-employee-details",
            json!({"employeeId": "AliceJohnson"}),
        )
        .await;
    assert_ne!(edited["structuredContent"]["firstName"], name, "{edited}");
    let audited = audit_rows(&db, &[]).len();

    let (ok, text) = cli(&["restore", "--database", &url, "--from", &out_text]);
    assert!(ok, "{text}");
    assert!(
        text.contains("employees") && text.contains("audit_log kept"),
        "{text}"
    );
    // Answers come from the backup again (no stale cached answer).
    let restored = server
        .call_tool(
            "get-employee-details",
            json!({"employeeId": "AliceJohnson"}),
        )
        .await;
    assert_eq!(
        restored["structuredContent"]["firstName"], name,
        "{restored}"
    );
    server.assert_alive().await;
    // The audit rows of before the restore are all still there, and
    // the calls since were added.
    let rows = audit_rows(&db, &["--limit", "1000"]);
    assert!(
        rows.len() > audited,
        "{} rows, {audited} before",
        rows.len()
    );
    assert_eq!(readyz(&server).await.0, 200);

    let (ok, text) = cli(&[
        "restore",
        "--database",
        "postgres://u@h/db",
        "--from",
        &out_text,
    ]);
    assert!(!ok && text.contains("pg_dump"), "{text}");
    let foreign = db.path.with_extension("foreign");
    Connection::open(&foreign)
        .and_then(|c| c.execute_batch("CREATE TABLE notes (body TEXT)"))
        .expect("create a foreign database");
    let foreign_text = foreign.display().to_string();
    let (ok, text) = cli(&["restore", "--database", &url, "--from", &foreign_text]);
    assert!(!ok && text.contains("not an employee directory"), "{text}");
    for file in [&out, &foreign, &trail] {
        let _ = std::fs::remove_file(file);
    }
}

/// A backup taken before the catalogue had approval columns restores: the
/// catalogue rows come back, the missing columns take their defaults.
#[test]
fn a_backup_from_before_approvals_restores_its_catalogue() {
    let db = TempDb::seeded();
    let url = db.url();
    let (ok, text) = cli(&["tools", "disable", "get-team-members", "--database", &url]);
    assert!(ok, "{text}");
    let out = db.path.with_extension("old.bak");
    let out_text = out.display().to_string();
    let (ok, text) = cli(&["backup", "--database", &url, "--out", &out_text]);
    assert!(ok, "{text}");
    Connection::open(&out)
        .and_then(|c| {
            c.execute_batch(
                "ALTER TABLE tool_catalog DROP COLUMN approval;
                 ALTER TABLE tool_catalog DROP COLUMN approval_version;",
            )
        })
        .expect("make the backup look older");
    let (ok, text) = cli(&["tools", "enable", "get-team-members", "--database", &url]);
    assert!(ok, "{text}");
    let (ok, text) = cli(&["restore", "--database", &url, "--from", &out_text]);
    assert!(ok, "{text}");
    let (ok, text) = cli(&["tools", "list", "--json", "--database", &url]);
    assert!(ok, "{text}");
    let row: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["name"] == "get-team-members")
        .expect("the tool is listed");
    assert_eq!(row["enabled"], false, "{row}");
    assert_eq!(row["approval_override"], Value::Null, "{row}");
    for file in [out.clone(), common::audit_trail_file(&out)] {
        let _ = std::fs::remove_file(file);
    }
}
