//! The order of every list a client can page through, and its keys.
//!
//! Department rosters and skill matches are read in this order by the
//! database, a page at a time through an index (ids compare as bytes or
//! ASCII-lowercased, which both backends index alike), and so are team
//! rosters (manager first, then level, name and id). Every
//! key ends with the employee id (unique), so "the rows after this key" is
//! well defined even after the directory changed between two pages: a
//! client paging with the key of the last row it saw (a keyset cursor)
//! gets every row that stayed exactly once, rows added after its position
//! and none added before it.

use crate::model::{
    Level, MatchPosition, MemberPosition, RosterEntry, RosterPosition, SKILLS_LISTED, SkillMatch,
    SkillMatchKind, SkillSearch, TeamMember,
};

/// A row's position in its list: rows compare as their keys do.
pub type SortKey = Vec<String>;

/// Position in a department roster: people outside any team (the head)
/// first, then by team id and employee id. The backends read pages in
/// this order with an index (ids compare as stored bytes, employee ids
/// ASCII-lowercased), so a page costs the same in any size of department.
pub fn roster_key(e: &RosterEntry) -> SortKey {
    roster_position(e).key()
}

/// The position of a roster row.
pub fn roster_position(e: &RosterEntry) -> RosterPosition {
    RosterPosition {
        team_id: e.team_id.clone(),
        employee_id: e.employee_id.to_ascii_lowercase(),
    }
}

impl RosterPosition {
    /// The position as a sort key (what a cursor carries).
    pub fn key(&self) -> SortKey {
        vec![
            flag(self.team_id.is_some()),
            self.team_id.clone().unwrap_or_default(),
            self.employee_id.clone(),
        ]
    }

    /// The position a [`RosterPosition::key`] was made from; `None` for a
    /// key of another shape.
    pub fn from_key(key: &[String]) -> Option<RosterPosition> {
        let [flag, team, id] = key else {
            return None;
        };
        let team_id = match flag.as_str() {
            "0" if team.is_empty() => None,
            "1" => Some(team.clone()),
            _ => return None,
        };
        Some(RosterPosition {
            team_id,
            employee_id: id.clone(),
        })
    }
}

/// Position in a team roster: the manager first, then by level (highest
/// first), name and id (both ASCII-lowercased, as the backends index
/// them: see [`MEMBER_ORDER`]).
pub fn member_key(m: &TeamMember) -> SortKey {
    member_position(m).key()
}

/// The position of a team member.
pub fn member_position(m: &TeamMember) -> MemberPosition {
    MemberPosition {
        manager: m.is_manager,
        rank: member_rank(m.level),
        name: m.name.to_ascii_lowercase(),
        employee_id: m.employee_id.to_ascii_lowercase(),
    }
}

/// A level's rank in a team page: 1 for the highest level.
pub fn member_rank(level: Level) -> u8 {
    let top = Level::ALL.len();
    u8::try_from(top - level_rank(level)).unwrap_or(u8::MAX)
}

/// The order of a team's members after the manager, as SQL both backends
/// run on `employees e` (the level's rank, the name and the id,
/// ASCII-lowercased: SQLite's `lower` and PostgreSQL's under the columns'
/// `"C"` collation fold ASCII only). The `employees_team_page` index of
/// migration 0014 is on these expressions, so a page reads only its rows.
pub const MEMBER_ORDER: &str = "CASE e.level WHEN 'executive' THEN 1 \
     WHEN 'director' THEN 2 WHEN 'principal' THEN 3 WHEN 'staff' THEN 4 \
     WHEN 'senior' THEN 5 WHEN 'mid' THEN 6 ELSE 7 END, \
     lower(e.first_name || ' ' || e.last_name), lower(e.id)";

impl MemberPosition {
    /// The position as a sort key (what a cursor carries).
    pub fn key(&self) -> SortKey {
        vec![
            flag(!self.manager),
            self.rank.to_string(),
            self.name.clone(),
            self.employee_id.clone(),
        ]
    }

    /// The position a [`MemberPosition::key`] was made from; `None` for a
    /// key of another shape.
    pub fn from_key(key: &[String]) -> Option<MemberPosition> {
        let [flag, rank, name, id] = key else {
            return None;
        };
        let manager = match flag.as_str() {
            "0" => true,
            "1" => false,
            _ => return None,
        };
        Some(MemberPosition {
            manager,
            rank: rank.parse().ok().filter(|r| *r <= 9)?,
            name: name.clone(),
            employee_id: id.clone(),
        })
    }
}

/// Position in the matches of a skill search for `query`: skills equal to
/// the query, then starting with it, then containing it, each skill by
/// name; within a skill the highest proficiency first, then by employee
/// id. The backends read pages in this order with an index per skill.
pub fn match_key(query: &str, m: &SkillMatch) -> SortKey {
    match_position(m).key(query)
}

