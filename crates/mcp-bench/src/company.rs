//! The companies and cache settings of the company-size axis
//! (`--employees`, `--cache`): what a started server is seeded with and
//! how it is told. Plain values, below the load loop and the axis runner.

use std::fmt;

use clap::ValueEnum;
use serde::Serialize;

/// Fewest people `--demo-employees` accepts (the server's
/// `MIN_DEMO_EMPLOYEES`), checked here so that a bad size is refused
/// before any size has run.
const MIN_PEOPLE: u32 = 33;
/// Most people `--demo-employees` accepts (`MAX_DEMO_EMPLOYEES`).
const MAX_PEOPLE: u32 = 1_000_000;

/// About how many people the demo company has; used to tell which size is
/// the largest.
pub const DEMO_PEOPLE: u32 = 1_400;

/// A company a started server is seeded with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum Company {
    /// The ~1,400-person demo: the server's default seed.
    Demo,
    /// A generated company of exactly this many people.
    People(u32),
}

impl Company {
    /// How many people, the demo counting as [`DEMO_PEOPLE`].
    pub fn people(self) -> u32 {
        match self {
            Company::Demo => DEMO_PEOPLE,
            Company::People(n) => n,
        }
    }

    /// The server arguments that seed this company.
    pub fn server_args(self) -> Vec<String> {
        match self {
            Company::Demo => Vec::new(),
            Company::People(n) => vec![format!("--demo-employees={n}")],
        }
    }

    /// For the section lines: `the demo (~1,400 people)`, `100,000 people`.
    pub fn describe(self) -> String {
        match self {
            Company::Demo => format!("the demo (~{} people)", thousands(DEMO_PEOPLE)),
            Company::People(n) => format!("{} people", thousands(n)),
        }
    }
}

/// As on the command line: `demo` or the number of people.
impl fmt::Display for Company {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Company::Demo => f.write_str("demo"),
            Company::People(n) => write!(f, "{n}"),
        }
    }
}

impl From<Company> for String {
    fn from(company: Company) -> Self {
        company.to_string()
    }
}

/// Parses one `--employees` item: `demo` or a number of people within the
/// server's bounds (`_` may group digits: `100_000`).
pub fn parse_company(s: &str) -> Result<Company, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("demo") {
        return Ok(Company::Demo);
    }
    let n: u32 = s
        .replace('_', "")
        .parse()
        .map_err(|_| format!("{s:?} is neither `demo` nor a number of people"))?;
    if !(MIN_PEOPLE..=MAX_PEOPLE).contains(&n) {
        return Err(format!(
            "a generated company has {MIN_PEOPLE} to {MAX_PEOPLE} people, not {n}"
        ));
    }
    Ok(Company::People(n))
}

/// Whether the server keeps its directory read cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cache {
    /// `--directory-cache-mib 0`: every call runs its query.
    Off,
    /// The server's default cache.
    On,
}

impl Cache {
    /// Lower-case name, as given on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Cache::Off => "off",
            Cache::On => "on",
        }
    }

    /// The server arguments for this setting.
    pub fn server_args(self) -> Vec<String> {
        match self {
            Cache::Off => vec!["--directory-cache-mib=0".to_owned()],
            Cache::On => Vec::new(),
        }
    }
}

/// `n` with thousands separators: `100,000`.
pub fn thousands(n: u32) -> String {
    let digits = n.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(d);
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn companies_parse_within_the_server_bounds() {
        assert_eq!(parse_company("demo"), Ok(Company::Demo));
        assert_eq!(parse_company(" Demo "), Ok(Company::Demo));
        assert_eq!(parse_company("100_000"), Ok(Company::People(100_000)));
        assert_eq!(parse_company("33"), Ok(Company::People(33)));
        assert!(parse_company("32").is_err());
        assert!(parse_company("1000001").is_err());
        assert!(parse_company("lots").is_err());
        assert!(parse_company("-5").is_err());
        assert!(parse_company("").is_err());
    }

    #[test]
    fn companies_print_as_given() {
        assert_eq!(Company::Demo.to_string(), "demo");
        assert_eq!(Company::People(3000).to_string(), "3000");
        assert_eq!(
            serde_json::to_value(Company::People(3000)).ok(),
            Some(serde_json::json!("3000"))
        );
        assert_eq!(Company::People(100_000).describe(), "100,000 people");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
