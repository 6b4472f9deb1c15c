//! Validation of a whole import before anything changes: every cell parsed
//! by its column's kind, keys unique, references resolved against the files
//! and (where the database keeps rows) the database, no manager cycle, and
//! the rules of bands and terminations. Two streamed passes: the keys of
//! referenced entities first (references may point forward), then rows.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use super::problems::Problems;
use super::read::{RawRow, RowReader, Source};
use super::spec::{Entity, Kind};
use super::value::{self, Value};
use super::{ExchangeError, ImportOptions, Mode};

/// Keys already in the database, for references the files do not satisfy.
#[derive(Debug, Default)]
pub struct Known {
    /// Normalized keys by entity name (referenced entities and bands).
    pub keys: HashMap<&'static str, HashSet<String>>,
    /// Each employee's manager (normalized ids).
    pub managers: HashMap<String, Option<String>>,
}

/// One key part as compared, in its parsed form (" 7" is 7; "Junior" is
/// junior; text ignores case), the same for file cells, references and
/// database keys; `None` when the text does not parse (reported apart).
fn key_part(kind: Kind, text: &str) -> Option<String> {
    Some(match value::parse(kind, text).ok()? {
        Value::Text(s) => s.to_lowercase(),
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    })
}

/// A key or reference as compared ([`key_part`]; text that does not parse
/// is only trimmed and lowered, so it matches nothing it should not).
pub fn normalize(kind: Kind, text: &str) -> String {
    key_part(kind, text).unwrap_or_else(|| text.trim().to_lowercase())
}

fn key_of(entity: &Entity, cells: &[Option<String>]) -> Option<String> {
    let mut parts = Vec::with_capacity(entity.key.len());
    for &k in entity.key {
        parts.push(key_part(entity.columns[k].kind, cells[k].as_deref()?)?);
    }
    Some(parts.join(KEY_SEPARATOR))
}

/// Joins the parts of a composite key.
pub const KEY_SEPARATOR: &str = "\u{1f}";

/// What validation learnt: the problems, and per file its rows and digest.
#[derive(Debug, Default)]
pub struct Checked {
    /// Problems found (none means the import may proceed).
    pub problems: Problems,
    /// Per source (same order): rows and SHA-256.
    pub files: Vec<(u64, String)>,
}

/// Validates every source, read as `options` say; `known` holds the
/// database's keys.
pub fn validate(
    sources: &[Source],
    options: &ImportOptions,
    known: &Known,
) -> Result<Checked, ExchangeError> {
    let (format, mode) = (options.format, options.mode);
    let mut checked = Checked::default();
    let file_keys = collect_keys(sources, options)?;
    let present: HashSet<&str> = sources.iter().map(|s| s.entity.name).collect();
    let resolve = Resolver {
        file_keys: &file_keys.keys,
        known,
        present: &present,
        mode,
        ext: format.extension(),
        date_format: options.date_format.as_deref(),
    };
    for source in sources {
        let mut reader = RowReader::open(source, options, &mut checked.problems)?;
        let mut seen: HashMap<u64, u64> = HashMap::new();
        let mut rows = 0;
        while let Some(row) = reader.next_row(source.entity) {
            rows += 1;
            match row {
                Err(p) => checked.problems.push(p),
                Ok(row) => check_row(source, &row, &resolve, &mut seen, &mut checked.problems),
            }
        }
        checked.files.push((rows, reader.digest()));
    }
    if present.contains("employees") {
        check_cycles(
            &file_keys,
            known,
            mode,
            &mut checked.problems,
            format.extension(),
        );
    }
    Ok(checked)
}

/// Keys found in the files (pass one).
struct FileKeys {
    keys: HashMap<&'static str, HashSet<String>>,
    /// Employees in the file: normalized id → (line, shown id, manager).
    managers: HashMap<String, (u64, String, Option<String>)>,
}

