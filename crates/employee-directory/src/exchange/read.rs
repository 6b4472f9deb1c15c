//! Streaming readers of entity files (CSV with a header, or JSON Lines):
//! one row at a time, each cell as text by entity column, every row bounded
//! in bytes, the file's SHA-256 computed on the way.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest, Sha256};

use super::problems::{Problem, Problems};
use super::spec::{ENTITIES, Entity};
use super::{ExchangeError, Format};

/// One entity file found in the import directory.
#[derive(Debug, Clone)]
pub struct Source {
    /// What it holds.
    pub entity: &'static Entity,
    /// Where it is.
    pub path: PathBuf,
    /// Its file name, for messages.
    pub file: String,
}

/// The entity files present in `dir`, in apply order.
pub fn sources(dir: &Path, format: Format) -> Result<Vec<Source>, ExchangeError> {
    if !dir.is_dir() {
        return Err(ExchangeError::NoDirectory(dir.to_path_buf()));
    }
    let found: Vec<Source> = ENTITIES
        .iter()
        .filter_map(|entity| {
            let file = format!("{}.{}", entity.name, format.extension());
            let path = dir.join(&file);
            path.is_file().then_some(Source { entity, path, file })
        })
        .collect();
    if found.is_empty() {
        return Err(ExchangeError::NoFiles {
            dir: dir.to_path_buf(),
            extension: format.extension(),
        });
    }
    Ok(found)
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
}

impl RowReader {
    /// Opens `source`; problems with the header (unknown, repeated or
    /// missing required columns) are added to `problems` and the reader
    /// then yields no rows.
    pub fn open(
        source: &Source,
        format: Format,
        max_row_bytes: usize,
        problems: &mut Problems,
    ) -> Result<RowReader, ExchangeError> {
        let file = File::open(&source.path).map_err(|e| ExchangeError::io(&source.path, e))?;
        let meter = Arc::new(Mutex::new(Meter {
            hasher: Sha256::new(),
            read: 0,
            row_start: 0,
            allowance: None,
        }));
        let metered = Metered {
            file,
            meter: Arc::clone(&meter),
        };
        let mut done = false;
        let inner = match format {
            Format::Csv => {
                meter
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .allowance = Some((max_row_bytes + CSV_BUFFER) as u64);
                let mut reader = csv::ReaderBuilder::new()
                    .has_headers(true)
                    .flexible(true)
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
            Format::Jsonl => Inner::Jsonl {
                reader: BufReader::with_capacity(64 * 1024, metered),
                line: 0,
                buf: Vec::new(),
            },
        };
        Ok(RowReader {
            file: source.file.clone(),
            max_row_bytes,
            meter,
            inner,
            done,
        })
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
                        let line = record.position().map_or(0, |p| p.line());
                        Err(self.problem(line, None, too_long(self.max_row_bytes)))
                    }
                    Ok(true) => csv_row(&self.file, entity, map, record),
                    Err(e) => {
                        self.done = true;
                        let line = reader.position().line();
                        Err(self.problem(line, None, csv_reason(&e, self.max_row_bytes)))
                    }
                }
            }
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

fn csv_row(
    file: &str,
    entity: &Entity,
    map: &[Option<usize>],
    record: &csv::ByteRecord,
) -> Result<RawRow, Problem> {
    let line = record.position().map_or(0, csv::Position::line);
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
        if !text.is_empty() {
            cells[c] = Some(text.to_string());
        }
    }
    Ok(RawRow { line, cells })
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
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(text).map_err(|e| problem(None, format!("not a JSON object: {e}")))?;
    let mut cells = vec![None; entity.columns.len()];
    for (key, value) in object {
        let Some(c) = entity.column(&key) else {
            return Err(problem(Some(&key), unknown_column(entity)));
        };
        cells[c] = match value {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) if s.is_empty() => None,
            serde_json::Value::String(s) => Some(s),
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

/// The row's values in database form, defaults applied; `None` if a cell
/// does not parse (validation has passed, so the file changed).
pub fn values(entity: &Entity, row: &RawRow) -> Option<Vec<super::value::Value>> {
    entity
        .columns
        .iter()
        .zip(&row.cells)
        .map(|(column, cell)| match cell.as_deref().or(column.default) {
            None => Some(super::value::Value::Null),
            Some(text) => super::value::parse(column.kind, text).ok(),
        })
        .collect()
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
}
