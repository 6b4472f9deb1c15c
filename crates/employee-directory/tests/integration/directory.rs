//! End-to-end tests against real SQLite databases (in memory and on disk).

use crate::common;

use std::collections::HashSet;

use chrono::NaiveDate;
use common::{Kind, TempDb, clock, fnv1a, memory, open, today};
use employee_directory::{
    Directory, DirectoryError, DirectoryOptions, EmploymentStatus, EmploymentType, LeaveType,
    Level, OfficeType, Report, ReportType, SkillMatchKind,
};

/// Rows in all seeded tables (employees, skills, history, leave, ...).
const SEEDED_ROWS: usize = 18_969;
/// FNV-1a of [`dump`] for the current seed.
const SEEDED_CHECKSUM: &str = "15c006ad23d455a3";

/// Dumps every seeded table in a fixed order.
fn dump(path: &std::path::Path) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    let tables = [
        ("departments", "id"),
        ("teams", "id"),
        ("locations", "id"),
        ("roles", "id"),
        ("compensation_bands", "role_id, level"),
        ("skills", "id"),
        ("employees", "id"),
        ("employee_skills", "employee_id, skill_id"),
        ("employment_history", "id"),
        ("leave_balances", "employee_id, year, leave_type"),
        ("directory_meta", "key"),
    ];
    let mut out = String::new();
    for (table, order) in tables {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY {order}"))
            .unwrap();
        let columns = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            out.push_str(table);
            for i in 0..columns {
                use rusqlite::types::Value;
                out.push('|');
                match row.get::<_, Value>(i).unwrap() {
                    Value::Null => out.push_str("NULL"),
                    Value::Integer(n) => out.push_str(&n.to_string()),
                    Value::Real(x) => out.push_str(&format!("{x:.2}")),
                    Value::Text(t) => out.push_str(&t),
                    Value::Blob(b) => out.push_str(&format!("{b:?}")),
                }
            }
            out.push('\n');
        }
    }
    out
}

#[tokio::test]
async fn seed_is_deterministic_on_disk() {
    let (a, b) = (TempDb::new("a"), TempDb::new("b"));
    let dir_a = Directory::open(&a.url(), clock(today())).await.unwrap();
    let dir_b = Directory::open(&b.url(), clock(today())).await.unwrap();
    assert!(a.path.exists(), "database file was not created");
    drop((dir_a, dir_b));

    let (dump_a, dump_b) = (dump(&a.path), dump(&b.path));
    assert_eq!(dump_a, dump_b);
    // Pinned so that every machine is known to produce the same content.
    // If you change the seed on purpose, bump SEED_VERSION and update these.
    assert_eq!(dump_a.lines().count(), SEEDED_ROWS);
    assert_eq!(
        format!("{:016x}", fnv1a(dump_a.as_bytes())),
        SEEDED_CHECKSUM,
        "seed content changed"
    );
}

/// Fingerprint of what the public API returns, for in-memory databases.
async fn api_fingerprint(dir: &Directory) -> u64 {
    let mut text = String::new();
    for (id, _) in dir.department_ids().await.unwrap() {
        let roster = dir.department_employees(&id).await.unwrap().unwrap();
        text.push_str(&serde_json::to_string(&roster).unwrap());
    }
    for kind in ReportType::ALL {
        text.push_str(&serde_json::to_string(&dir.report(*kind).await.unwrap()).unwrap());
    }
    text.push_str(&serde_json::to_string(&dir.search_by_skill("Python").await.unwrap()).unwrap());
    fnv1a(text.as_bytes())
}

/// Two databases seeded apart answer the same (in memory / per-test copies).
async fn seed_is_deterministic_in_memory(kind: Kind) {
    let (a, b) = (open(kind, today()).await, open(kind, today()).await);
    assert_eq!(api_fingerprint(&a).await, api_fingerprint(&b).await);

    let health = a.ping().await.unwrap();
    assert_eq!(health.backend, kind.name());
    assert_eq!(health.schema_version, Directory::expected_schema_version());
    assert!(health.total_employees >= 1000, "{health:?}");
    assert!(health.active_employees >= 1200, "{health:?}");
    assert!(health.total_employees > health.active_employees);
}

