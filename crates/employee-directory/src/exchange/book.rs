//! The XLSX export: one workbook with a sheet per entity (columns in CSV
//! order), its header row bold and frozen. Dates are real dates shown as
//! `yyyy-mm-dd`, numbers are numbers, every other value (ids, phones,
//! names) a string cell, which a spreadsheet never evaluates: no formula
//! guard is needed. Rows are written in constant memory (staged in
//! temporary files beside the export); a sheet past the rows a
//! spreadsheet holds is refused with a pointer to CSV. Saved through
//! [`Staged`] like every export file.

use std::path::Path;

use rust_xlsxwriter::{ExcelDateTime, Format as CellFormat, Workbook, XlsxError};

use super::ExchangeError;
use super::spec::{Entity, Kind};
use super::staged::Staged;
use super::value::Value;

/// Rows a sheet holds, the header included (Excel's and LibreOffice's
/// limit; a longer sheet is cut or refused by whoever opens it).
pub const MAX_SHEET_ROWS: u32 = 1_048_576;

/// One entity's sheet being written, in constant memory: each finished
/// row goes to a temporary file beside the export (not to RAM), so a
/// million-row sheet costs what a small one does. The sheet holds the
/// workbook while it is written and hands it back at [`Self::finish`].
pub struct SheetWriter {
    book: Workbook,
    /// The sheet's index in the workbook.
    index: usize,
    /// The next row (0 is the header).
    row: u32,
    /// Rows this sheet may hold ([`MAX_SHEET_ROWS`]).
    max_rows: u32,
    date: CellFormat,
}

fn xlsx(path: &Path) -> impl Fn(XlsxError) -> ExchangeError + '_ {
    move |e| ExchangeError::io(path, std::io::Error::other(e))
}

impl SheetWriter {
    /// A sheet named after `entity` with its header row, added to `book`;
    /// its rows are staged in the folder of `path`.
    pub fn create(
        mut book: Workbook,
        path: &Path,
        entity: &Entity,
    ) -> Result<SheetWriter, ExchangeError> {
        let folder = path.parent().unwrap_or(Path::new("."));
        book.set_tempdir(folder).map_err(xlsx(path))?;
        let sheet = book
            .add_worksheet_with_constant_memory()
            .map_err(xlsx(path))?;
        sheet.set_name(entity.name).map_err(xlsx(path))?;
        let bold = CellFormat::new().set_bold();
        for (i, column) in entity.columns.iter().enumerate() {
            let col = u16::try_from(i).map_err(|_| xlsx(path)(XlsxError::RowColumnLimitError))?;
            sheet
                .write_string_with_format(0, col, column.name, &bold)
                .map_err(xlsx(path))?;
        }
        sheet.set_freeze_panes(1, 0).map_err(xlsx(path))?;
        let index = book.worksheets().len().saturating_sub(1);
        Ok(SheetWriter {
            book,
            index,
            row: 1,
            max_rows: MAX_SHEET_ROWS,
            date: CellFormat::new().set_num_format("yyyy-mm-dd"),
        })
    }

    /// Writes one row (values in entity column order); refused past the
    /// rows a spreadsheet holds.
    pub fn row(
        &mut self,
        path: &Path,
        entity: &Entity,
        values: &[Value],
    ) -> Result<(), ExchangeError> {
        if self.row >= self.max_rows {
            return Err(ExchangeError::TooManyRows {
                sheet: entity.name,
                max: self.max_rows,
            });
        }
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
        let sheet = self.book.worksheet_from_index(self.index)?;
        match (kind, value) {
            (_, Value::Null) => {}
            (Kind::Date, Value::Text(text)) => match excel_date(text) {
                Some(date) => {
                    sheet.write_datetime_with_format(row, col, date, &self.date)?;
                }
                // Not a date the spreadsheet can hold (year < 1900): text.
                None => {
                    sheet.write_string(row, col, text)?;
                }
            },
            (Kind::Int | Kind::Days, Value::Int(n)) => {
                sheet.write_number(row, col, *n as f64)?;
            }
            (Kind::Int | Kind::Days, Value::Real(x)) => {
                sheet.write_number(row, col, *x)?;
            }
            _ => {
                let text = value.to_file_text(kind).unwrap_or_default();
                sheet.write_string(row, col, text)?;
            }
        }
        Ok(())
    }

    /// The workbook, with this sheet done.
    pub fn finish(self) -> Workbook {
        self.book
    }
}

/// `YYYY-MM-DD` as a spreadsheet date (`None` if it is not one).
fn excel_date(text: &str) -> Option<ExcelDateTime> {
    let date = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
    use chrono::Datelike;
    let year = u16::try_from(date.year()).ok()?;
    ExcelDateTime::from_ymd(year, date.month() as u8, date.day() as u8).ok()
}

/// Saves a finished workbook to a temporary file beside `path` and renames
/// it over `path`.
pub fn save(mut book: Workbook, path: &Path) -> Result<(), ExchangeError> {
    let (staged, mut file) = Staged::create(path)?;
    book.save_to_writer(&mut file).map_err(xlsx(path))?;
    staged.commit(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sheet_past_the_spreadsheet_row_limit_is_refused() {
        let dir = std::env::temp_dir().join(format!("book-limit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a folder");
        let path = dir.join("directory.xlsx");
        let entity = &crate::exchange::spec::ENTITIES[0];
        let mut sheet = SheetWriter::create(Workbook::new(), &path, entity).expect("a sheet");
        sheet.max_rows = 3;
        let row = vec![Value::Null; entity.columns.len()];
        sheet.row(&path, entity, &row).expect("row 1");
        sheet.row(&path, entity, &row).expect("row 2");
        let refused = sheet
            .row(&path, entity, &row)
            .expect_err("row 3 is past the limit");
        assert!(refused.to_string().contains("--format csv"), "{refused}");
        save(sheet.finish(), &path).expect("what fits is saved");
        assert!(path.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn dates_the_spreadsheet_can_hold_become_dates() {
        assert!(excel_date("2024-03-01").is_some());
        assert!(excel_date("1850-01-01").is_none());
        assert!(excel_date("not a date").is_none());
    }
}
