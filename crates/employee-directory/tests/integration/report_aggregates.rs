//! The reports read aggregates kept by triggers (migration 5): after every
//! kind of change to employees (insert, update of each counted column,
//! delete, a future start, a termination) the reports still equal plain
//! SQL over the employees table, and the aggregate tables (the reports'
//! the roster counts, the bands' salaries and the skill search's holder
//! counts) equal a rebuild from scratch —
//! on SQLite and PostgreSQL.

use crate::common::{Kind, TempDb, clock, pg, today};

use employee_directory::exchange::{self, Format, ImportOptions, Mode};
use employee_directory::{Directory, Report, ReportType};

/// A database the test changes behind the directory's back.
enum Db {
    Sqlite(TempDb),
    Postgres(String),
}

impl Db {
    fn url(&self) -> String {
        match self {
            Db::Sqlite(file) => file.url(),
            Db::Postgres(url) => url.clone(),
        }
    }

    /// Runs `sql`; rows as `a|b|c` lines (psql's unaligned format).
    fn query(&self, sql: &str) -> String {
        match self {
            Db::Postgres(url) => pg::psql(url, sql),
            Db::Sqlite(file) => {
                let conn = rusqlite::Connection::open(&file.path).unwrap();
                conn.pragma_update(None, "foreign_keys", true).unwrap();
                let mut stmt = conn.prepare(sql).unwrap();
                let columns = stmt.column_count();
                let mut rows = stmt.query([]).unwrap();
                let mut out = Vec::new();
                while let Some(row) = rows.next().unwrap() {
                    let cells: Vec<String> = (0..columns)
                        .map(|i| match row.get_ref(i).unwrap() {
                            rusqlite::types::ValueRef::Null => String::new(),
                            rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                            rusqlite::types::ValueRef::Real(x) => x.to_string(),
                            rusqlite::types::ValueRef::Text(t) => {
                                String::from_utf8_lossy(t).into_owned()
                            }
                            rusqlite::types::ValueRef::Blob(_) => "<blob>".to_string(),
                        })
                        .collect();
                    out.push(cells.join("|"));
                }
                out.join("\n")
            }
        }
    }

    /// Runs a statement that returns no rows.
    fn execute(&self, sql: &str) {
        match self {
            Db::Postgres(url) => {
                pg::psql(url, sql);
            }
            Db::Sqlite(file) => {
                let conn = rusqlite::Connection::open(&file.path).unwrap();
                conn.pragma_update(None, "foreign_keys", true).unwrap();
                conn.execute_batch(sql).unwrap();
            }
        }
    }

    fn number(&self, sql: &str) -> i64 {
        self.query(sql).parse().unwrap_or(0)
    }
}

/// Who is employed on the test's date (a person counts on their last day).
fn employed() -> String {
    let d = today();
    format!("start_date <= '{d}' AND (termination_date IS NULL OR termination_date >= '{d}')")
}

