//! Spreadsheets in and out of `import` / `export`, on SQLite and
//! PostgreSQL: workbooks built per entity (two of them converted to ODS by
//! gnumeric) import as the CSV files do; the
//! XLSX export (and its ODS conversion by gnumeric's `ssconvert`) imports
//! back as a replace that changes nothing; bad cells, unknown sheets and
//! an oversized workbook are refused with exact messages.

use std::path::{Path, PathBuf};
use std::process::Command;

use rust_xlsxwriter::{ExcelDateTime, Format, Workbook};

use crate::common::{Backend, TempDb, pg, temp_path};
use crate::exchange::{contents, csv_row, export, import, ok};

/// The phone planted on the first employee: a leading zero a number cell
/// would lose.
const PHONE: &str = "0612345678";

/// A database with nothing in it yet on `backend` (import creates it).
fn fresh(backend: Backend) -> TempDb {
    match backend {
        Backend::Sqlite => TempDb::empty(),
        Backend::Postgres => TempDb::postgres_at(&pg::fresh_database()),
    }
}

/// A CSV cell as the value it stands for (the export's `'` guard removed).
fn unguard(cell: &str) -> &str {
    match cell.strip_prefix('\'') {
        Some(rest) if rest.starts_with(['=', '+', '-', '@', '\t', '\r', '\'']) => rest,
        _ => cell,
    }
}

/// Writes `rows` (header first) as a one-sheet workbook: dates as date
/// cells, numbers as numbers, everything else (the phone too) as text.
fn workbook(path: &Path, sheet: &str, rows: &[Vec<String>]) {
    let mut book = Workbook::new();
    let ws = book.add_worksheet();
    ws.set_name(sheet).expect("sheet name");
    let date_format = Format::new().set_num_format("dd/mm/yyyy");
    for (r, row) in rows.iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            let (r, c) = (r as u32, c as u16);
            let cell = unguard(cell);
            if cell.is_empty() {
                continue;
            }
            let date = chrono::NaiveDate::parse_from_str(cell, "%Y-%m-%d").ok();
            let number = cell.parse::<f64>().ok().filter(|n| n.to_string() == cell);
            if let (Some(d), true) = (date, cell.len() == 10) {
                use chrono::Datelike;
                let d = ExcelDateTime::from_ymd(d.year() as u16, d.month() as u8, d.day() as u8)
                    .expect("date");
                ws.write_datetime_with_format(r, c, d, &date_format)
                    .expect("write");
            } else if let Some(n) = number {
                ws.write_number(r, c, n).expect("write");
            } else {
                ws.write_string(r, c, cell).expect("write");
            }
        }
    }
    book.save(path).expect("save workbook");
}

/// Sets the first employee's phone to [`PHONE`] in `dir`'s employees.csv.
fn plant_phone(dir: &Path) {
    let path = dir.join("employees.csv");
    let mut table = csv_row::read(&path);
    let phone = table[0].iter().position(|c| c == "phone").expect("phone");
    table[1][phone] = PHONE.to_string();
    csv_row::write(&path, &table);
}

/// A workbook per entity file of `csv_dir`, in a new folder.
fn workbooks_of(csv_dir: &Path) -> PathBuf {
    let dir = temp_path("sheets", "d");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for (file, _) in contents(csv_dir) {
        let Some(entity) = file.strip_suffix(".csv") else {
            continue;
        };
        let rows = csv_row::read(&csv_dir.join(&file));
        workbook(&dir.join(format!("{entity}.xlsx")), entity, &rows);
    }
    dir
}

fn export_as(db: &TempDb, format: &str) -> PathBuf {
    let dir = temp_path("export", "d");
    let out = dir.to_string_lossy().into_owned();
    ok(&[
        "export",
        "--database",
        &db.url(),
        "--out",
        &out,
        "--format",
        format,
    ]);
    dir
}