async fn article_examples_exist(kind: Kind) {
    let dir = open(kind, today()).await;
    let john = dir.employee("JohnDoe").await.unwrap().expect("JohnDoe");
    assert_eq!(john.name, "John Doe");
    assert_eq!(john.title, "Senior Software Engineer");
    assert_eq!(john.role, "Software Engineer");
    assert_eq!(john.level, Level::Senior);
    assert_eq!(john.department, "Engineering");
    assert_eq!(john.team_id.as_deref(), Some("backend"));
    assert_eq!(john.manager.as_deref(), Some("Alice Johnson"));
    assert_eq!(john.manager_id.as_deref(), Some("AliceJohnson"));
    assert_eq!(john.email, "john.doe@acmecorp.com");
    assert_eq!(john.phone, "+1-555-0123");
    assert_eq!(john.employment_type, EmploymentType::FullTime);
    assert_eq!(john.office_type, OfficeType::Hybrid);
    assert_eq!(
        john.start_date,
        NaiveDate::from_ymd_opt(2020, 1, 15).unwrap()
    );
    assert_eq!(john.status, EmploymentStatus::Active);
    assert!(!john.skills.is_empty());
    assert!(john.employment_history.len() >= 2);

    let alice = dir
        .employee("AliceJohnson")
        .await
        .unwrap()
        .expect("AliceJohnson");
    assert_eq!(alice.name, "Alice Johnson");
    assert_eq!(alice.department_id, "engineering");
    assert_eq!(alice.location.display, "San Francisco, CA");
    assert!(alice.direct_reports > 10);
    let backend = dir.team_members("backend").await.unwrap().unwrap();
    assert_eq!(backend.team.manager_id.as_deref(), Some("AliceJohnson"));
    assert_eq!(backend.members[0].employee_id, "AliceJohnson");
    assert!(backend.members[0].is_manager);
    assert!(backend.members.iter().any(|m| m.employee_id == "JohnDoe"));

    let json = serde_json::to_value(&john).unwrap();
    assert_eq!(json["employeeId"], "JohnDoe");
    assert_eq!(json["managerId"], "AliceJohnson");
    assert_eq!(json["employmentType"], "full-time");
    assert_eq!(json["startDate"], "2020-01-15");
}

async fn lookups_are_case_insensitive_and_accept_names(kind: Kind) {
    let dir = open(kind, today()).await;
    for input in [
        "johndoe",
        "JOHNDOE",
        "John Doe",
        " john doe ",
        "JOHN.DOE@acmecorp.com",
    ] {
        let found = dir.employee(input).await.unwrap();
        assert_eq!(
            found.map(|e| e.employee_id).as_deref(),
            Some("JohnDoe"),
            "{input}"
        );
    }
    for input in ["engineering", "Engineering", "ENGINEERING"] {
        let roster = dir.department_employees(input).await.unwrap().unwrap();
        assert_eq!(roster.department.department_id, "engineering");
    }
    let hr = dir
        .department_employees("Human Resources")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(hr.department.department_id, "human-resources");
    for (input, id) in [
        ("Backend", "backend"),
        ("BACKEND", "backend"),
        ("engineering-backend", "backend"),
        ("FP&A", "fp-and-a"),
        ("tier 1 support", "tier-1-support"),
    ] {
        let team = dir.team_members(input).await.unwrap();
        assert_eq!(team.map(|t| t.team.team_id).as_deref(), Some(id), "{input}");
    }
}

async fn unknown_ids_are_none_not_errors(kind: Kind) {
    let dir = open(kind, today()).await;
    assert!(dir.employee("NoSuchPerson").await.unwrap().is_none());
    assert!(dir.employee("").await.unwrap().is_none());
    assert!(dir.tenure("nobody").await.unwrap().is_none());
    assert!(
        dir.department_employees("astrology")
            .await
            .unwrap()
            .is_none()
    );
    assert!(dir.team_members("nope").await.unwrap().is_none());
    assert!(
        dir.leave_balance("nobody", LeaveType::Sick)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        dir.compensation_band("Astronaut", Level::Mid)
            .await
            .unwrap()
            .is_none()
    );
    assert!(dir.role_levels("Astronaut").await.unwrap().is_none());
    let search = dir.search_by_skill("COBOL").await.unwrap();
    assert_eq!(search.match_kind, SkillMatchKind::None);
    assert_eq!(search.total, 0);
    assert!(search.matches.is_empty());
    // Injection-looking input is just data.
    assert!(dir.employee("x' OR '1'='1").await.unwrap().is_none());
    assert!(dir.search_by_skill("%").await.unwrap().matches.is_empty());
}

