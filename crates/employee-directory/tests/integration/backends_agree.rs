//! The oracle for the PostgreSQL backend: every API answers exactly as on
//! SQLite, for every employee, department, team, role × level, skill and
//! report, plus hostile inputs. Rosters and ranked searches are compared in
//! full and in order (with their summaries), so the pages a client walks
//! through are the same on both. Outputs are compared as full JSON values.

use crate::common;

use chrono::NaiveDate;
use common::{Kind, TempDb, clock, open, today};
use employee_directory::{Directory, LeaveType, Level, ReportType};
use serde::Serialize;

/// Inputs that are not ids: wildcards, quotes, non-ASCII, case, junk.
const HOSTILE: &[&str] = &[
    "",
    " ",
    "%",
    "_",
    "\\",
    "%%",
    "a_b",
    "x' OR '1'='1",
    "É",
    "ß",
    "é",
    "ALICE",
    "a",
    "zz",
    "Jöhn Döe",
    "JOHN.DOE@ACMECORP.COM",
    "john doe",
    "engineering-backend",
    "FP&A",
    "Senior Software Engineer",
    "sOfTwArE eNgInEeR",
    "script",
    "SCRIPT",
    "Go",
    "go",
    "c++",
    "\u{0}",
    "null",
    "42",
    "--",
    ";",
];

async fn json<T: Serialize>(
    what: &str,
    result: Result<T, employee_directory::DirectoryError>,
) -> String {
    match result {
        Ok(v) => serde_json::to_string(&v).unwrap(),
        Err(e) => panic!("{what}: {e}"),
    }
}

/// Asserts both directories give the same answer to `$call`.
macro_rules! same {
    ($a:expr, $b:expr, $what:expr, |$d:ident| $call:expr) => {{
        let left = {
            let $d = &$a;
            json(&$what, $call.await).await
        };
        let right = {
            let $d = &$b;
            json(&$what, $call.await).await
        };
        assert_eq!(
            left, right,
            "{} differs between SQLite and PostgreSQL",
            $what
        );
    }};
}

