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

/// A key as compared, kept as a 128-bit digest of its normalized text
/// ([`normalize`]): a million people's keys take 16 bytes each instead of
/// a string each, and two keys that differ collide with odds of 2^-128.
/// Two `u64`s rather than a `u128`, so a map entry holding one is aligned
/// to 8 bytes, not padded to 16.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyDigest([u64; 2]);

/// The digest of a normalized key (two SipHash passes, fixed keys, so the
/// same key digests the same in both passes of an import).
pub fn digest(normalized: &str) -> KeyDigest {
    let half = |salt: u8| {
        let mut h = DefaultHasher::new();
        salt.hash(&mut h);
        normalized.hash(&mut h);
        h.finish()
    };
    KeyDigest([half(0), half(1)])
}

/// An employee's manager, or none, in the 16 bytes of one digest (an
/// `Option` would add 8): no key digests to all zeros but with odds of
/// 2^-128.
#[derive(Clone, Copy, Debug)]
struct Manager(KeyDigest);

impl Manager {
    const NONE: Manager = Manager(KeyDigest([0, 0]));

    fn of(manager: Option<KeyDigest>) -> Manager {
        manager.map_or(Manager::NONE, Manager)
    }

    fn get(self) -> Option<KeyDigest> {
        (self.0 != Manager::NONE.0).then_some(self.0)
    }
}

/// Keys already in the database, for references the files do not satisfy.
#[derive(Debug, Default)]
pub struct Known {
    /// Key digests by entity name (referenced entities and bands, but
    /// not employees: their ids are the keys of `managers`).
    keys: HashMap<&'static str, HashSet<KeyDigest>>,
    /// Each employee's manager.
    managers: HashMap<KeyDigest, Manager>,
}

impl Known {
    /// Records a key of `entity` (its normalized parts joined by
    /// [`KEY_SEPARATOR`]).
    /// Employees are recorded by [`Known::insert_manager`].
    pub fn insert_key(&mut self, entity: &'static str, key: &str) {
        if entity != "employees" {
            self.keys.entry(entity).or_default().insert(digest(key));
        }
    }

    /// Records an employee and their manager (normalized ids).
    pub fn insert_manager(&mut self, id: &str, manager: Option<&str>) {
        self.managers
            .insert(digest(id), Manager::of(manager.map(digest)));
    }

    fn contains(&self, entity: &str, key: &KeyDigest) -> bool {
        match entity {
            "employees" => self.managers.contains_key(key),
            _ => self.keys.get(entity).is_some_and(|s| s.contains(key)),
        }
    }
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
        file_keys: &file_keys,
        known,
        present: &present,
        mode,
        ext: format.extension(),
        date_format: options.date_format.as_deref(),
    };
    for source in sources {
        let mut reader = RowReader::open(source, options, &mut checked.problems)?;
        let mut seen = Seen::default();
        let mut rows = 0;
        while let Some(row) = reader.next_row(source.entity) {
            rows += 1;
            match row {
                Err(p) => checked.problems.push(p),
                Ok(row) => check_row(source, &row, &resolve, &mut seen, &mut checked.problems),
            }
        }
        checked.files.push((rows, reader.digest()));
        if !seen.again.is_empty() {
            report_duplicates(source, options, &seen.again, &mut checked.problems)?;
        }
    }
    if present.contains("employees") {
        let cycles = find_cycles(&file_keys, known, mode);
        if !cycles.is_empty() {
            let employees = sources.iter().find(|s| s.entity.name == "employees");
            let shown = match employees {
                Some(source) => shown_ids(source, options, &cycles)?,
                None => HashMap::new(),
            };
            for cycle in &cycles {
                report_cycle(
                    &file_keys,
                    cycle,
                    &shown,
                    &mut checked.problems,
                    format.extension(),
                );
            }
        }
    }
    Ok(checked)
}

/// Keys found in the files (pass one).
struct FileKeys {
    /// By entity, but not employees: their ids are the keys of `managers`.
    keys: HashMap<&'static str, HashSet<KeyDigest>>,
    /// Employees in the file: id → (line, manager).
    managers: HashMap<KeyDigest, (u64, Manager)>,
}

impl FileKeys {
    fn contains(&self, entity: &str, key: &KeyDigest) -> bool {
        match entity {
            "employees" => self.managers.contains_key(key),
            _ => self.keys.get(entity).is_some_and(|s| s.contains(key)),
        }
    }
}

/// The rows of one file seen so far, by a 64-bit hash of their key (8
/// bytes a row: the leave balances of a million people are 5 M rows).
/// A row whose hash was seen is kept aside; the file is read once more
/// at its end to find the first line of each, and only a key truly equal
/// is reported.
#[derive(Default)]
struct Seen {
    hashes: HashSet<u64>,
    /// Rows whose key hash was seen before: (line, key).
    again: Vec<(u64, String)>,
}

/// At most this many repeated keys are kept aside per file; past it a
/// repeat is reported without its first line.
const MAX_REPEATS_KEPT: usize = 10_000;

