//! Deterministic seed data.
//!
//! Generates the same organisation on every machine: a fixed PRNG seed, fixed
//! reference lists ([`catalog`]) and dates relative to a fixed anchor date
//! (never "today"), so tests and demos see identical data. The output is plain
//! rows; the backend modules insert them.

mod catalog;
mod rng;
mod scaled;

use std::collections::{HashMap, HashSet};

use chrono::{Datelike, Days, NaiveDate};

use crate::model::{
    EmploymentStatus, EmploymentType, HistoryEvent, LeaveType, Level, OfficeType, Proficiency,
    TerminationReason,
};
use catalog::{DEPARTMENTS, DepartmentDef, EXECUTIVE_DEPARTMENT, TEAMS, TeamDef};
use rng::SplitMix64;

/// Fewest people `--demo-employees` accepts.
pub const MIN_DEMO_EMPLOYEES: u32 = scaled::MIN_EMPLOYEES;
/// Most people `--demo-employees` accepts.
pub const MAX_DEMO_EMPLOYEES: u32 = scaled::MAX_EMPLOYEES;

/// Bump when the generated content changes.
pub(crate) const SEED_VERSION: &str = "1";

/// True when any table the seed fills already has a row (one query, the same
/// on both backends): only a database with none of them gets the demo.
pub(crate) const ANY_ROWS_SQL: &str = "SELECT EXISTS (SELECT 1 FROM employees)
    OR EXISTS (SELECT 1 FROM departments) OR EXISTS (SELECT 1 FROM teams)
    OR EXISTS (SELECT 1 FROM locations) OR EXISTS (SELECT 1 FROM roles)
    OR EXISTS (SELECT 1 FROM skills)";
/// Company name used in employment histories.
pub(crate) const COMPANY: &str = "Acme Corp";
const EMAIL_DOMAIN: &str = "acmecorp.com";
const PRNG_SEED: u64 = 0x00AC_3E00_2026_0001;

/// All generated dates lie on or before this day.
pub(crate) fn anchor_date() -> NaiveDate {
    ymd(2026, 10, 1)
}

const fn ymd(y: i32, m: u32, d: u32) -> NaiveDate {
    match NaiveDate::from_ymd_opt(y, m, d) {
        Some(date) => date,
        None => NaiveDate::MIN,
    }
}

/// Share of each team that has left in the two years before the anchor.
const TERMINATED_SHARE: f64 = 0.16;

pub(crate) struct DepartmentRow {
    pub id: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    pub head_id: String,
}

pub(crate) struct TeamRow {
    pub id: String,
    pub name: String,
    pub department_id: &'static str,
    pub description: &'static str,
    pub manager_id: String,
}

pub(crate) struct LocationRow {
    pub id: i64,
    pub city: &'static str,
    pub region: Option<&'static str>,
    pub country: &'static str,
}

/// Role track, stored as text.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Track {
    IndividualContributor,
    Manager,
    Executive,
}

impl Track {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Track::IndividualContributor => "individual-contributor",
            Track::Manager => "manager",
            Track::Executive => "executive",
        }
    }
}

pub(crate) struct RoleRow {
    pub id: i64,
    pub title: &'static str,
    pub track: Track,
    pub department_id: &'static str,
}

pub(crate) struct BandRow {
    pub role_id: i64,
    pub level: Level,
    pub min: i64,
    pub mid: i64,
    pub max: i64,
}

pub(crate) struct SkillRow {
    pub id: i64,
    pub name: &'static str,
    pub category: &'static str,
}

pub(crate) struct EmployeeRow {
    pub id: String,
    pub first_name: String,
    pub last_name: String,
    pub email: String,
    pub phone: String,
    pub role_id: i64,
    pub level: Level,
    pub department_id: &'static str,
    pub team_id: Option<String>,
    pub manager_id: Option<String>,
    pub location_id: i64,
    pub employment_type: EmploymentType,
    pub office_type: OfficeType,
    pub start_date: NaiveDate,
    pub status: EmploymentStatus,
    pub termination_date: Option<NaiveDate>,
    pub termination_reason: Option<TerminationReason>,
    pub salary: i64,
}

pub(crate) struct EmployeeSkillRow {
    pub employee_id: String,
    pub skill_id: i64,
    pub proficiency: Proficiency,
}

pub(crate) struct HistoryRow {
    pub employee_id: String,
    pub company: String,
    pub title: String,
    pub level: Option<Level>,
    pub department_id: Option<&'static str>,
    pub event: HistoryEvent,
    pub start_date: NaiveDate,
    pub end_date: Option<NaiveDate>,
}

pub(crate) struct LeaveRow {
    pub employee_id: String,
    pub leave_type: LeaveType,
    pub year: i32,
    pub entitled: f64,
    pub used: f64,
    pub pending: f64,
}

