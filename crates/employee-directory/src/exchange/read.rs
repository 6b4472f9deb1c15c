//! Streaming readers of entity files (CSV with a header, or JSON Lines):
//! one row at a time, each cell as text by entity column, every row bounded
//! in bytes, the file's SHA-256 computed on the way.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use sha2::{Digest, Sha256};

use super::problems::{Problem, Problems};
use super::sheet::{self, Book, SheetAt};
use super::spec::{Column, ENTITIES, Entity, Kind};
use super::{ExchangeError, Format, ImportOptions};

/// One entity file found in the import directory.
#[derive(Debug, Clone)]
pub struct Source {
    /// What it holds.
    pub entity: &'static Entity,
    /// Where it is.
    pub path: PathBuf,
    /// Its file name, for messages (`company.xlsx[employees]` for a
    /// sheet of a multi-sheet workbook).
    pub file: String,
    /// The sheet it is, for a workbook (`None`: a CSV or JSON Lines file).
    pub sheet: Option<SheetAt>,
    /// The workbook every sheet source of one `FILE.xlsx` shares, opened
    /// once for the whole import; `None` for a workbook per entity, opened
    /// in each pass so that only one is held at a time.
    pub book: Option<Arc<Book>>,
}

/// The entity files present in `dir`, in apply order. A name that is
/// there but is not a readable regular file (a FIFO, a device, a
/// directory, a dangling link, no permission) is a problem of that file,
/// never "absent": replace mode would otherwise empty the entity.
pub fn sources(
    dir: &Path,
    format: Format,
    max_workbook_bytes: u64,
) -> Result<Vec<Source>, ExchangeError> {
    if dir.is_file() && sheet::is_workbook(dir) {
        return workbook_sources(dir, max_workbook_bytes);
    }
    if !dir.is_dir() {
        return Err(ExchangeError::NoDirectory(dir.to_path_buf()));
    }
    let mut found = Vec::new();
    let mut problems = Problems::default();
    for entity in ENTITIES {
        match entity_file(dir, entity, format, max_workbook_bytes) {
            Ok(Some(source)) => found.push(source),
            Ok(None) => {}
            Err((file, reason)) => problems.at(&file, 0, None, reason),
        }
    }
    if !problems.is_empty() {
        return Err(ExchangeError::Invalid(problems));
    }
    if found.is_empty() {
        return Err(ExchangeError::NoFiles {
            dir: dir.to_path_buf(),
            extension: format.extension(),
        });
    }
    Ok(found)
}

/// The file of `entity` in `dir`, if there is one: `ENTITY.csv`,
/// `ENTITY.jsonl`, or for XLSX `ENTITY.xlsx` then `ENTITY.ods` (first sheet).
fn entity_file(
    dir: &Path,
    entity: &'static Entity,
    format: Format,
    max_workbook_bytes: u64,
) -> Result<Option<Source>, (String, String)> {
    let extensions: &[&str] = match format {
        Format::Xlsx => &["xlsx", "ods"],
        _ => &[format.extension()],
    };
    for extension in extensions {
        let file = format!("{}.{extension}", entity.name);
        let path = dir.join(&file);
        match present(&path) {
            Ok(false) => continue,
            Ok(true) => {}
            Err(reason) => return Err((file, reason)),
        }
        let sheet = (format == Format::Xlsx).then_some(SheetAt::First);
        if sheet.is_some() {
            let len = std::fs::metadata(&path).map_or(0, |m| m.len());
            if let Some(reason) = sheet::too_big(len, max_workbook_bytes) {
                return Err((file, reason));
            }
        }
        return Ok(Some(Source {
            entity,
            path,
            file,
            sheet,
            book: None,
        }));
    }
    Ok(None)
}