async fn workbooks_import_as_csv_does(backend: Backend) {
    let db = TempDb::seeded_on(backend);
    let csv_dir = export(&db);
    plant_phone(&csv_dir);
    let sheets = workbooks_of(&csv_dir);
    // Two entities as ODS, converted by gnumeric (strict ODF for one).
    for (entity, exporter) in [
        ("employees", "Gnumeric_OpenCalc:openoffice"),
        ("teams", "Gnumeric_OpenCalc:odf"),
    ] {
        let xlsx = sheets.join(format!("{entity}.xlsx"));
        let ods = sheets.join(format!("{entity}.ods"));
        ssconvert(&[
            "-T",
            exporter,
            &xlsx.to_string_lossy(),
            &ods.to_string_lossy(),
        ]);
        std::fs::remove_file(&xlsx).expect("remove the XLSX");
    }
    let target = fresh(backend);
    // No --format: a folder of workbooks and no CSV is read as XLSX.
    let (success, out, err) = import(&target, &sheets, &[]);
    assert!(success, "{err}");
    assert!(out.contains("imported (merge mode, 10 files)"), "{out}");
    assert_eq!(contents(&export(&target)), contents(&csv_dir));
    if let Some(url) = &target.postgres {
        pg::drop_database(url);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn workbooks_per_entity_import_as_csv_does_on_sqlite() {
    workbooks_import_as_csv_does(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn workbooks_per_entity_import_as_csv_does_on_postgres() {
    workbooks_import_as_csv_does(Backend::Postgres).await;
}

/// Runs gnumeric's converter; CI installs it (.ci/run).
fn ssconvert(args: &[&str]) {
    let out = Command::new("ssconvert")
        .args(args)
        .output()
        .expect("ssconvert (gnumeric) is needed: apt-get install gnumeric");
    assert!(
        out.status.success(),
        "ssconvert {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn assert_no_change(db: &TempDb, path: &Path) {
    let (success, out, err) = import(db, path, &["--mode", "replace"]);
    assert!(success, "{}: {err}", path.display());
    assert!(
        out.contains("nothing to import (replace mode, 10 files)"),
        "{}: {out}",
        path.display()
    );
}

async fn the_xlsx_export_imports_back_unchanged(backend: Backend) {
    let db = TempDb::seeded_on(backend);
    let before = contents(&export(&db));
    let dir = export_as(&db, "xlsx");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .expect("read export")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["directory.xlsx"]);
    let book = dir.join("directory.xlsx");
    assert_no_change(&db, &book);

    let ods = dir.join("directory.ods");
    ssconvert(&[&book.to_string_lossy(), &ods.to_string_lossy()]);
    // gnumeric writes ODS indented: the reader gets it without whitespace.
    assert_no_change(&db, &ods);
    let csv = dir.join("sheet.csv");
    ssconvert(&["-S", &book.to_string_lossy(), &csv.to_string_lossy()]);
    let sheets = std::fs::read_dir(&dir)
        .expect("read export")
        .filter(|e| {
            let name = e.as_ref().map(|e| e.file_name()).unwrap_or_default();
            name.to_string_lossy().starts_with("sheet.csv")
        })
        .count();
    assert_eq!(sheets, 10, "one CSV per sheet");
    assert_eq!(contents(&export(&db)), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_xlsx_export_imports_back_unchanged_on_sqlite() {
    the_xlsx_export_imports_back_unchanged(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_xlsx_export_imports_back_unchanged_on_postgres() {
    the_xlsx_export_imports_back_unchanged(Backend::Postgres).await;
}

/// Imports `path` with `extra`: refused with `expected` in the message,
/// and the database unchanged.
fn refused(db: &TempDb, path: &Path, extra: &[&str], expected: &str) {
    let before = contents(&export(db));
    let (success, _, err) = import(db, path, extra);
    assert!(!success, "{} was imported", path.display());
    assert!(err.contains(expected), "expected {expected:?}, got:\n{err}");
    assert_eq!(
        contents(&export(db)),
        before,
        "a refused import changed data"
    );
}

async fn bad_workbooks_are_refused(backend: Backend) {
    let db = TempDb::seeded_on(backend);
    let csv_dir = export(&db);
    let rows = csv_row::read(&csv_dir.join("employees.csv"));
    let dir = temp_path("bad-sheets", "d");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let start = rows[0].iter().position(|c| c == "startDate").expect("col");

    // A text that is no date in a date column.
    let mut bad = rows[..3].to_vec();
    bad[2][start] = "soon".to_string();
    let path = dir.join("employees.xlsx");
    workbook(&path, "employees", &bad);
    refused(
        &db,
        &dir,
        &["--format", "xlsx"],
        "employees.xlsx:3: column startDate:",
    );

    // An error cell (a formula dividing by zero, its cached value #DIV/0!).
    let mut book = Workbook::new();
    let ws = book.add_worksheet();
    ws.set_name("employees").expect("name");
    for (r, row) in rows[..3].iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            ws.write_string(r as u32, c as u16, unguard(cell))
                .expect("write");
        }
    }
    let formula = rust_xlsxwriter::Formula::new("=1/0").set_result("#DIV/0!");
    ws.write_formula(2, start as u16, formula).expect("formula");
    book.save(&path).expect("save");
    refused(
        &db,
        &dir,
        &["--format", "xlsx"],
        "employees.xlsx:3: column startDate: the cell holds the error #DIV/0!; \
         fix the formula or type the value",
    );

    // Over --max-workbook-bytes: refused before it is opened.
    refused(
        &db,
        &dir,
        &["--format", "xlsx", "--max-workbook-bytes", "100"],
        "employees.xlsx: the workbook is",
    );
    refused(
        &db,
        &dir,
        &["--format", "xlsx", "--max-workbook-bytes", "100"],
        "more than --max-workbook-bytes 100; raise the limit",
    );

    // One workbook with a sheet of an unknown name.
    let company = dir.join("company.xlsx");
    workbook(&company, "staff", &rows[..3]);
    refused(
        &db,
        &company,
        &[],
        "company.xlsx[staff]: unknown sheet; sheets are named locations, departments, teams,",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_workbooks_are_refused_on_sqlite() {
    bad_workbooks_are_refused(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_workbooks_are_refused_on_postgres() {
    bad_workbooks_are_refused(Backend::Postgres).await;
}
