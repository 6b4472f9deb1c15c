-- Aggregates the reports read instead of scanning every employee
-- (generate-employee-report in milliseconds at any company size), kept
-- current by triggers in the transaction of every change to employees,
-- the way directory_generation is (0003). The reports add the few people
-- whose dates differ from "now" (a start date after the report date, a
-- termination date on or after it) from employees_dates; see
-- src/sqlite/reports.rs.

-- Employees without a termination date, per combination of the headcount
-- report's groups.
CREATE TABLE report_headcount (
    department_id   TEXT NOT NULL,
    location_id     INTEGER NOT NULL,
    employment_type TEXT NOT NULL,
    office_type     TEXT NOT NULL,
    n               INTEGER NOT NULL,
    PRIMARY KEY (department_id, location_id, employment_type, office_type)
) WITHOUT ROWID;

-- Employees without a termination date per department, level and salary:
-- medians, minimum and maximum of the compensation report.
CREATE TABLE report_salaries (
    department_id TEXT NOT NULL,
    level         TEXT NOT NULL,
    salary        INTEGER NOT NULL,
    n             INTEGER NOT NULL,
    PRIMARY KEY (department_id, level, salary)
) WITHOUT ROWID;

-- The same people per department and salary band: their count and salary
-- sum give averages, compa-ratios and band positions against the band's
-- current bounds.
CREATE TABLE report_bands (
    department_id TEXT NOT NULL,
    role_id       INTEGER NOT NULL,
    level         TEXT NOT NULL,
    n             INTEGER NOT NULL,
    salary_sum    INTEGER NOT NULL,
    PRIMARY KEY (department_id, role_id, level)
) WITHOUT ROWID;

-- Every employee's first and last day, per day and department: hires and
-- terminations of the turnover report, and how headcount moved between
-- the period's start and end. starts and ends count only people whose
-- termination date (if any) is not before their start date (the others
-- were never employed on any day).
CREATE TABLE report_days (
    day           TEXT NOT NULL,
    department_id TEXT NOT NULL,
    hires         INTEGER NOT NULL,
    starts        INTEGER NOT NULL,
    terminations  INTEGER NOT NULL,
    voluntary     INTEGER NOT NULL,
    involuntary   INTEGER NOT NULL,
    ends          INTEGER NOT NULL,
    PRIMARY KEY (day, department_id)
) WITHOUT ROWID;

-- The people whose dates the reports look at one by one.
CREATE INDEX employees_dates ON employees (termination_date, start_date);

-- One person in or out of every aggregate (an update is both).
CREATE TRIGGER employees_report_insert AFTER INSERT ON employees
BEGIN
    INSERT INTO report_headcount (department_id, location_id, employment_type, office_type, n)
        SELECT NEW.department_id, NEW.location_id, NEW.employment_type, NEW.office_type, 1
        WHERE NEW.termination_date IS NULL
        ON CONFLICT (department_id, location_id, employment_type, office_type)
        DO UPDATE SET n = n + excluded.n;
    INSERT INTO report_salaries (department_id, level, salary, n)
        SELECT NEW.department_id, NEW.level, NEW.salary, 1
        WHERE NEW.termination_date IS NULL
        ON CONFLICT (department_id, level, salary) DO UPDATE SET n = n + excluded.n;
    INSERT INTO report_bands (department_id, role_id, level, n, salary_sum)
        SELECT NEW.department_id, NEW.role_id, NEW.level, 1, 1 * NEW.salary
        WHERE NEW.termination_date IS NULL
        ON CONFLICT (department_id, role_id, level)
        DO UPDATE SET n = n + excluded.n, salary_sum = salary_sum + excluded.salary_sum;
    INSERT INTO report_days
        (day, department_id, hires, starts, terminations, voluntary, involuntary, ends)
        SELECT NEW.start_date, NEW.department_id, 1, 1 * (NEW.termination_date IS NULL OR NEW.termination_date >= NEW.start_date), 0, 0, 0, 0
        WHERE true
        ON CONFLICT (day, department_id)
        DO UPDATE SET hires = hires + excluded.hires, starts = starts + excluded.starts;
    INSERT INTO report_days
        (day, department_id, hires, starts, terminations, voluntary, involuntary, ends)
        SELECT NEW.termination_date, NEW.department_id, 0, 0, 1,
               1 * (NEW.termination_reason IS 'voluntary'),
               1 * (NEW.termination_reason IS 'involuntary'), 1 * (NEW.termination_date IS NULL OR NEW.termination_date >= NEW.start_date)
        WHERE NEW.termination_date IS NOT NULL
        ON CONFLICT (day, department_id)
        DO UPDATE SET terminations = terminations + excluded.terminations,
                      voluntary = voluntary + excluded.voluntary,
                      involuntary = involuntary + excluded.involuntary,
                      ends = ends + excluded.ends;
