//! Bring your own directory: export the directory's HR data as one file per
//! entity (CSV or JSON Lines, columns in the tools' vocabulary) and import
//! such files, validated before anything changes and applied in one
//! transaction, on SQLite and PostgreSQL. The audit trail is not part of
//! either. The format is described by [`spec`] and in docs/import.md.
//!
//! An import reads its files three times, streamed: the keys of referenced
//! entities, then every row for validation, then every row into staging
//! tables from which set-based statements count and apply the changes. Only
//! keys are held in memory.

mod book;
mod date;
mod formula;
mod history;
mod ods;
mod postgres;
mod problems;
mod read;
mod repeats;
mod sheet;
pub mod spec;
mod sql;
mod sqlite;
mod staged;
mod validate;
mod value;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

pub use date::check_format as check_date_format;
pub use formula::guard as guard_formula;
pub use history::ImportRecord;
pub use problems::{MAX_REPORTED, Problem, Problems};
pub use sheet::DEFAULT_MAX_WORKBOOK_BYTES;

use crate::{DatabaseUrl, Directory, DirectoryError, DirectoryOptions, SystemClock};

/// Default for [`ImportOptions::max_row_bytes`].
pub const DEFAULT_MAX_ROW_BYTES: usize = 64 * 1024;

/// File format of an export or import.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// CSV (RFC 4180) with a header row, UTF-8: `ENTITY.csv`.
    Csv,
    /// JSON Lines, one object per row: `ENTITY.jsonl`.
    Jsonl,
    /// Spreadsheets: import reads `ENTITY.xlsx` or `ENTITY.ods` (first
    /// sheet) or one workbook with a sheet per entity; export writes one
    /// workbook, [`WORKBOOK`], with a sheet per entity.
    Xlsx,
}

/// The workbook an XLSX export writes in `--out`.
pub const WORKBOOK: &str = "directory.xlsx";

impl Format {
    /// The file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Jsonl => "jsonl",
            Format::Xlsx => "xlsx",
        }
    }
}

/// What an import does with rows the files do not mention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Insert or update by id; other rows are untouched.
    Merge,
    /// Entities with a file become exactly the file; employees that
    /// disappear are removed with their skills, history and leave.
    Replace,
}

impl Mode {
    /// `merge` or `replace`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Merge => "merge",
            Mode::Replace => "replace",
        }
    }
}

/// What to import and how.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The directory holding the entity files, or one workbook (`.xlsx`,
    /// `.ods`) with a sheet per entity.
    pub dir: PathBuf,
    /// Their format.
    pub format: Format,
    /// Merge or replace.
    pub mode: Mode,
    /// Validate and count, change nothing.
    pub dry_run: bool,
    /// Longest row accepted, in bytes.
    pub max_row_bytes: usize,
    /// Who imports, for the history.
    pub actor: String,
    /// CSV field separator (`b','`, `b';'` or `b'\t'`); `None`: detected
    /// from the header row (comma unless the header reads as `;` or TAB).
    pub delimiter: Option<u8>,
    /// A chrono format (`%d/%m/%Y`) for dates that are not `YYYY-MM-DD`
    /// (nor `YYYY/MM/DD`, `YYYY.MM.DD`); checked with [`check_date_format`].
    pub date_format: Option<String>,
    /// Largest workbook read, in bytes (a workbook is loaded whole).
    pub max_workbook_bytes: u64,
}

/// Changes to one entity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EntityCounts {
    /// Entity name (`employees`).
    pub entity: &'static str,
    /// Rows inserted.
    pub added: u64,
    /// Rows whose values changed.
    pub updated: u64,
    /// Rows in the files identical to the database's.
    pub unchanged: u64,
    /// Rows deleted (replace mode, or going with a removed employee).
    pub removed: u64,
}

/// One imported file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDigest {
    /// File name.
    pub file: String,
    /// Rows read.
    pub rows: u64,
    /// SHA-256 of its bytes, hex.
    pub sha256: String,
}

