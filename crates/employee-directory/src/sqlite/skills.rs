//! A page of a skill search: the matched skills through the trigram index
//! with their holder counts (`skill_counts`, migration 9), then the page
//! a skill at a time through `employee_skills_page`, so the cost follows
//! the page and the number of matched skills, not the company's size.

use rusqlite::{Connection, params};

use super::row::{count, parsed, proficiency};
use crate::error::DirectoryError;
use crate::model::{Level, SkillMatch, SkillQuery, SkillSearch};
use crate::page_order::{self, MatchedSkill};
use crate::seed::job_title;
use crate::statements::SKILL_MATCH_COLUMNS as COLUMNS;

type Result<T> = std::result::Result<T, DirectoryError>;

/// One page of the matches of `q.skill`.
pub(crate) fn search(conn: &Connection, q: &SkillQuery) -> Result<SkillSearch> {
    let wanted = q.skill.trim();
    // SQLite's LIKE stops at a NUL, so "\0" would match every skill; no
    // skill name contains one.
    if wanted.is_empty() || wanted.contains('\0') {
        return Ok(page_order::no_matches(&q.skill));
    }
    let mut skills = matched(conn, wanted)?;
    if skills.is_empty() {
        return Ok(page_order::no_matches(&q.skill));
    }
    page_order::sort_skills(wanted, &mut skills);
    let want = q.limit.max(1) as usize + 1;
    let (mut i, mut resume) = page_order::skill_start(wanted, &skills, q.after.as_ref());
    let mut matches = Vec::new();
    while i < skills.len() && matches.len() < want {
        let s = &skills[i];
        let left = want - matches.len();
        match resume.take() {
            Some((p, id)) => {
                let same = format!(
                    "{COLUMNS} WHERE es.skill_id = ?1 AND e.status = 'active'
                       AND es.proficiency = ?2 AND es.employee_id > ?3 COLLATE NOCASE
                     ORDER BY es.employee_id COLLATE NOCASE LIMIT ?4"
                );
                matches.extend(rows(conn, &same, params![s.id, p, id, limit(left)], s)?);
                let left = want - matches.len();
                matches.extend(below(conn, s, p, left)?);
            }
            None if s.holders > 0 => matches.extend(below(conn, s, 5, left)?),
            None => {}
        }
        i += 1;
    }
    Ok(page_order::skill_search(
        &q.skill, wanted, skills, matches, want,
    ))
}

/// SQLite takes a LIMIT as a signed 64-bit integer.
fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Skills whose name contains `wanted` (ignoring ASCII case), with their
/// active holders.
fn matched(conn: &Connection, wanted: &str) -> Result<Vec<MatchedSkill>> {
    const CONTEXT: &str = "find skills";
    // Candidates through the trigram index (a superset when the query
    // holds LIKE wildcards), then the exact substring test.
    let mut stmt = conn
        .prepare_cached(
            "SELECT s.id, s.name, COALESCE(c.n, 0) FROM skills s
             LEFT JOIN skill_counts c ON c.skill_id = s.id
             WHERE s.id IN (SELECT rowid FROM skills_fts WHERE name LIKE ?1)
               AND instr(lower(s.name), ?2) > 0",
        )
        .map_err(DirectoryError::db(CONTEXT))?;
    stmt.query_map(
        params![format!("%{wanted}%"), wanted.to_ascii_lowercase()],
        |row| {
            Ok(MatchedSkill {
                id: row.get(0)?,
                name: row.get(1)?,
                holders: count(row, 2)?,
            })
        },
    )
    .and_then(Iterator::collect)
    .map_err(DirectoryError::db(CONTEXT))
}

/// Up to `n` holders of `s` below proficiency `p`, strongest first.
fn below(conn: &Connection, s: &MatchedSkill, p: u8, n: usize) -> Result<Vec<SkillMatch>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let sql = format!(
        "{COLUMNS} WHERE es.skill_id = ?1 AND e.status = 'active' AND es.proficiency < ?2
         ORDER BY es.proficiency DESC, es.employee_id COLLATE NOCASE LIMIT ?3"
    );
    rows(conn, &sql, params![s.id, p, limit(n)], s)
}

fn rows(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    s: &MatchedSkill,
) -> Result<Vec<SkillMatch>> {
    const CONTEXT: &str = "load skill matches";
    let mut stmt = conn
        .prepare_cached(sql)
        .map_err(DirectoryError::db(CONTEXT))?;
    stmt.query_map(params, |row| {
        let role: String = row.get(2)?;
        let track: String = row.get(3)?;
        let level = parsed(row, 4, "level", Level::parse)?;
        Ok(SkillMatch {
            employee_id: row.get(0)?,
            name: row.get(1)?,
            title: job_title(&role, &track, level),
            department: row.get(5)?,
            department_id: row.get(6)?,
            team: row.get(7)?,
            team_id: row.get(8)?,
            skill: s.name.clone(),
            proficiency: proficiency(row, 9)?,
        })
    })
    .and_then(Iterator::collect)
    .map_err(DirectoryError::db(CONTEXT))
}
