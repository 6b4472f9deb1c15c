//! The order paged answers rely on, on both backends: every roster and
//! search is sorted by its page key with no two rows on one key (so a
//! keyset cursor names one position), skill matches are ranked exact,
//! prefix, substring, then by proficiency; the SQLite trigram index
//! follows changes to the skills table.

use crate::common;

use common::{Kind, TempDb, clock, open, today};
use employee_directory::page_order::{
    MEMBER_ORDER, match_key, match_rank, member_key, member_position, roster_key, roster_position,
};
use employee_directory::{
    Directory, MemberPosition, RosterPosition, RosterQuery, SkillMatchKind, TeamQuery,
};

fn strictly_increasing<T>(rows: &[T], key: impl Fn(&T) -> Vec<String>) -> bool {
    rows.windows(2).all(|w| key(&w[0]) < key(&w[1]))
}

async fn rosters_and_matches_are_in_key_order(kind: Kind) {
    let dir = open(kind, today()).await;
    for (id, _) in dir.department_ids().await.unwrap() {
        let roster = dir.department_employees(&id).await.unwrap().unwrap();
        assert!(strictly_increasing(&roster.employees, roster_key), "{id}");
        let counted: u32 = roster.summary.by_team.iter().map(|g| g.count).sum();
        assert_eq!(counted, roster.count, "{id}");
    }
    for (id, _) in dir.team_ids().await.unwrap() {
        let roster = dir.team_members(&id).await.unwrap().unwrap();
        assert!(strictly_increasing(&roster.members, member_key), "{id}");
        assert!(roster.members[0].is_manager, "{id}: manager first");
    }
    let go = dir.search_by_skill_ranked("go").await.unwrap();
    assert_eq!(go.match_kind, SkillMatchKind::Exact);
    assert_eq!(go.matches.len() as u32, go.total);
    assert!(strictly_increasing(&go.matches, |m| match_key("go", m)));
    let ranks: Vec<u8> = go
        .matches
        .iter()
        .map(|m| match_rank("go", &m.skill))
        .collect();
    assert_eq!(ranks.first(), Some(&0));
    assert!(
        ranks.contains(&1) && ranks.contains(&2),
        "{:?}",
        go.matched_skills
    );
}

/// Every page of `department` (narrowed to `team`), `limit` rows at a
/// time, from the first.
async fn walk(dir: &Directory, department: &str, team: Option<&str>, limit: u32) -> Vec<String> {
    let mut q = RosterQuery {
        team: team.map(str::to_owned),
        after: None,
        limit,
    };
    let mut ids = Vec::new();
    loop {
        let page = dir.department_page(department, &q).await.unwrap();
        let page = page.get().as_ref().unwrap();
        assert!(page.employees.len() as u32 <= limit);
        assert_eq!(page.count as usize, page.employees.len());
        ids.extend(page.employees.iter().map(|e| e.employee_id.clone()));
        match page.employees.last() {
            Some(last) if page.more => q.after = Some(roster_position(last)),
            _ => return ids,
        }
    }
}

/// Pages read by keyset from the database list the whole roster once, in
/// order, whatever the page size; a team narrows them; any position
/// (also one no row has) starts a page right after it.
async fn roster_pages_cover_the_roster_once(kind: Kind) {
    let dir = open(kind, today()).await;
    for (id, _) in dir.department_ids().await.unwrap() {
        let whole = dir.department_employees(&id).await.unwrap().unwrap();
        let all: Vec<String> = whole
            .employees
            .iter()
            .map(|e| e.employee_id.clone())
            .collect();
        assert_eq!(whole.total as usize, all.len(), "{id}");
        assert!(!whole.more);
        for limit in [1, 7, 500] {
            assert_eq!(walk(&dir, &id, None, limit).await, all, "{id} by {limit}");
        }
        let team = whole.employees.iter().rev().find_map(|e| e.team_id.clone());
        let Some(team) = team else { continue };
        let members: Vec<String> = whole
            .employees
            .iter()
            .filter(|e| e.team_id.as_deref() == Some(team.as_str()))
            .map(|e| e.employee_id.clone())
            .collect();
        assert_eq!(
            walk(&dir, &id, Some(&team), 2).await,
            members,
            "{id}/{team}"
        );
        let upper = team.to_uppercase();
        let narrowed = dir
            .department_page(
                &id,
                &RosterQuery {
                    team: Some(upper),
                    after: None,
                    limit: 500,
                },
            )
            .await
            .unwrap();
        let narrowed = narrowed.get().as_ref().unwrap();
        assert_eq!(narrowed.total as usize, members.len(), "{id}/{team}");
        assert_eq!(
            narrowed.team.as_ref().map(|t| t.team_id.as_str()),
            Some(team.as_str())
        );
    }
    // A position between rows: the first row of the first team comes next.
    let whole = dir
        .department_employees("engineering")
        .await
        .unwrap()
        .unwrap();
    let first_in_team = whole
        .employees
        .iter()
        .find(|e| e.team_id.is_some())
        .unwrap();
    let q = RosterQuery {
        team: None,
        after: Some(RosterPosition {
            team_id: None,
            employee_id: "\u{10FFFF}".to_owned(),
        }),
        limit: 1,
    };
    let page = dir.department_page("engineering", &q).await.unwrap();
    let page = page.get().as_ref().unwrap();
    assert_eq!(page.employees[0].employee_id, first_in_team.employee_id);
    // A team the department does not have: no rows, and no team.
    let q = RosterQuery {
        team: Some("no-such-team".to_owned()),
        after: None,
        limit: 5,
    };
    let page = dir.department_page("engineering", &q).await.unwrap();
    let page = page.get().as_ref().unwrap();
    assert!(page.team.is_none() && page.employees.is_empty() && page.total == 0);
    assert!(page.team_count > 0 && !page.department.teams.is_empty());
}

