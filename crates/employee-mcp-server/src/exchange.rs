//! The `export` and `import` subcommands: bring your own directory. The
//! work is the library's (`employee_directory::exchange`); this file turns
//! flags into options and results into lines a person or a script reads.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use employee_directory::exchange::{
    self, DEFAULT_MAX_ROW_BYTES, ExchangeError, Format, ImportOptions, ImportReport, Mode,
};

use employee_directory::DEFAULT_DATABASE_URL as DEFAULT_DATABASE;
use employee_directory::DatabaseUrl;

/// File format flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// CSV (RFC 4180) with a header row, UTF-8.
    Csv,
    /// JSON Lines: one object per line.
    Jsonl,
    /// Spreadsheets: export writes one workbook, directory.xlsx, with a
    /// sheet per entity; import reads ENTITY.xlsx or ENTITY.ods.
    Xlsx,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Csv => Format::Csv,
            FormatArg::Jsonl => Format::Jsonl,
            FormatArg::Xlsx => Format::Xlsx,
        }
    }
}

/// Import mode flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Insert or update by id; rows not in the files are untouched.
    Merge,
    /// Each entity with a file becomes exactly the file; employees that
    /// disappeared are removed with their skills, history and leave.
    Replace,
}

/// Flags of `export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Database URL, as given to the server.
    #[arg(long, env = "EMPLOYEE_MCP_DATABASE", default_value = DEFAULT_DATABASE)]
    pub database: DatabaseUrl,

    /// Folder to write the entity files into (created if missing; files of
    /// the same names are replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// File format.
    #[arg(long, value_enum, default_value_t = FormatArg::Csv)]
    pub format: FormatArg,

    /// When the database does not exist yet: create it with a generated
    /// company of exactly N people (as the server's `--demo-employees`)
    /// and export that, e.g. to try an import at a given size. Ignored for
    /// a database that already has directory rows.
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(
            i64::from(employee_directory::MIN_DEMO_EMPLOYEES)..=i64::from(employee_directory::MAX_DEMO_EMPLOYEES)
        )
    )]
    pub demo_employees: Option<u32>,
}

/// Flags of `import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Database URL, as given to the server (created empty, without demo
    /// data, if it does not exist).
    #[arg(long, env = "EMPLOYEE_MCP_DATABASE", default_value = DEFAULT_DATABASE)]
    pub database: DatabaseUrl,

    /// Folder holding the entity files (employees.csv, departments.csv, …;
    /// any subset), or one workbook (.xlsx, .ods) with a sheet per entity.
    #[arg(value_name = "DIR", required_unless_present = "history")]
    pub dir: Option<PathBuf>,

    /// File format (default: csv, or xlsx for a folder that holds entity
    /// workbooks and no entity CSV file).
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,

    /// Largest workbook read, in bytes (a workbook is loaded whole); a
    /// larger one is refused before it is opened.
    #[arg(long, env = "EMPLOYEE_MCP_MAX_WORKBOOK_BYTES",
          default_value_t = exchange::DEFAULT_MAX_WORKBOOK_BYTES)]
    pub max_workbook_bytes: u64,

    /// Merge into the directory or replace it.
    #[arg(long, value_enum, default_value_t = ModeArg::Merge)]
    pub mode: ModeArg,

    /// Validate and print what would change; change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Longest row accepted, in bytes; a longer one is a problem.
    #[arg(long, env = "EMPLOYEE_MCP_MAX_ROW_BYTES", default_value_t = DEFAULT_MAX_ROW_BYTES as u32,
          value_parser = clap::value_parser!(u32).range(64..=16_777_216))]
    pub max_row_bytes: u32,

    /// Who imports, for the history (default: the OS user, from USER or
    /// LOGNAME).
    #[arg(long)]
    pub actor: Option<String>,

    /// List past imports (JSON lines, oldest first) instead of importing.
    #[arg(long, conflicts_with_all = ["dir", "dry_run"])]
    pub history: bool,

    /// With --history: most imports to list (the newest).
    #[arg(long, default_value_t = 50, requires = "history")]
    pub limit: u32,

    /// CSV field separator: `,`, `;` or `tab` (default: read from the
    /// header row, comma unless it reads as `;` or TAB).
    #[arg(long, value_name = "SEP", value_parser = delimiter)]
    pub delimiter: Option<u8>,

    /// How dates that are not year-first are written, as a chrono format
    /// (`%d/%m/%Y`, `%m/%d/%Y`); `YYYY-MM-DD` is read as well.
    #[arg(long, value_name = "FMT", value_parser = date_format)]
    pub date_format: Option<String>,
}

