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

/// Whether the JSON text `json` (as serde_json writes it) holds no string
/// [`sanitize_value`] would change: no escape other than `\"`, `\\`,
/// `\/`, `\n`, `\r`, `\t` (serde_json writes the other control
/// characters as escapes), no DEL or C1 control and no bidi override. A
/// `false` may be wrong (keys are scanned too); a `true` is not.
pub fn json_is_clean(json: &str) -> bool {
    let bytes = json.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => match bytes.get(i + 1) {
                Some(b'"' | b'\\' | b'/' | b'n' | b'r' | b't') => i += 1,
                _ => return false,
            },
            0x00..=0x1f | 0x7f => return false,
            // U+0080..U+009F: C2 80..9F.
            0xc2 if bytes.get(i + 1).is_some_and(|b| (0x80..=0x9f).contains(b)) => return false,
            // U+202A..U+202E: E2 80 AA..AE; U+2066..U+2069: E2 81 A6..A9.
            0xe2 => match (bytes.get(i + 1), bytes.get(i + 2)) {
                (Some(0x80), Some(0xaa..=0xae)) | (Some(0x81), Some(0xa6..=0xa9)) => return false,
                _ => {}
            },
            _ => {}
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_json_is_what_sanitizing_leaves_unchanged() {
        let mut samples: Vec<String> = (0u32..0x3000)
            .filter_map(char::from_u32)
            .map(|c| format!("a{c}b"))
            .collect();
        samples.extend([
            "\\u001b".to_owned(),
            "path\\n".to_owned(),
            "q\"\\/".to_owned(),
        ]);
        for text in samples {
            let mut value = serde_json::json!({ "k": text, "list": [text] });
            let json = value.to_string();
            let clean = json_is_clean(&json);
            sanitize_value(&mut value);
            if clean {
                assert_eq!(value.to_string(), json, "{text:?} called clean");
            } else {
                assert_ne!(value.to_string(), json, "{text:?} called dirty");
            }
        }
    }

    #[test]
    fn strips_escapes_and_controls() {
        assert_eq!(sanitize_text("plain\nline"), "plain\nline");
        assert_eq!(sanitize_text("\u{1b}[31mred\u{1b}[0m"), "red");
        assert_eq!(sanitize_text("a\u{0}b\u{7}c"), "abc");
        assert_eq!(sanitize_text("\u{1b}]0;title\u{7}x"), "x");
        assert_eq!(sanitize_text("x\u{202e}y"), "xy");
    }
}