fn collect_keys(sources: &[Source], options: &ImportOptions) -> Result<FileKeys, ExchangeError> {
    let mut keys = HashMap::new();
    let mut managers = HashMap::new();
    // Header problems are reported by the second pass.
    let mut ignored = Problems::default();
    let manager_column = super::spec::entity("employees").and_then(|e| e.column("managerId"));
    for source in sources {
        let entity = source.entity;
        if !is_referenced(entity) {
            continue;
        }
        let set: &mut HashSet<String> = keys.entry(entity.name).or_default();
        let mut reader = RowReader::open(source, options, &mut ignored)?;
        while let Some(row) = reader.next_row(entity) {
            let Ok(row) = row else { continue };
            let Some(key) = key_of(entity, &row.cells) else {
                continue;
            };
            if entity.name == "employees"
                && let Some(m) = manager_column
            {
                let manager = row.cells[m].as_deref().map(|t| normalize(Kind::Text, t));
                let shown = row.cells[0].clone().unwrap_or_default();
                managers
                    .entry(key.clone())
                    .or_insert((row.line, shown, manager));
            }
            set.insert(key);
        }
    }
    Ok(FileKeys { keys, managers })
}

/// Entities whose keys other rows name.
pub fn is_referenced(entity: &Entity) -> bool {
    matches!(
        entity.name,
        "locations"
            | "departments"
            | "teams"
            | "roles"
            | "compensation_bands"
            | "skills"
            | "employees"
    )
}

struct Resolver<'a> {
    file_keys: &'a HashMap<&'static str, HashSet<String>>,
    known: &'a Known,
    present: &'a HashSet<&'a str>,
    mode: Mode,
    ext: &'static str,
    /// How dates in the files are written (`--date-format`).
    date_format: Option<&'a str>,
}

impl Resolver<'_> {
    /// Whether `key` of `entity` will exist after the import.
    fn exists(&self, entity: &str, key: &str) -> bool {
        let in_files = self.file_keys.get(entity).is_some_and(|s| s.contains(key));
        // Replace keeps database rows only of entities without a file.
        let db_kept = self.mode == Mode::Merge || !self.present.contains(entity);
        in_files || (db_kept && self.known.keys.get(entity).is_some_and(|s| s.contains(key)))
    }

    fn where_looked(&self, entity: &str) -> String {
        let file = format!("{entity}.{}", self.ext);
        match (self.present.contains(entity), self.mode) {
            (true, Mode::Replace) => format!("not in {file}"),
            (true, Mode::Merge) => format!("neither in {file} nor in the database"),
            (false, _) => format!("not in the database (and there is no {file})"),
        }
    }
}

fn check_row(
    source: &Source,
    row: &RawRow,
    resolve: &Resolver<'_>,
    seen: &mut HashMap<u64, u64>,
    problems: &mut Problems,
) {
    let entity = source.entity;
    let before = problems.total;
    let mut values: Vec<Value> = Vec::with_capacity(entity.columns.len());
    for (c, column) in entity.columns.iter().enumerate() {
        let text = row.cells[c].as_deref().or(column.default);
        let Some(text) = text else {
            if column.required {
                problems.at(
                    &source.file,
                    row.line,
                    Some(column.name),
                    "required value is missing",
                );
            }
            values.push(Value::Null);
            continue;
        };
        match super::date::parse_value(column.kind, text, resolve.date_format) {
            Err(reason) => {
                problems.at(&source.file, row.line, Some(column.name), reason);
                values.push(Value::Null);
            }
            Ok(v) => {
                if let Some(target) = column.refers {
                    let key = normalize(column.kind, text);
                    if !resolve.exists(target, &key) {
                        let reason = format!(
                            "{text:?} names no {} ({})",
                            singular(target),
                            resolve.where_looked(target)
                        );
                        problems.at(&source.file, row.line, Some(column.name), reason);
                    }
                }
                values.push(v);
            }
        }
    }
    if problems.total != before {
        return;
    }
    if let Some(key) = key_of(entity, &row.cells) {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        if let Some(first) = seen.insert(h.finish(), row.line) {
            let column = entity.columns[entity.key[0]].name;
            problems.at(
                &source.file,
                row.line,
                Some(column),
                format!(
                    "duplicate id {:?} (first on line {first})",
                    key.replace(KEY_SEPARATOR, "/")
                ),
            );
            seen.insert(h.finish(), first);
        }
    }
    check_rules(source, row.line, &values, resolve, problems);
}