/// The sheets of one workbook named after entities, in apply order; a
/// sheet of another name is a problem naming the known ones.
fn workbook_sources(path: &Path, max: u64) -> Result<Vec<Source>, ExchangeError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut problems = Problems::default();
    let refuse = |mut problems: Problems, reason: String| {
        problems.at(&name, 0, None, reason);
        ExchangeError::Invalid(problems)
    };
    if let Err(reason) = present(path) {
        return Err(refuse(problems, reason));
    }
    let len = std::fs::metadata(path).map_or(0, |m| m.len());
    if let Some(reason) = sheet::too_big(len, max) {
        return Err(refuse(problems, reason));
    }
    let book = Arc::new(Book::open(path, max)?.map_err(|r| refuse(Problems::default(), r))?);
    let names = book.sheet_names();
    let known: Vec<&str> = ENTITIES.iter().map(|e| e.name).collect();
    for sheet in &names {
        if !known.iter().any(|k| k.eq_ignore_ascii_case(sheet.trim())) {
            let reason = format!("unknown sheet; sheets are named {}", known.join(", "));
            problems.at(&format!("{name}[{sheet}]"), 0, None, reason);
        }
    }
    if !problems.is_empty() {
        return Err(ExchangeError::Invalid(problems));
    }
    let found: Vec<Source> = ENTITIES
        .iter()
        .filter_map(|entity| {
            let sheet = names
                .iter()
                .find(|s| s.trim().eq_ignore_ascii_case(entity.name))?;
            Some(Source {
                entity,
                path: path.to_path_buf(),
                file: format!("{name}[{sheet}]"),
                sheet: Some(SheetAt::Named(sheet.clone())),
                book: Some(Arc::clone(&book)),
            })
        })
        .collect();
    if found.is_empty() {
        return Err(ExchangeError::NoFiles {
            dir: path.to_path_buf(),
            extension: "xlsx",
        });
    }
    Ok(found)
}

/// Whether something is at `path` (`Ok(false)`: nothing); the error says
/// why what is there cannot be read. Only a regular file is opened: opening
/// a FIFO would wait for a writer.
fn present(path: &Path) -> Result<bool, String> {
    let link = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta.file_type().is_symlink(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("cannot be examined: {e}")),
    };
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => {
            "a symbolic link to nothing; point it at a regular file or remove it".to_string()
        }
        _ => format!("cannot be examined: {e}; make it readable or remove it"),
    })?;
    if !meta.is_file() {
        let what = file_kind(&meta.file_type());
        let what = if link {
            format!("a symbolic link to {what}")
        } else {
            what.to_string()
        };
        return Err(format!(
            "not a regular file ({what}); name a regular file or remove it"
        ));
    }
    File::open(path)
        .map_err(|e| format!("cannot be opened: {e}; make it readable or remove it"))?;
    Ok(true)
}

/// What a file that is not regular is, in words.
fn file_kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

/// One row: its line and a cell per entity column (`None`: absent, empty
/// or null).
#[derive(Debug)]
pub struct RawRow {
    /// 1-based line where the row starts.
    pub line: u64,
    /// Cells by entity column index.
    pub cells: Vec<Option<String>>,
}

/// Bytes read so far, the digest, and where the current row started: lets
/// the CSV reader refuse a row longer than the bound before buffering it.
struct Meter {
    hasher: Sha256,
    read: u64,
    row_start: u64,
    /// Most bytes past `row_start` the reader may pull (row bound plus the
    /// parser's buffer).
    allowance: Option<u64>,
    /// Offsets of the LF bytes read and not yet passed (CSV only): whether
    /// a record ended on one tells its last line (see [`csv_line`]).
    newlines: Option<VecDeque<u64>>,
}

impl Meter {
    /// Whether the byte at `offset` is an LF; forgets those before it
    /// (offsets asked only grow).
    fn is_newline(&mut self, offset: u64) -> bool {
        let Some(newlines) = self.newlines.as_mut() else {
            return false;
        };
        while newlines.front().is_some_and(|&at| at < offset) {
            newlines.pop_front();
        }
        newlines.front() == Some(&offset)
    }
}

struct Metered {
    file: File,
    meter: Arc<Mutex<Meter>>,
}

impl Read for Metered {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        let mut m = self.meter.lock().unwrap_or_else(PoisonError::into_inner);
        m.hasher.update(&buf[..n]);
        let start = m.read;
        if let Some(newlines) = m.newlines.as_mut() {
            let found = buf[..n].iter().enumerate().filter(|(_, b)| **b == b'\n');
            newlines.extend(found.map(|(i, _)| start + i as u64));
        }
        m.read += n as u64;
        if let Some(allowance) = m.allowance
            && m.read - m.row_start > allowance
        {
            return Err(io::Error::other(TOO_LONG));
        }
        Ok(n)
    }
}

const TOO_LONG: &str = "row too long";
/// The CSV parser's read buffer.
const CSV_BUFFER: usize = 64 * 1024;

