-- Aggregates the reports read (as ../0005_report_aggregates.sql, with
-- statement triggers over transition tables, so a bulk insert updates each
-- aggregate once per statement) instead of scanning every employee
-- (generate-employee-report in milliseconds at any company size), kept
-- current by triggers in the transaction of every change to employees,
-- the way directory_generation is (0003). The reports add the few people
-- whose dates differ from "now" (a start date after the report date, a
-- termination date on or after it) from employees_dates; see
-- src/postgres/reports.rs.

-- Employees without a termination date, per combination of the headcount
-- report's groups.
CREATE TABLE report_headcount (
    department_id   TEXT COLLATE "C" NOT NULL,
    location_id     BIGINT NOT NULL,
    employment_type TEXT COLLATE "C" NOT NULL,
    office_type     TEXT COLLATE "C" NOT NULL,
    n               INTEGER NOT NULL,
    PRIMARY KEY (department_id, location_id, employment_type, office_type)
);

-- Employees without a termination date per department, level and salary:
-- medians, minimum and maximum of the compensation report.
CREATE TABLE report_salaries (
    department_id TEXT COLLATE "C" NOT NULL,
    level         TEXT COLLATE "C" NOT NULL,
    salary        BIGINT NOT NULL,
    n             INTEGER NOT NULL,
    PRIMARY KEY (department_id, level, salary)
);

-- The same people per department and salary band: their count and salary
-- sum give averages, compa-ratios and band positions against the band's
-- current bounds.
CREATE TABLE report_bands (
    department_id TEXT COLLATE "C" NOT NULL,
    role_id       BIGINT NOT NULL,
    level         TEXT COLLATE "C" NOT NULL,
    n             INTEGER NOT NULL,
    salary_sum    BIGINT NOT NULL,
    PRIMARY KEY (department_id, role_id, level)
);

-- Every employee's first and last day, per day and department: hires and
-- terminations of the turnover report, and how headcount moved between
-- the period's start and end. starts and ends count only people whose
-- termination date (if any) is not before their start date (the others
-- were never employed on any day).
CREATE TABLE report_days (
    day           DATE NOT NULL,
    department_id TEXT COLLATE "C" NOT NULL,
    hires         INTEGER NOT NULL,
    starts        INTEGER NOT NULL,
    terminations  INTEGER NOT NULL,
    voluntary     INTEGER NOT NULL,
    involuntary   INTEGER NOT NULL,
    ends          INTEGER NOT NULL,
    PRIMARY KEY (day, department_id)
);

-- The people whose dates the reports look at one by one.
CREATE INDEX employees_dates ON employees (termination_date, start_date);

-- One function for the three statement triggers below: the changed rows
-- (old ones counted -1, new ones +1) go into every aggregate at once.
CREATE FUNCTION report_employees_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    changes text := CASE TG_OP
        WHEN 'INSERT' THEN 'SELECT 1 AS s, * FROM new_rows'
        WHEN 'DELETE' THEN 'SELECT -1 AS s, * FROM old_rows'
        ELSE 'SELECT -1 AS s, * FROM old_rows UNION ALL SELECT 1 AS s, * FROM new_rows'
    END;
