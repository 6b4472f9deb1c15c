//! Validation problems: where (file, line, column) and why, kept up to a
//! bound and counted beyond it.

use std::fmt;

/// Most problems kept (and printed); the rest are only counted.
pub const MAX_REPORTED: usize = 100;

/// One thing wrong with an input file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file's name (e.g. `employees.csv`).
    pub file: String,
    /// 1-based line where the row starts.
    pub line: u64,
    /// The column in the file's vocabulary, when the problem is in one.
    pub column: Option<String>,
    /// What is wrong, in words a person can act on.
    pub reason: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
    pub fn push(&mut self, problem: Problem) {
        self.total += 1;
        if self.first.len() < MAX_REPORTED {
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
