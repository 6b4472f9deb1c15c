//! Streaming writers of entity files: CSV (RFC 4180, header row, UTF-8) or
//! JSON Lines, one row at a time.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use super::spec::Entity;
use super::value::Value;
use super::{ExchangeError, Format};

/// A writer of one entity file.
pub enum RowWriter {
    /// CSV with a header row.
    Csv(Box<csv::Writer<BufWriter<File>>>),
    /// One JSON object per line.
    Jsonl(BufWriter<File>),
}

impl RowWriter {
    /// Creates `path` (replacing it) and writes the header.
    pub fn create(
        path: &Path,
        entity: &Entity,
        format: Format,
    ) -> Result<RowWriter, ExchangeError> {
        let file = File::create(path).map_err(|e| ExchangeError::io(path, e))?;
        let out = BufWriter::with_capacity(64 * 1024, file);
        match format {
            Format::Csv => {
                let mut w = csv::Writer::from_writer(out);
                w.write_record(entity.columns.iter().map(|c| c.name))
                    .map_err(|e| ExchangeError::csv(path, e))?;
                Ok(RowWriter::Csv(Box::new(w)))
            }
            Format::Jsonl => Ok(RowWriter::Jsonl(out)),
        }
    }

    /// Writes one row (values in entity column order).
    pub fn row(
        &mut self,
        path: &Path,
        entity: &Entity,
        values: &[Value],
    ) -> Result<(), ExchangeError> {
        match self {
            RowWriter::Csv(w) => {
                let cells = entity
                    .columns
                    .iter()
                    .zip(values)
                    .map(|(c, v)| v.to_file_text(c.kind).unwrap_or_default());
                w.write_record(cells)
                    .map_err(|e| ExchangeError::csv(path, e))
            }
            RowWriter::Jsonl(w) => {
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

    /// Flushes the file to disk.
    pub fn finish(self, path: &Path) -> Result<(), ExchangeError> {
        let out = match self {
            RowWriter::Csv(w) => w
                .into_inner()
                .map_err(|e| ExchangeError::io(path, e.into_error()))?,
            RowWriter::Jsonl(w) => w,
        };
        let file = out
            .into_inner()
            .map_err(|e| ExchangeError::io(path, e.into_error()))?;
        file.sync_all().map_err(|e| ExchangeError::io(path, e))
    }
}