/// A reader of one entity file.
pub struct RowReader {
    file: String,
    max_row_bytes: usize,
    /// The import's date format, for [`RowReader::values`].
    date_format: Option<String>,
    meter: Arc<Mutex<Meter>>,
    inner: Inner,
    /// Set after a problem that ends the file (the rest cannot be read).
    done: bool,
}

enum Inner {
    Csv {
        reader: csv::Reader<Metered>,
        /// Entity column of each file column (`None`: unknown, skipped).
        map: Vec<Option<usize>>,
        record: csv::ByteRecord,
    },
    Jsonl {
        reader: BufReader<Metered>,
        line: u64,
        buf: Vec<u8>,
    },
    /// One sheet of a workbook, loaded whole (bounded by the workbook limit).
    Sheet {
        range: calamine::Range<calamine::Data>,
        /// Entity column of each sheet column (`None`: unknown, skipped).
        map: Vec<Option<usize>>,
        /// Index of the next row in `range` (0 is the header).
        next: usize,
    },
}

impl RowReader {
    /// Opens `source` as `options` say (format, row bound, CSV delimiter);
    /// problems with the header (unknown, repeated or missing required
    /// columns) are added to `problems` and the reader then yields no rows.
    pub fn open(
        source: &Source,
        options: &ImportOptions,
        problems: &mut Problems,
    ) -> Result<RowReader, ExchangeError> {
        if let Some(at) = &source.sheet {
            return RowReader::open_sheet(source, at, options, problems);
        }
        let max_row_bytes = options.max_row_bytes;
        let file = File::open(&source.path).map_err(|e| ExchangeError::io(&source.path, e))?;
        // `sources` checked the name; this is the file actually opened.
        let regular = file.metadata().is_ok_and(|m| m.is_file());
        if !regular {
            let reason = io::Error::other("not a regular file");
            return Err(ExchangeError::io(&source.path, reason));
        }
        let csv = options.format == Format::Csv;
        let meter = Arc::new(Mutex::new(Meter {
            hasher: Sha256::new(),
            read: 0,
            row_start: 0,
            allowance: csv.then_some((max_row_bytes + CSV_BUFFER) as u64),
            newlines: csv.then(VecDeque::new),
        }));
        let metered = Metered {
            file,
            meter: Arc::clone(&meter),
        };
        let mut done = false;
        let inner = match options.format {
            Format::Csv => {
                let delimiter = match options.delimiter {
                    Some(d) => d,
                    None => detect_delimiter(source, max_row_bytes)?,
                };
                let mut reader = csv::ReaderBuilder::new()
                    .has_headers(true)
                    .flexible(true)
                    .delimiter(delimiter)
                    .buffer_capacity(CSV_BUFFER)
                    .from_reader(metered);
                let map = match reader.byte_headers() {
                    Ok(header) => header_map(source, header, problems),
                    Err(e) => {
                        problems.at(&source.file, 1, None, csv_reason(&e, max_row_bytes));
                        None
                    }
                };
                done = map.is_none();
                Inner::Csv {
                    reader,
                    map: map.unwrap_or_default(),
                    record: csv::ByteRecord::new(),
                }
            }
            Format::Jsonl | Format::Xlsx => Inner::Jsonl {
                reader: BufReader::with_capacity(64 * 1024, metered),
                line: 0,
                buf: Vec::new(),
            },
        };
        Ok(RowReader {
            file: source.file.clone(),
            max_row_bytes,
            date_format: options.date_format.clone(),
            meter,
            inner,
            done,
        })
    }

    /// Opens one sheet of a workbook: the shared workbook, or this one read
    /// (bounded), hashed and opened; the first row is the header.
    fn open_sheet(
        source: &Source,
        at: &SheetAt,
        options: &ImportOptions,
        problems: &mut Problems,
    ) -> Result<RowReader, ExchangeError> {
        let book = match &source.book {
            Some(book) => Ok(Arc::clone(book)),
            None => Book::open(&source.path, options.max_workbook_bytes)?.map(Arc::new),
        };
        let hasher = book.as_ref().map_or_else(|_| Sha256::new(), |b| b.hasher());
        // A workbook of its own is dropped as soon as its cells are read.
        let range = book.and_then(|book| book.range(at));
        let (range, map) = match range {
            Ok(range) => {
                let map = sheet_header(source, &range, problems);
                (range, map)
            }
            Err(reason) => {
                problems.at(&source.file, 0, None, reason);
                (calamine::Range::empty(), None)
            }
        };
        let meter = Arc::new(Mutex::new(Meter {
            hasher,
            read: 0,
            row_start: 0,
            allowance: None,
            newlines: None,
        }));
        Ok(RowReader {
            file: source.file.clone(),
            max_row_bytes: options.max_row_bytes,
            date_format: options.date_format.clone(),
            meter,
            done: map.is_none(),
            inner: Inner::Sheet {
                range,
                map: map.unwrap_or_default(),
                next: 1,
            },
        })
    }