/// Every page of `team`, `limit` members at a time, from the first; each
/// page carries the counts over the whole team.
async fn walk_team(dir: &Directory, team: &str, limit: u32) -> Vec<String> {
    let mut q = TeamQuery::first(limit);
    let mut ids = Vec::new();
    loop {
        let page = dir.team_page(team, &q).await.unwrap();
        let page = page.get().as_ref().unwrap();
        assert!(page.members.len() as u32 <= limit);
        let counted: u32 = page.summary.by_level.iter().map(|g| g.count).sum();
        assert_eq!(counted, page.count, "{team}");
        ids.extend(page.members.iter().map(|m| m.employee_id.clone()));
        match page.members.last() {
            Some(last) if page.more => q.after = Some(member_position(last)),
            _ => return ids,
        }
    }
}

/// Team pages read by keyset list the whole team once, manager first, in
/// key order, whatever the page size; a position no row has starts right
/// after it.
async fn team_pages_cover_the_team_once(kind: Kind) {
    let dir = open(kind, today()).await;
    for (id, _) in dir.team_ids().await.unwrap() {
        let whole = dir.team_members(&id).await.unwrap().unwrap();
        let all: Vec<String> = whole
            .members
            .iter()
            .map(|m| m.employee_id.clone())
            .collect();
        assert_eq!(whole.count as usize, all.len(), "{id}");
        assert!(!whole.more);
        for limit in [1, 3, 250] {
            assert_eq!(walk_team(&dir, &id, limit).await, all, "{id} by {limit}");
        }
    }
    let whole = dir.team_members("backend").await.unwrap().unwrap();
    let second = &whole.members[1];
    let mut between = member_position(second);
    between.employee_id.pop();
    let page = dir
        .team_page(
            "backend",
            &TeamQuery {
                after: Some(between),
                limit: 1,
            },
        )
        .await
        .unwrap();
    let page = page.get().as_ref().unwrap();
    assert_eq!(page.members[0].employee_id, second.employee_id);
    // After the last possible position: nothing, and the counts still.
    let end = MemberPosition {
        manager: false,
        rank: 9,
        name: String::new(),
        employee_id: String::new(),
    };
    let page = dir
        .team_page(
            "backend",
            &TeamQuery {
                after: Some(end),
                limit: 5,
            },
        )
        .await
        .unwrap();
    let page = page.get().as_ref().unwrap();
    assert!(page.members.is_empty() && !page.more && page.count == whole.count);
}

on_both_backends!(
    rosters_and_matches_are_in_key_order,
    roster_pages_cover_the_roster_once,
    team_pages_cover_the_team_once
);

/// A team page is a range read of `employees_team_page` (no sort, no scan
/// of the team), and the counts read the covering `employees_team`.
#[tokio::test]
async fn a_team_page_reads_only_its_rows() {
    let file = TempDb::new("team-plan");
    Directory::open(&file.url(), clock(today())).await.unwrap();
    let conn = rusqlite::Connection::open(&file.path).unwrap();
    let plan = |sql: &str| -> String {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows: Vec<String> = stmt
            .query_map([], |r| r.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.join("; ")
    };
    let order = MEMBER_ORDER;
    let page = plan(&format!(
        "SELECT e.id FROM employees e JOIN teams t ON t.id = e.team_id
         WHERE e.team_id = 'backend' AND e.status = 'active' AND e.id IS NOT t.manager_id
           AND ({order}) > (1, 'a', 'b') ORDER BY {order} LIMIT 5"
    ));
    assert!(page.contains("USING INDEX employees_team_page"), "{page}");
    assert!(!page.contains("TEMP B-TREE"), "{page}");
    let counts = plan(
        "SELECT level, location_id, COUNT(*) FROM employees
         WHERE team_id = 'backend' AND status = 'active' GROUP BY level, location_id",
    );
    assert!(
        counts.contains("USING COVERING INDEX employees_team"),
        "{counts}"
    );
}

#[tokio::test]
async fn the_trigram_index_follows_the_skills_table() {
    let file = TempDb::new("trigram");
    let dir = Directory::open(&file.url(), clock(today())).await.unwrap();
    let conn = rusqlite::Connection::open(&file.path).unwrap();
    let mut stmt = conn
        .prepare("EXPLAIN QUERY PLAN SELECT rowid FROM skills_fts WHERE name LIKE '%ipeli%'")
        .unwrap();
    let plan: Vec<String> = stmt
        .query_map([], |r| r.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let plan = plan.join("; ");
    assert!(plan.contains("VIRTUAL TABLE INDEX"), "{plan}");
    conn.execute_batch(
        "INSERT INTO skills (id, name, category) VALUES (9001, 'Pipeline Wrangling', 'Technical');
         INSERT INTO employee_skills (employee_id, skill_id, proficiency)
         SELECT id, 9001, 4 FROM employees WHERE status = 'active' LIMIT 3;
         UPDATE skills SET name = 'Kubernetes Wrangling' WHERE id = 9001;",
    )
    .unwrap();
    let found = dir.search_by_skill_ranked("wrangl").await.unwrap();
    assert_eq!(
        found.matched_skills,
        vec!["Kubernetes Wrangling".to_string()]
    );
    assert_eq!(found.total, 3);
    let old = dir.search_by_skill_ranked("pipeline w").await.unwrap();
    assert!(old.matches.is_empty(), "{:?}", old.matched_skills);
    conn.execute_batch(
        "DELETE FROM employee_skills WHERE skill_id = 9001; DELETE FROM skills WHERE id = 9001;",
    )
    .unwrap();
    assert!(
        dir.search_by_skill_ranked("wrangl")
            .await
            .unwrap()
            .matches
            .is_empty()
    );
}
