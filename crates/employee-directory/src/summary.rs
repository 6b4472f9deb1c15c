//! Counts that lead a roster answer (by team, level and location), built
//! from the rows both backends read, so they are the same on both.

use std::collections::BTreeMap;

use crate::model::{GroupCount, Level, RosterSummary, TeamMember, TeamSummary};

/// The team value of people outside any team (a department head).
pub(crate) const NO_TEAM: &str = "No team";

/// Most entries of one count list; smaller groups are summed into the
/// last entry ("N other values").
pub(crate) const MAX_GROUPS: usize = 25;

/// One counted row: its team name, level and location label.
pub(crate) struct Counted<'a> {
    pub team: Option<&'a str>,
    pub level: Level,
    pub location: &'a str,
}

/// Counts the rows by team, level and location.
pub(crate) fn summarize<'a>(rows: impl IntoIterator<Item = Counted<'a>>) -> RosterSummary {
    let (mut teams, mut levels, mut locations) =
        (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    for r in rows {
        *teams.entry(r.team.unwrap_or(NO_TEAM)).or_insert(0u32) += 1;
        *levels.entry(r.level.as_str()).or_insert(0u32) += 1;
        *locations.entry(r.location).or_insert(0u32) += 1;
    }
    RosterSummary {
        by_team: largest_first(teams),
        by_level: largest_first(levels),
        by_location: largest_first(locations),
    }
}

/// The same counts from a database's groups: `top` the largest teams
/// (their names, `None` for people outside any team; by count, then team
/// id; at most [`MAX_GROUPS`]), `teams` how many teams have people and
/// `people` how many people in all; `places` people per level and
/// location. Teams past the 24 largest fold into one entry, as in
/// [`summarize`] (ties are broken by team id rather than name, so the
/// database need not name every team).
pub(crate) fn summarize_groups<'a>(
    top: Vec<(Option<String>, u32)>,
    teams: u32,
    people: u32,
    places: impl IntoIterator<Item = (Level, &'a str, u32)>,
) -> RosterSummary {
    let (mut levels, mut locations) = (BTreeMap::new(), BTreeMap::new());
    for (level, place, n) in places {
        *levels.entry(level.as_str()).or_insert(0u32) += n;
        *locations.entry(place).or_insert(0u32) += n;
    }
    let mut by_team: Vec<GroupCount> = top
        .into_iter()
        .map(|(name, count)| GroupCount {
            value: name.unwrap_or_else(|| NO_TEAM.to_owned()),
            count,
        })
        .collect();
    if teams as usize > MAX_GROUPS {
        by_team.truncate(MAX_GROUPS - 1);
        let shown: u32 = by_team.iter().map(|g| g.count).sum();
        by_team.push(GroupCount {
            value: format!("{} other values", teams as usize - (MAX_GROUPS - 1)),
            count: people.saturating_sub(shown),
        });
    }
    RosterSummary {
        by_team,
        by_level: largest_first(levels),
        by_location: largest_first(locations),
    }
}

fn largest_first(counts: BTreeMap<&str, u32>) -> Vec<GroupCount> {
    let mut out: Vec<GroupCount> = counts
        .into_iter()
        .map(|(value, count)| GroupCount {
            value: value.to_owned(),
            count,
        })
        .collect();
    // Stable: equal counts stay in value order.
    out.sort_by_key(|b| std::cmp::Reverse(b.count));
    if out.len() > MAX_GROUPS {
        // The tail folds into one entry, so the counts still add up to the
        // roster's total and the answer stays small at any company size.
        let rest = out.split_off(MAX_GROUPS - 1);
        out.push(GroupCount {
            value: format!("{} other values", rest.len()),
            count: rest.iter().map(|g| g.count).sum(),
        });
    }
    out
}

/// The counts of a team's members (all in one team).
pub(crate) fn team_summary(team: &TeamSummary, members: &[TeamMember]) -> RosterSummary {
    summarize(members.iter().map(|m| Counted {
        team: Some(team.name.as_str()),
        level: m.level,
        location: m.location.display.as_str(),
    }))
}