/// Every report figure that is a count, sum, minimum or maximum equals
/// plain SQL over employees.
async fn assert_reports_match(dir: &Directory, db: &Db, after: &str) {
    let employed = employed();
    let Report::Headcount(h) = dir.report(ReportType::Headcount).await.unwrap() else {
        panic!("headcount");
    };
    let total = db.number(&format!("SELECT COUNT(*) FROM employees WHERE {employed}"));
    assert_eq!(
        i64::from(h.total_active),
        total,
        "headcount total after {after}"
    );
    let mut reported: Vec<String> = h
        .by_department
        .iter()
        .filter(|b| b.headcount > 0)
        .map(|b| format!("{}|{}", b.key, b.headcount))
        .collect();
    reported.sort();
    let plain = db.query(&format!(
        "SELECT department_id, COUNT(*) FROM employees WHERE {employed} \
         GROUP BY department_id ORDER BY department_id"
    ));
    assert_eq!(
        reported.join("\n"),
        plain,
        "headcount by department after {after}"
    );
    let locations = db.number(&format!(
        "SELECT COUNT(DISTINCT location_id) FROM employees WHERE {employed}"
    ));
    assert_eq!(
        h.by_location.len() as i64,
        locations,
        "locations after {after}"
    );

    let Report::Turnover(t) = dir.report(ReportType::Turnover).await.unwrap() else {
        panic!("turnover");
    };
    let (start, end) = (t.period_start, t.as_of);
    let in_period = |column: &str| format!("{column} > '{start}' AND {column} <= '{end}'");
    let at = |d| {
        format!(
            "SELECT COUNT(*) FROM employees \
             WHERE start_date <= '{d}' AND (termination_date IS NULL OR termination_date >= '{d}')"
        )
    };
    let o = &t.overall;
    assert_eq!(
        [
            i64::from(o.headcount_start),
            i64::from(o.headcount_end),
            i64::from(o.terminations),
            i64::from(o.voluntary),
            i64::from(o.hires),
        ],
        [
            db.number(&at(start)),
            db.number(&at(end)),
            db.number(&format!(
                "SELECT COUNT(*) FROM employees WHERE {}",
                in_period("termination_date")
            )),
            db.number(&format!(
                "SELECT COUNT(*) FROM employees WHERE termination_reason = 'voluntary' AND {}",
                in_period("termination_date")
            )),
            db.number(&format!(
                "SELECT COUNT(*) FROM employees WHERE {}",
                in_period("start_date")
            )),
        ],
        "turnover after {after}"
    );

    let Report::Compensation(c) = dir.report(ReportType::Compensation).await.unwrap() else {
        panic!("compensation");
    };
    let plain = db.query(&format!(
        "SELECT department_id, COUNT(*), MIN(salary), MAX(salary), SUM(salary) FROM employees \
         WHERE {employed} GROUP BY department_id \
         UNION ALL SELECT 'all', COUNT(*), MIN(salary), MAX(salary), SUM(salary) FROM employees \
         WHERE {employed} ORDER BY 1"
    ));
    let mut reported: Vec<String> = c
        .by_department
        .iter()
        .chain([&c.overall])
        .map(|r| {
            format!(
                "{}|{}|{}|{}|{}",
                r.key, r.headcount, r.min_salary, r.max_salary, r.average_salary
            )
        })
        .collect();
    reported.sort();
    let plain: Vec<String> = plain
        .lines()
        .map(|line| {
            let (head, sum) = line.rsplit_once('|').unwrap();
            let n: i64 = head.split('|').nth(1).unwrap().parse().unwrap();
            let sum: i64 = sum.parse().unwrap();
            // The mean rounded half up, as ROUND(AVG(salary)).
            format!("{head}|{}", (2 * sum + n) / (2 * n))
        })
        .collect();
    assert_eq!(
        reported.join("\n"),
        plain.join("\n"),
        "compensation after {after}"
    );
}

