//! Validation problems: where (file, line, column) and why, kept up to a
//! bound and counted beyond it.

use std::fmt;

/// Most problems kept (and printed); the rest are only counted.
pub const MAX_REPORTED: usize = 100;

/// Longest reason kept, in characters (the rest becomes "…").
const MAX_REASON_CHARS: usize = 400;
/// Longest column name kept, in characters.
const MAX_COLUMN_CHARS: usize = 80;

/// Cuts `text` to `max` characters, marking the cut.
fn shorten(text: &mut String, max: usize) {
    if let Some((at, _)) = text.char_indices().nth(max) {
        text.truncate(at);
        text.push('…');
    }
}

/// One thing wrong with an input file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file's name (e.g. `employees.csv`).
    pub file: String,
    /// 1-based line where the row starts; 0 for the file as a whole
    /// (shown as `FILE: reason`).
    pub line: u64,
    /// The column in the file's vocabulary, when the problem is in one.
    pub column: Option<String>,
    /// What is wrong, in words a person can act on.
    pub reason: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return write!(f, "{}: {}", self.file, self.reason);
        }
        match &self.column {
            Some(c) => write!(
                f,
                "{}:{}: column {c}: {}",
                self.file, self.line, self.reason
            ),
            None => write!(f, "{}:{}: {}", self.file, self.line, self.reason),
        }
    }
}

/// The problems found so far: the first [`MAX_REPORTED`] and how many in all.
#[derive(Debug, Default)]
pub struct Problems {
    /// The first problems, in the order found.
    pub first: Vec<Problem>,
    /// How many were found in all.
    pub total: usize,
}

impl Problems {
    /// Records a problem.
    pub fn push(&mut self, mut problem: Problem) {
        self.total += 1;
        if self.first.len() < MAX_REPORTED {
            // A reason may quote a cell or a header of up to a row's size:
            // kept and printed short.
            shorten(&mut problem.reason, MAX_REASON_CHARS);
            if let Some(column) = problem.column.as_mut() {
                shorten(column, MAX_COLUMN_CHARS);
            }
            self.first.push(problem);
        }
    }

    /// Records a problem at `file:line`, in `column` if given.
    pub fn at(&mut self, file: &str, line: u64, column: Option<&str>, reason: impl Into<String>) {
        self.push(Problem {
            file: file.to_string(),
            line,
            column: column.map(str::to_string),
            reason: reason.into(),
        });
    }

    /// Whether none was found.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_cell_quoted_in_a_reason_is_kept_short() {
        let mut problems = Problems::default();
        let cell = "é".repeat(1_000_000);
        problems.at("skills.csv", 2, Some(&cell), format!("bad value {cell:?}"));
        let kept = &problems.first[0];
        assert_eq!(kept.reason.chars().count(), MAX_REASON_CHARS + 1);
        assert!(kept.reason.ends_with('…'));
        assert_eq!(
            kept.column.as_deref().map(|c| c.chars().count()),
            Some(MAX_COLUMN_CHARS + 1)
        );
    }
}