    /// The row's values in database form, defaults applied; `None` if a
    /// cell does not parse (validation has passed, so the file changed).
    pub fn values(&self, entity: &Entity, row: &RawRow) -> Option<Vec<super::value::Value>> {
        let format = self.date_format.as_deref();
        entity
            .columns
            .iter()
            .zip(&row.cells)
            .map(|(column, cell)| match cell.as_deref().or(column.default) {
                None => Some(super::value::Value::Null),
                Some(text) => super::date::parse_value(column.kind, text, format).ok(),
            })
            .collect()
    }

    /// The next row; `Err` is a problem with that row (reading goes on
    /// unless the problem ends the file); `None` at the end.
    pub fn next_row(&mut self, entity: &Entity) -> Option<Result<RawRow, Problem>> {
        if self.done {
            return None;
        }
        let result = match &mut self.inner {
            Inner::Csv {
                reader,
                map,
                record,
            } => {
                let start = reader.position().byte();
                self.meter
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .row_start = start;
                match reader.read_byte_record(record) {
                    Ok(false) => return None,
                    // The meter bounds memory (a row plus one read buffer);
                    // the exact length is checked once the row is parsed.
                    Ok(true) if reader.position().byte() - start > self.max_row_bytes as u64 => {
                        let line = csv_line(reader, record, &self.meter);
                        Err(self.problem(line, None, too_long(self.max_row_bytes)))
                    }
                    Ok(true) => {
                        let line = csv_line(reader, record, &self.meter);
                        csv_row(&self.file, entity, map, record, line)
                    }
                    Err(e) => {
                        self.done = true;
                        let line = reader.position().line();
                        Err(self.problem(line, None, csv_reason(&e, self.max_row_bytes)))
                    }
                }
            }
            Inner::Sheet { range, map, next } => loop {
                let cells = range.rows().nth(*next)?;
                *next += 1;
                let line = range.start().map_or(1, |(row, _)| u64::from(row) + 1);
                let line = line + *next as u64 - 1;
                if cells.iter().all(|c| matches!(c, calamine::Data::Empty)) {
                    continue;
                }
                break sheet_row(&self.file, entity, map, cells, line, self.max_row_bytes);
            },
            Inner::Jsonl { reader, line, buf } => loop {
                *line += 1;
                match read_line(reader, buf, self.max_row_bytes) {
                    Ok(Line::Eof) => return None,
                    Ok(Line::TooLong) => {
                        break Err(Problem {
                            file: self.file.clone(),
                            line: *line,
                            column: None,
                            reason: too_long(self.max_row_bytes),
                        });
                    }
                    Ok(Line::Text) if buf.iter().all(u8::is_ascii_whitespace) => continue,
                    Ok(Line::Text) => break json_row(&self.file, entity, *line, buf),
                    Err(e) => {
                        self.done = true;
                        break Err(Problem {
                            file: self.file.clone(),
                            line: *line,
                            column: None,
                            reason: format!("cannot read: {e}"),
                        });
                    }
                }
            },
        };
        Some(result)
    }

