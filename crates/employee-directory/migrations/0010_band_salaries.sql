-- Active people per role, level and salary: get-compensation-info's
-- actual-salary statistics (count, minimum, median, maximum, mean) are
-- read from a row per distinct salary of the band (a hundred or so at any
-- company size) instead of every person in it. Kept by triggers in the
-- transaction of every change to employees, as the report aggregates are
-- (0005).
CREATE TABLE band_salaries (
    role_id  INTEGER NOT NULL,
    level    TEXT NOT NULL,
    salary   INTEGER NOT NULL,
    n        INTEGER NOT NULL,
    PRIMARY KEY (role_id, level, salary)
) WITHOUT ROWID;

INSERT INTO band_salaries (role_id, level, salary, n)
    SELECT role_id, level, salary, COUNT(*) FROM employees
    WHERE status = 'active' GROUP BY 1, 2, 3;

CREATE TRIGGER employees_band_insert AFTER INSERT ON employees
WHEN NEW.status = 'active'
BEGIN
    INSERT INTO band_salaries (role_id, level, salary, n)
        VALUES (NEW.role_id, NEW.level, NEW.salary, 1)
        ON CONFLICT (role_id, level, salary) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER employees_band_delete AFTER DELETE ON employees
WHEN OLD.status = 'active'
BEGIN
    UPDATE band_salaries SET n = n - 1
        WHERE role_id = OLD.role_id AND level = OLD.level AND salary = OLD.salary;
END;

CREATE TRIGGER employees_band_update AFTER UPDATE OF role_id, level, salary, status ON employees
BEGIN
    UPDATE band_salaries SET n = n - 1
        WHERE OLD.status = 'active' AND role_id = OLD.role_id AND level = OLD.level
          AND salary = OLD.salary;
    INSERT INTO band_salaries (role_id, level, salary, n)
        SELECT NEW.role_id, NEW.level, NEW.salary, 1 WHERE NEW.status = 'active'
        ON CONFLICT (role_id, level, salary) DO UPDATE SET n = n + 1;
END;
