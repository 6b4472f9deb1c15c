//! A small lexer over SQL text: finds named parameters (`:name`) and
//! statement separators outside string literals, quoted identifiers and
//! comments. Both backends use it, so a statement means the same on each
//! (PostgreSQL needs `:name` rewritten to `$n`).
//!
//! The PostgreSQL flavour ([`scan_postgres`]) follows PostgreSQL's
//! lexical rules where they differ (`E'…'` strings with backslash escapes,
//! `[` as a subscript, not a quote) and flags `$` outside literals: a
//! dollar-quoted string is refused rather than lexed, so what this lexer
//! sees as code is what PostgreSQL runs.

/// What the lexer found in a statement.
#[derive(Debug, Default, PartialEq)]
pub struct Scan {
    /// Named parameters in order of appearance, with their byte span.
    pub parameters: Vec<(String, std::ops::Range<usize>)>,
    /// Something other than blanks and comments follows a `;`.
    pub several_statements: bool,
    /// Positional parameters (`?`, `?1`, `$1`, `@x`) were used.
    pub positional: bool,
    /// A `$` outside literals (PostgreSQL: dollar quoting or `$n`).
    pub dollar: bool,
    /// Words and quoted identifiers outside literals, lowercased, in order
    /// (the first one is the statement's keyword).
    pub words: Vec<String>,
    /// Where the first statement ends: its first `;` outside literals, or
    /// the end of the text.
    pub end: usize,
}

/// Scans `sql` by SQLite's rules.
pub fn scan(sql: &str) -> Scan {
    scan_with(sql, false)
}

/// Scans `sql` by PostgreSQL's rules.
pub fn scan_postgres(sql: &str) -> Scan {
    scan_with(sql, true)
}

fn scan_with(sql: &str, pg: bool) -> Scan {
    let b = sql.as_bytes();
    let mut out = Scan {
        end: b.len(),
        ..Scan::default()
    };
    let mut i = 0;
    let mut after_semicolon = false;
    while i < b.len() {
        let c = b[i];
        let start = i;
        i = match c {
            // E'…': backslash escapes (PostgreSQL).
            b'e' | b'E' if pg && b.get(i + 1) == Some(&b'\'') && !after_word(b, i) => {
                skip_escaped(b, i + 1)
            }
            b'"' => {
                let end = skip_quoted(b, i, c);
                let close = if end > i + 1 && b[end - 1] == b'"' {
                    end - 1
                } else {
                    end
                };
                let inner = &sql[i + 1..close];
                out.words
                    .push(inner.replace("\"\"", "\"").to_ascii_lowercase());
                end
            }
            b'\'' | b'`' => skip_quoted(b, i, c),
            b'[' if !pg => b[i..]
                .iter()
                .position(|&x| x == b']')
                .map_or(b.len(), |p| i + p + 1),
            b'-' if b.get(i + 1) == Some(&b'-') => b[i..]
                .iter()
                .position(|&x| x == b'\n')
                .map_or(b.len(), |p| i + p + 1),
            b'/' if b.get(i + 1) == Some(&b'*') => {
                sql[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2)
            }
            c if (c.is_ascii_alphabetic() || c == b'_') && !after_word(b, i) => {
                let end = word_end(b, i);
                out.words.push(sql[i..end].to_ascii_lowercase());
                end
            }
            _ => i + 1,
        };
        let is_blank_or_comment =
            c.is_ascii_whitespace() || i - start > 1 && matches!(c, b'-' | b'/');
        if after_semicolon && !is_blank_or_comment && c != b';' {
            out.several_statements = true;
        }
        match c {
            b';' if !after_semicolon => {
                after_semicolon = true;
                out.end = start;
            }
            b':' if b.get(i) == Some(&b':') => i += 1, // a `::type` cast
            b':' => {
                let end = ident_end(b, i);
                if end > i {
                    out.parameters.push((sql[i..end].to_owned(), start..end));
                    i = end;
                }
            }
            b'?' | b'@' => out.positional = true,
            b'$' if b.get(i).is_some_and(u8::is_ascii_digit) => {
                out.positional = true;
                out.dollar = true;
            }
            b'$' => out.dollar = true,
            _ => {}
        }
    }
    out
}

fn skip_quoted(b: &[u8], mut i: usize, quote: u8) -> usize {
    i += 1;
    while i < b.len() {
        if b[i] == quote {
            // A doubled quote is an escaped quote.
            if b.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    b.len()
}

/// A string with backslash escapes, from its opening quote.
fn skip_escaped(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\'' if b.get(i + 1) == Some(&b'\'') => i += 2,
            b'\'' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// Whether `b[i]` continues a word (an identifier, a number, a `$n`).
fn after_word(b: &[u8], i: usize) -> bool {
    i > 0
        && b.get(i - 1)
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$'))
}

fn word_end(b: &[u8], start: usize) -> usize {
    let mut i = start;
    while b
        .get(i)
        .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$'))
    {
        i += 1;
    }
    i
}

fn ident_end(b: &[u8], start: usize) -> usize {
    let mut i = start;
    if !b
        .get(i)
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    {
        return start;
    }
    while b
        .get(i)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    {
        i += 1;
    }
    i
}

/// `sql` with each `:name` replaced by `$n` (PostgreSQL), and the names in
/// `$n` order.
pub fn to_numbered(sql: &str, scan: &Scan) -> (String, Vec<String>) {
    let mut names: Vec<String> = Vec::new();
    let mut out = String::with_capacity(sql.len());
    let mut last = 0;
    for (name, span) in &scan.parameters {
        let n = match names.iter().position(|x| x == name) {
            Some(p) => p + 1,
            None => {
                names.push(name.clone());
                names.len()
            }
        };
        out.push_str(&sql[last..span.start]);
        out.push_str(&format!("${n}"));
        last = span.end;
    }
    out.push_str(&sql[last..]);
    (out, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sql: &str) -> Vec<String> {
        scan(sql).parameters.into_iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn finds_parameters_outside_literals_and_comments() {
        assert_eq!(
            names(
                "SELECT ':no', \"x:no\" -- :no\n /* :no */ FROM t WHERE a = :yes AND b::text = :also"
            ),
            vec!["yes", "also"]
        );
        assert_eq!(names("SELECT 'it''s :no' WHERE x=:a"), vec!["a"]);
    }

    #[test]
    fn detects_several_statements() {
        assert!(!scan("SELECT 1;").several_statements);
        assert!(!scan("SELECT 1; -- done\n").several_statements);
        assert!(scan("SELECT 1; DELETE FROM t").several_statements);
        assert!(!scan("SELECT ';DELETE'").several_statements);
        assert_eq!(scan("SELECT ';' -- x\n; -- y").end, 16);
        assert_eq!(scan("SELECT 1").end, 8);
    }

    #[test]
    fn postgres_lexing_sees_what_postgres_runs() {
        let s = scan_postgres("SELECT E'\\' set_config(1) ', x[set_config(2)] FROM \"T\"");
        assert_eq!(s.words, vec!["select", "x", "set_config", "from", "t"]);
        assert!(scan_postgres("SELECT $$ ' $$").dollar);
        assert!(!scan_postgres("SELECT 'a$b', col$1 FROM t").dollar);
        assert_eq!(scan("SELECT a:b").words, vec!["select", "a"]);
    }

    #[test]
    fn numbers_parameters_for_postgres() {
        let sql = "SELECT :a, :b, :a";
        let (text, names) = to_numbered(sql, &scan(sql));
        assert_eq!(text, "SELECT $1, $2, $1");
        assert_eq!(names, vec!["a", "b"]);
    }
}