    /// The file's SHA-256 (hex) once it has been read to the end.
    pub fn digest(self) -> String {
        // Reading to the end makes the digest the whole file's.
        let hasher = self
            .meter
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .hasher
            .clone();
        hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn problem(&self, line: u64, column: Option<&str>, reason: String) -> Problem {
        Problem {
            file: self.file.clone(),
            line,
            column: column.map(str::to_string),
            reason,
        }
    }
}

fn too_long(max: usize) -> String {
    format!("row is longer than {max} bytes (raise --max-row-bytes if it is genuine)")
}

fn csv_reason(e: &csv::Error, max_row_bytes: usize) -> String {
    match e.kind() {
        csv::ErrorKind::Io(io) if io.to_string() == TOO_LONG => too_long(max_row_bytes),
        csv::ErrorKind::Io(io) => format!("cannot read: {io}"),
        _ => format!("not valid CSV: {e}"),
    }
}

/// Maps the header's columns to entity columns; `None` when the header has
/// problems (recorded).
fn header_map(
    source: &Source,
    header: &csv::ByteRecord,
    problems: &mut Problems,
) -> Option<Vec<Option<usize>>> {
    let entity = source.entity;
    let before = problems.total;
    let mut map = Vec::with_capacity(header.len());
    for (i, raw) in header.iter().enumerate() {
        // A spreadsheet's byte-order mark is not part of the first name.
        let raw = if i == 0 {
            raw.strip_prefix(b"\xef\xbb\xbf").unwrap_or(raw)
        } else {
            raw
        };
        let Ok(name) = std::str::from_utf8(raw) else {
            problems.at(&source.file, 1, None, "the header is not valid UTF-8");
            return None;
        };
        let name = name.trim();
        match entity.column(name) {
            Some(c) if map.contains(&Some(c)) => problems.at(
                &source.file,
                1,
                Some(name),
                "column appears twice in the header",
            ),
            Some(c) => map.push(Some(c)),
            None => {
                problems.at(&source.file, 1, Some(name), unknown_column(entity));
                map.push(None);
            }
        }
    }
    for (c, column) in entity.columns.iter().enumerate() {
        if column.required && !map.contains(&Some(c)) {
            problems.at(
                &source.file,
                1,
                Some(column.name),
                "required column is missing from the header",
            );
        }
    }
    (problems.total == before).then_some(map)
}

fn unknown_column(entity: &Entity) -> String {
    let names: Vec<&str> = entity.columns.iter().map(|c| c.name).collect();
    format!("unknown column; {} has {}", entity.name, names.join(", "))
}

/// The line a CSV record starts on. The parser's own count is taken
/// before the line break that ended the previous record when that was a
/// CRLF (and before blank lines), so it is derived from where the record
/// ends: the LFs read through its end, less one if it ended on an LF, less
/// the line breaks inside its quoted fields.
fn csv_line(reader: &csv::Reader<Metered>, record: &csv::ByteRecord, meter: &Mutex<Meter>) -> u64 {
    let end = reader.position();
    let ended_on_lf = end.byte() > 0
        && meter
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_newline(end.byte() - 1);
    let inside = record.as_slice().iter().filter(|b| **b == b'\n').count() as u64;
    (end.line() - u64::from(ended_on_lf))
        .saturating_sub(inside)
        .max(1)
}

/// Maps a sheet's first row to entity columns as a CSV header is mapped.
fn sheet_header(
    source: &Source,
    range: &calamine::Range<calamine::Data>,
    problems: &mut Problems,
) -> Option<Vec<Option<usize>>> {
    let Some(first) = range.rows().next() else {
        problems.at(&source.file, 1, None, "the sheet is empty (no header row)");
        return None;
    };
    let names: Vec<String> = first
        .iter()
        .map(|c| sheet::cell_text(c).ok().flatten().unwrap_or_default())
        .collect();
    // Trailing empty header cells are the sheet's width, not columns.
    let width = names
        .iter()
        .rposition(|n| !n.is_empty())
        .map_or(0, |i| i + 1);
    let header = csv::ByteRecord::from(names[..width].to_vec());
    header_map(source, &header, problems)
}

/// One sheet row as cells by entity column; cells past the header's
/// columns must be empty.
fn sheet_row(
    file: &str,
    entity: &Entity,
    map: &[Option<usize>],
    row: &[calamine::Data],
    line: u64,
    max_row_bytes: usize,
) -> Result<RawRow, Problem> {
    let problem = |column: Option<&str>, reason: String| Problem {
        file: file.to_string(),
        line,
        column: column.map(str::to_string),
        reason,
    };
    let mut cells = vec![None; entity.columns.len()];
    let mut bytes = 0;
    for (i, cell) in row.iter().enumerate() {
        let target = map.get(i).copied().flatten();
        let name = target.map(|c| entity.columns[c].name);
        let text = sheet::cell_text(cell).map_err(|r| problem(name, r))?;
        let Some(text) = text else { continue };
        bytes += text.len();
        if bytes > max_row_bytes {
            return Err(problem(None, too_long(max_row_bytes)));
        }
        let Some(c) = target else {
            if i >= map.len() {
                let reason = format!("a value in column {} past the header's columns", i + 1);
                return Err(problem(None, reason));
            }
            continue;
        };
        let column = &entity.columns[c];
        check_characters(column, &text).map_err(|r| problem(Some(column.name), r))?;
        cells[c] = Some(text);
    }
    Ok(RawRow { line, cells })
}

/// Field separators a CSV file may use, the default first.
const DELIMITERS: &[u8] = b",;\t";

/// The separator of `source`'s CSV: the one under which its header row
/// names the most columns of its entity (comma when none names more).
fn detect_delimiter(source: &Source, max_row_bytes: usize) -> Result<u8, ExchangeError> {
    let file = File::open(&source.path).map_err(|e| ExchangeError::io(&source.path, e))?;
    let mut header = Vec::new();
    BufReader::new(file)
        .take(max_row_bytes as u64)
        .read_until(b'\n', &mut header)
        .map_err(|e| ExchangeError::io(&source.path, e))?;
    let header = header.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&header);
    let named = |d: u8| {
        header
            .split(|b| *b == d)
            .filter_map(|name| std::str::from_utf8(name).ok())
            .filter(|name| {
                source
                    .entity
                    .column(name.trim().trim_matches('"'))
                    .is_some()
            })
            .count()
    };
    let mut best = (DELIMITERS[0], named(DELIMITERS[0]));
    for &d in &DELIMITERS[1..] {
        let n = named(d);
        if n > best.1 {
            best = (d, n);
        }
    }
    Ok(best.0)
}

