//! A company of any size (`--demo-employees N`): the demo's nine
//! departments, each split into teams of 3–15 active people (a manager and
//! members, plus former members), grouped under directors six to a manager
//! until at most eight report to the department head, so the management
//! chain deepens with the company (CEO → head → directors → team manager →
//! member; 5 levels at 1,000 people, 9 at 1,000,000). Skills follow a long
//! tail (a few team skills are very common, the whole catalogue appears),
//! people are spread over the demo's locations, and every person gets a
//! history and leave balances like the demo's people.
//!
//! Deterministic: the same `N` gives the same rows, and exactly `N` of them.

use super::catalog::{self, DEPARTMENTS, DepartmentDef, TEAMS, TeamDef};
use super::{
    Generator, PersonSpec, Placement, Staff, TERMINATED_SHARE, TeamRow, Track, alice_johnson,
    team_pools, ymd,
};
use crate::model::{EmploymentType, Level};

/// Fewest people a scaled company has: a CEO, eight heads and a team of
/// three in each department.
pub(crate) const MIN_EMPLOYEES: u32 = 1 + 8 * 4;
/// Most people a scaled company has.
pub(crate) const MAX_EMPLOYEES: u32 = 1_000_000;

/// Active members of a team besides its manager.
const MIN_MEMBERS: u32 = 2;
const MAX_MEMBERS: u32 = 14;
/// People reporting to one director.
const SPAN: usize = 6;
/// Most directors (or teams) reporting to a department head.
const HEAD_SPAN: usize = 8;

/// Team manager levels (directors sit above them).
const TEAM_MANAGER_LEVELS: &[(Level, u32)] = &[
    (Level::Senior, 35),
    (Level::Staff, 45),
    (Level::Principal, 20),
];

/// One team's size: active members besides the manager, and former ones.
#[derive(Clone, Copy)]
struct TeamSize {
    members: u32,
    former: u32,
}

impl TeamSize {
    fn rows(self) -> u32 {
        1 + self.members + self.former
    }
}

