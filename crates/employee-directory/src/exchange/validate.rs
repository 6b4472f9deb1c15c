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
use super::repeats::{Repeated, RowHashes, key_hash};
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

/// The keys that will exist after the import: the database's, for the
/// entities whose database rows the import keeps ([`from_database`]),
/// overlaid with the files' (pass one). One index for both, so a merge
/// over a million people holds each employee once, not once per side.
#[derive(Debug, Default)]
pub struct Known {
    /// Key digests by entity name (referenced entities and bands, but
    /// not employees: their ids are the keys of `managers`).
    keys: HashMap<&'static str, HashSet<KeyDigest>>,
    /// Each employee: the line of the file that names them (0: only in
    /// the database) and their manager (the file's, where it names them).
    managers: HashMap<KeyDigest, (u64, Manager)>,
}

/// Whether the import keeps the database's rows of `entity`, so that
/// references may name them: always when merging; when replacing, only
/// for an entity without a file.
pub fn from_database(entity: &str, sources: &[Source], mode: Mode) -> bool {
    mode == Mode::Merge || !sources.iter().any(|s| s.entity.name == entity)
}

impl Known {
    /// Records a database key of `entity` (its normalized parts joined
    /// by [`KEY_SEPARATOR`]).
    /// Employees are recorded by [`Known::insert_manager`].
    pub fn insert_key(&mut self, entity: &'static str, key: &str) {
        if entity != "employees" {
            self.keys.entry(entity).or_default().insert(digest(key));
        }
    }

    /// Makes room for `n` database employees at once (no rehash while
    /// they are read).
    pub fn reserve_employees(&mut self, n: usize) {
        self.managers.reserve(n);
    }

    /// Records a database employee and their manager (normalized ids).
    pub fn insert_manager(&mut self, id: &str, manager: Option<&str>) {
        self.managers
            .insert(digest(id), (0, Manager::of(manager.map(digest))));
    }

    /// Records an employee on `line` of the file: the file's row wins
    /// over the database's, the first line over later ones.
    fn insert_file_employee(&mut self, id: KeyDigest, line: u64, manager: Manager) {
        let entry = self.managers.entry(id).or_insert((0, manager));
        if entry.0 == 0 {
            *entry = (line, manager);
        }
    }

    fn contains(&self, entity: &str, key: &KeyDigest) -> bool {
        match entity {
            "employees" => self.managers.contains_key(key),
            _ => self.keys.get(entity).is_some_and(|s| s.contains(key)),
        }
    }

