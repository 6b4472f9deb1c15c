//! A page of a department roster: the counts over the whole department
//! from trigger-kept aggregates (a row per team and per level and place), the page itself by keyset through the
//! `employees_roster` index (migration 0008), so the cost follows the page
//! and the number of groups, not the department's size. Two round trips:
//! the department (and team) first, then every other statement pipelined.

use chrono::NaiveDate;
use deadpool_postgres::ClientWrapper;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::queries::{department_id, org_key, row_opt, rows};
use super::row::{count, get, location, parsed};
use crate::error::DirectoryError;
use crate::model::{
    DepartmentRoster, DepartmentSummary, Level, RosterEntry, RosterQuery, RosterSummary,
    TEAMS_LISTED, TeamRef,
};
use crate::seed::job_title;
use crate::statements::{
    DEPARTMENT_TEAM_COUNT, LARGEST_TEAMS, ROSTER_COLUMNS as COLUMNS, ROSTER_PLACES, department_head,
};
use crate::summary::{MAX_GROUPS, summarize_groups};
use crate::tenure;

type Result<T> = std::result::Result<T, DirectoryError>;
type Params<'a> = [&'a (dyn ToSql + Sync)];

/// One page of `input`'s roster as `q` asks; `None` when no department
/// matches `input`.
pub(crate) async fn department_roster(
    c: &ClientWrapper,
    input: &str,
    q: &RosterQuery,
    today: NaiveDate,
) -> Result<Option<DepartmentRoster>> {
    let Some((key, slug)) = org_key(input) else {
        return Ok(None);
    };
    let Some((mut department, team)) = head(c, &key, &slug, q.team.as_deref()).await? else {
        return Ok(None);
    };
    let id = department.department_id.clone();
    let asked_missing = q.team.is_some() && team.is_none();
    let want = i64::from(q.limit.max(1));
    let (listed, team_count, (summary, total), employees) = tokio::try_join!(
        teams(c, &id),
        team_count(c, &id),
        summary(c, &id, team.as_ref()),
        page(c, &id, team.as_ref(), q, want + 1, today, asked_missing),
    )?;
    department.teams = listed;
    let total = if asked_missing { 0 } else { total };
    let mut employees = employees;
    let more = employees.len() as i64 > want;
    employees.truncate(usize::try_from(want).unwrap_or(usize::MAX));
    Ok(Some(DepartmentRoster {
        department,
        team_count,
        team,
        as_of: today,
        total,
        count: u32::try_from(employees.len()).unwrap_or(u32::MAX),
        summary,
        more,
        employees,
    }))
}

/// The department (and the team of it `team` names), in one round trip.
async fn head(
    c: &ClientWrapper,
    key: &str,
    slug: &str,
    team: Option<&str>,
) -> Result<Option<(DepartmentSummary, Option<TeamRef>)>> {
    let sql = concat!(department_head!(), " ", department_id!());
    let p: &Params = &[&key, &slug];
    let find = concat!(
        "SELECT id, name FROM teams
         WHERE department_id = ",
        department_id!(),
        "
           AND (lower(id) = $3::text OR lower(name) = $3::text OR lower(id) = $4::text)
         ORDER BY lower(id) LIMIT 1"
    );
    let wanted = team.and_then(org_key);
    let (row, found) = tokio::try_join!(row_opt(c, "load department", sql, p), async {
        match &wanted {
            Some((t, s)) => {
                let p: &Params = &[&key, &slug, t, s];
                row_opt(c, "find department team", find, p).await
            }
            None => Ok(None),
        }
    })?;
    let Some(row) = row else {
        return Ok(None);
    };
    let department = DepartmentSummary {
        department_id: get(&row, 0)?,
        name: get(&row, 1)?,
        description: get(&row, 2)?,
        head: get(&row, 3)?,
        head_id: get(&row, 4)?,
        teams: Vec::new(),
    };
    let team = match found {
        Some(r) => Some(TeamRef {
            team_id: get(&r, 0)?,
            name: get(&r, 1)?,
        }),
        None => None,
    };
    Ok(Some((department, team)))
}

/// The department's first teams by id.
async fn teams(c: &ClientWrapper, id: &str) -> Result<Vec<TeamRef>> {
    let limit = i64::from(TEAMS_LISTED);
    let found = rows(
        c,
        "load department teams",
        "SELECT id, name FROM teams WHERE department_id = $1 ORDER BY id LIMIT $2",
        &[&id, &limit],
    )
    .await?;
    found
        .iter()
        .map(|r| {
            Ok(TeamRef {
                team_id: get(r, 0)?,
                name: get(r, 1)?,
            })
        })
        .collect()
}

async fn team_count(c: &ClientWrapper, id: &str) -> Result<u32> {
    let found = rows(c, "count department teams", DEPARTMENT_TEAM_COUNT, &[&id]).await?;
    found.first().map_or(Ok(0), |r| count(r, 0))
}

