//! The XLSX export: one workbook with a sheet per entity (columns in CSV
//! order), its header row bold and frozen. Dates are real dates shown as
//! `yyyy-mm-dd`, numbers are numbers, every other value (ids, phones,
//! names) a string cell, which a spreadsheet never evaluates: no formula
//! guard is needed. Saved through [`Staged`] like every export file.

use std::path::Path;

use rust_xlsxwriter::{ExcelDateTime, Format as CellFormat, Workbook, Worksheet, XlsxError};

use super::ExchangeError;
use super::spec::{Entity, Kind};
use super::staged::Staged;
use super::value::Value;

/// One entity's sheet being written.
pub struct SheetWriter {
    sheet: Worksheet,
    /// The next row (0 is the header).
    row: u32,
    date: CellFormat,
}

fn xlsx(path: &Path) -> impl Fn(XlsxError) -> ExchangeError + '_ {
    move |e| ExchangeError::io(path, std::io::Error::other(e))
}

impl SheetWriter {
    /// A sheet named after `entity` with its header row.
    pub fn create(path: &Path, entity: &Entity) -> Result<SheetWriter, ExchangeError> {
        let mut sheet = Worksheet::new();
        sheet.set_name(entity.name).map_err(xlsx(path))?;
        let bold = CellFormat::new().set_bold();
        for (i, column) in entity.columns.iter().enumerate() {
            let col = u16::try_from(i).map_err(|_| xlsx(path)(XlsxError::RowColumnLimitError))?;
            sheet
                .write_string_with_format(0, col, column.name, &bold)
                .map_err(xlsx(path))?;
        }
        sheet.set_freeze_panes(1, 0).map_err(xlsx(path))?;
        let date = CellFormat::new().set_num_format("yyyy-mm-dd");
        Ok(SheetWriter {
            sheet,
            row: 1,
            date,
        })
    }

    /// Writes one row (values in entity column order).
    pub fn row(
        &mut self,
        path: &Path,
        entity: &Entity,
        values: &[Value],
    ) -> Result<(), ExchangeError> {
        let row = self.row;
        for (i, (column, value)) in entity.columns.iter().zip(values).enumerate() {
            let col = u16::try_from(i).map_err(|_| xlsx(path)(XlsxError::RowColumnLimitError))?;
            self.cell(row, col, column.kind, value)
                .map_err(xlsx(path))?;
        }
        self.row += 1;
        Ok(())
    }

    fn cell(&mut self, row: u32, col: u16, kind: Kind, value: &Value) -> Result<(), XlsxError> {
        match (kind, value) {
            (_, Value::Null) => {}
            (Kind::Date, Value::Text(text)) => match excel_date(text) {
                Some(date) => {
                    self.sheet
                        .write_datetime_with_format(row, col, date, &self.date)?;
                }
                // Not a date the spreadsheet can hold (year < 1900): text.
                None => {
                    self.sheet.write_string(row, col, text)?;
                }
            },
            (Kind::Int | Kind::Days, Value::Int(n)) => {
                self.sheet.write_number(row, col, *n as f64)?;
            }
            (Kind::Int | Kind::Days, Value::Real(x)) => {
                self.sheet.write_number(row, col, *x)?;
            }
            _ => {
                let text = value.to_file_text(kind).unwrap_or_default();
                self.sheet.write_string(row, col, text)?;
            }
        }
        Ok(())
    }
}

/// `YYYY-MM-DD` as a spreadsheet date (`None` if it is not one).
fn excel_date(text: &str) -> Option<ExcelDateTime> {
    let date = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
    use chrono::Datelike;
    let year = u16::try_from(date.year()).ok()?;
    ExcelDateTime::from_ymd(year, date.month() as u8, date.day() as u8).ok()
}

/// The workbook of an XLSX export, sheets added in entity order.
#[derive(Default)]
pub struct BookWriter {
    book: Workbook,
}

impl BookWriter {
    /// Adds a finished sheet.
    pub fn push(&mut self, sheet: SheetWriter) {
        self.book.push_worksheet(sheet.sheet);
    }

    /// Saves the workbook to a temporary file beside `path` and renames it
    /// over `path`.
    pub fn save(mut self, path: &Path) -> Result<(), ExchangeError> {
        let (staged, mut file) = Staged::create(path)?;
        self.book.save_to_writer(&mut file).map_err(xlsx(path))?;
        staged.commit(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_the_spreadsheet_can_hold_become_dates() {
        assert!(excel_date("2024-03-01").is_some());
        assert!(excel_date("1850-01-01").is_none());
        assert!(excel_date("not a date").is_none());
    }
}
