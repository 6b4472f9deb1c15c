//! A page of a department roster: the counts over the whole department
//! from trigger-kept aggregates (a row per team and per level and place), the page itself by keyset through the
//! `employees_roster` index (migration 0008), so the cost follows the page
//! and the number of groups, not the department's size.

use chrono::NaiveDate;
use rusqlite::{Connection, OptionalExtension, params};

use super::queries::resolve_department;
use super::row::{CachedRow, count, date, location, parsed};
use crate::error::DirectoryError;
use crate::ids::slugify;
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

/// One page of `input`'s roster as `q` asks; `None` when no department
/// matches `input`.
pub(crate) fn department_roster(
    conn: &Connection,
    input: &str,
    q: &RosterQuery,
    today: NaiveDate,
) -> Result<Option<DepartmentRoster>> {
    let Some(id) = resolve_department(conn, input)? else {
        return Ok(None);
    };
    let mut department = head(conn, &id)?;
    let (teams, team_count) = teams(conn, &id)?;
    department.teams = teams;
    let team = match &q.team {
        Some(wanted) => match find_team(conn, &id, wanted)? {
            Some(team) => Some(team),
            // Asked for a team the department does not have: the caller
            // tells the client which teams it has.
            None => {
                let (summary, _) = summary(conn, &id, None)?;
                return Ok(Some(empty(department, team_count, summary, today)));
            }
        },
        None => None,
    };
    let (summary, total) = summary(conn, &id, team.as_ref())?;
    let want = q.limit.max(1) as usize;
    let mut employees = page(conn, &id, team.as_ref(), q, want + 1, today)?;
    let more = employees.len() > want;
    employees.truncate(want);
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

/// The answer for a team that is not in the department.
fn empty(
    department: DepartmentSummary,
    team_count: u32,
    summary: RosterSummary,
    today: NaiveDate,
) -> DepartmentRoster {
    DepartmentRoster {
        department,
        team_count,
        team: None,
        as_of: today,
        total: 0,
        count: 0,
        summary,
        more: false,
        employees: Vec::new(),
    }
}

fn head(conn: &Connection, id: &str) -> Result<DepartmentSummary> {
    conn.cached_row(concat!(department_head!(), " ?1"), [id], |row| {
        Ok(DepartmentSummary {
            department_id: row.get(0)?,
            name: row.get(1)?,
            description: row.get(2)?,
            head: row.get(3)?,
            head_id: row.get(4)?,
            teams: Vec::new(),
        })
    })
    .map_err(DirectoryError::db("load department"))
}

/// The department's first teams by id, and how many it has.
fn teams(conn: &Connection, id: &str) -> Result<(Vec<TeamRef>, u32)> {
    const CONTEXT: &str = "load department teams";
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, name FROM teams WHERE department_id = ?1 ORDER BY id COLLATE BINARY
             LIMIT ?2",
        )
        .map_err(DirectoryError::db(CONTEXT))?;
    let listed = stmt
        .query_map(params![id, TEAMS_LISTED], |row| {
            Ok(TeamRef {
                team_id: row.get(0)?,
                name: row.get(1)?,
            })
        })
        .and_then(Iterator::collect)
        .map_err(DirectoryError::db(CONTEXT))?;
    let n = conn
        .cached_row(DEPARTMENT_TEAM_COUNT, [id], |row| count(row, 0))
        .map_err(DirectoryError::db(CONTEXT))?;
    Ok((listed, n))
}

/// The department's counts (from the trigger-kept `roster_teams` and
/// `roster_places`: the largest teams through `roster_teams_largest`, and
/// a row per level and place),
/// and how many active people the list holds (the department's, or the
/// team's).
fn summary(conn: &Connection, id: &str, team: Option<&TeamRef>) -> Result<(RosterSummary, u32)> {
    const CONTEXT: &str = "count department employees";
    let mut stmt = conn
        .prepare_cached(LARGEST_TEAMS)
        .map_err(DirectoryError::db(CONTEXT))?;
    let top: Vec<(Option<String>, u32)> = stmt
        .query_map(params![id, MAX_GROUPS as i64], |row| {
            Ok((row.get(0)?, count(row, 1)?))
        })
        .and_then(Iterator::collect)
        .map_err(DirectoryError::db(CONTEXT))?;
    let (teams, people) = conn
        .cached_row(
            "SELECT COUNT(*), COALESCE(SUM(n), 0) FROM roster_teams
             WHERE department_id = ?1 AND n > 0",
            [id],
            |row| Ok((count(row, 0)?, count(row, 1)?)),
        )
        .map_err(DirectoryError::db(CONTEXT))?;
    let total = match team {
        Some(t) => conn
            .cached_row(
                "SELECT COALESCE(SUM(n), 0) FROM roster_teams
                 WHERE department_id = ?1 AND team_id = ?2",
                [id, t.team_id.as_str()],
                |row| count(row, 0),
            )
            .map_err(DirectoryError::db(CONTEXT))?,
        None => people,
    };
    let mut stmt = conn
        .prepare_cached(ROSTER_PLACES)
        .map_err(DirectoryError::db(CONTEXT))?;
    let places: Vec<(Level, String, u32)> = stmt
        .query_map([id], |row| {
            let level = parsed(row, 0, "level", Level::parse)?;
            Ok((level, location(row, 1)?.display, count(row, 4)?))
        })
        .and_then(Iterator::collect)
        .map_err(DirectoryError::db(CONTEXT))?;
    let places = places.iter().map(|(l, p, n)| (*l, p.as_str(), *n));
    Ok((summarize_groups(top, teams, people, places), total))
}