/// Generated rows, in insertion order: the whole organisation (from
/// [`generate`]) or one batch of it (what a [`Sink`] is handed).
#[derive(Default)]
pub(crate) struct SeedData {
    pub departments: Vec<DepartmentRow>,
    pub teams: Vec<TeamRow>,
    pub locations: Vec<LocationRow>,
    pub roles: Vec<RoleRow>,
    pub bands: Vec<BandRow>,
    pub skills: Vec<SkillRow>,
    pub employees: Vec<EmployeeRow>,
    pub employee_skills: Vec<EmployeeSkillRow>,
    pub history: Vec<HistoryRow>,
    pub leave: Vec<LeaveRow>,
}

impl SeedData {
    /// Empties every table, keeping the allocations for the next batch.
    pub(crate) fn clear(&mut self) {
        self.departments.clear();
        self.teams.clear();
        self.locations.clear();
        self.roles.clear();
        self.bands.clear();
        self.skills.clear();
        self.employees.clear();
        self.employee_skills.clear();
        self.history.clear();
        self.leave.clear();
    }
}

/// Where the generator's rows go, a batch at a time: a company of a
/// million people is written as it is made, never held whole (a batch is
/// at most [`BATCH_PEOPLE`] people with their skills, history and leave).
/// Rows reach the sink in generation order per table; a row may refer to
/// one of a later batch (a department's head, a team's manager), so the
/// sink checks references once at the end.
pub(crate) trait Sink {
    /// Takes the rows generated since the last call and leaves `batch`
    /// empty.
    fn take(&mut self, batch: &mut SeedData) -> Result<(), String>;
}

/// Keeps every row (the default demo, tests).
impl Sink for SeedData {
    fn take(&mut self, batch: &mut SeedData) -> Result<(), String> {
        self.departments.append(&mut batch.departments);
        self.teams.append(&mut batch.teams);
        self.locations.append(&mut batch.locations);
        self.roles.append(&mut batch.roles);
        self.bands.append(&mut batch.bands);
        self.skills.append(&mut batch.skills);
        self.employees.append(&mut batch.employees);
        self.employee_skills.append(&mut batch.employee_skills);
        self.history.append(&mut batch.history);
        self.leave.append(&mut batch.leave);
        Ok(())
    }
}

/// People per batch handed to a [`Sink`]: large enough that a batch is
/// one cheap round of inserts, small enough to stay a few MiB.
pub(crate) const BATCH_PEOPLE: usize = 4096;

/// Builds a job title from a role and level ("Senior" + "Software Engineer").
pub(crate) fn job_title(role: &str, track: &str, level: Level) -> String {
    match level.title_prefix() {
        Some(prefix) if track == Track::IndividualContributor.as_str() => {
            format!("{prefix} {role}")
        }
        _ => role.to_string(),
    }
}

/// The whole organisation at once, as [`generate_into`] makes it (tests).
#[cfg(test)]
pub(crate) fn generate(employees: Option<u32>) -> Result<SeedData, String> {
    let mut all = SeedData::default();
    generate_into(employees, &mut all)?;
    Ok(all)
}

/// Generates the organisation, handing the rows to `sink` in batches;
/// returns the number of people. Pure and deterministic: `None` is the
/// demo company (about 1,400 people), `Some(n)` a company of exactly `n`
/// people shaped like a real one (see [`scaled`]).
pub(crate) fn generate_into(employees: Option<u32>, sink: &mut dyn Sink) -> Result<u64, String> {
    let generator = Generator::new(sink);
    match employees {
        None => generator.run(),
        Some(n) => generator.run_scaled(n),
    }
}

/// Settings for one person; `None` fields are drawn at random.
#[derive(Default)]
struct PersonSpec {
    name: Option<(&'static str, &'static str)>,
    start: Option<NaiveDate>,
    location: Option<&'static str>,
    employment_type: Option<EmploymentType>,
    office_type: Option<OfficeType>,
    phone: Option<&'static str>,
    skills: Option<&'static [(&'static str, Proficiency)]>,
    termination: Option<(NaiveDate, TerminationReason)>,
}

/// Where a person sits in the organisation.
struct Placement<'a> {
    department: &'a DepartmentDef,
    /// The team whose roles shape the person's history.
    team: Option<&'a TeamDef>,
    /// The team the person belongs to (none for heads and directors).
    team_id: Option<&'a str>,
    role: &'static str,
    track: Track,
    level: Level,
    manager_id: Option<String>,
    /// Skill pool (team skills first, then department skills).
    skill_pool: Vec<&'static str>,
}