/// Every employee id, read straight from a SQLite file.
fn all_employee_ids(db: &TempDb) -> Vec<(String, String, String, String)> {
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, first_name, last_name, email FROM employees ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

async fn compare_employee(a: &Directory, b: &Directory, row: &(String, String, String, String)) {
    let (id, first, last, email) = row;
    let name = format!("{first} {last}");
    let inputs = [
        id.clone(),
        id.to_lowercase(),
        id.to_uppercase(),
        name.clone(),
        email.to_uppercase(),
    ];
    for input in &inputs {
        same!(a, b, format!("employee({input})"), |d| d.employee(input));
    }
    same!(a, b, format!("tenure({id})"), |d| d.tenure(id));
    for kind in LeaveType::ALL {
        same!(a, b, format!("leave_balance({id}, {kind:?})"), |d| d
            .leave_balance(id, *kind));
    }
    for query in [name.as_str(), last.as_str(), first.as_str()] {
        same!(a, b, format!("suggest_employees({query})"), |d| d
            .suggest_employees(query, 10));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_answer_is_identical_on_sqlite_and_postgres() {
    let file = TempDb::new("oracle");
    let a = Directory::open(&file.url(), clock(today())).await.unwrap();
    let b = open(Kind::Postgres, today()).await;

    same!(a, b, "department_ids", |d| d.department_ids());
    same!(a, b, "team_ids", |d| d.team_ids());
    same!(a, b, "roles", |d| d.roles());
    same!(a, b, "skills", |d| d.skills());

    // Employees, in parallel chunks (the slow part: ~1,400 × 16 calls).
    let employees = all_employee_ids(&file);
    assert!(employees.len() > 1400, "{}", employees.len());
    let mut tasks = Vec::new();
    for chunk in employees.chunks(employees.len().div_ceil(8)) {
        let (a, b, chunk) = (a.clone(), b.clone(), chunk.to_vec());
        tasks.push(tokio::spawn(async move {
            for row in &chunk {
                compare_employee(&a, &b, row).await;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }

    for (id, name) in a.department_ids().await.unwrap() {
        for input in [id.clone(), name.clone(), name.to_uppercase()] {
            same!(a, b, format!("department_employees({input})"), |d| d
                .department_employees(&input));
        }
    }
    for (id, name) in a.team_ids().await.unwrap() {
        let roster = a.team_members(&id).await.unwrap().unwrap();
        let qualified = format!("{}-{id}", roster.team.department_id);
        for input in [id.clone(), name.clone(), name.to_lowercase(), qualified] {
            same!(a, b, format!("team_members({input})"), |d| d
                .team_members(&input));
        }
    }
    for role in a.roles().await.unwrap() {
        for input in [role.clone(), role.to_uppercase(), format!("Senior {role}")] {
            same!(a, b, format!("role_levels({input})"), |d| d
                .role_levels(&input));
            for level in Level::ALL {
                same!(
                    a,
                    b,
                    format!("compensation_band({input}, {level:?})"),
                    |d| d.compensation_band(&input, *level)
                );
            }
        }
    }
    for skill in a.skills().await.unwrap() {
        let chars: Vec<char> = skill.chars().collect();
        let head: String = chars.iter().take(3).collect();
        let tail: String = chars[chars.len().saturating_sub(4)..].iter().collect();
        for input in [skill.clone(), skill.to_lowercase(), head, tail] {
            same!(a, b, format!("search_by_skill({input})"), |d| d
                .search_by_skill(&input));
        }
    }
    // Ranked searches in full (what a client pages through), including
    // one- and two-letter substrings that match most skills.
    for input in ["a", "e", "o", "go", "Go", "in", "script", "SQL", "ing"] {
        same!(a, b, format!("search_by_skill_ranked({input})"), |d| d
            .search_by_skill_ranked(input));
    }
    for input in HOSTILE {
        same!(a, b, format!("employee({input:?})"), |d| d.employee(input));
        same!(a, b, format!("tenure({input:?})"), |d| d.tenure(input));
        same!(a, b, format!("department({input:?})"), |d| d
            .department_employees(input));
        same!(a, b, format!("team({input:?})"), |d| d.team_members(input));
        same!(a, b, format!("skill({input:?})"), |d| d
            .search_by_skill(input));
        same!(a, b, format!("ranked skill({input:?})"), |d| d
            .search_by_skill_ranked(input));
        same!(a, b, format!("role_levels({input:?})"), |d| d
            .role_levels(input));
        same!(a, b, format!("band({input:?})"), |d| d
            .compensation_band(input, Level::Senior));
        same!(a, b, format!("suggest({input:?})"), |d| d
            .suggest_employees(input, 20));
        same!(a, b, format!("leave({input:?})"), |d| d
            .leave_balance(input, LeaveType::Annual));
    }
    let long = "x".repeat(10_000);
    same!(a, b, "employee(long)", |d| d.employee(&long));
    same!(a, b, "suggest(long)", |d| d.suggest_employees(&long, 5));
    same!(a, b, "suggest(all)", |d| d.suggest_employees("a", 5000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_are_identical_at_every_date() {
    let dates = [
        today(),
        NaiveDate::from_ymd_opt(2026, 10, 1).unwrap(),
        NaiveDate::from_ymd_opt(2025, 6, 15).unwrap(),
        NaiveDate::from_ymd_opt(2024, 2, 29).unwrap(),
        NaiveDate::from_ymd_opt(2019, 1, 1).unwrap(),
        NaiveDate::from_ymd_opt(2030, 1, 1).unwrap(),
    ];
    for date in dates {
        let a = open(Kind::Sqlite, date).await;
        let b = open(Kind::Postgres, date).await;
        for kind in ReportType::ALL {
            same!(a, b, format!("report({kind:?}) at {date}"), |d| d
                .report(*kind));
        }
        // Tenure and leave depend on the clock too.
        for id in ["JohnDoe", "AliceJohnson"] {
            same!(a, b, format!("tenure({id}) at {date}"), |d| d.tenure(id));
            same!(a, b, format!("leave({id}) at {date}"), |d| d
                .leave_balance(id, LeaveType::Annual));
        }
        let (ha, hb) = (a.ping().await.unwrap(), b.ping().await.unwrap());
        assert_eq!(
            (ha.schema_version, ha.active_employees, ha.total_employees),
            (hb.schema_version, hb.active_employees, hb.total_employees)
        );
    }
}
