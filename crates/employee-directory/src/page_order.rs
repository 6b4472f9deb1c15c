//! The order of every list a client can page through, and its keys.
//!
//! Department rosters are read in this order by the database, a page at a
//! time, in an order both backends index the same way (bytes, not
//! collations). Team rosters and skill matches are sorted here, in Rust,
//! after the query, so both backends return the same order whatever their
//! collations. Every
//! key ends with the employee id (unique), so "the rows after this key" is
//! well defined even after the directory changed between two pages: a
//! client paging with the key of the last row it saw (a keyset cursor)
//! gets every row that stayed exactly once, rows added after its position
//! and none added before it.

use crate::model::{Level, RosterEntry, RosterPosition, SkillMatch, TeamMember};

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
/// first), name and id.
pub fn member_key(m: &TeamMember) -> SortKey {
    vec![
        flag(!m.is_manager),
        descending(level_rank(m.level), Level::ALL.len()),
        lower(&m.name),
        lower(&m.employee_id),
    ]
}

/// Position in the matches of a skill search for `query`: skills equal to
/// the query, then starting with it, then containing it; within each the
/// highest proficiency first, then by name, id and skill.
pub fn match_key(query: &str, m: &SkillMatch) -> SortKey {
    vec![
        match_rank(query, &m.skill).to_string(),
        descending(usize::from(m.proficiency.rank()), 4),
        lower(&m.name),
        lower(&m.employee_id),
        lower(&m.skill),
    ]
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

pub(crate) fn sort_members(rows: &mut [TeamMember]) {
    rows.sort_by_cached_key(member_key);
}

pub(crate) fn sort_matches(query: &str, rows: &mut [SkillMatch]) {
    rows.sort_by_cached_key(|m| match_key(query, m));
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

fn lower(s: &str) -> String {
    s.to_lowercase()
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