fn csv_row(
    file: &str,
    entity: &Entity,
    map: &[Option<usize>],
    record: &csv::ByteRecord,
    line: u64,
) -> Result<RawRow, Problem> {
    let problem = |column: Option<&str>, reason: String| Problem {
        file: file.to_string(),
        line,
        column: column.map(str::to_string),
        reason,
    };
    if record.len() != map.len() {
        return Err(problem(
            None,
            format!(
                "row has {} fields, the header has {}",
                record.len(),
                map.len()
            ),
        ));
    }
    let mut cells = vec![None; entity.columns.len()];
    for (field, target) in record.iter().zip(map) {
        let Some(c) = *target else { continue };
        let text = std::str::from_utf8(field).map_err(|e| {
            problem(
                Some(entity.columns[c].name),
                format!(
                    "not valid UTF-8 (byte {} of the value)",
                    e.valid_up_to() + 1
                ),
            )
        })?;
        let column = &entity.columns[c];
        // The `'` an export put before a formula-looking text is not data.
        let text = match column.kind {
            Kind::Text => super::formula::unguard(text),
            _ => text,
        };
        check_characters(column, text).map_err(|r| problem(Some(column.name), r))?;
        if !text.is_empty() {
            cells[c] = Some(text.to_string());
        }
    }
    Ok(RawRow { line, cells })
}

/// Refuses control characters (C0 and DEL) other than TAB; line breaks
/// (CR, LF) only where the column may span lines. NUL and the like are
/// never data: they come from a broken export or a binary file, and
/// would reach every tool's answers.
fn check_characters(column: &Column, text: &str) -> Result<(), String> {
    let refused = |c: char| {
        let control = c.is_ascii_control() && c != '\t';
        control && !(column.multiline && matches!(c, '\r' | '\n'))
    };
    let Some((at, c)) = text.chars().enumerate().find(|(_, c)| refused(*c)) else {
        return Ok(());
    };
    let code = format!("U+{:04X}", u32::from(c));
    let at = at + 1;
    Err(match c {
        '\r' | '\n' => format!(
            "contains a line break ({code}) at character {at}; this column holds one line: \
             remove the line break (only descriptions may span lines)"
        ),
        _ => {
            let name = control_name(c).map_or(String::new(), |n| format!(" ({n})"));
            format!(
                "contains the control character {code}{name} at character {at}; remove it \
                 (a broken export or a binary file?)"
            )
        }
    })
}

/// The usual name of a control character, for the common ones.
fn control_name(c: char) -> Option<&'static str> {
    Some(match c {
        '\0' => "NUL",
        '\u{7}' => "BEL",
        '\u{8}' => "backspace",
        '\u{b}' => "vertical tab",
        '\u{c}' => "form feed",
        '\u{1a}' => "SUB, end of file",
        '\u{1b}' => "ESC",
        '\u{7f}' => "DEL",
        _ => return None,
    })
}