    /// The line of the file naming employee `id` (none: not in the file).
    fn file_line(&self, id: &KeyDigest) -> Option<u64> {
        self.managers
            .get(id)
            .map(|(line, _)| *line)
            .filter(|&l| l != 0)
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
/// database's keys that the import keeps ([`from_database`]).
pub fn validate(
    sources: &[Source],
    options: &ImportOptions,
    known: Known,
) -> Result<Checked, ExchangeError> {
    let (format, mode) = (options.format, options.mode);
    let mut checked = Checked::default();
    let keys = collect_keys(sources, options, known)?;
    let present: HashSet<&str> = sources.iter().map(|s| s.entity.name).collect();
    let resolve = Resolver {
        keys: &keys,
        present: &present,
        mode,
        ext: format.extension(),
        date_format: options.date_format.as_deref(),
    };
    for source in sources {
        let mut reader = RowReader::open(source, options, &mut checked.problems)?;
        let mut seen = RowHashes::default();
        let mut rows = 0;
        while let Some(row) = reader.next_row(source.entity) {
            rows += 1;
            match row {
                Err(p) => checked.problems.push(p),
                Ok(row) => check_row(source, &row, &resolve, &mut seen, &mut checked.problems),
            }
        }
        checked.files.push((rows, reader.digest()));
        let repeated = seen.repeated(MAX_REPEATS_KEPT);
        if !repeated.is_empty() {
            report_duplicates(source, options, &resolve, &repeated, &mut checked.problems)?;
        }
    }
    if present.contains("employees") {
        report_cycles(sources, options, &keys, &mut checked.problems)?;
    }
    Ok(checked)
}

/// Finds and reports every manager cycle among the files' employees.
fn report_cycles(
    sources: &[Source],
    options: &ImportOptions,
    keys: &Known,
    problems: &mut Problems,
) -> Result<(), ExchangeError> {
    let cycles = find_cycles(keys);
    if cycles.is_empty() {
        return Ok(());
    }
    let employees = sources.iter().find(|s| s.entity.name == "employees");
    let shown = match employees {
        Some(source) => shown_ids(source, options, &cycles)?,
        None => HashMap::new(),
    };
    for cycle in &cycles {
        report_cycle(keys, cycle, &shown, problems, options.format.extension());
    }
    Ok(())
}

/// At most this many repeated keys are looked up again per file to
/// report each repeat with the line of its first row; past it, the
/// repeats are counted in one problem.
const MAX_REPEATS_KEPT: usize = 10_000;

/// Reports each checked row whose key an earlier checked row of the file
/// had, with the first line of that key, by reading the file once more
/// for the keys `repeated` names.
fn report_duplicates(
    source: &Source,
    options: &ImportOptions,
    resolve: &Resolver<'_>,
    repeated: &Repeated,
    problems: &mut Problems,
) -> Result<(), ExchangeError> {
    let entity = source.entity;
    let column = entity.columns[entity.key[0]].name;
    // Key → (its first line, whether a checked row had it yet).
    let mut first: HashMap<String, (u64, bool)> = HashMap::new();
    let mut ignored = Problems::default();
    let mut reader = RowReader::open(source, options, &mut ignored)?;
    while let Some(row) = reader.next_row(entity) {
        let Ok(row) = row else { continue };
        let Some(key) = key_of(entity, &row.cells) else {
            continue;
        };
        if !repeated.hashes.contains(&key_hash(&key)) {
            continue;
        }
        // Only rows whose cells passed were hashed in the pass before.
        let checked = check_cells(source, &row, resolve, &mut Problems::default()).is_some();
        let shown = key.replace(KEY_SEPARATOR, "/");
        let (at, had) = first.entry(key).or_insert((row.line, false));
        if checked && *had {
            let reason = format!("duplicate id {shown:?} (first on line {at})");
            problems.at(&source.file, row.line, Some(column), reason);
        }
        *had |= checked;
    }
    if repeated.unlisted > 0 {
        let n = repeated.unlisted;
        let reason = format!(
            "{n} more rows repeat the {column} of an earlier row (not listed: fix the ones listed and import again)"
        );
        problems.at(&source.file, 0, Some(column), reason);
    }
    Ok(())
}

/// Pass one: the database's keys in `known`, overlaid with the files'.
fn collect_keys(
    sources: &[Source],
    options: &ImportOptions,
    mut known: Known,
) -> Result<Known, ExchangeError> {
    // Header problems are reported by the second pass.
    let mut ignored = Problems::default();
    let manager_column = super::spec::entity("employees").and_then(|e| e.column("managerId"));
    for source in sources {
        let entity = source.entity;
        if !is_referenced(entity) {
            continue;
        }
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
                known.insert_file_employee(key, row.line, Manager::of(manager));
            } else {
                known.keys.entry(entity.name).or_default().insert(key);
            }
        }
    }
    Ok(known)
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
    keys: &'a Known,
    present: &'a HashSet<&'a str>,
    mode: Mode,
    ext: &'static str,
    /// How dates in the files are written (`--date-format`).
    date_format: Option<&'a str>,
}

impl Resolver<'_> {
    /// Whether `key` of `entity` will exist after the import.
    fn exists(&self, entity: &str, key: &str) -> bool {
        // The database's keys are there only where the import keeps them.
        self.keys.contains(entity, &digest(key))
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
    seen: &mut RowHashes,
    problems: &mut Problems,
) {
    let Some(values) = check_cells(source, row, resolve, problems) else {
        return;
    };
    if let Some(key) = key_of(source.entity, &row.cells) {
        seen.push(key_hash(&key));
    }
    check_rules(source, row.line, &values, resolve, problems);
}

/// Each cell parsed by its column's kind and its reference resolved: the
/// values, or `None` when a cell has a problem (reported).
fn check_cells(
    source: &Source,
    row: &RawRow,
    resolve: &Resolver<'_>,
    problems: &mut Problems,
) -> Option<Vec<Value>> {
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
    (problems.total == before).then_some(values)
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

/// Finds each manager cycle through the files' employees once (following
/// database managers where the import keeps them).
fn find_cycles(keys: &Known) -> Vec<Cycle> {
    let manager_of = |id: &KeyDigest| keys.managers.get(id).and_then(|(_, m)| m.get());
    // 0 unvisited, 1 on the current path, 2 done.
    let mut state: HashMap<KeyDigest, u8> = HashMap::new();
    let mut ids: Vec<(u64, KeyDigest)> = keys
        .managers
        .iter()
        .filter(|(_, (line, _))| *line != 0)
        .map(|(k, (line, _))| (*line, *k))
        .collect();
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
            if keys.file_line(&id).is_some() {
                state.insert(id, 1);
            } else if path.len() > keys.managers.len() {
                // A database employee: followed without marking, bounded.
                break;
            }
            path.push(id);
            current = manager_of(&id);
        }
        for id in &path {
            if keys.file_line(id).is_some() {
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
    keys: &Known,
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
    let line = keys.file_line(first).unwrap_or(0);
    problems.at(
        &format!("employees.{ext}"),
        line,
        Some("managerId"),
        format!("manager cycle: {}", names.join(" → ")),
    );
}
