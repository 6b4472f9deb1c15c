//! A page of a team's members: the counts over the whole team from the
//! covering `employees_team` index, the manager by id, the other members
//! by keyset through the `employees_team_page` index (migration 0014), so
//! a page of a team of thousands costs what the page holds.

use rusqlite::{Connection, OptionalExtension, params};

use super::queries::resolve_team;
use super::row::{CachedRow, date, location, parsed};
use crate::error::DirectoryError;
use crate::model::{
    EmploymentType, Level, OfficeType, TeamMember, TeamQuery, TeamRoster, TeamSummary,
};
use crate::page_order::MEMBER_ORDER;
use crate::seed::job_title;
use crate::statements::team_summary_head;
use crate::summary::{Place, team_counts};

type Result<T> = std::result::Result<T, DirectoryError>;

/// The member columns, joined for a page's rows only.
/// Per dialect: PostgreSQL has no `IS` between values (`IS NOT DISTINCT FROM`).
const COLUMNS: &str = "SELECT e.id, e.first_name || ' ' || e.last_name, r.title, r.track, e.level,
            e.id IS t.manager_id, m.id, m.first_name || ' ' || m.last_name,
            e.email, e.employment_type, e.office_type, l.city, l.region, l.country,
            e.start_date
     FROM employees e
     JOIN teams t ON t.id = e.team_id
     JOIN roles r ON r.id = e.role_id
     JOIN locations l ON l.id = e.location_id
     LEFT JOIN employees m ON m.id = e.manager_id";

/// One page of the team `input` names (id, name or `department-team`) as
/// `q` asks; `None` when no team matches.
pub(crate) fn team_page(
    conn: &Connection,
    input: &str,
    q: &TeamQuery,
) -> Result<Option<TeamRoster>> {
    let Some(id) = resolve_team(conn, input)? else {
        return Ok(None);
    };
    let Some(team) = summary(conn, &id)? else {
        return Ok(None);
    };
    let (count, summary) = team_counts(&team.name, &places(conn, &id)?);
    // One row more than the page tells whether another page follows.
    let want = (q.limit as usize).saturating_add(1);
    let mut members = Vec::new();
    if q.after.is_none() {
        members = query(conn, &format!("{COLUMNS} {MANAGER}"), params![id])?;
    }
    let (rank, name, after_id) = match &q.after {
        Some(p) if !p.manager => (i64::from(p.rank), p.name.clone(), p.employee_id.clone()),
        _ => (0, String::new(), String::new()),
    };
    let left = want.saturating_sub(members.len());
    let sql = format!(
        "{COLUMNS} WHERE e.team_id = ?1 AND e.status = 'active' AND e.id IS NOT t.manager_id
           AND ({MEMBER_ORDER}) > (?2, ?3, ?4) ORDER BY {MEMBER_ORDER} LIMIT ?5"
    );
    let limit = i64::try_from(left).unwrap_or(i64::MAX);
    members.extend(query(conn, &sql, params![id, rank, name, after_id, limit])?);
    let more = members.len() > q.limit as usize;
    members.truncate(q.limit as usize);
    Ok(Some(TeamRoster {
        team,
        count,
        summary,
        members,
        more,
    }))
}

/// The manager's row, when they are an active member of the team.
const MANAGER: &str = "WHERE e.team_id = ?1 AND e.status = 'active' AND e.id = t.manager_id";

fn summary(conn: &Connection, id: &str) -> Result<Option<TeamSummary>> {
    conn.cached_row(concat!(team_summary_head!(), " ?1"), [id], |row| {
        Ok(TeamSummary {
            team_id: row.get(0)?,
            name: row.get(1)?,
            description: row.get(2)?,
            department: row.get(3)?,
            department_id: row.get(4)?,
            manager: row.get(5)?,
            manager_id: row.get(6)?,
        })
    })
    .optional()
    .map_err(DirectoryError::db("load team"))
}

/// How many active members per level and place.
fn places(conn: &Connection, id: &str) -> Result<Vec<Place>> {
    const CONTEXT: &str = "count team members";
    let mut stmt = conn
        .prepare_cached(
            "SELECT g.level, l.city, l.region, l.country, g.n
             FROM (SELECT level, location_id, COUNT(*) AS n FROM employees
                   WHERE team_id = ?1 AND status = 'active'
                   GROUP BY level, location_id) g
             JOIN locations l ON l.id = g.location_id",
        )
        .map_err(DirectoryError::db(CONTEXT))?;
    stmt.query_map([id], |row| {
        let level = parsed(row, 0, "level", Level::parse)?;
        Ok((level, location(row, 1)?.display, row.get(4)?))
    })
    .and_then(Iterator::collect)
    .map_err(DirectoryError::db(CONTEXT))
}

fn query(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> Result<Vec<TeamMember>> {
    const CONTEXT: &str = "load team members";
    let mut stmt = conn
        .prepare_cached(sql)
        .map_err(DirectoryError::db(CONTEXT))?;
    stmt.query_map(params, |row| {
        let role: String = row.get(2)?;
        let track: String = row.get(3)?;
        let level = parsed(row, 4, "level", Level::parse)?;
        Ok(TeamMember {
            employee_id: row.get(0)?,
            name: row.get(1)?,
            title: job_title(&role, &track, level),
            role,
            level,
            is_manager: row.get(5)?,
            manager_id: row.get(6)?,
            manager: row.get(7)?,
            email: row.get(8)?,
            employment_type: parsed(row, 9, "employment type", EmploymentType::parse)?,
            office_type: parsed(row, 10, "office type", OfficeType::parse)?,
            location: location(row, 11)?,
            start_date: date(row, 14)?,
        })
    })
    .and_then(Iterator::collect)
    .map_err(DirectoryError::db(CONTEXT))
}
