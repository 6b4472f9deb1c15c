//! Streaming writers of entity files: CSV (RFC 4180, header row, UTF-8) or
//! JSON Lines, one row at a time, into a temporary file renamed over the
//! target when complete ([`Staged`]). CSV text cells a spreadsheet would
//! evaluate are guarded ([`super::formula`]).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use super::formula;
use super::spec::{Entity, Kind};
use super::staged::Staged;
use super::value::Value;
use super::{ExchangeError, Format};

/// A writer of one entity file.
pub struct RowWriter {
    /// The temporary file that becomes `path` at [`RowWriter::finish`].
    staged: Staged,
    out: Out,
}

enum Out {
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
            Format::Jsonl => Out::Jsonl(out),
        };
        Ok(RowWriter { staged, out })
    }

    /// Writes one row (values in entity column order).
    pub fn row(
        &mut self,
        path: &Path,
        entity: &Entity,
        values: &[Value],
    ) -> Result<(), ExchangeError> {
        match &mut self.out {
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
        let out = match self.out {
            Out::Csv(w) => w
                .into_inner()
                .map_err(|e| ExchangeError::io(path, e.into_error()))?,
            Out::Jsonl(w) => w,
        };
        let file = out
            .into_inner()
            .map_err(|e| ExchangeError::io(path, e.into_error()))?;
        self.staged.commit(file)
    }
}