/// Where a team's members are placed: the team, its id and its manager.
struct Staff<'a> {
    department: &'a DepartmentDef,
    /// The team whose roles the members draw from.
    team: &'a TeamDef,
    team_id: &'a str,
    manager_id: &'a str,
    skill_pool: &'a [&'static str],
}

/// A team's skill pool (team skills first, then the department's others)
/// and its manager's (leadership skills first).
fn team_pools(dept: &DepartmentDef, team: &TeamDef) -> (Vec<&'static str>, Vec<&'static str>) {
    let mut pool: Vec<&'static str> = team.skills.to_vec();
    pool.extend(
        dept.common_skills
            .iter()
            .filter(|s| !team.skills.contains(s)),
    );
    let mut manager_pool = vec!["Leadership", "Coaching"];
    manager_pool.extend_from_slice(&pool);
    (pool, manager_pool)
}

struct Generator<'s> {
    rng: SplitMix64,
    /// Rows not yet handed to `sink`.
    data: SeedData,
    sink: &'s mut dyn Sink,
    /// People generated so far (all batches).
    people: u64,
    next_role_id: i64,
    taken_ids: HashSet<String>,
    /// Next suffix to try per lower-cased name, so a million people with
    /// a few thousand distinct names do not probe suffixes one by one.
    next_suffix: HashMap<String, u32>,
    /// Skills drawn with long-tail weights (the scaled company).
    long_tail_skills: bool,
    role_ids: HashMap<&'static str, i64>,
    skill_ids: HashMap<&'static str, i64>,
    bands: HashMap<(i64, Level), (i64, i64)>,
    next_phone: u32,
}

const IC_LEVELS: &[(Level, u32)] = &[
    (Level::Junior, 16),
    (Level::Mid, 34),
    (Level::Senior, 30),
    (Level::Staff, 14),
    (Level::Principal, 6),
];

const MANAGER_LEVELS: &[(Level, u32)] = &[
    (Level::Senior, 35),
    (Level::Staff, 40),
    (Level::Principal, 15),
    (Level::Director, 10),
];

impl<'s> Generator<'s> {
    fn new(sink: &'s mut dyn Sink) -> Self {
        Generator {
            rng: SplitMix64::new(PRNG_SEED),
            data: SeedData::default(),
            sink,
            people: 0,
            next_role_id: 1,
            taken_ids: HashSet::new(),
            next_suffix: HashMap::new(),
            long_tail_skills: false,
            role_ids: HashMap::new(),
            skill_ids: HashMap::new(),
            bands: HashMap::new(),
            // Numbers below 200 are reserved for hand-written people.
            next_phone: 200,
        }
    }

    /// The CEO and the executive office (the same at every company size);
    /// returns the CEO's id.
    fn executive_office(&mut self) -> Result<String, String> {
        let ceo_id = self.person(
            &Placement {
                department: &EXECUTIVE_DEPARTMENT,
                team: None,
                team_id: None,
                role: EXECUTIVE_DEPARTMENT.head_role,
                track: Track::Executive,
                level: Level::Executive,
                manager_id: None,
                skill_pool: vec!["Leadership", "Public Speaking", "Budgeting", "Negotiation"],
            },
            PersonSpec {
                name: Some(("Margaret", "Chen")),
                start: Some(ymd(2012, 2, 6)),
                location: Some("San Francisco"),
                employment_type: Some(EmploymentType::FullTime),
                office_type: Some(OfficeType::OnSite),
                ..PersonSpec::default()
            },
        )?;
        self.data.departments.push(DepartmentRow {
            id: EXECUTIVE_DEPARTMENT.id,
            name: EXECUTIVE_DEPARTMENT.name,
            description: EXECUTIVE_DEPARTMENT.description,
            head_id: ceo_id.clone(),
        });
        Ok(ceo_id)
    }

    /// The head of `dept`, reporting to the CEO, and the department's row
    /// (the same placement at every company size).
    fn department_head(
        &mut self,
        dept: &'static DepartmentDef,
        ceo_id: &str,
    ) -> Result<String, String> {
        let mut pool = vec!["Leadership", "Budgeting"];
        pool.extend_from_slice(dept.common_skills);
        let start = self.date_between(ymd(2012, 3, 1), ymd(2018, 12, 31));
        let head_id = self.person(
            &Placement {
                department: dept,
                team: None,
                team_id: None,
                role: dept.head_role,
                track: Track::Executive,
                level: Level::Executive,
                manager_id: Some(ceo_id.to_string()),
                skill_pool: pool,
            },
            PersonSpec {
                start: Some(start),
                employment_type: Some(EmploymentType::FullTime),
                ..PersonSpec::default()
            },
        )?;
        self.data.departments.push(DepartmentRow {
            id: dept.id,
            name: dept.name,
            description: dept.description,
            head_id: head_id.clone(),
        });
        Ok(head_id)
    }