impl Generator<'_> {
    pub(super) fn run_scaled(mut self, employees: u32) -> Result<u64, String> {
        if !(MIN_EMPLOYEES..=MAX_EMPLOYEES).contains(&employees) {
            return Err(format!(
                "a demo company has {MIN_EMPLOYEES} to {MAX_EMPLOYEES} employees, not {employees}"
            ));
        }
        self.long_tail_skills = true;
        self.reference_data();
        let ceo_id = self.executive_office()?;
        for (dept, share) in DEPARTMENTS.iter().zip(shares(employees - 1)) {
            self.scaled_department(dept, &ceo_id, share)?;
        }
        self.flush()?;
        Ok(self.people)
    }

    /// A department of `share` people: its head, directors and teams.
    fn scaled_department(
        &mut self,
        dept: &'static DepartmentDef,
        ceo_id: &str,
        share: u32,
    ) -> Result<(), String> {
        let head_id = self.department_head(dept, ceo_id)?;

        let templates: Vec<&'static TeamDef> =
            TEAMS.iter().filter(|t| t.department == dept.id).collect();
        let budget = share - 1;
        let sizes = self.team_sizes(budget);
        let teams = sizes.len();
        let layers = director_layers(teams);
        let directors: u32 = layers.iter().map(|&n| n as u32).sum();
        let sizes = fit(sizes, budget - directors);

        // Directors, top layer first; each layer's people split evenly
        // among the layer above.
        let mut bosses = vec![head_id];
        for (depth, &count) in layers.iter().rev().enumerate() {
            let level = if depth == 0 {
                Level::Director
            } else {
                Level::Principal
            };
            let mut layer = Vec::with_capacity(count);
            for i in 0..count {
                let boss = bosses[i * bosses.len() / count].clone();
                layer.push(self.director(dept, templates[0], level, boss)?);
            }
            bosses = layer;
        }

        let mut seen = vec![0u32; templates.len()];
        for (i, size) in sizes.into_iter().enumerate() {
            // Every template once (in catalogue order) before repeats.
            let t = if i < templates.len() {
                i
            } else {
                let weighted: Vec<(usize, u32)> = templates
                    .iter()
                    .enumerate()
                    .map(|(k, t)| (k, t.size))
                    .collect();
                *self.rng.weighted(&weighted)
            };
            seen[t] += 1;
            let boss = bosses[i * bosses.len() / teams].clone();
            self.scaled_team(dept, templates[t], seen[t], size, boss)?;
        }
        Ok(())
    }

    /// Team sizes whose rows add up to about `budget` (before directors).
    fn team_sizes(&mut self, budget: u32) -> Vec<TeamSize> {
        let mut sizes = Vec::new();
        let mut used = 0;
        // Leave room for the directors (about one per five teams).
        while used + 3 <= budget.saturating_sub(sizes.len() as u32 / 5) {
            let members =
                MIN_MEMBERS + self.rng.below((MAX_MEMBERS - MIN_MEMBERS + 1) as usize) as u32;
            let former = (f64::from(members) * TERMINATED_SHARE).round() as u32;
            let size = TeamSize { members, former };
            used += size.rows();
            sizes.push(size);
        }
        if sizes.is_empty() {
            sizes.push(TeamSize {
                members: MIN_MEMBERS,
                former: 0,
            });
        }
        sizes
    }

    fn director(
        &mut self,
        dept: &'static DepartmentDef,
        template: &'static TeamDef,
        level: Level,
        boss: String,
    ) -> Result<String, String> {
        let mut pool = vec!["Leadership", "Coaching", "Budgeting"];
        pool.extend_from_slice(dept.common_skills);
        let start = self.date_between(ymd(2012, 6, 1), ymd(2021, 12, 31));
        self.person(
            &Placement {
                department: dept,
                team: Some(template),
                team_id: None,
                role: dept.manager_role,
                track: Track::Manager,
                level,
                manager_id: Some(boss),
                skill_pool: pool,
            },
            PersonSpec {
                start: Some(start),
                employment_type: Some(EmploymentType::FullTime),
                ..PersonSpec::default()
            },
        )
    }

    /// The `nth` team made from `template`: `backend`, then `backend-2`, ...
    fn scaled_team(
        &mut self,
        dept: &'static DepartmentDef,
        template: &'static TeamDef,
        nth: u32,
        size: TeamSize,
        boss: String,
    ) -> Result<(), String> {
        let (id, name) = if nth == 1 {
            (template.id.to_string(), template.name.to_string())
        } else {
            (
                format!("{}-{nth}", template.id),
                format!("{} {nth}", template.name),
            )
        };
        let (pool, manager_pool) = team_pools(dept, template);
        // The article's people lead the first Backend team.
        let article = id == "backend";
        let (manager_spec, manager_level) = if article {
            (alice_johnson(), Level::Staff)
        } else {
            let start = self.date_between(ymd(2013, 1, 1), ymd(2022, 12, 31));
            let spec = PersonSpec {
                start: Some(start),
                employment_type: Some(EmploymentType::FullTime),
                ..PersonSpec::default()
            };
            (spec, *self.rng.weighted(TEAM_MANAGER_LEVELS))
        };
        let manager_id = self.person(
            &Placement {
                department: dept,
                team: Some(template),
                team_id: Some(&id),
                role: dept.manager_role,
                track: Track::Manager,
                level: manager_level,
                manager_id: Some(boss),
                skill_pool: manager_pool,
            },
            manager_spec,
        )?;
        self.data.teams.push(TeamRow {
            id: id.clone(),
            name,
            department_id: dept.id,
            description: template.description,
            manager_id: manager_id.clone(),
        });
        let staff = Staff {
            department: dept,
            team: template,
            team_id: &id,
            manager_id: &manager_id,
            skill_pool: &pool,
        };
        self.team_members(&staff, size.members, size.former, article)
    }

    /// A skill from `pool` with Zipf weights (the first few are common),
    /// or now and then any skill of the catalogue: a long tail.
    pub(super) fn long_tail_skill(&mut self, pool: &[&'static str]) -> &'static str {
        if self.rng.chance(0.03) {
            return self.rng.pick(catalog::SKILLS).0;
        }
        let weighted: Vec<(&'static str, u32)> = pool
            .iter()
            .enumerate()
            .map(|(i, s)| (*s, (1000.0 / (i as f64 + 1.0).powf(1.5)) as u32))
            .collect();
        let &picked = self.rng.weighted(&weighted);
        picked
    }
}

/// People per department (besides the CEO): at least 4 each, the rest in
/// proportion to the demo's team sizes; they add up to `people`.
fn shares(people: u32) -> Vec<u32> {
    let weight = |d: &DepartmentDef| -> u64 {
        TEAMS
            .iter()
            .filter(|t| t.department == d.id)
            .map(|t| u64::from(t.size))
            .sum()
    };
    let total: u64 = DEPARTMENTS.iter().map(weight).sum();
    let spare = u64::from(people - 4 * DEPARTMENTS.len() as u32);
    let mut out: Vec<u32> = DEPARTMENTS
        .iter()
        .map(|d| 4 + (spare * weight(d) / total) as u32)
        .collect();
    let given: u32 = out.iter().sum();
    out[0] += people - given;
    out
}

/// Directors per layer, bottom (over the teams) first, until at most
/// [`HEAD_SPAN`] report to the head.
fn director_layers(teams: usize) -> Vec<usize> {
    let mut layers = Vec::new();
    let mut width = teams;
    while width > HEAD_SPAN {
        width = width.div_ceil(SPAN);
        layers.push(width);
    }
    layers
}

/// Adjusts team sizes (members within bounds, then former members) until
/// their rows add up to exactly `rows`.
fn fit(mut sizes: Vec<TeamSize>, rows: u32) -> Vec<TeamSize> {
    let mut have: i64 = sizes.iter().map(|s| i64::from(s.rows())).sum();
    let want = i64::from(rows);
    let (mut i, mut stuck, n) = (0, 0, sizes.len());
    while have != want && stuck <= n {
        let s = &mut sizes[i % n];
        let moved = if have < want {
            if s.members < MAX_MEMBERS {
                s.members += 1;
            } else {
                s.former += 1;
            }
            have += 1;
            true
        } else if s.former > 0 {
            s.former -= 1;
            have -= 1;
            true
        } else if s.members > MIN_MEMBERS {
            s.members -= 1;
            have -= 1;
            true
        } else {
            false
        };
        stuck = if moved { 0 } else { stuck + 1 };
        i += 1;
    }
    sizes
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};
    use std::hash::{DefaultHasher, Hash, Hasher};

    use super::super::{SeedData, generate};
    use super::*;
    use crate::model::EmploymentStatus;

    /// A checksum over every generated row's content.
    fn checksum(data: &SeedData) -> u64 {
        let mut h = DefaultHasher::new();
        for e in &data.employees {
            (&e.id, &e.email, &e.team_id, &e.manager_id, e.salary).hash(&mut h);
            (
                e.location_id,
                e.start_date,
                e.termination_date,
                e.level.as_str(),
            )
                .hash(&mut h);
        }
        for s in &data.employee_skills {
            (&s.employee_id, s.skill_id, s.proficiency.rank()).hash(&mut h);
        }
        for r in &data.history {
            (
                &r.employee_id,
                &r.company,
                &r.title,
                r.start_date,
                r.end_date,
            )
                .hash(&mut h);
        }
        for l in &data.leave {
            (
                &l.employee_id,
                l.year,
                l.used.to_bits(),
                l.pending.to_bits(),
            )
                .hash(&mut h);
        }
        for t in &data.teams {
            (&t.id, &t.name, &t.manager_id).hash(&mut h);
        }
        h.finish()
    }

    /// Checks the company's shape; returns the management depth.
    fn assert_shaped(n: u32) -> usize {
        let data = generate(Some(n)).unwrap();
        assert_eq!(data.employees.len(), n as usize, "exactly N people");
        let by_id: HashMap<&str, &super::super::EmployeeRow> =
            data.employees.iter().map(|e| (e.id.as_str(), e)).collect();
        assert_eq!(by_id.len(), data.employees.len(), "unique ids");
        let emails: HashSet<&str> = data.employees.iter().map(|e| e.email.as_str()).collect();
        assert_eq!(emails.len(), data.employees.len(), "unique emails");

        // Teams: 3–15 active people, the manager one of them.
        let mut active: HashMap<&str, u32> = HashMap::new();
        for e in &data.employees {
            if let (Some(team), EmploymentStatus::Active) = (&e.team_id, e.status) {
                *active.entry(team.as_str()).or_default() += 1;
            }
        }
        let names: HashSet<&str> = data.teams.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names.len(), data.teams.len(), "unique team names");
        for t in &data.teams {
            let size = active.get(t.id.as_str()).copied().unwrap_or(0);
            assert!((3..=15).contains(&size), "team {} has {size} people", t.id);
            let manager = by_id[t.manager_id.as_str()];
            assert_eq!(manager.team_id.as_deref(), Some(t.id.as_str()));
            assert_eq!(manager.status, EmploymentStatus::Active);
        }

        // Management chain: everyone reaches the CEO, within bounds.
        let mut deepest = 0;
        for e in &data.employees {
            let (mut depth, mut at) = (1, e);
            while let Some(boss) = &at.manager_id {
                at = by_id[boss.as_str()];
                depth += 1;
                assert!(depth <= 12, "{} is {depth} levels deep", e.id);
            }
            assert_eq!(at.id, "MargaretChen");
            deepest = deepest.max(depth);
        }

        // Skills: a long tail — the most common skill is held by many more
        // people than the median skill, and most of the catalogue appears.
        let mut holders: HashMap<i64, u32> = HashMap::new();
        for s in &data.employee_skills {
            *holders.entry(s.skill_id).or_default() += 1;
        }
        let mut counts: Vec<u32> = holders.values().copied().collect();
        counts.sort_unstable();
        let (top, median) = (counts[counts.len() - 1], counts[counts.len() / 2]);
        if n >= 200 {
            assert!(top >= 3 * median, "top skill {top}, median {median}");
        }
        if n >= 5_000 {
            assert!(counts.len() >= catalog::SKILLS.len() * 9 / 10);
        }
        // The article's people exist at every size.
        assert_eq!(by_id["JohnDoe"].manager_id.as_deref(), Some("AliceJohnson"));
        assert_eq!(by_id["AliceJohnson"].team_id.as_deref(), Some("backend"));
        deepest
    }

    #[test]
    fn same_size_same_company() {
        let a = checksum(&generate(Some(2_000)).unwrap());
        assert_eq!(a, checksum(&generate(Some(2_000)).unwrap()));
        assert_ne!(a, checksum(&generate(Some(2_001)).unwrap()));
    }

    #[test]
    fn shaped_at_several_sizes() {
        let small = assert_shaped(MIN_EMPLOYEES);
        let mid = assert_shaped(200);
        let large = assert_shaped(5_000);
        assert!(small <= mid && mid <= large, "{small} {mid} {large}");
        assert!(large >= 6, "depth {large} at 5,000 people");
    }

    #[test]
    fn sizes_out_of_bounds_are_refused() {
        assert!(generate(Some(MIN_EMPLOYEES - 1)).is_err());
        assert!(generate(Some(MAX_EMPLOYEES + 1)).is_err());
    }

    #[test]
    fn layers_and_shares_add_up() {
        assert_eq!(director_layers(8), Vec::<usize>::new());
        assert_eq!(director_layers(9), vec![2]);
        assert_eq!(director_layers(300), vec![50, 9, 2]);
        for n in [MIN_EMPLOYEES, 1_000, 99_999] {
            assert_eq!(shares(n - 1).iter().sum::<u32>(), n - 1);
        }
    }
}