enum Line {
    Eof,
    Text,
    TooLong,
}

/// Reads one line into `buf` (without its end), at most `max` bytes; a
/// longer line is skipped to its end and reported.
fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<Line> {
    buf.clear();
    let n = reader
        .by_ref()
        .take(max as u64 + 2)
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(Line::Eof);
    }
    let ended = buf.last() == Some(&b'\n');
    if ended {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    }
    if buf.len() > max {
        // A line cut short by the bound: skip to its end (not into the next).
        if !ended {
            skip_line(reader)?;
        }
        return Ok(Line::TooLong);
    }
    Ok(Line::Text)
}

fn skip_line(reader: &mut impl BufRead) -> io::Result<()> {
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(());
        }
        if let Some(i) = chunk.iter().position(|b| *b == b'\n') {
            reader.consume(i + 1);
            return Ok(());
        }
        let n = chunk.len();
        reader.consume(n);
    }
}

fn json_row(file: &str, entity: &Entity, line: u64, buf: &[u8]) -> Result<RawRow, Problem> {
    let problem = |column: Option<&str>, reason: String| Problem {
        file: file.to_string(),
        line,
        column: column.map(str::to_string),
        reason,
    };
    let text = std::str::from_utf8(buf).map_err(|e| {
        problem(
            None,
            format!("not valid UTF-8 (byte {} of the line)", e.valid_up_to() + 1),
        )
    })?;
    let members: Members =
        serde_json::from_str(text).map_err(|e| problem(None, format!("not a JSON object: {e}")))?;
    if let Some(key) = members.repeated {
        return Err(problem(None, format!("key {key:?} appears twice")));
    }
    let mut cells = vec![None; entity.columns.len()];
    for (key, value) in members.pairs {
        let Some(c) = entity.column(&key) else {
            return Err(problem(Some(&key), unknown_column(entity)));
        };
        let column = &entity.columns[c];
        cells[c] = match value {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) if s.is_empty() => None,
            serde_json::Value::String(s) => {
                check_characters(column, &s).map_err(|r| problem(Some(&key), r))?;
                Some(s)
            }
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => {
                return Err(problem(
                    Some(&key),
                    "expected a string or a number".to_string(),
                ));
            }
        };
    }
    Ok(RawRow { line, cells })
}