    /// Hands the rows made since the last flush to the sink.
    fn flush(&mut self) -> Result<(), String> {
        self.sink.take(&mut self.data)?;
        self.data.clear();
        Ok(())
    }

    fn run(mut self) -> Result<u64, String> {
        self.reference_data();

        let ceo_id = self.executive_office()?;

        for dept in DEPARTMENTS {
            let head_id = self.department_head(dept, &ceo_id)?;
            for team in TEAMS.iter().filter(|t| t.department == dept.id) {
                self.team(dept, team, &head_id)?;
            }
        }
        self.flush()?;
        Ok(self.people)
    }

    fn reference_data(&mut self) {
        for (i, (city, region, country, _, _)) in catalog::LOCATIONS.iter().enumerate() {
            self.data.locations.push(LocationRow {
                id: i as i64 + 1,
                city,
                region: *region,
                country,
            });
        }
        for (i, (name, category)) in catalog::SKILLS.iter().enumerate() {
            let id = i as i64 + 1;
            self.skill_ids.insert(name, id);
            self.data.skills.push(SkillRow { id, name, category });
        }

        self.add_role(
            EXECUTIVE_DEPARTMENT.head_role,
            Track::Executive,
            EXECUTIVE_DEPARTMENT.id,
            &[(Level::Executive, EXECUTIVE_DEPARTMENT.head_mid)],
        );
        for dept in DEPARTMENTS {
            self.add_role(
                dept.head_role,
                Track::Executive,
                dept.id,
                &[(Level::Executive, dept.head_mid)],
            );
            let m = dept.manager_mid;
            self.add_role(
                dept.manager_role,
                Track::Manager,
                dept.id,
                &[
                    (Level::Senior, m),
                    (Level::Staff, m * 115 / 100),
                    (Level::Principal, m * 132 / 100),
                    (Level::Director, m * 150 / 100),
                ],
            );
        }
        for (role, base) in catalog::IC_ROLES {
            let dept = TEAMS
                .iter()
                .find(|t| t.roles.iter().any(|(r, _)| r == role))
                .map_or("", |t| t.department);
            self.add_role(
                role,
                Track::IndividualContributor,
                dept,
                &[
                    (Level::Junior, base * 75 / 100),
                    (Level::Mid, *base),
                    (Level::Senior, base * 128 / 100),
                    (Level::Staff, base * 155 / 100),
                    (Level::Principal, base * 185 / 100),
                ],
            );
        }
    }

    fn add_role(
        &mut self,
        title: &'static str,
        track: Track,
        department_id: &'static str,
        mids: &[(Level, i64)],
    ) {
        let id = self.next_role_id;
        self.next_role_id += 1;
        self.role_ids.insert(title, id);
        self.data.roles.push(RoleRow {
            id,
            title,
            track,
            department_id,
        });
        for &(level, mid) in mids {
            let mid = round_to(mid as f64, 1000);
            let min = round_to(mid as f64 * 0.82, 1000);
            let max = round_to(mid as f64 * 1.18, 1000);
            self.bands.insert((id, level), (min, max));
            self.data.bands.push(BandRow {
                role_id: id,
                level,
                min,
                mid,
                max,
            });
        }
    }

    fn team(&mut self, dept: &DepartmentDef, team: &TeamDef, head_id: &str) -> Result<(), String> {
        let (pool, manager_pool) = team_pools(dept, team);

        // The article's example people live in the Backend team.
        let is_backend = team.id == "backend";
        let manager_spec = if is_backend {
            alice_johnson()
        } else {
            let start = self.date_between(ymd(2013, 1, 1), ymd(2022, 12, 31));
            PersonSpec {
                start: Some(start),
                employment_type: Some(EmploymentType::FullTime),
                ..PersonSpec::default()
            }
        };
        let manager_level = if is_backend {
            Level::Staff
        } else {
            *self.rng.weighted(MANAGER_LEVELS)
        };
        let manager_id = self.person(
            &Placement {
                department: dept,
                team: Some(team),
                team_id: Some(team.id),
                role: dept.manager_role,
                track: Track::Manager,
                level: manager_level,
                manager_id: Some(head_id.to_string()),
                skill_pool: manager_pool,
            },
            manager_spec,
        )?;
        self.data.teams.push(TeamRow {
            id: team.id.to_string(),
            name: team.name.to_string(),
            department_id: dept.id,
            description: team.description,
            manager_id: manager_id.clone(),
        });

        let terminated = round_to(f64::from(team.size) * TERMINATED_SHARE, 1).max(1);
        let staff = Staff {
            department: dept,
            team,
            team_id: team.id,
            manager_id: &manager_id,
            skill_pool: &pool,
        };
        self.team_members(&staff, team.size, terminated as u32, is_backend)
    }