/// The outcome of an import (or of a dry run: what it would change).
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    /// Merge or replace.
    pub mode: Mode,
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// Per entity touched, in apply order.
    pub counts: Vec<EntityCounts>,
    /// The files read.
    pub files: Vec<FileDigest>,
}

impl ImportReport {
    /// Whether the import adds, updates or removes any row (an import
    /// whose files equal the database changes nothing and is not recorded).
    pub fn changes(&self) -> bool {
        self.counts
            .iter()
            .any(|c| c.added + c.updated + c.removed > 0)
    }
}

/// Why an export or import failed. Nothing was changed by a failed import.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// The files have problems; none was applied.
    #[error("{} problem(s) found; nothing was imported", .0.total)]
    Invalid(Problems),
    /// The import directory is missing.
    #[error("{} is not a directory", .0.display())]
    NoDirectory(PathBuf),
    /// The import directory has no entity file.
    #[error(
        "no entity file in {dir} (expected files such as employees.{extension}; see docs/import.md)"
    )]
    NoFiles {
        /// Where we looked.
        dir: PathBuf,
        /// Which extension.
        extension: &'static str,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file changed between validation and apply.
    #[error("{0} changed while it was being imported; nothing was imported, run the import again")]
    Changed(String),
    /// The database refused or failed.
    #[error(transparent)]
    Directory(#[from] DirectoryError),
    /// The database refused the change (a rule the validation does not
    /// cover, such as a name used twice).
    #[error("the database refused the import, nothing was imported: {0}")]
    Refused(String),
    /// A sheet would hold more rows than a spreadsheet can.
    #[error(
        "the {sheet} sheet would hold more than {max} rows (header included), more than a spreadsheet can hold; export with --format csv or --format jsonl"
    )]
    TooManyRows {
        /// The entity.
        sheet: &'static str,
        /// The rows a sheet holds.
        max: u32,
    },
    /// An option cannot be used (e.g. a date format naming no day).
    #[error("{0}")]
    InvalidOption(String),
    /// `sqlite::memory:` cannot be imported into or exported from.
    #[error("{0} names no database file; import and export need sqlite://PATH or postgres://…")]
    NotAFile(String),
}