/// Why an `export` or `import` failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The directory's exchange failed.
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
    /// A history record could not be printed as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// `import` without a folder or `--history`.
    #[error("name the folder to import (or pass --history)")]
    NoFolder,
    /// The files did not validate; the first problems were printed.
    #[error("{total} problem(s) in {}; nothing was imported", dir.display())]
    Invalid {
        /// How many problems.
        total: usize,
        /// The folder.
        dir: std::path::PathBuf,
    },
}

/// Parses `--delimiter` (a clap value parser, which speaks `String`).
fn delimiter(text: &str) -> Result<u8, String> {
    match text {
        "," | "comma" => Ok(b','),
        ";" | "semicolon" => Ok(b';'),
        "tab" | "\\t" | "\t" => Ok(b'\t'),
        other => Err(format!("{other:?} is not a separator: use ',', ';' or tab")),
    }
}

/// Checks `--date-format` at startup (a clap value parser).
fn date_format(text: &str) -> Result<String, String> {
    exchange::check_date_format(text).map(|()| text.to_string())
}

/// The `export` subcommand.
pub async fn export(args: &ExportArgs) -> Result<(), Error> {
    let written = exchange::export(
        args.database.as_str(),
        &args.out,
        args.format.into(),
        args.demo_employees,
    )
    .await?;
    let total: u64 = written.iter().map(|(_, n)| n).sum();
    for (entity, n) in &written {
        println!("{entity}: {n} rows");
    }
    match args.format {
        FormatArg::Xlsx => println!(
            "exported {total} rows in {} sheets to {}",
            written.len(),
            args.out.join(exchange::WORKBOOK).display()
        ),
        _ => println!(
            "exported {total} rows in {} files to {}",
            written.len(),
            args.out.display()
        ),
    }
    Ok(())
}

/// The format of a folder imported without `--format`: XLSX when it
/// holds an entity workbook and no entity CSV file, else CSV.
fn guess_format(dir: &std::path::Path) -> Format {
    let has = |extensions: &[&str]| {
        exchange::spec::ENTITIES.iter().any(|entity| {
            extensions
                .iter()
                .any(|ext| dir.join(format!("{}.{ext}", entity.name)).exists())
        })
    };
    if !has(&["csv"]) && has(&["xlsx", "ods"]) {
        Format::Xlsx
    } else {
        Format::Csv
    }
}

/// The `import` subcommand.
pub async fn import(args: &ImportArgs) -> Result<(), Error> {
    if args.history {
        let records = exchange::history(args.database.as_str(), args.limit).await?;
        for r in &records {
            println!("{}", serde_json::to_string(r)?);
        }
        return Ok(());
    }
    let Some(dir) = args.dir.clone() else {
        return Err(Error::NoFolder);
    };
    let format = args.format.map_or_else(|| guess_format(&dir), Format::from);
    let options = ImportOptions {
        dir,
        format,
        mode: match args.mode {
            ModeArg::Merge => Mode::Merge,
            ModeArg::Replace => Mode::Replace,
        },
        dry_run: args.dry_run,
        max_row_bytes: args.max_row_bytes as usize,
        actor: crate::actor::actor(args.actor.as_deref()),
        delimiter: args.delimiter,
        date_format: args.date_format.clone(),
        max_workbook_bytes: args.max_workbook_bytes,
    };
    match exchange::import(args.database.as_str(), &options).await {
        Ok(report) => {
            print_report(&report);
            Ok(())
        }
        Err(ExchangeError::Invalid(problems)) => {
            for p in &problems.first {
                eprintln!("{p}");
            }
            let more = problems.total - problems.first.len();
            if more > 0 {
                eprintln!("… and {more} more problem(s)");
            }
            Err(Error::Invalid {
                total: problems.total,
                dir: options.dir,
            })
        }
        Err(e) => Err(e.into()),
    }
}

fn print_report(report: &ImportReport) {
    for c in &report.counts {
        println!(
            "{}: {} added, {} updated, {} unchanged, {} removed",
            c.entity, c.added, c.updated, c.unchanged, c.removed
        );
    }
    let sum = |f: fn(&exchange::EntityCounts) -> u64| report.counts.iter().map(f).sum::<u64>();
    let (added, updated, removed) = (sum(|c| c.added), sum(|c| c.updated), sum(|c| c.removed));
    let (mode, files) = (report.mode.as_str(), report.files.len());
    if report.dry_run {
        println!(
            "dry run ({mode} mode, {files} files), nothing changed: would add {added}, update \
             {updated} and remove {removed} rows"
        );
    } else if !report.changes() {
        println!(
            "nothing to import ({mode} mode, {files} files): every row equals the database's; \
             nothing changed and no history was recorded"
        );
    } else {
        println!(
            "imported ({mode} mode, {files} files): {added} rows added, {updated} updated, \
             {removed} removed"
        );
    }
}
