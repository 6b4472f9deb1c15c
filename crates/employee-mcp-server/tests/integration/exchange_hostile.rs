//! Import of the files an HR team really brings: names that are not
//! regular files (a FIFO, a link to /dev/zero, a directory), control
//! characters, a JSON key written twice, CRLF line numbers, `;` and TAB
//! separated CSV, and dates as spreadsheets write them. Each refusal is
//! checked to the exact message, with the database unchanged.

use std::path::{Path, PathBuf};

use crate::common::{TempDb, temp_path};
use crate::exchange::{cli, contents, csv_row, export, import, rows};

/// A new, empty folder.
fn folder(name: &str) -> PathBuf {
    let dir = temp_path(name, "d");
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir
}

/// The header and first `n` rows of the demo's employees.
fn employees(db: &TempDb, n: usize) -> Vec<Vec<String>> {
    rows(&export(db), "employees.csv")
        .into_iter()
        .take(n + 1)
        .collect()
}

/// Writes `rows` as CSV separated by `sep`, lines ended by `end`.
fn write_csv(path: &Path, rows: &[Vec<String>], sep: &str, end: &str) {
    let quote = |c: &String| {
        if c.contains([',', ';', '\t', '"', '\n', '\r']) {
            format!("\"{}\"", c.replace('"', "\"\""))
        } else {
            c.clone()
        }
    };
    let text: String = rows
        .iter()
        .map(|r| r.iter().map(quote).collect::<Vec<_>>().join(sep) + end)
        .collect();
    std::fs::write(path, text).expect("write csv");
}

/// Imports `dir` with `extra` flags, expecting a refusal with `expected`
/// as one line of stderr and the database exactly as before.
fn refused(db: &TempDb, dir: &Path, extra: &[&str], expected: &str) {
    let before = contents(&export(db));
    let (success, out, err) = import(db, dir, extra);
    assert!(!success, "accepted: {out}");
    assert!(
        err.lines().any(|l| l == expected),
        "wanted {expected:?} in:\n{err}"
    );
    let last = err
        .trim_end()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(last.contains("nothing was imported"), "{err}");
    assert_eq!(contents(&export(db)), before, "the database changed");
}

/// Imports `dir`, expecting success; stdout.
fn accepted(db: &TempDb, dir: &Path, extra: &[&str]) -> String {
    let (success, out, err) = import(db, dir, extra);
    assert!(success, "refused: {err}");
    out
}

/// The exported employee row whose id is `id`.
fn employee(db: &TempDb, id: &str) -> Vec<String> {
    rows(&export(db), "employees.csv")
        .into_iter()
        .find(|r| r[0] == id)
        .expect("employee exported")
}

#[test]
fn a_fifo_named_employees_csv_is_refused_not_skipped() {
    let db = TempDb::seeded();
    let dir = folder("fifo");
    // A valid skills.csv beside it: replace mode would otherwise import
    // skills and take the unreadable employees for "no file".
    std::fs::copy(export(&db).join("skills.csv"), dir.join("skills.csv")).expect("copy");
    let fifo = dir.join("employees.csv");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    refused(
        &db,
        &dir,
        &["--mode", "replace"],
        "employees.csv: not a regular file (a FIFO); name a regular file or remove it",
    );
}

#[test]
fn a_link_to_dev_zero_is_refused_and_a_link_to_a_file_is_read() {
    let db = TempDb::seeded();
    let dir = folder("zero");
    std::os::unix::fs::symlink("/dev/zero", dir.join("employees.csv")).expect("symlink");
    refused(
        &db,
        &dir,
        &[],
        "employees.csv: not a regular file (a symbolic link to a character device); name a \
         regular file or remove it",
    );

    let linked = folder("linked");
    let source = export(&db).join("employees.csv");
    std::os::unix::fs::symlink(&source, linked.join("employees.csv")).expect("symlink");
    let out = accepted(&db, &linked, &["--dry-run"]);
    assert!(
        out.contains("employees: 0 added, 0 updated, 1407 unchanged"),
        "{out}"
    );
}

#[test]
fn a_directory_named_employees_csv_is_refused() {
    let db = TempDb::seeded();
    let dir = folder("dir");
    std::fs::create_dir(dir.join("employees.csv")).expect("mkdir");
    refused(
        &db,
        &dir,
        &[],
        "employees.csv: not a regular file (a directory); name a regular file or remove it",
    );
}

#[test]
fn a_nul_in_a_first_name_is_refused() {
    let db = TempDb::seeded();
    let mut people = employees(&db, 3);
    people[1][1] = "Ai\0sha".into();
    let dir = folder("nul");
    csv_row::write(&dir.join("employees.csv"), &people);
    refused(
        &db,
        &dir,
        &[],
        "employees.csv:2: column firstName: contains the control character U+0000 (NUL) at \
         character 3; remove it (a broken export or a binary file?)",
    );
}

#[test]
fn control_characters_and_line_breaks_outside_descriptions_are_refused() {
    let db = TempDb::seeded();
    let mut people = employees(&db, 3);
    people[2][2] = "And\u{1b}erson".into();
    people[3][4] = "+1-555\n0100".into();
    let dir = folder("control");
    csv_row::write(&dir.join("employees.csv"), &people);
    refused(
        &db,
        &dir,
        &[],
        "employees.csv:3: column lastName: contains the control character U+001B (ESC) at \
         character 4; remove it (a broken export or a binary file?)",
    );
    refused(
        &db,
        &dir,
        &[],
        "employees.csv:4: column phone: contains a line break (U+000A) at character 7; this \
         column holds one line: remove the line break (only descriptions may span lines)",
    );

    // A description may span lines.
    let teams = folder("description");
    let mut rows = rows(&export(&db), "teams.csv");
    rows.truncate(2);
    rows[1][3] = "Builds things.\r\nAnd fixes them.".into();
    write_csv(&teams.join("teams.csv"), &rows, ",", "\r\n");
    let out = accepted(&db, &teams, &[]);
    assert!(out.contains("teams: 0 added, 1 updated"), "{out}");
}

