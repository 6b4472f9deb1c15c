//! A page of a skill search: the matched skills through the `pg_trgm`
//! index with their holder counts (`skill_counts`, migration 9), then the
//! page a skill at a time through `employee_skills_page`, so the cost
//! follows the page and the number of matched skills, not the company's
//! size.

use deadpool_postgres::ClientWrapper;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::queries::rows;
use super::row::{count, get, parsed, proficiency};
use crate::error::DirectoryError;
use crate::lookup::like_pattern;
use crate::model::{Level, SkillMatch, SkillQuery, SkillSearch};
use crate::page_order::{self, MatchedSkill};
use crate::seed::job_title;
use crate::statements::SKILL_MATCH_COLUMNS as COLUMNS;

type Result<T> = std::result::Result<T, DirectoryError>;
type Params<'a> = [&'a (dyn ToSql + Sync)];

/// One page of the matches of `q.skill`.
pub(crate) async fn search(c: &ClientWrapper, q: &SkillQuery) -> Result<SkillSearch> {
    let wanted = q.skill.trim();
    // PostgreSQL text cannot hold NUL; no skill name contains one.
    if wanted.is_empty() || wanted.contains('\0') {
        return Ok(page_order::no_matches(&q.skill));
    }
    let mut skills = matched(c, wanted).await?;
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
                    "{COLUMNS} WHERE es.skill_id = $1 AND e.status = 'active'
                       AND es.proficiency = $2 AND lower(es.employee_id) > $3
                     ORDER BY lower(es.employee_id) LIMIT $4"
                );
                let (p, n) = (i64::from(p), limit(left));
                let params: &Params = &[&s.id, &p, &id, &n];
                let found = rows(c, "load skill matches", &same, params).await?;
                matches.extend(to_matches(&found, s)?);
                let left = want - matches.len();
                matches.extend(below(c, s, p, left).await?);
            }
            None if s.holders > 0 => matches.extend(below(c, s, 5, left).await?),
            None => {}
        }
        i += 1;
    }
    Ok(page_order::skill_search(
        &q.skill, wanted, skills, matches, want,
    ))
}

fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Skills whose lowercased name contains `wanted` lowercased (a LIKE the
/// `pg_trgm` index of migration 6 answers), with their active holders.
async fn matched(c: &ClientWrapper, wanted: &str) -> Result<Vec<MatchedSkill>> {
    let pattern = like_pattern(&wanted.to_ascii_lowercase());
    let found = rows(
        c,
        "find skills",
        "SELECT s.id, s.name, COALESCE(sc.n, 0) FROM skills s
         LEFT JOIN skill_counts sc ON sc.skill_id = s.id
         WHERE lower(s.name) LIKE $1::text ESCAPE '\\'",
        &[&pattern],
    )
    .await?;
    found
        .iter()
        .map(|r| {
            Ok(MatchedSkill {
                id: get(r, 0)?,
                name: get(r, 1)?,
                holders: count(r, 2)?,
            })
        })
        .collect()
}

/// Up to `n` holders of `s` below proficiency `p`, strongest first.
async fn below(c: &ClientWrapper, s: &MatchedSkill, p: i64, n: usize) -> Result<Vec<SkillMatch>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let sql = format!(
        "{COLUMNS} WHERE es.skill_id = $1 AND e.status = 'active' AND es.proficiency < $2
         ORDER BY es.proficiency DESC, lower(es.employee_id) LIMIT $3"
    );
    let n = limit(n);
    let found = rows(c, "load skill matches", &sql, &[&s.id, &p, &n]).await?;
    to_matches(&found, s)
}

fn to_matches(found: &[Row], s: &MatchedSkill) -> Result<Vec<SkillMatch>> {
    found
        .iter()
        .map(|r| {
            let role: String = get(r, 2)?;
            let track: String = get(r, 3)?;
            let level = parsed(r, 4, "level", Level::parse)?;
            Ok(SkillMatch {
                employee_id: get(r, 0)?,
                name: get(r, 1)?,
                title: job_title(&role, &track, level),
                department: get(r, 5)?,
                department_id: get(r, 6)?,
                team: get(r, 7)?,
                team_id: get(r, 8)?,
                skill: s.name.clone(),
                proficiency: proficiency(r, 9)?,
            })
        })
        .collect()
}