/// A JSON object's members in file order, and the first key written twice
/// (which `serde_json::Map` would silently drop: the last value wins).
/// Values are read by the same deserializer, so its nesting limit and its
/// number range still apply.
struct Members {
    pairs: Vec<(String, serde_json::Value)>,
    repeated: Option<String>,
}

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Members, D::Error> {
        deserializer.deserialize_map(MembersVisitor)
    }
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // As serde_json's own map says, so messages stay the same.
        f.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
        let mut seen = HashSet::new();
        let mut members = Members {
            pairs: Vec::new(),
            repeated: None,
        };
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value::<serde_json::Value>()?;
            if !seen.insert(key.clone()) {
                members.repeated.get_or_insert(key);
                continue;
            }
            members.pairs.push((key, value));
        }
        Ok(members)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_just_over_the_bound_does_not_swallow_the_next() {
        // "abcde\n" is 5 bytes over a bound of 4 and ends in a newline.
        let mut reader = io::Cursor::new(b"abcde\n{}\n".to_vec());
        let mut buf = Vec::new();
        assert!(matches!(
            read_line(&mut reader, &mut buf, 4),
            Ok(Line::TooLong)
        ));
        assert!(matches!(
            read_line(&mut reader, &mut buf, 4),
            Ok(Line::Text)
        ));
        assert_eq!(buf, b"{}");
        assert!(matches!(read_line(&mut reader, &mut buf, 4), Ok(Line::Eof)));
    }

    /// Reads `text` as `name`.csv / .jsonl; the line or problem of each row.
    fn read(entity: &str, format: Format, text: &[u8]) -> Vec<Result<u64, String>> {
        let entity = super::super::spec::entity(entity).expect("entity");
        let dir = std::env::temp_dir().join(format!(
            "read-test-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let file = format!("{}.{}", entity.name, format.extension());
        let path = dir.join(&file);
        std::fs::write(&path, text).expect("write");
        let source = Source {
            entity,
            path,
            file,
            sheet: None,
            book: None,
        };
        let options = ImportOptions {
            dir: dir.clone(),
            format,
            mode: super::super::Mode::Merge,
            dry_run: true,
            max_row_bytes: 1024,
            actor: String::new(),
            delimiter: None,
            date_format: None,
            max_workbook_bytes: sheet::DEFAULT_MAX_WORKBOOK_BYTES,
        };
        let mut problems = Problems::default();
        let mut reader = RowReader::open(&source, &options, &mut problems).expect("open");
        assert!(problems.is_empty(), "{:?}", problems.first);
        let mut out = Vec::new();
        while let Some(row) = reader.next_row(entity) {
            out.push(row.map(|r| r.line).map_err(|p| p.to_string()));
        }
        let _ = std::fs::remove_dir_all(&dir);
        out
    }

    #[test]
    fn csv_lines_count_with_lf_crlf_blank_lines_and_quoted_breaks() {
        let lf = b"teamId,name,departmentId,description\nt1,a,d,x\nt2,b,d,\"b\nc\"\n\nt3,c,d,x\nt4,e,d,x";
        let crlf = b"\xef\xbb\xbfteamId,name,departmentId,description\r\nt1,a,d,x\r\n\
                     t2,b,d,\"b\r\nc\"\r\n\r\nt3,c,d,x\r\nt4,e,d,x\r\n";
        for text in [&lf[..], &crlf[..]] {
            let lines: Vec<u64> = read("teams", Format::Csv, text)
                .into_iter()
                .map(|r| r.expect("row"))
                .collect();
            assert_eq!(lines, [2, 3, 6, 7], "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn the_header_row_decides_the_delimiter() {
        for text in [
            &b"skillId;name;category\n1;a, b;x\n"[..],
            b"skillId\tname\tcategory\n1\ta; b\tx\n",
            b"\"skillId\";\"name\";\"category\"\r\n1;a;x\r\n",
        ] {
            assert_eq!(read("skills", Format::Csv, text), [Ok(2)]);
        }
    }

    #[test]
    fn control_characters_are_refused_and_line_breaks_only_in_descriptions() {
        let nul = read(
            "skills",
            Format::Csv,
            b"skillId,name,category\n1,A\x00b,x\n",
        );
        assert_eq!(
            nul,
            [Err(
                "skills.csv:2: column name: contains the control character U+0000 (NUL) \
                  at character 2; remove it (a broken export or a binary file?)"
                    .to_string()
            )]
        );
        let tab = read(
            "skills",
            Format::Csv,
            b"skillId,name,category\n1,\"a\tb\",x\n",
        );
        assert_eq!(tab, [Ok(2)]);
        let broken = read(
            "skills",
            Format::Csv,
            b"skillId,name,category\n1,\"a\r\nb\",x\n",
        );
        assert!(
            broken[0]
                .as_ref()
                .is_err_and(|e| e.contains("line break (U+000D)"))
        );
        let description = b"teamId,name,departmentId,description\nt,T,d,\"one\r\ntwo\"\n";
        assert_eq!(read("teams", Format::Csv, description), [Ok(2)]);
        let json = read(
            "skills",
            Format::Jsonl,
            b"{\"skillId\":1,\"name\":\"a\\u007f\",\"category\":\"x\"}\n",
        );
        assert!(
            json[0].as_ref().is_err_and(|e| e.contains("U+007F (DEL)")),
            "{json:?}"
        );
    }

    #[test]
    fn a_json_key_twice_is_refused_and_bounds_hold() {
        let twice = read(
            "skills",
            Format::Jsonl,
            b"{\"skillId\":1,\"name\":\"a\",\"name\":\"b\",\"category\":\"x\"}\n",
        );
        assert_eq!(
            twice,
            [Err("skills.jsonl:1: key \"name\" appears twice".to_string())]
        );
        let deep = format!("{{\"name\":{}{}}}\n", "[".repeat(500), "]".repeat(500));
        let deep = read("skills", Format::Jsonl, deep.as_bytes());
        assert!(
            deep[0]
                .as_ref()
                .is_err_and(|e| e.contains("recursion limit")),
            "{deep:?}"
        );
        let huge = read("skills", Format::Jsonl, b"{\"skillId\":1e400}\n");
        assert!(
            huge[0]
                .as_ref()
                .is_err_and(|e| e.contains("number out of range")),
            "{huge:?}"
        );
    }
}
