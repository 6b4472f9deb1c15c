//! Streaming writers of entity files: CSV (RFC 4180, header row, UTF-8) or
//! JSON Lines, one row at a time, into a temporary file renamed over the
//! target when complete ([`Staged`]). CSV text cells a spreadsheet would
//! evaluate are guarded ([`super::formula`]).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use rust_xlsxwriter::Workbook;

use super::book::{self, SheetWriter};
use super::formula;
use super::spec::{Entity, Kind};
use super::staged::Staged;
use super::value::Value;
use super::{ExchangeError, Format, WORKBOOK};

/// Where an export writes: a file per entity (CSV, JSON Lines) or one
/// workbook with a sheet per entity (XLSX).
pub struct Export {
    dir: PathBuf,
    format: Format,
    /// The workbook of an XLSX export, between its sheets (a sheet being
    /// written holds it).
    book: Option<Workbook>,
}

impl Export {
    /// An export into `dir` in `format`.
    pub fn new(dir: &Path, format: Format) -> Export {
        Export {
            dir: dir.to_path_buf(),
            format,
            book: (format == Format::Xlsx).then(Workbook::new),
        }
    }

    /// The file `entity` goes to (for messages too) and its writer.
    pub fn start(&mut self, entity: &Entity) -> Result<(PathBuf, RowWriter), ExchangeError> {
        if let Some(book) = self.book.take() {
            let path = self.dir.join(WORKBOOK);
            let sheet = SheetWriter::create(book, &path, entity)?;
            return Ok((path, RowWriter::Sheet(Box::new(sheet))));
        }
        let path = (self.dir).join(format!("{}.{}", entity.name, self.format.extension()));
        let writer = RowWriter::create(&path, entity, self.format)?;
        Ok((path, writer))
    }

    /// Ends one entity: its file is renamed into place, or its sheet added
    /// to the workbook.
    pub fn end(&mut self, writer: RowWriter, path: &Path) -> Result<(), ExchangeError> {
        match writer {
            RowWriter::Sheet(sheet) => {
                self.book = Some(sheet.finish());
                Ok(())
            }
            writer @ RowWriter::File { .. } => writer.finish(path),
        }
    }

    /// Saves the workbook, if there is one.
    pub fn finish(self) -> Result<(), ExchangeError> {
        match self.book {
            Some(book) => book::save(book, &self.dir.join(WORKBOOK)),
            None => Ok(()),
        }
    }
}

/// A writer of one entity file (or sheet).
pub enum RowWriter {
    /// A CSV or JSON Lines file.
    File {
        /// The temporary file that becomes `path` at [`RowWriter::finish`].
        staged: Staged,
        /// What is written into it.
        out: Out,
    },
    /// A sheet of the export's workbook.
    Sheet(Box<SheetWriter>),
}

/// The encoder of an entity file.
pub enum Out {
    /// CSV with a header row.
    Csv(Box<csv::Writer<BufWriter<File>>>),
    /// One JSON object per line.
    Jsonl(BufWriter<File>),
}

impl RowWriter {
    /// Starts `path` (a temporary file beside it until [`finish`]) and
    /// writes the header.
    ///
    /// [`finish`]: RowWriter::finish
    pub fn create(
        path: &Path,
        entity: &Entity,
        format: Format,
    ) -> Result<RowWriter, ExchangeError> {
        let (staged, file) = Staged::create(path)?;
        let out = BufWriter::with_capacity(64 * 1024, file);
        let out = match format {
            Format::Csv => {
                let mut w = csv::Writer::from_writer(out);
                w.write_record(entity.columns.iter().map(|c| c.name))
                    .map_err(|e| ExchangeError::csv(path, e))?;
                Out::Csv(Box::new(w))
            }
            Format::Jsonl | Format::Xlsx => Out::Jsonl(out),
        };
        Ok(RowWriter::File { staged, out })
    }

    /// Writes one row (values in entity column order).
    pub fn row(
        &mut self,
        path: &Path,
        entity: &Entity,
        values: &[Value],
    ) -> Result<(), ExchangeError> {
        let out = match self {
            RowWriter::File { out, .. } => out,
            RowWriter::Sheet(sheet) => return sheet.row(path, entity, values),
        };
        match out {
            Out::Csv(w) => {
                let cells = entity.columns.iter().zip(values).map(|(c, v)| {
                    let text = v.to_file_text(c.kind).unwrap_or_default();
                    match c.kind {
                        Kind::Text => formula::guard(&text).into_owned(),
                        _ => text,
                    }
                });
                w.write_record(cells)
                    .map_err(|e| ExchangeError::csv(path, e))
            }
            Out::Jsonl(w) => {
                let object: serde_json::Map<String, serde_json::Value> = entity
                    .columns
                    .iter()
                    .zip(values)
                    .map(|(c, v)| (c.name.to_string(), v.to_json(c.kind)))
                    .collect();
                serde_json::to_writer(&mut *w, &object)
                    .map_err(|e| ExchangeError::io(path, e.into()))?;
                w.write_all(b"\n").map_err(|e| ExchangeError::io(path, e))
            }
        }
    }

    /// Flushes the file to disk and renames it over `path`.
    pub fn finish(self, path: &Path) -> Result<(), ExchangeError> {
        let RowWriter::File { staged, out } = self else {
            return Ok(());
        };
        let out = match out {
            Out::Csv(w) => w
                .into_inner()
                .map_err(|e| ExchangeError::io(path, e.into_error()))?,
            Out::Jsonl(w) => w,
        };
        let file = out
            .into_inner()
            .map_err(|e| ExchangeError::io(path, e.into_error()))?;
        staged.commit(file)
    }
}