    /// A team's members under its manager: `members` active, then `former`
    /// who left; with `article`, the first is the article's John Doe. The
    /// same draws in the same order at every company size.
    fn team_members(
        &mut self,
        at: &Staff<'_>,
        members: u32,
        former: u32,
        article: bool,
    ) -> Result<(), String> {
        for i in 0..members + former {
            let mut spec = if article && i == 0 {
                john_doe()
            } else {
                PersonSpec::default()
            };
            let (role, level) = if article && i == 0 {
                ("Software Engineer", Level::Senior)
            } else {
                (
                    *self.rng.weighted(at.team.roles),
                    *self.rng.weighted(IC_LEVELS),
                )
            };
            if i >= members {
                let term =
                    self.date_between(anchor_date() - Days::new(729), anchor_date() - Days::new(1));
                let reason = if self.rng.chance(0.7) {
                    TerminationReason::Voluntary
                } else {
                    TerminationReason::Involuntary
                };
                spec.start = Some(self.date_between(ymd(2013, 1, 1), term - Days::new(120)));
                spec.termination = Some((term, reason));
            }
            self.person(
                &Placement {
                    department: at.department,
                    team: Some(at.team),
                    team_id: Some(at.team_id),
                    role,
                    track: Track::IndividualContributor,
                    level,
                    manager_id: Some(at.manager_id.to_string()),
                    skill_pool: at.skill_pool.to_vec(),
                },
                spec,
            )?;
        }
        Ok(())
    }

    /// Creates one employee with skills, history and leave; returns the id.
    fn person(&mut self, at: &Placement<'_>, spec: PersonSpec) -> Result<String, String> {
        let (first, last) = match spec.name {
            Some(name) => name,
            None => self.random_name(),
        };
        let (id, email) = self.unique_handle(first, last);

        let location_idx = match spec.location {
            Some(city) => catalog::LOCATIONS
                .iter()
                .position(|l| l.0 == city)
                .ok_or_else(|| format!("unknown seed city {city}"))?,
            None => {
                let weighted: Vec<(usize, u32)> = catalog::LOCATIONS
                    .iter()
                    .enumerate()
                    .map(|(i, l)| (i, l.4))
                    .collect();
                *self.rng.weighted(&weighted)
            }
        };
        let phone = match spec.phone {
            Some(p) => p.to_string(),
            None => {
                let code = catalog::LOCATIONS[location_idx].3;
                let n = self.next_phone;
                self.next_phone += 1;
                format!("{code}-555-{n:04}")
            }
        };
        let employment_type = spec.employment_type.unwrap_or_else(|| {
            let contractor_weight = if at.department.id == "customer-support" {
                14
            } else {
                7
            };
            *self.rng.weighted(&[
                (EmploymentType::FullTime, 100 - contractor_weight - 6),
                (EmploymentType::PartTime, 6),
                (EmploymentType::Contractor, contractor_weight),
            ])
        });
        let office_type = spec.office_type.unwrap_or_else(|| {
            *self.rng.weighted(&[
                (OfficeType::Remote, 25),
                (OfficeType::Hybrid, 50),
                (OfficeType::OnSite, 25),
            ])
        });
        let start = match spec.start {
            Some(d) => d,
            None => self.recent_weighted_start(),
        };
        let (status, termination_date, termination_reason) = match spec.termination {
            Some((d, r)) => (EmploymentStatus::Terminated, Some(d), Some(r)),
            None => (EmploymentStatus::Active, None, None),
        };
        let end = termination_date.unwrap_or_else(anchor_date);

        let role_id = *self
            .role_ids
            .get(at.role)
            .ok_or_else(|| format!("unknown seed role {}", at.role))?;
        let &(band_min, band_max) = self
            .bands
            .get(&(role_id, at.level))
            .ok_or_else(|| format!("no band for {} at {}", at.role, at.level))?;
        let position = 0.1 + 0.8 * self.rng.unit();
        let salary = round_to(
            band_min as f64 + (band_max - band_min) as f64 * position,
            500,
        );

        self.data.employees.push(EmployeeRow {
            id: id.clone(),
            first_name: first.to_string(),
            last_name: last.to_string(),
            email,
            phone,
            role_id,
            level: at.level,
            department_id: at.department.id,
            team_id: at.team_id.map(str::to_string),
            manager_id: at.manager_id.clone(),
            location_id: location_idx as i64 + 1,
            employment_type,
            office_type,
            start_date: start,
            status,
            termination_date,
            termination_reason,
            salary,
        });

        self.skills(&id, at, spec.skills)?;
        self.history(&id, at, start, termination_date);
        self.leave(&id, employment_type, start, end);
        self.people += 1;
        if self.data.employees.len() >= BATCH_PEOPLE {
            self.flush()?;
        }
        Ok(id)
    }

