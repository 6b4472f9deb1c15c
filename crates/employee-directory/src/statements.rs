//! SQL text the two backends share, written once.
//!
//! Only what both dialects accept unchanged is here; what differs (casts,
//! `lower()` matching, the id subqueries of `crate::postgres::queries`,
//! SQLite's `IS` and `NOCASE`) stays in each backend's file.
//!
//! Placeholders are `$N`: PostgreSQL's own form, and one SQLite accepts as a
//! named parameter numbered by its first appearance, so `$N` binds
//! positionally on SQLite only when `$1`, `$2`, ... first appear in that
//! order (a test checks every statement here).
//!
//! A *head* ends in `=` and takes the key after it: SQLite's `$1`, or
//! PostgreSQL's id subquery (one round trip from a name or an email).
//! Heads are macros, so a call site joins head and key with `concat!` at
//! compile time and a request builds no statement text.

/// The columns of a skill-search page's rows (`es` the employee's skill).
pub(crate) const SKILL_MATCH_COLUMNS: &str =
    "SELECT e.id, e.first_name || ' ' || e.last_name, r.title, r.track,
            e.level, d.name, d.id, t.name, t.id, es.proficiency
     FROM employee_skills es
     JOIN employees e ON e.id = es.employee_id
     JOIN roles r ON r.id = e.role_id
     JOIN departments d ON d.id = e.department_id
     LEFT JOIN teams t ON t.id = e.team_id";

/// The columns of a department roster page's rows.
pub(crate) const ROSTER_COLUMNS: &str =
    "SELECT e.id, e.first_name || ' ' || e.last_name, r.title, r.track, e.level,
            t.name, e.team_id, e.start_date, l.city, l.region, l.country
     FROM employees e
     JOIN roles r ON r.id = e.role_id
     JOIN locations l ON l.id = e.location_id
     LEFT JOIN teams t ON t.id = e.team_id";

/// How many teams department `$1` has.
pub(crate) const DEPARTMENT_TEAM_COUNT: &str =
    "SELECT COUNT(*) FROM teams WHERE department_id = $1";

/// The `$2` largest teams of department `$1` with their active headcounts
/// (from the trigger-kept `roster_teams`).
pub(crate) const LARGEST_TEAMS: &str = "SELECT t.name, c.n FROM
         (SELECT team_id, n FROM roster_teams WHERE department_id = $1 AND n > 0
          ORDER BY n DESC, team_id LIMIT $2) c
     LEFT JOIN teams t ON t.id = c.team_id
     ORDER BY c.n DESC, c.team_id";

/// Department `$1`'s active headcount per level and place.
pub(crate) const ROSTER_PLACES: &str =
    "SELECT c.level, l.city, l.region, l.country, c.n FROM roster_places c
     JOIN locations l ON l.id = c.location_id
     WHERE c.department_id = $1 AND c.n > 0";

/// Every department's id and name.
pub(crate) const DEPARTMENT_NAMES: &str = "SELECT id, name FROM departments";

/// The currency of the compensation bands (USD when there are none).
pub(crate) const BAND_CURRENCY: &str =
    "SELECT COALESCE(MIN(currency), 'USD') FROM compensation_bands";

/// Records that the demo company was seeded with `$1` people.
pub(crate) const SEED_EMPLOYEES: &str =
    "INSERT INTO directory_meta (key, value) VALUES ('seed_employees', $1)";

/// Head: an employee's details, by id.
macro_rules! employee_details_head {
    () => {
        "SELECT e.id, e.first_name, e.last_name, r.title, r.track, e.level,
            d.name, d.id, t.name, t.id,
            m.first_name || ' ' || m.last_name, m.id,
            (SELECT COUNT(*) FROM employees x
              WHERE x.manager_id = e.id AND x.status = 'active'),
            l.city, l.region, l.country,
            e.email, e.phone, e.employment_type, e.office_type,
            e.start_date, e.status, e.termination_date
     FROM employees e
     JOIN roles r ON r.id = e.role_id
     JOIN departments d ON d.id = e.department_id
     JOIN locations l ON l.id = e.location_id
     LEFT JOIN teams t ON t.id = e.team_id
     LEFT JOIN employees m ON m.id = e.manager_id
     WHERE e.id ="
    };
}
pub(crate) use employee_details_head;

/// Head: an employee's skills, by employee id (each dialect orders names
/// its own way after it).
macro_rules! employee_skills_head {
    () => {
        "SELECT s.name, s.category, es.proficiency
     FROM employee_skills es JOIN skills s ON s.id = es.skill_id
     WHERE es.employee_id ="
    };
}
pub(crate) use employee_skills_head;