fn key_hash(key: &str) -> u64 {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// Reports each row of `again` whose key an earlier row of the file had,
/// with that row's line.
fn report_duplicates(
    source: &Source,
    options: &ImportOptions,
    again: &[(u64, String)],
    problems: &mut Problems,
) -> Result<(), ExchangeError> {
    let wanted: HashSet<&str> = again.iter().map(|(_, k)| k.as_str()).collect();
    let mut first: HashMap<String, u64> = HashMap::new();
    let mut ignored = Problems::default();
    let mut reader = RowReader::open(source, options, &mut ignored)?;
    while let Some(row) = reader.next_row(source.entity) {
        let Ok(row) = row else { continue };
        if let Some(key) = key_of(source.entity, &row.cells)
            && wanted.contains(key.as_str())
        {
            first.entry(key).or_insert(row.line);
        }
    }
    let entity = source.entity;
    let column = entity.columns[entity.key[0]].name;
    for (line, key) in again {
        // Another key with the same 64-bit hash is no duplicate.
        if let Some(&at) = first.get(key)
            && at < *line
        {
            let shown = key.replace(KEY_SEPARATOR, "/");
            let reason = format!("duplicate id {shown:?} (first on line {at})");
            problems.at(&source.file, *line, Some(column), reason);
        }
    }
    Ok(())
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
        let set: &mut HashSet<KeyDigest> = keys.entry(entity.name).or_default();
        let mut reader = RowReader::open(source, options, &mut ignored)?;
        while let Some(row) = reader.next_row(entity) {
            let Ok(row) = row else { continue };
            let Some(key) = key_of(entity, &row.cells) else {
                continue;
            };
            let key = digest(&key);
            if entity.name == "employees" {
                let manager = manager_column
                    .and_then(|m| row.cells[m].as_deref())
                    .map(|t| digest(&normalize(Kind::Text, t)));
                managers
                    .entry(key)
                    .or_insert((row.line, Manager::of(manager)));
            } else {
                set.insert(key);
            }
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
    file_keys: &'a FileKeys,
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
        let key = digest(key);
        let in_files = self.file_keys.contains(entity, &key);
        // Replace keeps database rows only of entities without a file.
        let db_kept = self.mode == Mode::Merge || !self.present.contains(entity);
        in_files || (db_kept && self.known.contains(entity, &key))
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
    seen: &mut Seen,
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
    if let Some(key) = key_of(entity, &row.cells)
        && !seen.hashes.insert(key_hash(&key))
    {
        if seen.again.len() < MAX_REPEATS_KEPT {
            seen.again.push((row.line, key));
        } else {
            let column = entity.columns[entity.key[0]].name;
            problems.at(&source.file, row.line, Some(column), "duplicate id");
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

/// One manager cycle: its employees in order, starting at the first
/// one met in the file.
type Cycle = Vec<KeyDigest>;

/// Finds each manager cycle once (following database managers in merge
/// mode).
fn find_cycles(files: &FileKeys, known: &Known, mode: Mode) -> Vec<Cycle> {
    let manager_of = |id: &KeyDigest| -> Option<KeyDigest> {
        match files.managers.get(id) {
            Some((_, m)) => m.get(),
            None if mode == Mode::Merge => known.managers.get(id).and_then(|m| m.get()),
            None => None,
        }
    };
    // 0 unvisited, 1 on the current path, 2 done.
    let mut state: HashMap<KeyDigest, u8> = HashMap::new();
    let mut ids: Vec<(u64, KeyDigest)> = files.managers.iter().map(|(k, v)| (v.0, *k)).collect();
    ids.sort_unstable();
    let mut cycles = Vec::new();
    for (_, start) in ids {
        if state.get(&start).copied().unwrap_or(0) != 0 {
            continue;
        }
        let mut path: Vec<KeyDigest> = Vec::new();
        let mut current = Some(start);
        while let Some(id) = current {
            match state.get(&id).copied() {
                Some(2) => break,
                Some(1) => {
                    if let Some(from) = path.iter().position(|p| *p == id) {
                        cycles.push(path[from..].to_vec());
                    }
                    break;
                }
                _ => {}
            }
            if files.managers.contains_key(&id) {
                state.insert(id, 1);
            } else if path.len() > files.managers.len() + known.managers.len() {
                // A database employee: followed without marking, bounded.
                break;
            }
            path.push(id);
            current = manager_of(&id);
        }
        for id in &path {
            if files.managers.contains_key(id) {
                state.insert(*id, 2);
            }
        }
    }
    cycles
}

/// The ids, as written in the file, of the employees in `cycles`: the
/// file is read once more, only when there is a cycle to report.
fn shown_ids(
    source: &Source,
    options: &ImportOptions,
    cycles: &[Cycle],
) -> Result<HashMap<KeyDigest, String>, ExchangeError> {
    let wanted: HashSet<KeyDigest> = cycles.iter().flatten().copied().collect();
    let mut shown = HashMap::new();
    let mut ignored = Problems::default();
    let mut reader = RowReader::open(source, options, &mut ignored)?;
    while let Some(row) = reader.next_row(source.entity) {
        let Ok(row) = row else { continue };
        let Some(key) = key_of(source.entity, &row.cells) else {
            continue;
        };
        let key = digest(&key);
        if wanted.contains(&key) {
            let id = row.cells[0].clone().unwrap_or_default();
            shown.entry(key).or_insert(id);
        }
    }
    Ok(shown)
}

/// Reports `cycle` at the line of its first employee in the file.
fn report_cycle(
    files: &FileKeys,
    cycle: &Cycle,
    shown: &HashMap<KeyDigest, String>,
    problems: &mut Problems,
    ext: &str,
) {
    let Some(first) = cycle.first() else { return };
    let name = |id: &KeyDigest| {
        shown
            .get(id)
            .cloned()
            .unwrap_or_else(|| "(an employee in the database)".to_owned())
    };
    let mut names: Vec<String> = cycle.iter().map(name).collect();
    names.push(name(first));
    let line = files.managers.get(first).map_or(0, |(l, _)| *l);
    problems.at(
        &format!("employees.{ext}"),
        line,
        Some("managerId"),
        format!("manager cycle: {}", names.join(" → ")),
    );
}
