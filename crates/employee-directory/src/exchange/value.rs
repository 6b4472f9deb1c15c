//! One cell of an exchange file: parsed from its text by the column's kind,
//! and written back as text (CSV) or JSON (JSON Lines).

use chrono::NaiveDate;

use super::spec::Kind;

/// A parsed cell, in its database form.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// No value (SQL NULL).
    Null,
    /// Text, dates (`YYYY-MM-DD`) and enum words.
    Text(String),
    /// Whole numbers and ranks.
    Int(i64),
    /// Days of leave.
    Real(f64),
}

impl Value {
    /// The value as file text (`None` for NULL): ranks become their word,
    /// so the file speaks the tools' vocabulary.
    pub fn to_file_text(&self, kind: Kind) -> Option<String> {
        match (self, kind) {
            (Value::Null, _) => None,
            (Value::Int(n), Kind::Ranked(words)) => usize::try_from(*n - 1)
                .ok()
                .and_then(|i| words.get(i))
                .map(|w| (*w).to_string())
                .or_else(|| Some(n.to_string())),
            (Value::Text(s), _) => Some(s.clone()),
            (Value::Int(n), _) => Some(n.to_string()),
            (Value::Real(x), _) => Some(x.to_string()),
        }
    }

    /// The value as JSON for a JSON Lines file.
    pub fn to_json(&self, kind: Kind) -> serde_json::Value {
        match (self, kind) {
            (Value::Null, _) => serde_json::Value::Null,
            (Value::Int(n), Kind::Int) => serde_json::Value::from(*n),
            (Value::Real(x), _) => serde_json::Value::from(*x),
            _ => self
                .to_file_text(kind)
                .map_or(serde_json::Value::Null, serde_json::Value::String),
        }
    }

    /// The text form used in PostgreSQL's COPY (`None` for NULL).
    pub fn to_sql_text(&self) -> Option<String> {
        match self {
            Value::Null => None,
            Value::Text(s) => Some(s.clone()),
            Value::Int(n) => Some(n.to_string()),
            Value::Real(x) => Some(x.to_string()),
        }
    }
}

/// Parses `text` (already trimmed of nothing: values are taken as written)
/// as a value of `kind`; the error says why it is not one.
pub fn parse(kind: Kind, text: &str) -> Result<Value, String> {
    match kind {
        Kind::Text => Ok(Value::Text(text.to_string())),
        Kind::Int => text
            .trim()
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| format!("{text:?} is not a whole number")),
        Kind::Days => match text.trim().parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(Value::Real(x)),
            Ok(_) => Err(format!("{text:?} is not a number of days (0 or more)")),
            Err(_) => Err(format!("{text:?} is not a number")),
        },
        Kind::Date => NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
            .map(|d| Value::Text(d.to_string()))
            .map_err(|_| format!("{text:?} is not a date (YYYY-MM-DD)")),
        Kind::Enum(words) => {
            let lower = text.trim().to_ascii_lowercase();
            words
                .iter()
                .find(|w| **w == lower)
                .map(|w| Value::Text((*w).to_string()))
                .ok_or_else(|| one_of(text, words))
        }
        Kind::Ranked(words) => {
            let lower = text.trim().to_ascii_lowercase();
            if let Some(i) = words.iter().position(|w| *w == lower) {
                return Ok(Value::Int(i as i64 + 1));
            }
            // The database's own form (1..=4) is accepted too.
            match lower.parse::<i64>() {
                Ok(n) if (1..=words.len() as i64).contains(&n) => Ok(Value::Int(n)),
                _ => Err(one_of(text, words)),
            }
        }
    }
}

fn one_of(text: &str, words: &[&str]) -> String {
    format!("{text:?} is not one of {}", words.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_writes_back() {
        let ranked = Kind::Ranked(&["beginner", "expert"]);
        assert_eq!(parse(ranked, "Expert"), Ok(Value::Int(2)));
        assert_eq!(
            Value::Int(2).to_file_text(ranked).as_deref(),
            Some("expert")
        );
        assert_eq!(parse(Kind::Days, "2.5"), Ok(Value::Real(2.5)));
        assert!(parse(Kind::Days, "-1").is_err());
        assert!(parse(Kind::Date, "2024-02-30").is_err());
        assert_eq!(
            Value::Real(10.0).to_file_text(Kind::Days).as_deref(),
            Some("10")
        );
    }
}
