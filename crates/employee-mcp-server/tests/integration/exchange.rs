//! Bring your own directory: `export` and `import` against the
//! real binary on SQLite files — round trip through every tool, merge and
//! replace counts, dry run, each validation rule with its exact message and
//! nothing changed, an import while a server serves, and the history.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use crate::common::{self, BIN, Server, TIMEOUT, TempDb, temp_path};

/// Runs the binary with `args`: (success, stdout, stderr).
pub(crate) fn cli(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "warn")
        .env_remove("EMPLOYEE_MCP_DATABASE")
        .stdin(Stdio::null())
        .output()
        .expect("run employee-mcp-server");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(crate) fn ok(args: &[&str]) -> String {
    let (success, out, err) = cli(args);
    assert!(success, "{args:?} failed: {err}");
    out
}

pub(crate) fn export(db: &TempDb) -> PathBuf {
    let dir = temp_path("export", "d");
    ok(&[
        "export",
        "--database",
        &db.url(),
        "--out",
        &dir.to_string_lossy(),
    ]);
    dir
}

pub(crate) fn import(db: &TempDb, dir: &Path, extra: &[&str]) -> (bool, String, String) {
    let mut args = vec![
        "import",
        "--database",
        &*db.url().leak(),
        "--actor",
        "tester",
    ];
    args.extend_from_slice(extra);
    let dir = dir.to_string_lossy().into_owned();
    args.push(dir.leak());
    cli(&args)
}

/// Every file of an export, by name: what the database holds.
pub(crate) fn contents(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("read export")
        .map(|e| {
            let e = e.expect("entry");
            let text = std::fs::read_to_string(e.path()).expect("read file");
            (e.file_name().to_string_lossy().into_owned(), text)
        })
        .collect();
    files.sort();
    files
}

pub(crate) fn rows(dir: &Path, file: &str) -> Vec<csv_row::Row> {
    csv_row::read(&dir.join(file))
}

/// A tiny CSV reader for files the export wrote (test side only).
pub(crate) mod csv_row {
    use std::path::Path;

    pub type Row = Vec<String>;

    pub fn read(path: &Path) -> Vec<Row> {
        let text = std::fs::read_to_string(path).expect("read csv");
        text.lines().map(split).collect()
    }

    fn split(line: &str) -> Row {
        let (mut out, mut cell, mut quoted) = (Vec::new(), String::new(), false);
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    chars.next();
                    cell.push('"');
                }
                ('"', _) => quoted = !quoted,
                (',', false) => out.push(std::mem::take(&mut cell)),
                _ => cell.push(c),
            }
        }
        out.push(cell);
        out
    }

    pub fn write(path: &Path, rows: &[Row]) {
        let quote = |c: &String| {
            if c.contains([',', '"', '\n']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.clone()
            }
        };
        let text: String = rows
            .iter()
            .map(|r| r.iter().map(quote).collect::<Vec<_>>().join(",") + "\n")
            .collect();
        std::fs::write(path, text).expect("write csv");
    }
}