async fn every_returned_id_works_in_other_lookups(kind: Kind) {
    let dir = open(kind, today()).await;
    let mut employees = HashSet::new();
    let mut teams = HashSet::new();
    for (department_id, name) in dir.department_ids().await.unwrap() {
        let roster = dir
            .department_employees(&department_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(roster.department.name, name);
        assert_eq!(roster.count as usize, roster.employees.len());
        assert!(dir.department_employees(&name).await.unwrap().is_some());
        if let Some(head) = &roster.department.head_id {
            employees.insert(head.clone());
        }
        for team in &roster.department.teams {
            teams.insert(team.team_id.clone());
        }
        for entry in &roster.employees {
            employees.insert(entry.employee_id.clone());
            if let Some(team) = &entry.team_id {
                teams.insert(team.clone());
            }
        }
    }
    let all_teams: HashSet<String> = dir
        .team_ids()
        .await
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(teams, all_teams);
    assert!(all_teams.len() >= 25);

    for team_id in &all_teams {
        let roster = dir.team_members(team_id).await.unwrap().unwrap();
        assert_eq!(&roster.team.team_id, team_id);
        assert!(
            dir.department_employees(&roster.team.department_id)
                .await
                .unwrap()
                .is_some()
        );
        for member in &roster.members {
            let manager = member
                .manager_id
                .as_deref()
                .expect("team members have managers");
            assert!(dir.employee(manager).await.unwrap().is_some(), "{manager}");
        }
    }

    let mut without_manager = 0;
    for id in &employees {
        let e = dir
            .employee(id)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{id}"));
        assert_eq!(&e.employee_id, id);
        assert!(
            dir.department_employees(&e.department_id)
                .await
                .unwrap()
                .is_some()
        );
        if let Some(team) = &e.team_id {
            assert!(dir.team_members(team).await.unwrap().is_some());
        }
        match &e.manager_id {
            Some(m) => assert!(dir.employee(m).await.unwrap().is_some()),
            None => without_manager += 1,
        }
        assert!(dir.tenure(id).await.unwrap().is_some());
        assert!(
            dir.leave_balance(id, LeaveType::Annual)
                .await
                .unwrap()
                .is_some()
        );
    }
    assert_eq!(without_manager, 1, "only the CEO has no manager");

    let search = dir.search_by_skill("Kubernetes").await.unwrap();
    for m in &search.matches {
        assert!(employees.contains(&m.employee_id));
        assert!(
            dir.department_employees(&m.department_id)
                .await
                .unwrap()
                .is_some()
        );
    }
    let roles = dir.roles().await.unwrap();
    for e in dir.team_members("backend").await.unwrap().unwrap().members {
        assert!(roles.contains(&e.role));
        assert!(
            dir.compensation_band(&e.role, e.level)
                .await
                .unwrap()
                .is_some()
        );
    }
}

async fn tenure_uses_the_clock(kind: Kind) {
    let dir = open(kind, today()).await;
    let t = dir.tenure("JohnDoe").await.unwrap().unwrap();
    assert_eq!(t.as_of, today());
    assert_eq!((t.years, t.months, t.days, t.total_days), (6, 10, 15, 2511));
    assert_eq!(t.summary, "6 years, 10 months");
    assert_eq!(t.total_years, 6.87);

    let earlier = NaiveDate::from_ymd_opt(2021, 3, 20).unwrap();
    let dir = open(kind, earlier).await;
    let t = dir.tenure("johndoe").await.unwrap().unwrap();
    assert_eq!((t.years, t.months, t.days, t.total_days), (1, 2, 5, 430));
    assert_eq!(t.summary, "1 year, 2 months");

    let before_start = NaiveDate::from_ymd_opt(2019, 1, 1).unwrap();
    let dir = open(kind, before_start).await;
    let t = dir.tenure("johndoe").await.unwrap().unwrap();
    assert_eq!(t.total_days, 0);
}

async fn former_employees_tenure_stops_at_their_last_day(kind: Kind) {
    let dir = open(kind, today()).await;
    let sales = dir.department_employees("sales").await.unwrap().unwrap();
    let active: HashSet<String> = sales
        .employees
        .iter()
        .map(|e| e.employee_id.clone())
        .collect();
    // Former employees are not on rosters but are found by name search.
    let mut found_former = false;
    for (id, _) in dir.suggest_employees("a", 2000).await.unwrap() {
        let e = dir.employee(&id).await.unwrap().unwrap();
        if e.status == EmploymentStatus::Terminated {
            assert!(!active.contains(&id));
            let last_day = e.termination_date.unwrap();
            let t = dir.tenure(&id).await.unwrap().unwrap();
            assert_eq!(t.as_of, last_day);
            assert_eq!(t.total_days, (last_day - e.start_date).num_days());
            found_former = true;
            break;
        }
    }
    assert!(found_former);
}

async fn leave_balances_add_up(kind: Kind) {
    let dir = open(kind, today()).await;
    let backend = dir.team_members("backend").await.unwrap().unwrap();
    for member in backend.members.iter().take(20) {
        for leave_type in LeaveType::ALL {
            let b = dir
                .leave_balance(&member.employee_id, *leave_type)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(b.leave_type, *leave_type);
            assert_eq!(b.year, 2026);
            assert_eq!(b.unit, "days");
            assert_eq!(b.remaining, b.entitled - b.used - b.pending);
            assert!(b.remaining >= 0.0, "{b:?}");
        }
    }
    let annual = dir
        .leave_balance("JohnDoe", LeaveType::Annual)
        .await
        .unwrap()
        .unwrap();
    assert!(annual.entitled >= 20.0);
    let json = serde_json::to_value(&annual).unwrap();
    assert_eq!(json["leaveType"], "annual");
}

async fn compensation_bands_contain_actual_salaries(kind: Kind) {
    let dir = open(kind, today()).await;
    let mut banded = 0;
    for role in dir.roles().await.unwrap() {
        let levels = dir.role_levels(&role).await.unwrap().unwrap();
        assert!(!levels.is_empty(), "{role}");
        for level in levels {
            let band = dir.compensation_band(&role, level).await.unwrap().unwrap();
            assert_eq!(band.currency, "USD");
            assert!(band.min <= band.mid && band.mid <= band.max);
            let a = &band.actual;
            banded += a.employee_count;
            if a.employee_count > 0 {
                let (min, max) = (a.min.unwrap(), a.max.unwrap());
                let median = a.median.unwrap();
                assert!(band.min <= min && max <= band.max, "{band:?}");
                assert!(min as f64 <= median && median <= max as f64, "{band:?}");
            } else {
                assert!(a.min.is_none() && a.median.is_none());
            }
        }
    }
    let health = dir.ping().await.unwrap();
    assert_eq!(banded, health.active_employees);

    let senior = dir
        .compensation_band("software engineer", Level::Senior)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(senior.title, "Senior Software Engineer");
    assert!(senior.actual.employee_count > 10);
    // A title with a level prefix is understood as the role.
    let same = dir
        .compensation_band("Senior Software Engineer", Level::Senior)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(same, senior);
    // Individual contributor roles have no executive band.
    assert!(
        dir.compensation_band("Software Engineer", Level::Executive)
            .await
            .unwrap()
            .is_none()
    );
}

async fn skill_search_orders_and_caps(kind: Kind) {
    let dir = open(kind, today()).await;
    let rust = dir.search_by_skill("rust").await.unwrap();
    assert_eq!(rust.match_kind, SkillMatchKind::Exact);
    assert_eq!(rust.matched_skills, vec!["Rust".to_string()]);
    assert!(rust.total > 0);
    for pair in rust.matches.windows(2) {
        assert!(pair[0].proficiency >= pair[1].proficiency);
    }

    let partial = dir.search_by_skill("script").await.unwrap();
    assert_eq!(partial.match_kind, SkillMatchKind::Partial);
    assert_eq!(partial.matched_skills, vec!["TypeScript".to_string()]);

    let popular = dir.search_by_skill("Troubleshooting").await.unwrap();
    assert!(popular.total > 100, "{}", popular.total);
    assert!(popular.truncated);
    assert_eq!(
        popular.matches.len(),
        employee_directory::SKILL_SEARCH_LIMIT as usize
    );

    let skills = dir.skills().await.unwrap();
    assert!(skills.len() >= 40);
    assert!(skills.contains(&"Rust".to_string()));
}

async fn suggestions_find_similar_names(kind: Kind) {
    let dir = open(kind, today()).await;
    let found = dir.suggest_employees("alice johnson", 5).await.unwrap();
    assert_eq!(
        found[0],
        ("AliceJohnson".to_string(), "Alice Johnson".to_string())
    );
    let found = dir.suggest_employees("Jon Doe", 5).await.unwrap();
    assert!(found.iter().any(|(id, _)| id == "JohnDoe"), "{found:?}");
    assert!(dir.suggest_employees("  ", 5).await.unwrap().is_empty());
}

async fn headcount_report_adds_up(kind: Kind) {
    let dir = open(kind, today()).await;
    let Report::Headcount(r) = dir.report(ReportType::Headcount).await.unwrap() else {
        panic!("wrong report kind");
    };
    assert_eq!(r.as_of, today());
    let health = dir.ping().await.unwrap();
    // The clock is after the seed anchor, so "employed today" = "active".
    assert_eq!(r.total_active, health.active_employees);
    for buckets in [
        &r.by_department,
        &r.by_location,
        &r.by_employment_type,
        &r.by_office_type,
    ] {
        assert_eq!(
            buckets.iter().map(|b| b.headcount).sum::<u32>(),
            r.total_active
        );
        let percent: f64 = buckets.iter().map(|b| b.percent).sum();
        assert!((percent - 100.0).abs() < 1.0, "{percent}");
    }
    let engineering = r
        .by_department
        .iter()
        .find(|b| b.key == "engineering")
        .unwrap();
    let roster = dir
        .department_employees("engineering")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(engineering.headcount, roster.count);
    assert!(r.by_department.len() >= 8);

    let json = serde_json::to_value(dir.report(ReportType::Headcount).await.unwrap()).unwrap();
    assert_eq!(json["reportType"], "headcount");
    assert!(json["totalActive"].as_u64().unwrap() >= 1200);
}

async fn turnover_report_is_meaningful(kind: Kind) {
    let dir = open(kind, today()).await;
    let Report::Turnover(r) = dir.report(ReportType::Turnover).await.unwrap() else {
        panic!("wrong report kind");
    };
    assert_eq!(
        r.period_start,
        NaiveDate::from_ymd_opt(2025, 11, 30).unwrap()
    );
    let o = &r.overall;
    assert!(o.terminations > 20, "{o:?}");
    assert_eq!(o.terminations, o.voluntary + o.involuntary);
    assert_eq!(
        o.terminations,
        r.by_department.iter().map(|d| d.terminations).sum::<u32>()
    );
    let expected = (f64::from(o.terminations) / o.average_headcount * 1000.0).round() / 10.0;
    assert_eq!(o.turnover_rate_percent, expected);
    assert!(o.turnover_rate_percent > 1.0 && o.turnover_rate_percent < 30.0);
    // The period ends today, after the seed anchor: end headcount = active.
    assert_eq!(o.headcount_end, dir.ping().await.unwrap().active_employees);
    assert!(o.hires > 0);

    // Long after the seeded terminations, nobody leaves any more.
    let later = NaiveDate::from_ymd_opt(2030, 1, 1).unwrap();
    let dir = open(kind, later).await;
    let Report::Turnover(r) = dir.report(ReportType::Turnover).await.unwrap() else {
        panic!("wrong report kind");
    };
    assert_eq!(r.overall.terminations, 0);
    assert_eq!(r.overall.turnover_rate_percent, 0.0);
}

async fn compensation_report_is_consistent(kind: Kind) {
    let dir = open(kind, today()).await;
    let Report::Compensation(r) = dir.report(ReportType::Compensation).await.unwrap() else {
        panic!("wrong report kind");
    };
    assert_eq!(r.currency, "USD");
    let health = dir.ping().await.unwrap();
    assert_eq!(r.overall.headcount, health.active_employees);
    assert_eq!(
        r.by_department.iter().map(|d| d.headcount).sum::<u32>(),
        r.overall.headcount
    );
    assert_eq!(
        r.by_level.iter().map(|d| d.headcount).sum::<u32>(),
        r.overall.headcount
    );
    let levels: Vec<&str> = r.by_level.iter().map(|l| l.key.as_str()).collect();
    assert_eq!(levels.first(), Some(&"junior"));
    assert_eq!(levels.last(), Some(&"executive"));
    for row in r
        .by_department
        .iter()
        .chain(&r.by_level)
        .chain([&r.overall])
    {
        assert!(row.min_salary as f64 <= row.median_salary, "{row:?}");
        assert!(row.median_salary <= row.max_salary as f64, "{row:?}");
        assert!(row.min_salary <= row.average_salary && row.average_salary <= row.max_salary);
        assert!(
            row.average_compa_ratio > 0.8 && row.average_compa_ratio < 1.2,
            "{row:?}"
        );
        assert!((0.0..=100.0).contains(&row.average_band_position_percent));
    }
}

#[tokio::test]
async fn profiles_follow_changes_made_behind_the_directorys_back() {
    let db = TempDb::new("details-cache");
    let dir = Directory::open(&db.url(), clock(today())).await.unwrap();
    let first = dir.employee("JohnDoe").await.unwrap().unwrap();
    // Asked again (now answered from the cache), in two spellings.
    assert_eq!(dir.employee("JohnDoe").await.unwrap().unwrap(), first);
    assert_eq!(dir.employee("John Doe").await.unwrap().unwrap(), first);

    let conn = rusqlite::Connection::open(&db.path).unwrap();
    let change = |sql: &str| assert_eq!(conn.execute(sql, []).unwrap(), 1, "{sql}");
    change("UPDATE employees SET phone = '+1-555-0123' WHERE id = 'JohnDoe'");
    let john = dir.employee("JohnDoe").await.unwrap().unwrap();
    assert_eq!(john.phone, "+1-555-0123");
    assert_eq!(dir.employee("John Doe").await.unwrap().unwrap(), john);

    // A change to a joined table (the department's name).
    change(&format!(
        "UPDATE departments SET name = 'Renamed' WHERE id = '{}'",
        john.department_id
    ));
    let john = dir.employee("JohnDoe").await.unwrap().unwrap();
    assert_eq!(john.department, "Renamed");

    // A deleted row is gone from the answer.
    let skill = john
        .skills
        .first()
        .expect("JohnDoe has skills")
        .skill
        .clone();
    change(&format!(
        "DELETE FROM employee_skills WHERE employee_id = 'JohnDoe'
           AND skill_id = (SELECT id FROM skills WHERE name = '{skill}')"
    ));
    let john = dir.employee("JohnDoe").await.unwrap().unwrap();
    assert!(
        john.skills.iter().all(|s| s.skill != skill),
        "{skill} still listed"
    );

    // The audit trail's writes to the same file do not count as changes,
    // and the answers stay what the database says.
    conn.execute_batch("CREATE TABLE audit_probe (x INTEGER); INSERT INTO audit_probe VALUES (1);")
        .unwrap();
    assert_eq!(dir.employee("JohnDoe").await.unwrap().unwrap(), john);
}

#[tokio::test]
async fn every_cached_answer_follows_changes() {
    let db = TempDb::new("read-cache");
    let dir = Directory::open(&db.url(), clock(today())).await.unwrap();
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    common::answers_follow_changes(&dir, |sql| {
        assert!(conn.execute(sql, []).unwrap() >= 1, "{sql}");
    })
    .await;
}

#[tokio::test]
async fn with_the_cache_off_answers_are_read_each_time() {
    let db = TempDb::new("read-cache-off");
    let options = DirectoryOptions {
        cache_bytes: 0,
        ..DirectoryOptions::default()
    };
    let dir = Directory::open_with(&db.url(), clock(today()), options)
        .await
        .unwrap();
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    common::answers_follow_changes(&dir, |sql| {
        assert!(conn.execute(sql, []).unwrap() >= 1, "{sql}");
    })
    .await;
}

#[tokio::test]
async fn reopening_a_file_neither_reseeds_nor_remigrates() {
    let db = TempDb::new("reopen");
    let dir = Directory::open(&db.url(), clock(today())).await.unwrap();
    let before = dir.ping().await.unwrap();
    drop(dir);

    // Change the data behind the directory's back.
    {
        let conn = rusqlite::Connection::open(&db.path).unwrap();
        conn.execute(
            "UPDATE employees SET phone = '+1-555-9999' WHERE id = 'JohnDoe'",
            [],
        )
        .unwrap();
        conn.execute(
            "UPDATE schema_migrations SET applied_at = 'marker' WHERE version = 1",
            [],
        )
        .unwrap();
    }

    let dir = Directory::open(&db.url(), clock(today())).await.unwrap();
    assert_eq!(dir.ping().await.unwrap(), before);
    let john = dir.employee("JohnDoe").await.unwrap().unwrap();
    assert_eq!(john.phone, "+1-555-9999", "database was re-seeded");
    drop(dir);

    let conn = rusqlite::Connection::open(&db.path).unwrap();
    let (count, marker): (i64, String) = conn
        .query_row(
            "SELECT COUNT(*), (SELECT applied_at FROM schema_migrations WHERE version = 1)
             FROM schema_migrations",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (count, marker.as_str()),
        (i64::from(Directory::expected_schema_version()), "marker"),
        "migrations ran again"
    );
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode.to_lowercase(), "wal");
}