/// Rules across the columns of one row.
fn check_rules(
    source: &Source,
    line: u64,
    values: &[Value],
    resolve: &Resolver<'_>,
    problems: &mut Problems,
) {
    let entity = source.entity;
    let get = |name: &str| entity.column(name).map_or(&Value::Null, |c| &values[c]);
    match entity.name {
        "compensation_bands" => {
            if let (Value::Int(min), Value::Int(mid), Value::Int(max)) =
                (get("minSalary"), get("midSalary"), get("maxSalary"))
            {
                if min > max {
                    problems.at(
                        &source.file,
                        line,
                        Some("minSalary"),
                        format!("band minimum {min} is above its maximum {max}"),
                    );
                } else if !(min <= mid && mid <= max) {
                    problems.at(
                        &source.file,
                        line,
                        Some("midSalary"),
                        format!("band midpoint {mid} is outside {min}..{max}"),
                    );
                }
            }
        }
        "employees" => {
            let terminated = *get("status") == Value::Text("terminated".into());
            let has_date = *get("terminationDate") != Value::Null;
            if terminated && !has_date {
                problems.at(
                    &source.file,
                    line,
                    Some("terminationDate"),
                    "a terminated employee needs a termination date",
                );
            } else if !terminated && has_date {
                problems.at(&source.file, line, Some("terminationDate"), "an active employee has no termination date (set status to terminated or clear it)");
            }
            if !terminated && *get("terminationReason") != Value::Null {
                problems.at(
                    &source.file,
                    line,
                    Some("terminationReason"),
                    "an active employee has no termination reason",
                );
            }
            if let (Value::Int(role), Value::Text(level)) = (get("roleId"), get("level")) {
                let band = format!("{role}{KEY_SEPARATOR}{level}");
                if !resolve.exists("compensation_bands", &band) {
                    let reason = format!(
                        "role {role} has no compensation band at level {level} ({})",
                        resolve.where_looked("compensation_bands")
                    );
                    problems.at(&source.file, line, Some("level"), reason);
                }
            }
        }
        _ => {}
    }
}

fn singular(entity: &str) -> &str {
    match entity {
        "locations" => "location",
        "departments" => "department",
        "teams" => "team",
        "roles" => "role",
        "skills" => "skill",
        "employees" => "employee",
        other => other,
    }
}

/// Reports each manager cycle once, at the line of one of its employees.
fn check_cycles(files: &FileKeys, known: &Known, mode: Mode, problems: &mut Problems, ext: &str) {
    let manager_of = |id: &str| -> Option<String> {
        match files.managers.get(id) {
            Some((_, _, m)) => m.clone(),
            None if mode == Mode::Merge => known.managers.get(id).cloned().flatten(),
            None => None,
        }
    };
    // 0 unvisited, 1 on the current path, 2 done.
    let mut state: HashMap<&str, u8> = HashMap::new();
    let mut ids: Vec<&String> = files.managers.keys().collect();
    ids.sort_by_key(|id| files.managers[*id].0);
    for start in ids {
        if state.get(start.as_str()).copied().unwrap_or(0) != 0 {
            continue;
        }
        let mut path: Vec<String> = Vec::new();
        let mut current = Some(start.clone());
        while let Some(id) = current {
            match state.get(id.as_str()).copied() {
                Some(2) => break,
                Some(1) => {
                    report_cycle(files, &path, &id, problems, ext);
                    break;
                }
                _ => {}
            }
            let Some((key, _)) = files.managers.get_key_value(&id) else {
                // A database employee: follow it without marking.
                if path.len() > files.managers.len() + known.managers.len() {
                    break;
                }
                path.push(id.clone());
                current = manager_of(&id);
                continue;
            };
            state.insert(key.as_str(), 1);
            path.push(id.clone());
            current = manager_of(&id);
        }
        for id in &path {
            if let Some((key, _)) = files.managers.get_key_value(id) {
                state.insert(key.as_str(), 2);
            }
        }
    }
}

fn report_cycle(
    files: &FileKeys,
    path: &[String],
    again: &str,
    problems: &mut Problems,
    ext: &str,
) {
    let Some(from) = path.iter().position(|id| id == again) else {
        return;
    };
    let shown = |id: &String| {
        files
            .managers
            .get(id)
            .map_or(id.clone(), |(_, s, _)| s.clone())
    };
    let mut names: Vec<String> = path[from..].iter().map(shown).collect();
    names.push(shown(&path[from]));
    let line = files.managers.get(&path[from]).map_or(0, |(l, _, _)| *l);
    problems.at(
        &format!("employees.{ext}"),
        line,
        Some("managerId"),
        format!("manager cycle: {}", names.join(" → ")),
    );
}