/// The aggregate tables equal what the migration's fill computes from scratch.
fn assert_aggregates_rebuild(db: &Db, after: &str) {
    let pairs = [
        (
            "SELECT department_id, location_id, employment_type, office_type, n \
             FROM report_headcount WHERE n <> 0 ORDER BY 1, 2, 3, 4",
            "SELECT department_id, location_id, employment_type, office_type, COUNT(*) \
             FROM employees WHERE termination_date IS NULL GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
        ),
        (
            "SELECT department_id, level, salary, n FROM report_salaries WHERE n <> 0 \
             ORDER BY 1, 2, 3",
            "SELECT department_id, level, salary, COUNT(*) FROM employees \
             WHERE termination_date IS NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        ),
        (
            "SELECT department_id, role_id, level, n, salary_sum FROM report_bands \
             WHERE n <> 0 ORDER BY 1, 2, 3",
            "SELECT department_id, role_id, level, COUNT(*), SUM(salary) FROM employees \
             WHERE termination_date IS NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        ),
        (
            "SELECT day, department_id, hires, terminations FROM report_days \
             WHERE hires <> 0 OR terminations <> 0 ORDER BY 1, 2",
            "SELECT day, department_id, SUM(h), SUM(t) FROM ( \
                 SELECT start_date AS day, department_id, 1 AS h, 0 AS t FROM employees \
                 UNION ALL SELECT termination_date, department_id, 0, 1 FROM employees \
                 WHERE termination_date IS NOT NULL) AS events GROUP BY 1, 2 ORDER BY 1, 2",
        ),
        (
            "SELECT department_id, team_id, n FROM roster_teams WHERE n <> 0 ORDER BY 1, 2",
            "SELECT department_id, COALESCE(team_id, ''), COUNT(*) FROM employees \
             WHERE status = 'active' GROUP BY 1, 2 ORDER BY 1, 2",
        ),
        (
            "SELECT department_id, level, location_id, n FROM roster_places WHERE n <> 0 \
             ORDER BY 1, 2, 3",
            "SELECT department_id, level, location_id, COUNT(*) FROM employees \
             WHERE status = 'active' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        ),
        (
            "SELECT role_id, level, salary, n FROM band_salaries WHERE n <> 0 ORDER BY 1, 2, 3",
            "SELECT role_id, level, salary, COUNT(*) FROM employees \
             WHERE status = 'active' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        ),
        (
            "SELECT skill_id, n FROM skill_counts WHERE n <> 0 ORDER BY 1",
            "SELECT es.skill_id, COUNT(*) FROM employee_skills es \
             JOIN employees e ON e.id = es.employee_id WHERE e.status = 'active' \
             GROUP BY 1 ORDER BY 1",
        ),
    ];
    for (kept, rebuilt) in pairs {
        assert_eq!(db.query(kept), db.query(rebuilt), "{kept} after {after}");
    }
}

async fn reports_follow_every_change(kind: Kind) {
    let db = match kind {
        Kind::Sqlite => Db::Sqlite(TempDb::new("aggregates")),
        Kind::Postgres => Db::Postgres(
            tokio::task::spawn_blocking(pg::seeded_database)
                .await
                .unwrap(),
        ),
    };
    let dir = Directory::open(&db.url(), clock(today())).await.unwrap();
    assert_reports_match(&dir, &db, "seeding").await;
    assert_aggregates_rebuild(&db, "seeding");

    let d = today();
    // Copies of JohnDoe with another id, start and end (literals that both
    // dialects take for a date column).
    let copy = |suffix: &str, start: &str, status: &str, end: &str, reason: &str| {
        format!(
            "INSERT INTO employees (id, first_name, last_name, email, phone, role_id, level, \
                 department_id, team_id, manager_id, location_id, employment_type, office_type, \
                 start_date, status, termination_date, termination_reason, salary) \
             SELECT id || '{suffix}', first_name, last_name, '{suffix}' || email, phone, role_id, \
                 level, department_id, team_id, manager_id, location_id, employment_type, \
                 office_type, '{start}', '{status}', {end}, {reason}, salary + 1 \
             FROM employees WHERE id = 'JohnDoe'"
        )
    };
    let changes = [
        (
            "a hire starting next month",
            copy("Future", "2026-12-07", "active", "NULL", "NULL"),
        ),
        (
            "a hire who started and left this year",
            copy(
                "Brief",
                "2026-03-02",
                "terminated",
                "'2026-06-30'",
                "'involuntary'",
            ),
        ),
        (
            "skills for the new hire and the one who left",
            "INSERT INTO employee_skills (employee_id, skill_id, proficiency) \
             SELECT c.id, es.skill_id, es.proficiency FROM employee_skills es, employees c \
             WHERE es.employee_id = 'JohnDoe' AND c.id IN ('JohnDoeFuture', 'JohnDoeBrief')"
                .to_string(),
        ),
        (
            "a skill handed to someone else",
            "UPDATE employee_skills SET employee_id = 'JohnDoeBrief' \
             WHERE employee_id = 'AliceJohnson' AND skill_id = \
                 (SELECT MIN(skill_id) FROM employee_skills WHERE employee_id = 'AliceJohnson' \
                  AND skill_id NOT IN (SELECT skill_id FROM employee_skills \
                                       WHERE employee_id = 'JohnDoeBrief'))"
                .to_string(),
        ),
        (
            "a move to another department, location and salary",
            "UPDATE employees SET department_id = 'sales', location_id = 3, salary = 123457, \
                 office_type = 'remote' WHERE id = 'JohnDoe'"
                .to_string(),
        ),
        (
            "a termination today",
            format!(
                "UPDATE employees SET status = 'terminated', termination_reason = 'voluntary', \
                     termination_date = '{d}' WHERE id = 'AliceJohnson'"
            ),
        ),
        (
            "a termination in the future",
            "UPDATE employees SET status = 'terminated', termination_reason = 'involuntary', \
                 termination_date = '2027-01-15' WHERE id = 'MargaretChen'"
                .to_string(),
        ),
        (
            "a start date moved past the report date (and past a termination)",
            "UPDATE employees SET start_date = '2027-02-01' WHERE id = 'JohnDoeBrief' \
                 OR id = (SELECT MIN(id) FROM employees WHERE termination_date IS NULL \
                          AND department_id = 'legal')"
                .to_string(),
        ),
        (
            "a change of level",
            "UPDATE employees SET level = 'staff' WHERE id = 'JohnDoe'".to_string(),
        ),
        (
            "a deletion",
            "DELETE FROM employees WHERE id IN ('JohnDoeFuture', 'JohnDoeBrief')".to_string(),
        ),
    ];
    for (what, sql) in changes {
        db.execute(&sql);
        // The change came on another connection: on PostgreSQL the cache
        // follows it through an announcement that may lag the commit.
        dir.sync().await.unwrap();
        assert_reports_match(&dir, &db, what).await;
        assert_aggregates_rebuild(&db, what);
    }
}

/// A company generated with `demo_employees` has exactly that many people.
async fn a_generated_company_is_seeded(kind: Kind) {
    let db = match kind {
        Kind::Sqlite => Db::Sqlite(TempDb::new("generated")),
        Kind::Postgres => Db::Postgres(
            tokio::task::spawn_blocking(pg::fresh_database)
                .await
                .unwrap(),
        ),
    };
    let options = employee_directory::DirectoryOptions {
        demo_employees: Some(3_000),
        ..Default::default()
    };
    let dir = Directory::open_with(&db.url(), clock(today()), options)
        .await
        .unwrap();
    assert_eq!(db.number("SELECT COUNT(*) FROM employees"), 3_000);
    assert_eq!(
        db.query("SELECT value FROM directory_meta WHERE key = 'seed_employees'"),
        "3000"
    );
    assert_reports_match(&dir, &db, "seeding 3,000").await;
    assert_aggregates_rebuild(&db, "seeding 3,000");
    let john = dir.employee("johndoe").await.unwrap().unwrap();
    assert_eq!(john.manager_id.as_deref(), Some("AliceJohnson"));
    if let Db::Postgres(url) = &db {
        pg::drop_database(url);
    }
}

/// Imports large enough to rebuild the aggregates once (SQLite pauses its
/// row triggers, PostgreSQL's follow each statement) leave them equal to a
/// rebuild, in merge and replace mode, and the triggers follow the next
/// change made after them.
async fn an_import_keeps_every_aggregate(kind: Kind) {
    let source = Db::Sqlite(TempDb::new("import-source"));
    let db = match kind {
        Kind::Sqlite => Db::Sqlite(TempDb::new("import-target")),
        Kind::Postgres => Db::Postgres(
            tokio::task::spawn_blocking(pg::fresh_database)
                .await
                .unwrap(),
        ),
    };
    let files = TempDb::new("import-files");
    let import = |dir: std::path::PathBuf, mode: Mode| {
        let url = db.url();
        async move {
            let options = ImportOptions {
                dir,
                format: Format::Csv,
                mode,
                dry_run: false,
                max_row_bytes: 1 << 16,
                actor: "test".into(),
                delimiter: None,
                date_format: None,
                max_workbook_bytes: exchange::DEFAULT_MAX_WORKBOOK_BYTES,
            };
            exchange::import(&url, &options).await.unwrap()
        }
    };

    let first = files.path.with_file_name("first");
    exchange::export(&source.url(), &first, Format::Csv, None)
        .await
        .unwrap();
    import(first, Mode::Merge).await;
    let dir = Directory::open(&db.url(), clock(today())).await.unwrap();
    assert_reports_match(&dir, &db, "a merge into an empty directory").await;
    assert_aggregates_rebuild(&db, "a merge into an empty directory");

    // The source changes (raises, moves, terminations, three people gone
    // with their rows) and is imported again over the copy, replacing it.
    source.execute(&format!(
        "UPDATE employees SET salary = salary + 1000, level = 'staff' \
             WHERE department_id = 'engineering' AND level = 'senior'; \
         UPDATE employees SET department_id = 'sales', team_id = NULL \
             WHERE id IN (SELECT id FROM employees WHERE department_id = 'legal' LIMIT 5); \
         UPDATE employees SET status = 'terminated', termination_date = '{}', \
             termination_reason = 'voluntary' \
             WHERE id IN (SELECT id FROM employees WHERE status = 'active' \
                          AND department_id = 'marketing' LIMIT 7); \
         DELETE FROM employees WHERE id IN (SELECT e.id FROM employees e \
             WHERE e.status = 'terminated' \
               AND NOT EXISTS (SELECT 1 FROM employees m WHERE m.manager_id = e.id) \
               AND NOT EXISTS (SELECT 1 FROM departments d WHERE d.head_id = e.id) \
               AND NOT EXISTS (SELECT 1 FROM teams t WHERE t.manager_id = e.id) \
             ORDER BY e.id LIMIT 3)",
        today()
    ));
    let second = files.path.with_file_name("second");
    exchange::export(&source.url(), &second, Format::Csv, None)
        .await
        .unwrap();
    let report = import(second, Mode::Replace).await;
    let employees = report.counts.iter().find(|c| c.entity == "employees");
    assert!(
        employees.is_some_and(|c| c.removed == 3 && c.updated > 20),
        "{report:?}"
    );
    dir.sync().await.unwrap();
    assert_reports_match(&dir, &db, "a replace").await;
    assert_aggregates_rebuild(&db, "a replace");

    db.execute(
        "UPDATE employees SET status = 'terminated', termination_reason = 'involuntary', \
             termination_date = '2027-01-15' WHERE id = 'JohnDoe'",
    );
    dir.sync().await.unwrap();
    assert_reports_match(&dir, &db, "a change after the imports").await;
    assert_aggregates_rebuild(&db, "a change after the imports");
    if let Db::Postgres(url) = &db {
        pg::drop_database(url);
    }
}

on_both_backends!(
    reports_follow_every_change,
    a_generated_company_is_seeded,
    an_import_keeps_every_aggregate
);