BEGIN
    EXECUTE format($q$
        INSERT INTO report_headcount AS t
            (department_id, location_id, employment_type, office_type, n)
        SELECT department_id, location_id, employment_type, office_type, SUM(s)
        FROM (%s) c WHERE termination_date IS NULL
        GROUP BY department_id, location_id, employment_type, office_type
        ON CONFLICT (department_id, location_id, employment_type, office_type)
        DO UPDATE SET n = t.n + excluded.n$q$, changes);
    EXECUTE format($q$
        INSERT INTO report_salaries AS t (department_id, level, salary, n)
        SELECT department_id, level, salary, SUM(s)
        FROM (%s) c WHERE termination_date IS NULL
        GROUP BY department_id, level, salary
        ON CONFLICT (department_id, level, salary) DO UPDATE SET n = t.n + excluded.n$q$, changes);
    EXECUTE format($q$
        INSERT INTO report_bands AS t (department_id, role_id, level, n, salary_sum)
        SELECT department_id, role_id, level, SUM(s), SUM(s * salary)
        FROM (%s) c WHERE termination_date IS NULL
        GROUP BY department_id, role_id, level
        ON CONFLICT (department_id, role_id, level)
        DO UPDATE SET n = t.n + excluded.n, salary_sum = t.salary_sum + excluded.salary_sum$q$,
        changes);
    EXECUTE format($q$
        INSERT INTO report_days AS t
            (day, department_id, hires, starts, terminations, voluntary, involuntary, ends)
        SELECT start_date, department_id, SUM(s),
               COALESCE(SUM(s) FILTER (WHERE termination_date IS NULL
                                         OR termination_date >= start_date), 0),
               0, 0, 0, 0
        FROM (%s) c
        GROUP BY start_date, department_id
        ON CONFLICT (day, department_id)
        DO UPDATE SET hires = t.hires + excluded.hires,
                      starts = t.starts + excluded.starts$q$, changes);
    EXECUTE format($q$
        INSERT INTO report_days AS t
            (day, department_id, hires, starts, terminations, voluntary, involuntary, ends)
        SELECT termination_date, department_id, 0, 0, SUM(s),
               COALESCE(SUM(s) FILTER (WHERE termination_reason = 'voluntary'), 0),
               COALESCE(SUM(s) FILTER (WHERE termination_reason = 'involuntary'), 0),
               COALESCE(SUM(s) FILTER (WHERE termination_date >= start_date), 0)
        FROM (%s) c WHERE termination_date IS NOT NULL
        GROUP BY termination_date, department_id
        ON CONFLICT (day, department_id)
        DO UPDATE SET terminations = t.terminations + excluded.terminations,
                      voluntary = t.voluntary + excluded.voluntary,
                      involuntary = t.involuntary + excluded.involuntary,
                      ends = t.ends + excluded.ends$q$, changes);
    RETURN NULL;
END
$$;

CREATE TRIGGER employees_report_insert AFTER INSERT ON employees
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION report_employees_changed();

CREATE TRIGGER employees_report_update AFTER UPDATE ON employees
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION report_employees_changed();

CREATE TRIGGER employees_report_delete AFTER DELETE ON employees
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION report_employees_changed();

CREATE FUNCTION report_employees_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE report_headcount, report_salaries, report_bands, report_days;
    RETURN NULL;
END
$$;

CREATE TRIGGER employees_report_truncate AFTER TRUNCATE ON employees
    FOR EACH STATEMENT EXECUTE FUNCTION report_employees_truncated();

-- The aggregates of the rows already there.
INSERT INTO report_headcount (department_id, location_id, employment_type, office_type, n)
    SELECT department_id, location_id, employment_type, office_type, COUNT(*)
    FROM employees WHERE termination_date IS NULL
    GROUP BY department_id, location_id, employment_type, office_type;
INSERT INTO report_salaries (department_id, level, salary, n)
    SELECT department_id, level, salary, COUNT(*)
    FROM employees WHERE termination_date IS NULL
    GROUP BY department_id, level, salary;
INSERT INTO report_bands (department_id, role_id, level, n, salary_sum)
    SELECT department_id, role_id, level, COUNT(*), SUM(salary)
    FROM employees WHERE termination_date IS NULL
    GROUP BY department_id, role_id, level;
INSERT INTO report_days
    (day, department_id, hires, starts, terminations, voluntary, involuntary, ends)
    SELECT day, department_id, SUM(hires), SUM(starts), SUM(terminations), SUM(voluntary),
           SUM(involuntary), SUM(ends)
    FROM (
        SELECT start_date AS day, department_id, 1 AS hires,
               (termination_date IS NULL OR termination_date >= start_date)::int AS starts,
               0 AS terminations, 0 AS voluntary, 0 AS involuntary, 0 AS ends
        FROM employees
        UNION ALL
        SELECT termination_date, department_id, 0, 0, 1,
               (termination_reason IS NOT DISTINCT FROM 'voluntary')::int,
               (termination_reason IS NOT DISTINCT FROM 'involuntary')::int,
               (termination_date >= start_date)::int
        FROM employees WHERE termination_date IS NOT NULL) AS events
    GROUP BY day, department_id;