/// Head: an employee's history, by employee id; [`employment_history_order!`]
/// follows the key.
macro_rules! employment_history_head {
    () => {
        "SELECT h.company, h.title, h.level, d.name, h.event, h.start_date, h.end_date
     FROM employment_history h LEFT JOIN departments d ON d.id = h.department_id
     WHERE h.employee_id ="
    };
}
pub(crate) use employment_history_head;

/// The order of [`employment_history_head!`]'s rows: latest first.
macro_rules! employment_history_order {
    () => {
        "ORDER BY h.start_date DESC, h.id DESC"
    };
}
pub(crate) use employment_history_order;

/// Head: an employee's name and tenure dates, by id.
macro_rules! tenure_head {
    () => {
        "SELECT id, first_name || ' ' || last_name, status, start_date, termination_date
     FROM employees WHERE id ="
    };
}
pub(crate) use tenure_head;

/// Head: a department and its head's name, by department id.
macro_rules! department_head {
    () => {
        "SELECT d.id, d.name, d.description, h.first_name || ' ' || h.last_name, h.id
     FROM departments d LEFT JOIN employees h ON h.id = d.head_id
     WHERE d.id ="
    };
}
pub(crate) use department_head;

/// Head: a team, its department and its manager's name, by team id.
macro_rules! team_summary_head {
    () => {
        "SELECT t.id, t.name, t.description, d.name, d.id,
            m.first_name || ' ' || m.last_name, m.id
     FROM teams t
     JOIN departments d ON d.id = t.department_id
     LEFT JOIN employees m ON m.id = t.manager_id
     WHERE t.id ="
    };
}
pub(crate) use team_summary_head;

/// Head: an employee's leave balances, by employee id (the leave type and
/// year placeholders follow, numbered per dialect).
macro_rules! leave_balance_head {
    () => {
        "SELECT e.id, e.first_name || ' ' || e.last_name, b.year,
            b.entitled_days, b.used_days, b.pending_days
     FROM leave_balances b JOIN employees e ON e.id = b.employee_id
     WHERE b.employee_id ="
    };
}
pub(crate) use leave_balance_head;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every whole statement here, with placeholders.
    const STATEMENTS: &[&str] = &[
        SKILL_MATCH_COLUMNS,
        ROSTER_COLUMNS,
        DEPARTMENT_TEAM_COUNT,
        LARGEST_TEAMS,
        ROSTER_PLACES,
        DEPARTMENT_NAMES,
        BAND_CURRENCY,
        SEED_EMPLOYEES,
    ];

    /// Every head, which takes one key after its `=`.
    const HEADS: &[&str] = &[
        employee_details_head!(),
        employee_skills_head!(),
        employment_history_head!(),
        tenure_head!(),
        department_head!(),
        team_summary_head!(),
        leave_balance_head!(),
    ];

    /// The `$N` numbers in order of first appearance.
    fn first_appearances(sql: &str) -> Vec<u32> {
        let mut seen = Vec::new();
        let mut rest = sql;
        while let Some(at) = rest.find('$') {
            rest = &rest[at + 1..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let n: u32 = digits.parse().expect("a $ starts a placeholder");
            if !seen.contains(&n) {
                seen.push(n);
            }
        }
        seen
    }

    #[test]
    fn placeholders_first_appear_in_order() {
        for sql in STATEMENTS {
            let seen = first_appearances(sql);
            let want: Vec<u32> = (1..=seen.len() as u32).collect();
            assert_eq!(seen, want, "placeholders out of order in {sql}");
            assert!(!sql.contains('?'), "a ? placeholder in {sql}");
        }
        for head in HEADS {
            assert!(
                first_appearances(head).is_empty(),
                "a placeholder in {head}"
            );
            assert!(head.ends_with('='), "a head ends before its key: {head}");
        }
        assert!(first_appearances(employment_history_order!()).is_empty());
    }

    #[test]
    fn sqlite_prepares_every_statement() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        crate::sqlite::migrate::migrate(&mut conn).unwrap();
        for sql in STATEMENTS {
            conn.prepare(sql).unwrap_or_else(|e| panic!("{e}: {sql}"));
        }
        for head in HEADS {
            let sql = format!("{head} $1");
            conn.prepare(&sql).unwrap_or_else(|e| panic!("{e}: {sql}"));
        }
        let history = concat!(
            employment_history_head!(),
            " $1 ",
            employment_history_order!()
        );
        conn.prepare(history).unwrap();
    }
}
