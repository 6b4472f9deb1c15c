//! A page of a team's members: the counts over the whole team from the
//! covering `employees_team` index, the manager by id, the other members
//! by keyset through the `employees_team_page` index (migration 0014), so
//! a page of a team of thousands costs what the page holds. One round
//! trip: every statement names the team by the same subquery, pipelined.

use deadpool_postgres::ClientWrapper;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::queries::{org_key, row_opt, rows, team_id};
use super::row::{get, location, parsed};
use crate::error::DirectoryError;
use crate::model::{
    EmploymentType, Level, OfficeType, TeamMember, TeamQuery, TeamRoster, TeamSummary,
};
use crate::page_order::MEMBER_ORDER;
use crate::seed::job_title;
use crate::statements::team_summary_head;
use crate::summary::{Place, team_counts};

type Result<T> = std::result::Result<T, DirectoryError>;
type Params<'a> = [&'a (dyn ToSql + Sync)];

/// The member columns, joined for a page's rows only.
/// Per dialect: SQLite's null-safe `IS` is `IS NOT DISTINCT FROM` here.
const COLUMNS: &str = "SELECT e.id, e.first_name || ' ' || e.last_name, r.title, r.track, e.level,
            e.id IS NOT DISTINCT FROM t.manager_id, m.id, m.first_name || ' ' || m.last_name,
            e.email, e.employment_type, e.office_type, l.city, l.region, l.country,
            e.start_date
     FROM employees e
     JOIN teams t ON t.id = e.team_id
     JOIN roles r ON r.id = e.role_id
     JOIN locations l ON l.id = e.location_id
     LEFT JOIN employees m ON m.id = e.manager_id";

/// One page of the team `input` names (id, name or `department-team`) as
/// `q` asks; `None` when no team matches.
pub(crate) async fn team_page(
    c: &ClientWrapper,
    input: &str,
    q: &TeamQuery,
) -> Result<Option<TeamRoster>> {
    let Some((key, slug)) = org_key(input) else {
        return Ok(None);
    };
    let team = concat!(team_summary_head!(), " ", team_id!());
    let counts = concat!(
        "SELECT g.level, l.city, l.region, l.country, g.n
         FROM (SELECT level, location_id, COUNT(*)::int8 AS n FROM employees
               WHERE team_id = ",
        team_id!(),
        " AND status = 'active'
               GROUP BY level, location_id) g
         JOIN locations l ON l.id = g.location_id"
    );
    let manager = format!(
        "{COLUMNS} WHERE e.team_id = {} AND e.status = 'active' AND e.id = t.manager_id",
        team_id!()
    );
    let others = format!(
        "{COLUMNS} WHERE e.team_id = {} AND e.status = 'active'
           AND e.id IS DISTINCT FROM t.manager_id
           AND ({MEMBER_ORDER}) > ($3::int4, $4::text, $5::text)
         ORDER BY {MEMBER_ORDER} LIMIT $6",
        team_id!()
    );
    let (rank, name, after_id) = match &q.after {
        Some(p) if !p.manager => (i32::from(p.rank), p.name.clone(), p.employee_id.clone()),
        _ => (0, String::new(), String::new()),
    };
    // One row more than the page tells whether another page follows.
    let want = i64::from(q.limit) + 1;
    let org: &Params = &[&key, &slug];
    let page: &Params = &[&key, &slug, &rank, &name, &after_id, &want];
    const CONTEXT: &str = "load team members";
    let (team, counts, manager, others) = tokio::try_join!(
        row_opt(c, "load team", team, org),
        rows(c, "count team members", counts, org),
        async {
            match q.after {
                None => rows(c, CONTEXT, &manager, org).await,
                Some(_) => Ok(Vec::new()),
            }
        },
        rows(c, CONTEXT, &others, page),
    )?;
    let Some(team) = team else {
        return Ok(None);
    };
    let team = TeamSummary {
        team_id: get(&team, 0)?,
        name: get(&team, 1)?,
        description: get(&team, 2)?,
        department: get(&team, 3)?,
        department_id: get(&team, 4)?,
        manager: get(&team, 5)?,
        manager_id: get(&team, 6)?,
    };
    let places = counts
        .iter()
        .map(|r| {
            let level = parsed(r, 0, "level", Level::parse)?;
            let n: i64 = get(r, 4)?;
            Ok((
                level,
                location(r, 1)?.display,
                u32::try_from(n).unwrap_or(u32::MAX),
            ))
        })
        .collect::<Result<Vec<Place>>>()?;
    let (count, summary) = team_counts(&team.name, &places);
    let mut members = manager
        .iter()
        .chain(others.iter())
        .map(member)
        .collect::<Result<Vec<TeamMember>>>()?;
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

fn member(r: &Row) -> Result<TeamMember> {
    let role: String = get(r, 2)?;
    let track: String = get(r, 3)?;
    let level = parsed(r, 4, "level", Level::parse)?;
    Ok(TeamMember {
        employee_id: get(r, 0)?,
        name: get(r, 1)?,
        title: job_title(&role, &track, level),
        role,
        level,
        is_manager: get(r, 5)?,
        manager_id: get(r, 6)?,
        manager: get(r, 7)?,
        email: get(r, 8)?,
        employment_type: parsed(r, 9, "employment type", EmploymentType::parse)?,
        office_type: parsed(r, 10, "office type", OfficeType::parse)?,
        location: location(r, 11)?,
        start_date: get(r, 14)?,
    })
}