impl ExchangeError {
    fn io(path: &Path, source: std::io::Error) -> ExchangeError {
        ExchangeError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn csv(path: &Path, e: csv::Error) -> ExchangeError {
        ExchangeError::io(path, std::io::Error::other(e))
    }
}

/// Where the database is.
enum Target {
    Sqlite(PathBuf),
    Postgres(String),
}

fn target(url: &str) -> Result<Target, ExchangeError> {
    match DatabaseUrl::parse(url)? {
        DatabaseUrl::Sqlite { path, .. } => Ok(Target::Sqlite(path)),
        DatabaseUrl::Memory => Err(ExchangeError::NotAFile(url.to_string())),
        DatabaseUrl::Postgres(url) => Ok(Target::Postgres(url)),
    }
}

/// What a database that does not exist yet is created with.
#[derive(Clone, Copy, Debug)]
enum Fill {
    /// Nothing: an import fills it.
    Empty,
    /// The demo company (of this many people; `None`: the default demo).
    Demo(Option<u32>),
}

/// Creates and migrates the database if needed, filled as `fill` says.
async fn prepare(url: &str, fill: Fill) -> Result<(), ExchangeError> {
    let (demo_data, demo_employees) = match fill {
        Fill::Empty => (false, None),
        Fill::Demo(n) => (true, n),
    };
    let options = DirectoryOptions {
        demo_data,
        demo_employees,
        cache_bytes: 0,
        ..DirectoryOptions::default()
    };
    Directory::open_with(url, Arc::new(SystemClock), options).await?;
    Ok(())
}

/// Writes every entity of the directory at `url` into `dir` (created if
/// missing), one file per entity; returns the rows written per entity. A
/// database that does not exist yet is created as the server would (with
/// the demo company of `demo_employees` people, default the ~1,400-person
/// demo), so a new user can start from the demo's files and a benchmark
/// can write a company of any size.
pub async fn export(
    url: &str,
    dir: &Path,
    format: Format,
    demo_employees: Option<u32>,
) -> Result<Vec<(&'static str, u64)>, ExchangeError> {
    let target = target(url)?;
    // Only a database that does not exist yet gets the demo: an existing
    // one (e.g. created empty by an import that was refused) is the user's.
    let fill = match &target {
        Target::Sqlite(path) if path.exists() => Fill::Empty,
        _ => Fill::Demo(demo_employees),
    };
    prepare(url, fill).await?;
    std::fs::create_dir_all(dir).map_err(|e| ExchangeError::io(dir, e))?;
    match target {
        Target::Sqlite(path) => {
            let dir = dir.to_path_buf();
            tokio::task::spawn_blocking(move || sqlite::export(&path, &dir, format))
                .await
                .map_err(DirectoryError::from)?
        }
        Target::Postgres(url) => postgres::export(&url, dir, format).await,
    }
}

/// Imports the files of `options.dir` into the directory at `url` (created
/// empty and migrated if it does not exist).
pub async fn import(url: &str, options: &ImportOptions) -> Result<ImportReport, ExchangeError> {
    let target = target(url)?;
    if let Some(format) = &options.date_format {
        date::check_format(format).map_err(ExchangeError::InvalidOption)?;
    }
    let sources = read::sources(&options.dir, options.format, options.max_workbook_bytes)?;
    prepare(url, Fill::Empty).await?;
    match target {
        Target::Sqlite(path) => {
            let options = options.clone();
            tokio::task::spawn_blocking(move || sqlite::import(&path, &sources, &options))
                .await
                .map_err(DirectoryError::from)?
        }
        Target::Postgres(url) => postgres::import(&url, &sources, options).await,
    }
}

/// The newest `limit` imports recorded in the database, oldest first.
pub async fn history(url: &str, limit: u32) -> Result<Vec<ImportRecord>, ExchangeError> {
    match target(url)? {
        Target::Sqlite(path) => tokio::task::spawn_blocking(move || sqlite::history(&path, limit))
            .await
            .map_err(DirectoryError::from)?,
        Target::Postgres(url) => postgres::history(&url, limit).await,
    }
}

/// The rows each entity has in the database now, in [`spec::ENTITIES`]
/// order (empty for a file no server has created yet).
pub async fn row_counts(url: &str) -> Result<Vec<(&'static str, i64)>, ExchangeError> {
    let counts = match target(url)? {
        Target::Sqlite(path) => tokio::task::spawn_blocking(move || sqlite::row_counts(&path))
            .await
            .map_err(DirectoryError::from)??,
        Target::Postgres(url) => postgres::row_counts(&url).await?,
    };
    Ok(spec::ENTITIES.iter().map(|e| e.name).zip(counts).collect())
}

/// One statement counting every entity's table, the same on both backends.
fn row_counts_sql() -> String {
    let each: Vec<String> = spec::ENTITIES
        .iter()
        .map(|e| format!("(SELECT COUNT(*) FROM {})", e.table))
        .collect();
    format!("SELECT {}", each.join(", "))
}

/// Files with their rows and digests, from validation.
fn digests(sources: &[read::Source], checked: &validate::Checked) -> Vec<FileDigest> {
    sources
        .iter()
        .zip(&checked.files)
        .map(|(s, (rows, sha256))| FileDigest {
            file: s.file.clone(),
            rows: *rows,
            sha256: sha256.clone(),
        })
        .collect()
}

/// The entities of `sources`, in apply order.
fn entities(sources: &[read::Source]) -> Vec<&'static spec::Entity> {
    sources.iter().map(|s| s.entity).collect()
}

/// Adds `n` removed rows to `entity`'s counts.
fn add_removed(counts: &mut Vec<EntityCounts>, entity: &'static str, n: u64) {
    match counts.iter_mut().find(|c| c.entity == entity) {
        Some(c) => c.removed += n,
        None => counts.push(EntityCounts {
            entity,
            removed: n,
            ..EntityCounts::default()
        }),
    }
}
