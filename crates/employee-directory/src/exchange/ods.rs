//! ODS files written indented (gnumeric's `ssconvert` does) carry
//! whitespace between the cells of a row, which the workbook reader
//! refuses. This rewrites the workbook's `content.xml` without the
//! whitespace that sits between elements, so such a file opens like one
//! LibreOffice wrote. Whitespace inside a paragraph (`text:p`, `text:h`)
//! is a cell's text and is kept.

use std::io::{BufReader, Cursor, Read, Write};

use quick_xml::events::Event;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

/// The part of an ODS file that holds the sheets.
const CONTENT: &str = "content.xml";

/// `bytes` (an ODS file) with `content.xml` rewritten without
/// indentation; `content.xml` may unpack to at most `max_unpacked` bytes.
/// Every other part is copied as it is, in its place (`mimetype` stays
/// first and stored, as ODF wants).
pub(super) fn without_indentation(bytes: &[u8], max_unpacked: u64) -> Result<Vec<u8>, String> {
    let broken = |e: zip::result::ZipError| format!("not a readable workbook: {e}");
    let mut zip = ZipArchive::new(Cursor::new(bytes)).map_err(broken)?;
    let mut out = ZipWriter::new(Cursor::new(Vec::with_capacity(bytes.len())));
    for i in 0..zip.len() {
        let is_content = zip
            .name_for_index(i)
            .and_then(Result::ok)
            .is_some_and(|name| name == CONTENT);
        if !is_content {
            out.raw_copy_file(zip.by_index_raw(i).map_err(broken)?)
                .map_err(broken)?;
            continue;
        }
        let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
        out.start_file(CONTENT, options).map_err(broken)?;
        let part = zip.by_index(i).map_err(broken)?;
        let bounded = BufReader::new(part.take(max_unpacked));
        strip(bounded, &mut out).map_err(|e| format!("not a readable workbook: {e}"))?;
    }
    Ok(out.finish().map_err(broken)?.into_inner())
}

/// Copies the XML in `input` to `output`, leaving out text made only of
/// whitespace outside paragraphs.
fn strip(input: impl std::io::BufRead, output: impl Write) -> Result<(), quick_xml::Error> {
    let mut reader = quick_xml::Reader::from_reader(input);
    reader.config_mut().trim_text(false);
    let mut writer = quick_xml::Writer::new(output);
    let mut buf = Vec::new();
    // How deep inside paragraphs the reader is: their whitespace is text.
    let mut in_paragraph = 0usize;
    loop {
        let event = reader.read_event_into(&mut buf)?;
        match &event {
            Event::Eof => break,
            Event::Start(e) if is_paragraph(e.name().into_inner()) => in_paragraph += 1,
            Event::End(e) if is_paragraph(e.name().into_inner()) => {
                in_paragraph = in_paragraph.saturating_sub(1);
            }
            Event::Text(text)
                if in_paragraph == 0 && text.bytes().all(|b| b.is_ascii_whitespace()) =>
            {
                buf.clear();
                continue;
            }
            _ => {}
        }
        writer.write_event(event)?;
        buf.clear();
    }
    Ok(())
}

fn is_paragraph(name: &str) -> bool {
    name == "text:p" || name == "text:h"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stripped(xml: &str) -> String {
        let mut out = Vec::new();
        strip(xml.as_bytes(), &mut out).expect("strip");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn indentation_goes_and_cell_text_stays() {
        let xml = "<table:table-row>\n  <table:table-cell>\n    <text:p>  two  spaces </text:p>\n  \
                   </table:table-cell>\n  <table:table-cell><text:p> </text:p></table:table-cell>\n\
                   </table:table-row>";
        assert_eq!(
            stripped(xml),
            "<table:table-row><table:table-cell><text:p>  two  spaces </text:p>\
             </table:table-cell><table:table-cell><text:p> </text:p></table:table-cell>\
             </table:table-row>"
        );
    }

    #[test]
    fn entities_and_nested_spans_are_copied() {
        let xml = "<text:p>a &amp; <text:span> b</text:span> </text:p>\n<x/>";
        assert_eq!(
            stripped(xml),
            "<text:p>a &amp; <text:span> b</text:span> </text:p><x/>"
        );
    }

    #[test]
    fn other_parts_are_copied_and_content_is_bounded() {
        let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
        let stored = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
        zip.start_file("mimetype", stored).expect("mimetype");
        zip.write_all(b"application/vnd.oasis.opendocument.spreadsheet")
            .expect("write");
        zip.start_file(CONTENT, SimpleFileOptions::default())
            .expect("content");
        zip.write_all(b"<a>\n  <b/>\n</a>").expect("write");
        let bytes = zip.finish().expect("finish").into_inner();

        let out = without_indentation(&bytes, 1024).expect("rewrite");
        let mut zip = ZipArchive::new(Cursor::new(out)).expect("zip");
        assert_eq!(
            zip.name_for_index(0).and_then(Result::ok).as_deref(),
            Some("mimetype")
        );
        let mut content = String::new();
        zip.by_name(CONTENT)
            .expect("content")
            .read_to_string(&mut content)
            .expect("read");
        assert_eq!(content, "<a><b/></a>");

        // Past the bound the XML is cut short (inside `<b`), and so unreadable.
        let cut = without_indentation(&bytes, 8);
        assert!(cut.is_err(), "{cut:?}");
    }
}