END;

CREATE TRIGGER employees_report_delete AFTER DELETE ON employees
BEGIN
    INSERT INTO report_headcount (department_id, location_id, employment_type, office_type, n)
        SELECT OLD.department_id, OLD.location_id, OLD.employment_type, OLD.office_type, -1
        WHERE OLD.termination_date IS NULL
        ON CONFLICT (department_id, location_id, employment_type, office_type)
        DO UPDATE SET n = n + excluded.n;
    INSERT INTO report_salaries (department_id, level, salary, n)
        SELECT OLD.department_id, OLD.level, OLD.salary, -1
        WHERE OLD.termination_date IS NULL
        ON CONFLICT (department_id, level, salary) DO UPDATE SET n = n + excluded.n;
    INSERT INTO report_bands (department_id, role_id, level, n, salary_sum)
        SELECT OLD.department_id, OLD.role_id, OLD.level, -1, -1 * OLD.salary
        WHERE OLD.termination_date IS NULL
        ON CONFLICT (department_id, role_id, level)
        DO UPDATE SET n = n + excluded.n, salary_sum = salary_sum + excluded.salary_sum;
    INSERT INTO report_days
        (day, department_id, hires, starts, terminations, voluntary, involuntary, ends)
        SELECT OLD.start_date, OLD.department_id, -1, -1 * (OLD.termination_date IS NULL OR OLD.termination_date >= OLD.start_date), 0, 0, 0, 0
        WHERE true
        ON CONFLICT (day, department_id)
        DO UPDATE SET hires = hires + excluded.hires, starts = starts + excluded.starts;
    INSERT INTO report_days
        (day, department_id, hires, starts, terminations, voluntary, involuntary, ends)
        SELECT OLD.termination_date, OLD.department_id, 0, 0, -1,
               -1 * (OLD.termination_reason IS 'voluntary'),
               -1 * (OLD.termination_reason IS 'involuntary'), -1 * (OLD.termination_date IS NULL OR OLD.termination_date >= OLD.start_date)
        WHERE OLD.termination_date IS NOT NULL
        ON CONFLICT (day, department_id)
        DO UPDATE SET terminations = terminations + excluded.terminations,
                      voluntary = voluntary + excluded.voluntary,
                      involuntary = involuntary + excluded.involuntary,
                      ends = ends + excluded.ends;
END;

CREATE TRIGGER employees_report_update AFTER UPDATE OF
    department_id, location_id, employment_type, office_type, level, role_id, salary,
    start_date, termination_date, termination_reason ON employees