/// The position of a skill match.
pub fn match_position(m: &SkillMatch) -> MatchPosition {
    MatchPosition {
        skill: m.skill.to_ascii_lowercase(),
        proficiency: m.proficiency.rank(),
        employee_id: m.employee_id.to_ascii_lowercase(),
    }
}

/// The order of matched skills: by rank for `query`, then by name.
pub fn skill_order(query: &str, skill: &str) -> (u8, String) {
    (match_rank(query, skill), skill.to_ascii_lowercase())
}

impl MatchPosition {
    /// The position as a sort key for `query` (what a cursor carries).
    pub fn key(&self, query: &str) -> SortKey {
        vec![
            match_rank(query, &self.skill).to_string(),
            self.skill.clone(),
            descending(usize::from(self.proficiency), 4),
            self.employee_id.clone(),
        ]
    }

    /// The position a [`MatchPosition::key`] was made from; `None` for a
    /// key of another shape.
    pub fn from_key(key: &[String]) -> Option<MatchPosition> {
        let [_, skill, proficiency, id] = key else {
            return None;
        };
        let rank: u8 = proficiency.parse().ok().filter(|r| *r <= 4)?;
        Some(MatchPosition {
            skill: skill.clone(),
            proficiency: 4 - rank,
            employee_id: id.clone(),
        })
    }
}

/// A skill whose name contains a search's query.
#[derive(Debug, Clone)]
pub(crate) struct MatchedSkill {
    pub id: i64,
    pub name: String,
    /// Active employees with it (the trigger-kept `skill_counts`).
    pub holders: u32,
}

/// Sorts matched skills in page order (see [`match_key`]).
pub(crate) fn sort_skills(query: &str, skills: &mut [MatchedSkill]) {
    skills.sort_by_cached_key(|s| (skill_order(query, &s.name), s.id));
}

/// Where a page after `after` starts in `skills` (sorted by
/// [`sort_skills`]): the index of the first skill to read and, when that
/// skill is the position's own, the proficiency and id to resume after.
pub(crate) fn skill_start(
    query: &str,
    skills: &[MatchedSkill],
    after: Option<&MatchPosition>,
) -> (usize, Option<(u8, String)>) {
    let Some(after) = after else {
        return (0, None);
    };
    let at = skill_order(query, &after.skill);
    let i = skills.partition_point(|s| skill_order(query, &s.name) < at);
    match skills.get(i) {
        Some(s) if skill_order(query, &s.name) == at => {
            (i, Some((after.proficiency, after.employee_id.clone())))
        }
        _ => (i, None),
    }
}

/// The answer to a search for `query` (as given) that matched no skill.
pub(crate) fn no_matches(query: &str) -> SkillSearch {
    SkillSearch {
        query: query.to_owned(),
        match_kind: SkillMatchKind::None,
        matched_skills: Vec::new(),
        matched_skill_count: 0,
        total: 0,
        truncated: false,
        matches: Vec::new(),
    }
}

/// The answer to a search for `query` (as given; `wanted` trimmed) from
/// its matched skills in page order and the rows read for the page: up to
/// `want`, one more than the page holds, the last only telling that more
/// follow.
pub(crate) fn skill_search(
    query: &str,
    wanted: &str,
    skills: Vec<MatchedSkill>,
    mut matches: Vec<SkillMatch>,
    want: usize,
) -> SkillSearch {
    let truncated = matches.len() >= want;
    matches.truncate(want.saturating_sub(1));
    let exact = skills.iter().any(|s| match_rank(wanted, &s.name) == 0);
    SkillSearch {
        query: query.to_owned(),
        match_kind: if exact {
            SkillMatchKind::Exact
        } else {
            SkillMatchKind::Partial
        },
        total: skills.iter().map(|s| s.holders).sum(),
        matched_skill_count: u32::try_from(skills.len()).unwrap_or(u32::MAX),
        matched_skills: skills
            .into_iter()
            .take(SKILLS_LISTED as usize)
            .map(|s| s.name)
            .collect(),
        truncated,
        matches,
    }
}

/// 0 when `skill` equals `query` (ignoring case and surrounding space), 1
/// when it starts with it, 2 otherwise.
pub fn match_rank(query: &str, skill: &str) -> u8 {
    let (q, s) = (query.trim().to_lowercase(), skill.to_lowercase());
    if s == q {
        0
    } else if s.starts_with(&q) {
        1
    } else {
        2
    }
}

fn level_rank(level: Level) -> usize {
    Level::ALL.iter().position(|l| *l == level).unwrap_or(0)
}

/// A rank as one digit that sorts highest first (ranks are below 10).
fn descending(rank: usize, top: usize) -> String {
    top.saturating_sub(rank).to_string()
}

fn flag(b: bool) -> String {
    if b { "1" } else { "0" }.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_before_prefix_before_substring() {
        assert_eq!(match_rank(" go ", "Go"), 0);
        assert_eq!(match_rank("go", "Google Cloud"), 1);
        assert_eq!(match_rank("go", "Django"), 2);
    }
}