    fn random_name(&mut self) -> (&'static str, &'static str) {
        loop {
            let first = *self.rng.pick(catalog::FIRST_NAMES);
            let last = *self.rng.pick(catalog::LAST_NAMES);
            // Keep the article's example people unambiguous.
            if (first, last) != ("Alice", "Johnson") && (first, last) != ("John", "Doe") {
                return (first, last);
            }
        }
    }

    /// PascalCase id (`MariaGarcia`, then `MariaGarcia2`, ...) and matching email.
    fn unique_handle(&mut self, first: &str, last: &str) -> (String, String) {
        let base: String = format!("{first}{last}")
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        let key = base.to_ascii_lowercase();
        let mut n = self.next_suffix.get(&key).copied().unwrap_or(1);
        loop {
            let suffix = if n == 1 { String::new() } else { n.to_string() };
            let id = format!("{base}{suffix}");
            // Ids are compared case-insensitively everywhere.
            if self.taken_ids.insert(id.to_ascii_lowercase()) {
                self.next_suffix.insert(key, n + 1);
                let email = format!(
                    "{}.{}{}@{}",
                    first.to_ascii_lowercase(),
                    last.to_ascii_lowercase(),
                    suffix,
                    EMAIL_DOMAIN
                );
                return (id, email);
            }
            n += 1;
        }
    }

    fn skills(
        &mut self,
        id: &str,
        at: &Placement<'_>,
        fixed: Option<&[(&str, Proficiency)]>,
    ) -> Result<(), String> {
        let chosen: Vec<(&str, Proficiency)> = match fixed {
            Some(list) => list.to_vec(),
            None => {
                let count = 3 + self.rng.below(4);
                let mut picked: Vec<&str> = Vec::new();
                // Draw mostly from the front of the pool (team skills).
                let mut guard = 0;
                while picked.len() < count.min(at.skill_pool.len()) && guard < 100 {
                    guard += 1;
                    let skill = if self.long_tail_skills {
                        self.long_tail_skill(&at.skill_pool)
                    } else {
                        *self.rng.pick(&at.skill_pool)
                    };
                    if !picked.contains(&skill) {
                        picked.push(skill);
                    }
                }
                picked
                    .into_iter()
                    .map(|s| (s, self.proficiency(at.level)))
                    .collect()
            }
        };
        for (name, proficiency) in chosen {
            let skill_id = *self
                .skill_ids
                .get(name)
                .ok_or_else(|| format!("unknown seed skill {name}"))?;
            self.data.employee_skills.push(EmployeeSkillRow {
                employee_id: id.to_string(),
                skill_id,
                proficiency,
            });
        }
        Ok(())
    }

    fn proficiency(&mut self, level: Level) -> Proficiency {
        use Proficiency::*;
        let weights: [u32; 4] = match level {
            Level::Junior => [35, 45, 17, 3],
            Level::Mid => [12, 45, 35, 8],
            Level::Senior => [4, 24, 50, 22],
            Level::Staff => [2, 13, 45, 40],
            Level::Principal => [1, 9, 35, 55],
            Level::Director | Level::Executive => [5, 25, 45, 25],
        };
        *self.rng.weighted(&[
            (Beginner, weights[0]),
            (Intermediate, weights[1]),
            (Advanced, weights[2]),
            (Expert, weights[3]),
        ])
    }