#[tokio::test]
async fn relative_paths_and_missing_directories_work() {
    let db = TempDb::new("nested");
    // TempDb's parent directory does not exist yet: open must create it.
    assert!(!db.path.parent().unwrap().exists());
    let dir = Directory::open(&db.url(), clock(today())).await.unwrap();
    assert!(dir.employee("JohnDoe").await.unwrap().is_some());
    assert!(db.path.exists());
}

#[tokio::test]
async fn unsupported_urls_are_rejected_clearly() {
    for url in ["mysql://x", "hr.db", "", "sqlite://"] {
        let err = Directory::open(url, clock(today())).await.unwrap_err();
        assert!(
            matches!(err, DirectoryError::UnsupportedUrl { .. }),
            "{url}: {err}"
        );
        let message = err.to_string();
        assert!(message.contains("sqlite://PATH"), "{message}");
        assert!(message.contains("sqlite::memory:"), "{message}");
        assert!(message.contains("postgres://"), "{message}");
    }
}

#[tokio::test]
async fn unopenable_file_is_unavailable() {
    let db = TempDb::new("blocked");
    // A directory where the database file should be.
    std::fs::create_dir_all(&db.path).unwrap();
    let err = Directory::open(&db.url(), clock(today()))
        .await
        .unwrap_err();
    assert!(matches!(err, DirectoryError::Unavailable { .. }), "{err}");
    assert!(err.to_string().contains("blocked.db"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_queries_share_the_pool() {
    let db = TempDb::new("concurrent");
    for dir in [
        Directory::open(&db.url(), clock(today())).await.unwrap(),
        memory().await,
    ] {
        let mut tasks = Vec::new();
        for i in 0..64 {
            let dir = dir.clone();
            tasks.push(tokio::spawn(async move {
                match i % 4 {
                    0 => dir.employee("JohnDoe").await.map(|e| e.is_some()),
                    1 => dir.team_members("backend").await.map(|t| t.is_some()),
                    2 => dir.report(ReportType::Headcount).await.map(|_| true),
                    _ => dir.search_by_skill("Go").await.map(|s| s.total > 0),
                }
            }));
        }
        for task in tasks {
            assert!(task.await.unwrap().unwrap());
        }
    }
}

on_both_backends!(
    seed_is_deterministic_in_memory,
    article_examples_exist,
    lookups_are_case_insensitive_and_accept_names,
    unknown_ids_are_none_not_errors,
    every_returned_id_works_in_other_lookups,
    tenure_uses_the_clock,
    former_employees_tenure_stops_at_their_last_day,
    leave_balances_add_up,
    compensation_bands_contain_actual_salaries,
    skill_search_orders_and_caps,
    suggestions_find_similar_names,
    headcount_report_adds_up,
    turnover_report_is_meaningful,
    compensation_report_is_consistent,
);