BEGIN
    INSERT INTO report_headcount (department_id, location_id, employment_type, office_type, n)
        SELECT OLD.department_id, OLD.location_id, OLD.employment_type, OLD.office_type, -1
        WHERE OLD.termination_date IS NULL
        ON CONFLICT (department_id, location_id, employment_type, office_type)
        DO UPDATE SET n = n + excluded.n;
    INSERT INTO report_salaries (department_id, level, salary, n)
        SELECT OLD.department_id, OLD.level, OLD.salary, -1
        WHERE OLD.termination_date IS NULL
        ON CONFLICT (department_id, level, salary) DO UPDATE SET n = n + excluded.n;
    INSERT INTO report_bands (department_id, role_id, level, n, salary_sum)
        SELECT OLD.department_id, OLD.role_id, OLD.level, -1, -1 * OLD.salary
        WHERE OLD.termination_date IS NULL
        ON CONFLICT (department_id, role_id, level)
        DO UPDATE SET n = n + excluded.n, salary_sum = salary_sum + excluded.salary_sum;
    INSERT INTO report_days
        (day, department_id, hires, starts, terminations, voluntary, involuntary, ends)
        SELECT OLD.start_date, OLD.department_id, -1, -1 * (OLD.termination_date IS NULL OR OLD.termination_date >= OLD.start_date), 0, 0, 0, 0
        WHERE true
        ON CONFLICT (day, department_id)
        DO UPDATE SET hires = hires + excluded.hires, starts = starts + excluded.starts;
    INSERT INTO report_days
        (day, department_id, hires, starts, terminations, voluntary, involuntary, ends)
        SELECT OLD.termination_date, OLD.department_id, 0, 0, -1,
               -1 * (OLD.termination_reason IS 'voluntary'),
               -1 * (OLD.termination_reason IS 'involuntary'), -1 * (OLD.termination_date IS NULL OR OLD.termination_date >= OLD.start_date)
        WHERE OLD.termination_date IS NOT NULL
        ON CONFLICT (day, department_id)
        DO UPDATE SET terminations = terminations + excluded.terminations,
                      voluntary = voluntary + excluded.voluntary,
                      involuntary = involuntary + excluded.involuntary,
                      ends = ends + excluded.ends;
    INSERT INTO report_headcount (department_id, location_id, employment_type, office_type, n)
        SELECT NEW.department_id, NEW.location_id, NEW.employment_type, NEW.office_type, 1
        WHERE NEW.termination_date IS NULL
        ON CONFLICT (department_id, location_id, employment_type, office_type)
        DO UPDATE SET n = n + excluded.n;
    INSERT INTO report_salaries (department_id, level, salary, n)
        SELECT NEW.department_id, NEW.level, NEW.salary, 1
        WHERE NEW.termination_date IS NULL
        ON CONFLICT (department_id, level, salary) DO UPDATE SET n = n + excluded.n;
    INSERT INTO report_bands (department_id, role_id, level, n, salary_sum)
        SELECT NEW.department_id, NEW.role_id, NEW.level, 1, 1 * NEW.salary
        WHERE NEW.termination_date IS NULL
        ON CONFLICT (department_id, role_id, level)
        DO UPDATE SET n = n + excluded.n, salary_sum = salary_sum + excluded.salary_sum;
    INSERT INTO report_days
        (day, department_id, hires, starts, terminations, voluntary, involuntary, ends)
        SELECT NEW.start_date, NEW.department_id, 1, 1 * (NEW.termination_date IS NULL OR NEW.termination_date >= NEW.start_date), 0, 0, 0, 0
        WHERE true
        ON CONFLICT (day, department_id)
        DO UPDATE SET hires = hires + excluded.hires, starts = starts + excluded.starts;
    INSERT INTO report_days
        (day, department_id, hires, starts, terminations, voluntary, involuntary, ends)
        SELECT NEW.termination_date, NEW.department_id, 0, 0, 1,
               1 * (NEW.termination_reason IS 'voluntary'),
               1 * (NEW.termination_reason IS 'involuntary'), 1 * (NEW.termination_date IS NULL OR NEW.termination_date >= NEW.start_date)
        WHERE NEW.termination_date IS NOT NULL
        ON CONFLICT (day, department_id)
        DO UPDATE SET terminations = terminations + excluded.terminations,
                      voluntary = voluntary + excluded.voluntary,
                      involuntary = involuntary + excluded.involuntary,
                      ends = ends + excluded.ends;
END;

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
               (termination_date IS NULL OR termination_date >= start_date) AS starts,
               0 AS terminations, 0 AS voluntary, 0 AS involuntary, 0 AS ends
        FROM employees
        UNION ALL
        SELECT termination_date, department_id, 0, 0, 1,
               termination_reason IS 'voluntary', termination_reason IS 'involuntary',
               termination_date >= start_date
        FROM employees WHERE termination_date IS NOT NULL)
    GROUP BY day, department_id;
