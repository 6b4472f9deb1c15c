//! Counts that lead a roster answer (by team, level and location), built
//! from the rows both backends read, so they are the same on both.

use std::collections::BTreeMap;

use crate::model::{GroupCount, Level, RosterSummary};

/// The team value of people outside any team (a department head).
pub(crate) const NO_TEAM: &str = "No team";

/// Most entries of one count list; smaller groups are summed into the
/// last entry ("N other values").
pub(crate) const MAX_GROUPS: usize = 25;

/// The counts from a database's groups: `top` the largest teams
/// (their names, `None` for people outside any team; by count, then team
/// id; at most [`MAX_GROUPS`]), `teams` how many teams have people and
/// `people` how many people in all; `places` people per level and
/// location. Teams past the 24 largest fold into one entry (ties are
/// broken by team id rather than name, so the database need not name
/// every team).
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

/// People of one level at one place ("City, Country"), as counted by a
/// database.
pub(crate) type Place = (Level, String, u32);

/// A team's head count and its counts by level and place.
pub(crate) fn team_counts(team: &str, places: &[Place]) -> (u32, RosterSummary) {
    let count = places.iter().map(|(_, _, n)| n).sum();
    let summary = summarize_groups(
        vec![(Some(team.to_owned()), count)],
        1,
        count,
        places.iter().map(|(l, p, n)| (*l, p.as_str(), *n)),
    );
    (count, summary)
}
