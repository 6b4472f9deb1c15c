//! The `--database` URL, understood in one place: which backend it names,
//! the SQLite file if it is one, and the form safe to print.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::DirectoryError;

/// Where the directory (and the server's catalogue, audit trail and shared
/// state) lives, parsed from a URL: `sqlite://PATH` (relative or absolute,
/// `sqlite:///abs/path` too; a `?query` suffix is ignored),
/// `sqlite::memory:` or `postgres://…` / `postgresql://…`.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// A SQLite database file (created if missing).
    Sqlite {
        /// The file.
        path: PathBuf,
        /// The URL as given, for messages.
        url: String,
    },
    /// A private in-memory SQLite database: it lives as long as the
    /// process (tests, trials).
    Memory,
    /// A PostgreSQL database: the connection URL as given (it may carry a
    /// password: print [`DatabaseUrl::redacted`], never this).
    Postgres(String),
}

impl DatabaseUrl {
    /// Parses `url`; an unknown scheme or an empty path is
    /// [`DirectoryError::UnsupportedUrl`].
    pub fn parse(url: &str) -> Result<DatabaseUrl, DirectoryError> {
        let url = url.trim();
        let unsupported = || DirectoryError::UnsupportedUrl { url: redact(url) };
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(DatabaseUrl::Postgres(url.to_owned()));
        }
        if url == "sqlite::memory:" || url == "sqlite://:memory:" {
            return Ok(DatabaseUrl::Memory);
        }
        let rest = url.strip_prefix("sqlite://").ok_or_else(unsupported)?;
        let path = rest.split('?').next().unwrap_or_default();
        if path.is_empty() {
            return Err(unsupported());
        }
        Ok(DatabaseUrl::Sqlite {
            path: PathBuf::from(path),
            url: url.to_owned(),
        })
    }

    /// Whether this is a PostgreSQL database (shared by replicas).
    pub fn is_postgres(&self) -> bool {
        matches!(self, DatabaseUrl::Postgres(_))
    }

    /// The SQLite file, if this names one.
    pub fn sqlite_file(&self) -> Option<&Path> {
        match self {
            DatabaseUrl::Sqlite { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The PostgreSQL connection URL, if this names one.
    pub fn postgres(&self) -> Option<&str> {
        match self {
            DatabaseUrl::Postgres(url) => Some(url),
            _ => None,
        }
    }

    /// The URL as given (with its password, if any): for connecting only.
    pub fn as_str(&self) -> &str {
        match self {
            DatabaseUrl::Sqlite { url, .. } => url,
            DatabaseUrl::Memory => "sqlite::memory:",
            DatabaseUrl::Postgres(url) => url,
        }
    }

    /// The URL without its password, for logs and messages.
    pub fn redacted(&self) -> String {
        redact(self.as_str())
    }
}

impl FromStr for DatabaseUrl {
    type Err = DirectoryError;

    fn from_str(url: &str) -> Result<DatabaseUrl, DirectoryError> {
        DatabaseUrl::parse(url)
    }
}

/// Shows the redacted URL: a password never reaches a log line.
impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// Redacted too (arguments structs derive `Debug`).
impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({})", self.redacted())
    }
}

/// `url` without its password: the one in the user information (up to
/// the last `@` of the authority, so a password holding `@` or `:` is
/// removed whole) and a `password=` query parameter.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let location = match before_query.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{user}@{host}")
        }
        None => before_query.to_owned(),
    };
    let query = query.map(|q| {
        let params: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        format!("?{}", params.join("&"))
    });
    format!("{scheme}://{location}{}", query.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!(
            DatabaseUrl::parse("sqlite::memory:").ok(),
            Some(DatabaseUrl::Memory)
        );
        assert_eq!(
            DatabaseUrl::parse("sqlite://:memory:").ok(),
            Some(DatabaseUrl::Memory)
        );
        let file = DatabaseUrl::parse(" sqlite://data/hr.db?mode=rwc ").unwrap();
        assert_eq!(file.sqlite_file(), Some(Path::new("data/hr.db")));
        assert_eq!(file.as_str(), "sqlite://data/hr.db?mode=rwc");
        let abs = DatabaseUrl::parse("sqlite:///var/lib/hr.db").unwrap();
        assert_eq!(abs.sqlite_file(), Some(Path::new("/var/lib/hr.db")));
        let pg = DatabaseUrl::parse("postgresql://u@h/db").unwrap();
        assert!(pg.is_postgres() && pg.sqlite_file().is_none());
        assert_eq!(pg.postgres(), Some("postgresql://u@h/db"));
        for bad in ["sqlite://", "sqlite://?x=1", "mysql://h/db", "hr.db", ""] {
            assert!(
                matches!(
                    DatabaseUrl::parse(bad),
                    Err(DirectoryError::UnsupportedUrl { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn redacts_every_password() {
        let cases = [
            ("postgres://u:secret@h/db", "postgres://u@h/db"),
            ("postgres://u:p@ss:w@rd@h:5432/db", "postgres://u@h:5432/db"),
            ("postgres://u:p%40ss%3Aw@h/db", "postgres://u@h/db"),
            ("postgres://u:a:b@h/db", "postgres://u@h/db"),
            ("postgres://h/db", "postgres://h/db"),
            ("postgres://u@h/db", "postgres://u@h/db"),
            (
                "postgres://u@h/db?sslmode=require&password=s3cret",
                "postgres://u@h/db?sslmode=require&password=***",
            ),
            (
                "postgres://u:x@h/db?PASSWORD=y",
                "postgres://u@h/db?PASSWORD=***",
            ),
            ("sqlite://hr.db", "sqlite://hr.db"),
        ];
        for (url, shown) in cases {
            assert_eq!(redact(url), shown, "{url}");
        }
        let url = DatabaseUrl::parse("postgres://u:p@ss@h/db").unwrap();
        assert_eq!(url.to_string(), "postgres://u@h/db");
        assert_eq!(format!("{url:?}"), "DatabaseUrl(postgres://u@h/db)");
    }
}
