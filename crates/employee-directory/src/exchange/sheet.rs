//! Workbooks (XLSX, ODS) read as rows of text cells, so an imported
//! spreadsheet goes through the same validation, staging and apply as a
//! CSV file. A workbook is loaded whole (calamine reads a sheet at once),
//! so its size is bounded before it is opened (`--max-workbook-bytes`).

use std::fmt;
use std::io::{Cursor, Read};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use calamine::{Data, Range, Reader};
use sha2::{Digest, Sha256};

use super::ExchangeError;

/// Default for [`super::ImportOptions::max_workbook_bytes`].
pub const DEFAULT_MAX_WORKBOOK_BYTES: u64 = 64 * 1024 * 1024;

/// Which sheet of a workbook a source reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SheetAt {
    /// The first sheet (a workbook per entity).
    First,
    /// The sheet of this name (one workbook, a sheet per entity).
    Named(String),
}

/// Whether `path` names a workbook by its extension.
pub fn is_workbook(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("xlsx") || e.eq_ignore_ascii_case("ods"))
}

/// Why a workbook of `len` bytes is refused, if it is over `max`.
pub fn too_big(len: u64, max: u64) -> Option<String> {
    (len > max).then(|| {
        format!(
            "the workbook is {len} bytes, more than --max-workbook-bytes {max}; raise the limit \
             (or EMPLOYEE_MCP_MAX_WORKBOOK_BYTES) or export the sheets as CSV"
        )
    })
}

/// How many times its own size a workbook may unpack to: sheet XML
/// compresses 5–10×; a zip bomb compresses a thousandfold.
const MAX_UNPACK_RATIO: u64 = 10;

/// Why a workbook is refused when its parts unpack to more than
/// [`MAX_UNPACK_RATIO`] × `max` bytes (the sizes its zip directory
/// declares, read before anything is inflated). Not a zip at all is left
/// to the workbook reader to report.
fn unpacks_too_big(bytes: &[u8], max: u64) -> Option<String> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).ok()?;
    let limit = max.saturating_mul(MAX_UNPACK_RATIO);
    let mut total: u64 = 0;
    for i in 0..zip.len() {
        let size = zip.by_index_raw(i).map_or(u64::MAX, |f| f.size());
        total = total.saturating_add(size);
    }
    (total > limit).then(|| {
        format!(
            "the workbook unpacks to {total} bytes, more than {MAX_UNPACK_RATIO} × \
             --max-workbook-bytes ({limit}); a real workbook that large is better exported as CSV"
        )
    })
}

/// A workbook read and opened once: calamine parses the zip directory and
/// the shared strings when it opens one, so every sheet of a workbook, in
/// every pass of an import, reads from one `Book` instead of opening the
/// file again.
pub struct Book {
    /// The SHA-256 of the workbook's bytes, the file's digest.
    hasher: Sha256,
    /// The opened workbook (it owns the bytes); reading a sheet needs
    /// `&mut`, so passes take turns.
    sheets: Mutex<Sheets>,
}

impl fmt::Debug for Book {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Book").finish_non_exhaustive()
    }
}

impl Book {
    /// Reads the workbook at `path` (at most `max` bytes, and at most
    /// [`MAX_UNPACK_RATIO`] × `max` unpacked) and opens it; `Ok(Err(reason))`
    /// when it is read but is not a workbook that can be opened.
    pub fn open(path: &Path, max: u64) -> Result<Result<Book, String>, ExchangeError> {
        let file = std::fs::File::open(path).map_err(|e| ExchangeError::io(path, e))?;
        let mut bytes = Vec::new();
        file.take(max + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| ExchangeError::io(path, e))?;
        if let Some(reason) = too_big(bytes.len() as u64, max) {
            return Err(ExchangeError::io(path, std::io::Error::other(reason)));
        }
        if let Some(reason) = unpacks_too_big(&bytes, max) {
            return Err(ExchangeError::io(path, std::io::Error::other(reason)));
        }
        let mut hasher = Sha256::new();
        hasher.update(&bytes);
        Ok(open(path, bytes, max).map(|sheets| Book {
            hasher,
            sheets: Mutex::new(sheets),
        }))
    }

    /// The SHA-256 of the workbook's bytes so far (all of them).
    pub fn hasher(&self) -> Sha256 {
        self.hasher.clone()
    }

    /// The names of the workbook's sheets.
    pub fn sheet_names(&self) -> Vec<String> {
        self.sheets().sheet_names()
    }

    /// The cells of one sheet.
    pub fn range(&self, at: &SheetAt) -> Result<Range<Data>, String> {
        let mut book = self.sheets();
        let name = match at {
            SheetAt::Named(name) => name.clone(),
            SheetAt::First => book
                .sheet_names()
                .into_iter()
                .next()
                .ok_or_else(|| "the workbook has no sheet".to_string())?,
        };
        book.worksheet_range(&name)
            .map_err(|e| format!("sheet {name:?} cannot be read: {e}"))
    }