/// The team of department `id` that `wanted` names (id, name or slug).
fn find_team(conn: &Connection, id: &str, wanted: &str) -> Result<Option<TeamRef>> {
    let wanted = wanted.trim();
    conn.cached_row(
        "SELECT id, name FROM teams
         WHERE department_id = ?1 AND (id = ?2 OR name = ?2 OR id = ?3)
         ORDER BY id LIMIT 1",
        params![id, wanted, slugify(wanted)],
        |row| {
            Ok(TeamRef {
                team_id: row.get(0)?,
                name: row.get(1)?,
            })
        },
    )
    .optional()
    .map_err(DirectoryError::db("find department team"))
}

/// Up to `n` rows after `q.after`, in roster order: people outside any
/// team first (by id), then by team id and id.
fn page(
    conn: &Connection,
    id: &str,
    team: Option<&TeamRef>,
    q: &RosterQuery,
    n: usize,
    today: NaiveDate,
) -> Result<Vec<RosterEntry>> {
    // SQLite takes a LIMIT as a signed 64-bit integer.
    let limit = |k: usize| i64::try_from(k).unwrap_or(i64::MAX);
    let (after_team, after_id) = match &q.after {
        Some(p) => (p.team_id.clone(), p.employee_id.clone()),
        None => (None, String::new()),
    };
    let mut rows = Vec::new();
    if team.is_none() && after_team.is_none() {
        let sql = format!(
            "{COLUMNS} WHERE e.department_id = ?1 AND e.status = 'active'
               AND e.team_id IS NULL AND e.id > ?2 ORDER BY e.id LIMIT ?3"
        );
        rows = query(conn, &sql, params![id, after_id, limit(n)], today)?;
        if rows.len() >= n {
            return Ok(rows);
        }
    }
    // Past the people outside any team: a position among them counts as
    // before every team.
    let (after_team, after_id) = match after_team {
        Some(t) => (t, after_id),
        None => (String::new(), String::new()),
    };
    let left = n - rows.len();
    let more = match team {
        Some(t) => query(
            conn,
            &format!(
                "{COLUMNS} WHERE e.department_id = ?1 AND e.status = 'active' AND e.team_id = ?4
                   AND (e.team_id, e.id) > (?2, ?3) ORDER BY e.team_id, e.id LIMIT ?5"
            ),
            params![id, after_team, after_id, t.team_id, limit(left)],
            today,
        )?,
        None => query(
            conn,
            &format!(
                "{COLUMNS} WHERE e.department_id = ?1 AND e.status = 'active'
                   AND (e.team_id, e.id) > (?2, ?3) ORDER BY e.team_id, e.id LIMIT ?4"
            ),
            params![id, after_team, after_id, limit(left)],
            today,
        )?,
    };
    rows.extend(more);
    Ok(rows)
}

fn query(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    today: NaiveDate,
) -> Result<Vec<RosterEntry>> {
    const CONTEXT: &str = "load department employees";
    let mut stmt = conn
        .prepare_cached(sql)
        .map_err(DirectoryError::db(CONTEXT))?;
    stmt.query_map(params, |row| {
        let role: String = row.get(2)?;
        let track: String = row.get(3)?;
        let level = parsed(row, 4, "level", Level::parse)?;
        let start_date = date(row, 7)?;
        let span = tenure::span(start_date, today);
        Ok(RosterEntry {
            employee_id: row.get(0)?,
            name: row.get(1)?,
            title: job_title(&role, &track, level),
            level,
            team: row.get(5)?,
            team_id: row.get(6)?,
            start_date,
            tenure_years: span.years,
            tenure_months: span.months,
        })
    })
    .and_then(Iterator::collect)
    .map_err(DirectoryError::db(CONTEXT))
}