/// Full answers of all eight tools over many ids.
async fn answers(server: &Server, dir: &Path) -> Vec<Value> {
    let employees = rows(dir, "employees.csv");
    let mut calls: Vec<(&str, Value)> = Vec::new();
    for e in employees.iter().skip(1).step_by(40) {
        calls.push(("get-employee-details", json!({"employeeId": e[0]})));
        calls.push(("calculate-employee-tenure", json!({"employeeId": e[0]})));
        calls.push((
            "check-leave-balance",
            json!({"employeeId": e[0], "leaveType": "annual"}),
        ));
    }
    for d in rows(dir, "departments.csv").iter().skip(1) {
        calls.push(("list-department-employees", json!({"departmentId": d[0]})));
    }
    for t in rows(dir, "teams.csv").iter().skip(1).step_by(3) {
        calls.push(("get-team-members", json!({"teamId": t[0]})));
    }
    for s in rows(dir, "skills.csv").iter().skip(1).step_by(5) {
        calls.push(("search-employees-by-skill", json!({"skill": s[1]})));
    }
    for r in rows(dir, "roles.csv").iter().skip(1).step_by(5) {
        calls.push((
            "get-compensation-info",
            json!({"role": r[1], "level": "senior"}),
        ));
    }
    for kind in ["headcount", "turnover", "compensation", "salaries"] {
        calls.push(("generate-employee-report", json!({"reportType": kind})));
    }
    let mut out = Vec::new();
    for (tool, args) in calls {
        out.push(
            json!({"call": [tool, args.clone()], "answer": server.call_tool(tool, args).await}),
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_answers_every_tool_the_same() {
    let original = TempDb::seeded();
    let dir = export(&original);
    let copy = TempDb::empty();
    let (success, out, err) = import(&copy, &dir, &[]);
    assert!(success, "{err}");
    assert!(
        out.contains("employees: 1407 added, 0 updated, 0 unchanged, 0 removed"),
        "{out}"
    );
    assert!(
        out.lines()
            .last()
            .unwrap_or_default()
            .starts_with("imported (merge mode, 10 files)")
    );
    // The copy holds exactly the files (and no demo data of its own).
    assert_eq!(contents(&export(&copy)), contents(&dir));
    // Over a hundred calls per tool: lift the per-caller rate limit.
    let lifted = [
        "--rate-limit-burst",
        "100000",
        "--rate-limit-per-minute",
        "100000",
    ];
    common::approvals_off(&copy.url());
    let a = Server::start_on(original.share(), &lifted).await;
    let b = Server::start_on(copy.share(), &lifted).await;
    let (from_a, from_b) = (answers(&a, &dir).await, answers(&b, &dir).await);
    assert!(from_a.len() > 60);
    for (x, y) in from_a.iter().zip(&from_b) {
        assert_eq!(x, y);
    }
}

/// The demo exported from SQLite, imported into an empty PostgreSQL
/// database: the same files come back out, and a server on PostgreSQL
/// answers every tool as the server on the original SQLite file does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_through_postgres_answers_every_tool_the_same() {
    let original = TempDb::seeded();
    let dir = export(&original);
    let url = tokio::task::spawn_blocking(common::pg::fresh_database)
        .await
        .expect("create a database");
    let copy = TempDb::postgres_at(&url);
    let (success, out, err) = import(&copy, &dir, &[]);
    assert!(success, "{err}");
    assert!(
        out.contains("employees: 1407 added, 0 updated, 0 unchanged, 0 removed"),
        "{out}"
    );
    assert_eq!(contents(&export(&copy)), contents(&dir));
    let lifted = [
        "--rate-limit-burst",
        "100000",
        "--rate-limit-per-minute",
        "100000",
    ];
    common::approvals_off(&url);
    let a = Server::start_on(original.share(), &lifted).await;
    let b = Server::start_on_postgres(&url, &lifted).await;
    let (from_a, from_b) = (answers(&a, &dir).await, answers(&b, &dir).await);
    assert!(from_a.len() > 60);
    for (x, y) in from_a.iter().zip(&from_b) {
        assert_eq!(x, y);
    }
    drop(b);
    common::pg::drop_database(&url);
}

/// An import into a cluster's PostgreSQL database reaches every replica:
/// each had the old answer cached, and each answers from the new data
/// (the generation's NOTIFY empties every replica's cache; docs/import.md
/// gives the delay measured, well under a second).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_of_a_cluster_answers_an_import() {
    let cluster = common::cluster::Cluster::start(2, &[]);
    let db = TempDb::postgres_at(&cluster.database);
    let dir = export(&db);
    let mut employees = rows(&dir, "employees.csv");
    let id = employees[1][0].clone();
    let details = |v: &Value| v.to_string().contains("+1-555-9999");
    for replica in &cluster.replicas {
        let before = replica
            .call_tool("get-employee-details", json!({"employeeId": id}))
            .await;
        assert!(!details(&before), "{before}");
    }
    employees[1][4] = "+1-555-9999".into();
    let changed = temp_path("phone-pg", "d");
    std::fs::create_dir_all(&changed).expect("mkdir");
    csv_row::write(&changed.join("employees.csv"), &employees);
    let (success, out, err) = import(&db, &changed, &[]);
    assert!(success, "{err}");
    assert!(out.contains("employees: 0 added, 1 updated"), "{out}");
    let deadline = Instant::now() + TIMEOUT;
    for replica in &cluster.replicas {
        loop {
            let after = replica
                .call_tool("get-employee-details", json!({"employeeId": id}))
                .await;
            if details(&after) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "replica {} never answered the import: {after}",
                replica.addr
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

#[test]
fn merge_replace_and_dry_run_count_and_dry_run_changes_nothing() {
    let db = TempDb::seeded();
    let dir = export(&db);
    let mut employees = rows(&dir, "employees.csv");
    // One raise, one new hire (a copy of a leaf under a new id), three gone.
    let managers: Vec<String> = employees.iter().map(|r| r[9].clone()).collect();
    let leaves: Vec<String> = employees
        .iter()
        .skip(1)
        .filter(|r| r[14] == "terminated" && !managers.contains(&r[0]))
        .map(|r| r[0].clone())
        .take(3)
        .collect();
    employees[1][17] = (employees[1][17].parse::<i64>().expect("salary") + 1000).to_string();
    let mut hire = employees[1].clone();
    hire[0] = "NewHireExample".into();
    hire[3] = "new.hire@example.com".into();
    employees.push(hire);
    employees.retain(|r| !leaves.contains(&r[0]));
    let changed = temp_path("changed", "d");
    std::fs::create_dir_all(&changed).expect("mkdir");
    csv_row::write(&changed.join("employees.csv"), &employees);

    let before = contents(&export(&db));
    let (success, out, _) = import(&db, &changed, &["--mode", "replace", "--dry-run"]);
    assert!(success);
    assert!(
        out.contains("employees: 1 added, 1 updated, 1403 unchanged, 3 removed"),
        "{out}"
    );
    assert!(
        out.lines()
            .last()
            .unwrap_or_default()
            .starts_with("dry run (replace mode, 1 files), nothing changed")
    );
    assert_eq!(
        contents(&export(&db)),
        before,
        "a dry run changed the directory"
    );

    let (success, out, _) = import(&db, &changed, &[]);
    assert!(success);
    assert!(
        out.contains("employees: 1 added, 1 updated, 1403 unchanged, 0 removed"),
        "{out}"
    );
    let (success, out, _) = import(&db, &changed, &["--mode", "replace"]);
    assert!(success);
    assert!(
        out.contains("employees: 0 added, 0 updated, 1405 unchanged, 3 removed"),
        "{out}"
    );
    // Their skills, history and leave went with them.
    assert!(
        out.contains("leave_balances: 0 added, 0 updated, 0 unchanged, 15 removed"),
        "{out}"
    );
    let after = export(&db);
    assert!(
        !std::fs::read_to_string(after.join("leave_balances.csv"))
            .expect("read")
            .contains(&format!("{},", leaves[0]))
    );
}

#[test]
fn a_replace_with_the_files_of_the_database_changes_nothing() {
    let db = TempDb::seeded();
    let dir = export(&db);
    let before = contents(&export(&db));
    let history = |db: &TempDb| ok(&["import", "--database", &db.url(), "--history"]);
    let recorded = history(&db);
    for mode in ["replace", "merge"] {
        let (success, out, err) = import(&db, &dir, &["--mode", mode]);
        assert!(success, "{err}");
        assert!(
            out.contains("employees: 0 added, 0 updated, 1407 unchanged, 0 removed"),
            "{out}"
        );
        assert!(
            out.lines()
                .last()
                .unwrap_or_default()
                .starts_with(&format!("nothing to import ({mode} mode, 10 files)")),
            "{out}"
        );
    }
    assert_eq!(contents(&export(&db)), before);
    assert_eq!(history(&db), recorded, "a no-op import was recorded");
}

/// Writes `employees.csv` = the export's first data rows with `edit`
/// applied, imports it, and checks the exact message and that nothing
/// changed.
fn rejects(edit: impl FnOnce(&mut Vec<Vec<String>>), expected: &str) {
    let db = TempDb::seeded();
    let dir = export(&db);
    let mut employees: Vec<Vec<String>> = rows(&dir, "employees.csv").into_iter().take(4).collect();
    edit(&mut employees);
    let bad = temp_path("bad", "d");
    std::fs::create_dir_all(&bad).expect("mkdir");
    csv_row::write(&bad.join("employees.csv"), &employees);
    let before = contents(&dir);
    let (success, out, err) = import(&db, &bad, &[]);
    assert!(!success, "accepted: {out}");
    assert!(
        err.lines().any(|l| l == expected),
        "wanted {expected:?} in:\n{err}"
    );
    assert!(
        err.trim_end()
            .lines()
            .last()
            .unwrap_or_default()
            .contains("nothing was imported"),
        "{err}"
    );
    assert_eq!(contents(&export(&db)), before);
}

#[test]
fn each_validation_rule_names_file_line_and_column() {
    rejects(
        |r| r[0][6] = "grade".into(),
        "employees.csv:1: column grade: unknown column; employees has employeeId, firstName, lastName, email, phone, roleId, level, departmentId, teamId, managerId, locationId, employmentType, officeType, startDate, status, terminationDate, terminationReason, salary",
    );
    rejects(
        |r| {
            r.iter_mut().for_each(|row| {
                row.remove(3);
            })
        },
        "employees.csv:1: column email: required column is missing from the header",
    );
    rejects(
        |r| r[1][13] = "2021-02-30".into(),
        "employees.csv:2: column startDate: \"2021-02-30\" is not a date (YYYY-MM-DD)",
    );
    rejects(
        |r| r[2][12] = "moon".into(),
        "employees.csv:3: column officeType: \"moon\" is not one of remote, hybrid, on-site",
    );
    rejects(
        |r| r[3][0] = r[1][0].clone(),
        &format!(
            "employees.csv:4: column employeeId: duplicate id {:?} (first on line 2)",
            "aishaanderson"
        ),
    );
    rejects(
        |r| r[1][7] = "atlantis".into(),
        "employees.csv:2: column departmentId: \"atlantis\" names no department (not in the database (and there is no departments.csv))",
    );
    rejects(
        |r| r[1][9] = "NobodyAtAll".into(),
        "employees.csv:2: column managerId: \"NobodyAtAll\" names no employee (neither in employees.csv nor in the database)",
    );
    rejects(
        |r| {
            r[1][9] = r[2][0].clone();
            r[2][9] = r[1][0].clone();
        },
        "employees.csv:2: column managerId: manager cycle: AishaAnderson → AishaJansen → AishaAnderson",
    );
    rejects(
        |r| {
            r[1][14] = "terminated".into();
            r[1][15] = String::new();
        },
        "employees.csv:2: column terminationDate: a terminated employee needs a termination date",
    );
}

#[test]
fn bands_encoding_and_row_length_are_checked() {
    let db = TempDb::seeded();
    let dir = temp_path("bands", "d");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("compensation_bands.csv"),
        "roleId,level,minSalary,midSalary,maxSalary\n1,senior,200,150,100\n",
    )
    .expect("write");
    std::fs::write(
        dir.join("skills.csv"),
        b"skillId,name,category\n900,Caf\xe9,Food\n",
    )
    .expect("write");
    let (success, _, err) = import(&db, &dir, &[]);
    assert!(!success);
    assert!(
        err.contains(
            "compensation_bands.csv:2: column minSalary: band minimum 200 is above its maximum 100"
        ),
        "{err}"
    );
    assert!(
        err.contains("skills.csv:2: column name: not valid UTF-8 (byte 4 of the value)"),
        "{err}"
    );

    let long = temp_path("long", "d");
    std::fs::create_dir_all(&long).expect("mkdir");
    let row = format!("skillId,name,category\n901,{},Long\n", "x".repeat(5000));
    std::fs::write(long.join("skills.csv"), row).expect("write");
    let (success, _, err) = import(&db, &long, &["--max-row-bytes", "1024"]);
    assert!(!success);
    assert!(err.contains("row is longer than 1024 bytes"), "{err}");
    assert_eq!(ok(&["import", "--database", &db.url(), "--history"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serving_server_answers_the_import_and_history_records_it() {
    let db = TempDb::seeded();
    let dir = export(&db);
    let server = Server::start_on(db.share(), &[]).await;
    let mut employees = rows(&dir, "employees.csv");
    let id = employees[1][0].clone();
    let details = |v: &Value| v.to_string().contains("+1-555-9999");
    let before = server
        .call_tool("get-employee-details", json!({"employeeId": id}))
        .await;
    assert!(!details(&before), "{before}");
    employees[1][4] = "+1-555-9999".into();
    let changed = temp_path("phone", "d");
    std::fs::create_dir_all(&changed).expect("mkdir");
    csv_row::write(&changed.join("employees.csv"), &employees);
    let (success, out, err) = import(&db, &changed, &[]);
    assert!(success, "{err}");
    assert!(
        out.contains("employees: 0 added, 1 updated, 1406 unchanged, 0 removed"),
        "{out}"
    );
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let after = server
            .call_tool("get-employee-details", json!({"employeeId": id}))
            .await;
        if details(&after) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server never answered the import: {after}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let history = ok(&["import", "--database", &db.url(), "--history"]);
    let record: Value = serde_json::from_str(history.trim()).expect("one JSON line");
    assert_eq!(record["actor"], "tester");
    assert_eq!(record["mode"], "merge");
    assert_eq!(record["counts"]["employees"]["updated"], 1);
    assert_eq!(record["files"][0]["file"], "employees.csv");
    assert_eq!(
        record["files"][0]["sha256"].as_str().map(str::len),
        Some(64)
    );
}

#[test]
fn no_demo_data_starts_empty() {
    let db = TempDb::empty();
    let dir = temp_path("empty", "d");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("locations.csv"),
        "locationId,city,country\n1,Lisbon,Portugal\n",
    )
    .expect("write");
    let (success, out, err) = import(&db, &dir, &[]);
    assert!(success, "{err}");
    assert!(out.contains("locations: 1 added"), "{out}");
    let back = export(&db);
    assert_eq!(
        std::fs::read_to_string(back.join("employees.csv"))
            .expect("read")
            .lines()
            .count(),
        1
    );
}
