-- Every trigger-kept aggregate rebuilt from the rows, in one go: the end of
-- a bulk write that paused the row triggers (src/sqlite/bulk.rs). The same
-- fills as the migrations that created them (0005, 0008, 0009, 0010).
DELETE FROM report_headcount;
DELETE FROM report_salaries;
DELETE FROM report_bands;
DELETE FROM report_days;
DELETE FROM roster_teams;
DELETE FROM roster_places;
DELETE FROM band_salaries;
DELETE FROM skill_counts;

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

INSERT INTO roster_teams (department_id, team_id, n)
    SELECT department_id, COALESCE(team_id, ''), COUNT(*) FROM employees
    WHERE status = 'active' GROUP BY 1, 2;
INSERT INTO roster_places (department_id, level, location_id, n)
    SELECT department_id, level, location_id, COUNT(*) FROM employees
    WHERE status = 'active' GROUP BY 1, 2, 3;
INSERT INTO band_salaries (role_id, level, salary, n)
    SELECT role_id, level, salary, COUNT(*) FROM employees
    WHERE status = 'active' GROUP BY 1, 2, 3;
INSERT INTO skill_counts (skill_id, n)
    SELECT es.skill_id, COUNT(*) FROM employee_skills es
    JOIN employees e ON e.id = es.employee_id
    WHERE e.status = 'active' GROUP BY es.skill_id;