    fn history(
        &mut self,
        id: &str,
        at: &Placement<'_>,
        start: NaiveDate,
        termination: Option<NaiveDate>,
    ) {
        let end = termination.unwrap_or_else(anchor_date);
        let years = (end - start).num_days() as f64 / 365.25;
        let track = at.track.as_str();

        // Positions held here: (title, level, from).
        let mut positions: Vec<(String, Level, NaiveDate)> = Vec::new();
        match at.track {
            Track::IndividualContributor => {
                let idx = IC_LEVELS
                    .iter()
                    .position(|(l, _)| *l == at.level)
                    .unwrap_or(0);
                let cap = 1 + self.rng.below(2);
                let promotions = idx.min((years / 2.5) as usize).min(cap);
                let span = (end - start).num_days();
                for step in 0..=promotions {
                    let level = IC_LEVELS[idx - promotions + step].0;
                    let from = if step == 0 {
                        start
                    } else {
                        first_of_month(
                            start
                                + Days::new((span * step as i64 / (promotions as i64 + 1)) as u64),
                        )
                    };
                    positions.push((job_title(at.role, track, level), level, from));
                }
            }
            Track::Manager if years >= 2.0 => {
                let team_role = at.team.and_then(|t| t.roles.first()).map_or("", |r| r.0);
                let ic_level = if self.rng.chance(0.5) {
                    Level::Senior
                } else {
                    Level::Staff
                };
                positions.push((
                    job_title(team_role, Track::IndividualContributor.as_str(), ic_level),
                    ic_level,
                    start,
                ));
                let months = 12 + self.rng.below(((years - 1.0) * 12.0) as usize);
                let promoted = start
                    .checked_add_months(chrono::Months::new(months as u32))
                    .map_or(start, first_of_month);
                positions.push((at.role.to_string(), at.level, promoted));
            }
            Track::Manager | Track::Executive => {
                positions.push((at.role.to_string(), at.level, start));
            }
        }
        // Most recent first.
        let mut next_from: Option<NaiveDate> = None;
        for (i, (title, level, from)) in positions.iter().enumerate().rev() {
            let to = match next_from {
                Some(next) => next.pred_opt(),
                None => termination,
            };
            self.data.history.push(HistoryRow {
                employee_id: id.to_string(),
                company: COMPANY.to_string(),
                title: title.clone(),
                level: Some(*level),
                department_id: Some(at.department.id),
                event: if i == 0 {
                    HistoryEvent::Hired
                } else {
                    HistoryEvent::Promoted
                },
                start_date: *from,
                end_date: to,
            });
            next_from = Some(*from);
        }

        // Previous employers, walking back from the start date.
        let previous = match at.level {
            Level::Junior => self.rng.below(2),
            _ => 1 + self.rng.below(2),
        };
        let mut before = start;
        let first_level = positions.first().map_or(at.level, |p| p.1);
        let base_role = match at.track {
            Track::IndividualContributor => at.role,
            _ => at
                .team
                .and_then(|t| t.roles.first())
                .map_or(at.role, |r| r.0),
        };
        for k in 0..previous {
            let to = before - Days::new(7 + self.rng.below(60) as u64);
            let from = to - Days::new(365 + self.rng.below(3 * 365) as u64);
            let title_level = match (first_level, k) {
                (Level::Junior, _) | (Level::Mid, _) => Level::Junior,
                (_, 0) => Level::Mid,
                _ => Level::Junior,
            };
            let company = self.rng.pick(catalog::PREVIOUS_EMPLOYERS).to_string();
            self.data.history.push(HistoryRow {
                employee_id: id.to_string(),
                company,
                title: job_title(
                    base_role,
                    Track::IndividualContributor.as_str(),
                    title_level,
                ),
                level: None,
                department_id: None,
                event: HistoryEvent::PreviousEmployer,
                start_date: from,
                end_date: Some(to),
            });
            before = from;
        }
    }

    fn leave(&mut self, id: &str, kind: EmploymentType, start: NaiveDate, as_of: NaiveDate) {
        let year = as_of.year();
        // Share of the year that has passed, for realistic "used" amounts.
        let elapsed = f64::from(as_of.ordinal()) / 365.0;
        let tenure_years = ((as_of - start).num_days() / 365) as f64;
        let contractor = kind == EmploymentType::Contractor;
        for &leave_type in LeaveType::ALL {
            let entitled = match (leave_type, kind) {
                (_, EmploymentType::Contractor) if leave_type != LeaveType::Unpaid => 0.0,
                (LeaveType::Annual, EmploymentType::PartTime) => 12.0,
                (LeaveType::Annual, _) => 20.0 + (tenure_years / 2.0).floor().min(5.0),
                (LeaveType::Sick, _) => 10.0,
                (LeaveType::Parental, _) => 60.0,
                (LeaveType::Bereavement, _) => 5.0,
                (LeaveType::Unpaid, _) => 10.0,
            };
            let (mut used, mut pending) = match leave_type {
                _ if contractor && leave_type != LeaveType::Unpaid => (0.0, 0.0),
                LeaveType::Annual => {
                    let used = entitled * elapsed * (0.4 + 0.6 * self.rng.unit());
                    let pending = if self.rng.chance(0.4) {
                        1.0 + self.rng.below(5) as f64
                    } else {
                        0.0
                    };
                    (used, pending)
                }
                LeaveType::Sick => (self.rng.below(15) as f64 / 2.0, 0.0),
                LeaveType::Parental if self.rng.chance(0.04) => {
                    (20.0 + self.rng.below(41) as f64, 0.0)
                }
                LeaveType::Bereavement if self.rng.chance(0.05) => {
                    (1.0 + self.rng.below(5) as f64, 0.0)
                }
                LeaveType::Unpaid if self.rng.chance(0.05) => {
                    (1.0 + self.rng.below(10) as f64, 0.0)
                }
                _ => (0.0, 0.0),
            };
            used = (round_half(used)).min(entitled);
            pending = round_half(pending).min(entitled - used);
            self.data.leave.push(LeaveRow {
                employee_id: id.to_string(),
                leave_type,
                year,
                entitled,
                used,
                pending,
            });
        }
    }

