//! Output sanitization: data from a database reaches a model and, through
//! clients, terminals. Control characters and terminal escape sequences
//! are removed; line breaks and tabs are kept.

use serde_json::Value;

/// Removes ANSI/VT escape sequences and control characters (except `\n`,
/// `\r`, `\t`) from a string; returns the input unchanged when clean.
pub fn sanitize_text(s: &str) -> std::borrow::Cow<'_, str> {
    let dirty = s
        .chars()
        .any(|c| (c.is_control() && !matches!(c, '\n' | '\r' | '\t')) || is_bidi_override(c));
    if !dirty {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // ESC [ … final byte (CSI), ESC ] … BEL/ST (OSC), or ESC + one char.
                match chars.peek() {
                    Some('[') => {
                        chars.next();
                        for n in chars.by_ref() {
                            if ('@'..='~').contains(&n) {
                                break;
                            }
                        }
                    }
                    Some(']') => {
                        chars.next();
                        while let Some(n) = chars.next() {
                            if n == '\u{7}' || (n == '\u{1b}' && chars.peek() == Some(&'\\')) {
                                if n == '\u{1b}' {
                                    chars.next();
                                }
                                break;
                            }
                        }
                    }
                    Some(_) => {
                        chars.next();
                    }
                    None => {}
                }
            }
            '\n' | '\r' | '\t' => out.push(c),
            c if c.is_control() || is_bidi_override(c) => {}
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Bidirectional overrides can make text read differently than it is.
fn is_bidi_override(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Sanitizes every string in a JSON value, in place.
pub fn sanitize_value(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(clean) = sanitize_text(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sanitize_value),
        Value::Object(m) => m.values_mut().for_each(sanitize_value),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escapes_and_controls() {
        assert_eq!(sanitize_text("plain\nline"), "plain\nline");
        assert_eq!(sanitize_text("\u{1b}[31mred\u{1b}[0m"), "red");
        assert_eq!(sanitize_text("a\u{0}b\u{7}c"), "abc");
        assert_eq!(sanitize_text("\u{1b}]0;title\u{7}x"), "x");
        assert_eq!(sanitize_text("x\u{202e}y"), "xy");
    }
}