    fn sheets(&self) -> MutexGuard<'_, Sheets> {
        // A panic while reading a sheet leaves nothing half-written here.
        self.sheets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A workbook's bytes, shared so that a failed open can retry with them.
#[derive(Clone)]
struct Bytes(Arc<Vec<u8>>);

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// An opened workbook over its bytes.
type Sheets = calamine::Sheets<Cursor<Bytes>>;

/// Opens the workbook in `bytes`: ODS when `path` ends in `.ods` (its
/// content is not always told apart by sniffing), else XLSX. An ODS file
/// the reader refuses is opened once more without its indentation
/// ([`super::ods`]); `max` bounds what that rewrite unpacks.
fn open(path: &Path, bytes: Vec<u8>, max: u64) -> Result<Sheets, String> {
    let is_ods = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("ods"));
    let bytes = Bytes(Arc::new(bytes));
    if !is_ods {
        return calamine::Xlsx::new(Cursor::new(bytes))
            .map(calamine::Sheets::Xlsx)
            .map_err(|e| format!("not a readable workbook: {e}"));
    }
    let ods = |bytes: Bytes| calamine::Ods::new(Cursor::new(bytes)).map(calamine::Sheets::Ods);
    ods(bytes.clone()).or_else(|first| {
        let unpacked = max.saturating_mul(MAX_UNPACK_RATIO);
        let plain = super::ods::without_indentation(&bytes.0, unpacked)?;
        drop(bytes);
        // The first error is the one that names what is wrong with the file.
        ods(Bytes(Arc::new(plain))).map_err(|_| format!("not a readable workbook: {first}"))
    })
}

/// A cell as file text (`Ok(None)`: no value); `Err` says why the cell
/// cannot be used. Dates become `YYYY-MM-DD`, whole numbers lose `.0`,
/// strings stay as they are (a string cell is text to a spreadsheet too).
pub fn cell_text(cell: &Data) -> Result<Option<String>, String> {
    Ok(Some(match cell {
        Data::Empty => return Ok(None),
        Data::String(s) if s.is_empty() => return Ok(None),
        Data::String(s) => s.clone(),
        Data::Int(n) => n.to_string(),
        Data::Float(x) => number_text(*x),
        Data::Bool(b) => b.to_string(),
        Data::DateTime(d) if d.is_datetime() => {
            let (y, m, day, ..) = d.to_ymd_hms_milli();
            format!("{y:04}-{m:02}-{day:02}")
        }
        Data::DateTime(_) | Data::DurationIso(_) => {
            return Err("holds a duration, not a date or a number".to_string());
        }
        // ODS dates: `2024-03-01` or `2024-03-01T09:30:00`.
        Data::DateTimeIso(s) => s.get(..10).unwrap_or(s).to_string(),
        Data::Error(e) => {
            return Err(format!(
                "the cell holds the error {e}; fix the formula or type the value"
            ));
        }
    }))
}

/// A number as text: a float with no fraction is written as an integer.
fn number_text(x: f64) -> String {
    // Below 2^53 every whole float is exactly an i64.
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use calamine::{CellErrorType, ExcelDateTime, ExcelDateTimeType};

    #[test]
    fn cells_become_file_text() {
        let text = |d: Data| cell_text(&d);
        assert_eq!(text(Data::Empty), Ok(None));
        assert_eq!(text(Data::String(String::new())), Ok(None));
        assert_eq!(text(Data::String("0612".into())), Ok(Some("0612".into())));
        assert_eq!(text(Data::String("+33 1".into())), Ok(Some("+33 1".into())));
        assert_eq!(text(Data::String("=1+1".into())), Ok(Some("=1+1".into())));
        assert_eq!(text(Data::Float(42.0)), Ok(Some("42".into())));
        assert_eq!(text(Data::Float(2.5)), Ok(Some("2.5".into())));
        assert_eq!(text(Data::Int(-7)), Ok(Some("-7".into())));
        assert_eq!(text(Data::Bool(true)), Ok(Some("true".into())));
        let date = ExcelDateTime::new(45352.0, ExcelDateTimeType::DateTime, false);
        assert_eq!(text(Data::DateTime(date)), Ok(Some("2024-03-01".into())));
        let iso = Data::DateTimeIso("2024-03-01T09:30:00".into());
        assert_eq!(text(iso), Ok(Some("2024-03-01".into())));
        let duration = ExcelDateTime::new(1.5, ExcelDateTimeType::TimeDelta, false);
        assert!(text(Data::DateTime(duration)).is_err());
        let error = text(Data::Error(CellErrorType::Div0));
        assert_eq!(
            error,
            Err("the cell holds the error #DIV/0!; fix the formula or type the value".into())
        );
    }

    #[test]
    fn a_workbook_that_unpacks_a_thousandfold_is_refused() {
        use std::io::Write;
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let deflate = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("xl/worksheets/sheet1.xml", deflate)
            .expect("start");
        zip.write_all(&vec![b' '; 4 << 20]).expect("write");
        let bytes = zip.finish().expect("finish").into_inner();
        assert!(bytes.len() < 64 * 1024, "{} bytes", bytes.len());
        let max = bytes.len() as u64 * 2;
        let reason = unpacks_too_big(&bytes, max).unwrap_or_default();
        assert!(reason.contains("unpacks to 4194304 bytes"), "{reason}");
        assert_eq!(unpacks_too_big(&bytes, 1 << 20), None);
        assert_eq!(unpacks_too_big(b"not a zip", 1), None);
    }

    #[test]
    fn a_workbook_over_the_limit_is_named_with_the_limit() {
        let reason = too_big(11, 10).unwrap_or_default();
        assert!(reason.contains("--max-workbook-bytes 10"), "{reason}");
        assert_eq!(too_big(10, 10), None);
    }
}