    fn date_between(&mut self, from: NaiveDate, to: NaiveDate) -> NaiveDate {
        let span = (to - from).num_days().max(0) as usize;
        monday_on_or_before(from + Days::new(self.rng.below(span + 1) as u64)).max(from)
    }

    /// Start dates skewed towards recent years (the company grew over time).
    fn recent_weighted_start(&mut self) -> NaiveDate {
        let founded = ymd(2012, 6, 1);
        let latest = anchor_date() - Days::new(14);
        let span = (latest - founded).num_days() as f64;
        let offset = (span * self.rng.unit().sqrt()) as u64;
        monday_on_or_before(founded + Days::new(offset)).max(founded)
    }
}

/// The article's team manager (Backend).
fn alice_johnson() -> PersonSpec {
    PersonSpec {
        name: Some(("Alice", "Johnson")),
        start: Some(ymd(2016, 6, 13)),
        location: Some("San Francisco"),
        employment_type: Some(EmploymentType::FullTime),
        office_type: Some(OfficeType::Hybrid),
        phone: Some("+1-555-0101"),
        skills: Some(&[
            ("Leadership", Proficiency::Expert),
            ("System Design", Proficiency::Expert),
            ("Go", Proficiency::Advanced),
            ("Kubernetes", Proficiency::Advanced),
            ("Coaching", Proficiency::Advanced),
        ]),
        ..PersonSpec::default()
    }
}

/// The article's example employee (Backend, reports to Alice Johnson).
fn john_doe() -> PersonSpec {
    PersonSpec {
        name: Some(("John", "Doe")),
        start: Some(ymd(2020, 1, 15)),
        location: Some("San Francisco"),
        employment_type: Some(EmploymentType::FullTime),
        office_type: Some(OfficeType::Hybrid),
        phone: Some("+1-555-0123"),
        skills: Some(&[
            ("Java", Proficiency::Expert),
            ("Python", Proficiency::Advanced),
            ("PostgreSQL", Proficiency::Advanced),
            ("AWS", Proficiency::Intermediate),
            ("Kubernetes", Proficiency::Intermediate),
        ]),
        ..PersonSpec::default()
    }
}

fn monday_on_or_before(date: NaiveDate) -> NaiveDate {
    date - Days::new(u64::from(date.weekday().num_days_from_monday()))
}

fn first_of_month(date: NaiveDate) -> NaiveDate {
    date.with_day(1).unwrap_or(date)
}

fn round_to(value: f64, step: i64) -> i64 {
    ((value / step as f64).round() as i64) * step
}

fn round_half(value: f64) -> f64 {
    (value * 2.0).round() / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_consistent() {
        let a = generate(None).unwrap();
        let b = generate(None).unwrap();
        assert_eq!(a.employees.len(), b.employees.len());
        for (x, y) in a.employees.iter().zip(&b.employees) {
            assert_eq!(
                (&x.id, x.salary, x.start_date),
                (&y.id, y.salary, y.start_date)
            );
        }
        let active = a
            .employees
            .iter()
            .filter(|e| e.status == EmploymentStatus::Active)
            .count();
        assert!(active >= 1200, "only {active} active employees");

        let ids: HashSet<String> = a.employees.iter().map(|e| e.id.to_lowercase()).collect();
        assert_eq!(ids.len(), a.employees.len());
        let emails: HashSet<&str> = a.employees.iter().map(|e| e.email.as_str()).collect();
        assert_eq!(emails.len(), a.employees.len());
        for e in &a.employees {
            assert!(e.start_date <= anchor_date());
            if let Some(t) = e.termination_date {
                assert!(t > e.start_date);
            }
            if let Some(m) = &e.manager_id {
                assert!(ids.contains(&m.to_lowercase()));
            }
        }
        for l in &a.leave {
            assert!(
                l.used + l.pending <= l.entitled,
                "{} {:?}",
                l.employee_id,
                l.leave_type
            );
        }
    }

    #[test]
    fn handles_collisions_with_suffixes() {
        let mut sink = SeedData::default();
        let mut g = Generator::new(&mut sink);
        assert_eq!(g.unique_handle("Maria", "Garcia").0, "MariaGarcia");
        let (id, email) = g.unique_handle("Maria", "Garcia");
        assert_eq!(id, "MariaGarcia2");
        assert_eq!(email, "maria.garcia2@acmecorp.com");
    }
}