#[test]
fn a_json_key_written_twice_is_refused() {
    let db = TempDb::seeded();
    let dir = folder("twice");
    std::fs::write(
        dir.join("skills.jsonl"),
        "{\"skillId\":900,\"name\":\"Knitting\",\"category\":\"Crafts\"}\n\
         {\"skillId\":901,\"name\":\"Weaving\",\"name\":\"Crochet\",\"category\":\"Crafts\"}\n",
    )
    .expect("write");
    refused(
        &db,
        &dir,
        &["--format", "jsonl"],
        "skills.jsonl:2: key \"name\" appears twice",
    );
}

#[test]
fn a_crlf_file_reports_the_line_a_row_is_on() {
    let db = TempDb::seeded();
    let mut people = employees(&db, 12);
    people[10][13] = "2021-02-30".into();
    let dir = folder("crlf");
    let path = dir.join("employees.csv");
    write_csv(&path, &people, ",", "\r\n");
    // As a spreadsheet saves it: with a byte-order mark.
    let mut bytes = b"\xef\xbb\xbf".to_vec();
    bytes.extend(std::fs::read(&path).expect("read"));
    std::fs::write(&path, bytes).expect("write");
    refused(
        &db,
        &dir,
        &[],
        "employees.csv:11: column startDate: \"2021-02-30\" is not a date (YYYY-MM-DD)",
    );
}

/// Writes the first three employees separated by `sep`, the first with a
/// new phone, imports with `extra` and checks the phone landed.
fn imports_separated_by(sep: &str, extra: &[&str]) {
    let db = TempDb::seeded();
    let mut people = employees(&db, 3);
    people[1][4] = "+1-555-0123".into();
    let dir = folder("separated");
    write_csv(&dir.join("employees.csv"), &people, sep, "\n");
    let out = accepted(&db, &dir, extra);
    assert!(
        out.contains("employees: 0 added, 1 updated, 2 unchanged, 0 removed"),
        "{out}"
    );
    // Export writes it behind a `'`: a leading `+` is a formula to a spreadsheet.
    assert_eq!(employee(&db, &people[1][0])[4], "'+1-555-0123");
}

#[test]
fn a_semicolon_file_imports() {
    imports_separated_by(";", &[]);
}

#[test]
fn a_tab_file_imports() {
    imports_separated_by("\t", &[]);
}

#[test]
fn the_delimiter_can_be_forced() {
    imports_separated_by(";", &["--delimiter", ";"]);
    imports_separated_by("\t", &["--delimiter", "tab"]);
    imports_separated_by(",", &["--delimiter", ","]);

    // Forced wrong, the header is one unknown column.
    let db = TempDb::seeded();
    let dir = folder("forced");
    write_csv(&dir.join("employees.csv"), &employees(&db, 2), ";", "\n");
    let (success, _, err) = import(&db, &dir, &["--delimiter", ","]);
    assert!(!success);
    assert!(
        err.contains("employees.csv:1: column employeeId;firstName;"),
        "{err}"
    );

    let (success, _, err) = cli(&["import", "--delimiter", "|", "x"]);
    assert!(!success);
    assert!(
        err.contains("\"|\" is not a separator: use ',', ';' or tab"),
        "{err}"
    );
}

#[test]
fn year_first_dates_with_slashes_or_dots_import() {
    let db = TempDb::seeded();
    let mut people = employees(&db, 3);
    people[1][13] = "2019/03/04".into();
    people[2][13] = people[2][13].replace('-', ".");
    let dir = folder("slashes");
    csv_row::write(&dir.join("employees.csv"), &people);
    let out = accepted(&db, &dir, &[]);
    assert!(
        out.contains("employees: 0 added, 1 updated, 2 unchanged, 0 removed"),
        "{out}"
    );
    assert_eq!(employee(&db, &people[1][0])[13], "2019-03-04");
}

#[test]
fn an_ambiguous_date_is_refused_with_the_fix_and_imports_with_a_format() {
    let db = TempDb::seeded();
    let mut people = employees(&db, 3);
    people[1][13] = "01/02/2025".into();
    let dir = folder("ambiguous");
    csv_row::write(&dir.join("employees.csv"), &people);
    refused(
        &db,
        &dir,
        &[],
        "employees.csv:2: column startDate: \"01/02/2025\" is ambiguous (day/month or \
         month/day?); pass --date-format %d/%m/%Y (or %m/%d/%Y), or format the column as \
         yyyy-mm-dd",
    );
    let out = accepted(&db, &dir, &["--date-format", "%d/%m/%Y"]);
    assert!(out.contains("employees: 0 added, 1 updated"), "{out}");
    assert_eq!(employee(&db, &people[1][0])[13], "2025-02-01");

    let (success, _, err) = cli(&["import", "--date-format", "%d/%m", "x"]);
    assert!(!success);
    assert!(err.contains("does not describe a date"), "{err}");
}