/// The department's counts (from the trigger-kept `roster_teams` and
/// `roster_places`: the largest teams through `roster_teams_largest`, and
/// a row per level and place),
/// and how many active people the list holds (the department's, or the
/// team's).
async fn summary(
    c: &ClientWrapper,
    id: &str,
    team: Option<&TeamRef>,
) -> Result<(RosterSummary, u32)> {
    const CONTEXT: &str = "count department employees";
    let groups = MAX_GROUPS as i64;
    let team_id = team.map(|t| t.team_id.as_str()).unwrap_or_default();
    let (p_top, p_totals, p_id): (&Params, &Params, &Params) =
        (&[&id, &groups], &[&id, &team_id], &[&id]);
    let (top, totals, places) = tokio::try_join!(
        rows(c, CONTEXT, LARGEST_TEAMS, p_top,),
        rows(
            c,
            CONTEXT,
            "SELECT COUNT(*), COALESCE(SUM(n), 0)::bigint,
                    COALESCE(SUM(n) FILTER (WHERE team_id = $2), 0)::bigint
             FROM roster_teams WHERE department_id = $1 AND n > 0",
            p_totals,
        ),
        rows(c, CONTEXT, ROSTER_PLACES, p_id,),
    )?;
    let top: Vec<(Option<String>, u32)> = top
        .iter()
        .map(|r| Ok((get(r, 0)?, count(r, 1)?)))
        .collect::<Result<_>>()?;
    let (teams, people, in_team) = match totals.first() {
        Some(r) => (count(r, 0)?, count(r, 1)?, count(r, 2)?),
        None => (0, 0, 0),
    };
    let places: Vec<(Level, String, u32)> = places
        .iter()
        .map(|r| {
            let level = parsed(r, 0, "level", Level::parse)?;
            Ok((level, location(r, 1)?.display, count(r, 4)?))
        })
        .collect::<Result<_>>()?;
    let places = places.iter().map(|(l, p, n)| (*l, p.as_str(), *n));
    let total = if team.is_some() { in_team } else { people };
    Ok((summarize_groups(top, teams, people, places), total))
}

/// Up to `n` rows after `q.after`, in roster order: people outside any
/// team first (by id), then by team id and id. Both parts are asked at
/// once; the second fills what the first leaves.
async fn page(
    c: &ClientWrapper,
    id: &str,
    team: Option<&TeamRef>,
    q: &RosterQuery,
    n: i64,
    today: NaiveDate,
    asked_missing: bool,
) -> Result<Vec<RosterEntry>> {
    if asked_missing {
        return Ok(Vec::new());
    }
    let (after_team, after_id) = match &q.after {
        Some(p) => (p.team_id.clone(), p.employee_id.clone()),
        None => (None, String::new()),
    };
    let outside = team.is_none() && after_team.is_none();
    // A position among the people outside any team is before every team.
    let (from_team, from_id) = match &after_team {
        Some(t) => (t.clone(), after_id.clone()),
        None => (String::new(), String::new()),
    };
    // Ordered as the index `employees_roster` is (team_id is NULL on every
    // row, so the order is by id): ordered by lower(id) alone, the planner
    // walks `employees_id_nocase` and filters, slow at a large company.
    let no_team = format!(
        "{COLUMNS} WHERE e.department_id = $1 AND e.status = 'active'
           AND e.team_id IS NULL AND lower(e.id) > $2 ORDER BY e.team_id, lower(e.id) LIMIT $3"
    );
    let in_teams = format!(
        "{COLUMNS} WHERE e.department_id = $1 AND e.status = 'active'
           AND (e.team_id, lower(e.id)) > ($2, $3) ORDER BY e.team_id, lower(e.id) LIMIT $4"
    );
    let in_team = format!(
        "{COLUMNS} WHERE e.department_id = $1 AND e.status = 'active' AND e.team_id = $5
           AND (e.team_id, lower(e.id)) > ($2, $3) ORDER BY e.team_id, lower(e.id) LIMIT $4"
    );
    const CONTEXT: &str = "load department employees";
    let (first, rest) = tokio::try_join!(
        async {
            if outside {
                rows(c, CONTEXT, &no_team, &[&id, &after_id, &n]).await
            } else {
                Ok(Vec::new())
            }
        },
        async {
            match team {
                Some(t) => {
                    let p: &Params = &[&id, &from_team, &from_id, &n, &t.team_id];
                    rows(c, CONTEXT, &in_team, p).await
                }
                None => rows(c, CONTEXT, &in_teams, &[&id, &from_team, &from_id, &n]).await,
            }
        },
    )?;
    first
        .iter()
        .chain(rest.iter())
        .take(usize::try_from(n).unwrap_or(usize::MAX))
        .map(|r| entry(r, today))
        .collect()
}

fn entry(r: &Row, today: NaiveDate) -> Result<RosterEntry> {
    let role: String = get(r, 2)?;
    let track: String = get(r, 3)?;
    let level = parsed(r, 4, "level", Level::parse)?;
    let start_date: NaiveDate = get(r, 7)?;
    let span = tenure::span(start_date, today);
    Ok(RosterEntry {
        employee_id: get(r, 0)?,
        name: get(r, 1)?,
        title: job_title(&role, &track, level),
        level,
        team: get(r, 5)?,
        team_id: get(r, 6)?,
        start_date,
        tenure_years: span.years,
        tenure_months: span.months,
    })
}
