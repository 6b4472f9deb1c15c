-- Active people per role, level and salary: get-compensation-info's
-- actual-salary statistics (count, minimum, median, maximum, mean) are
-- read from a row per distinct salary of the band (a hundred or so at any
-- company size) instead of every person in it. Kept by a trigger in the
-- transaction of every change to employees, as the report aggregates are
-- (0005).
CREATE TABLE band_salaries (
    role_id  BIGINT NOT NULL,
    level    TEXT COLLATE "C" NOT NULL,
    salary   BIGINT NOT NULL,
    n        BIGINT NOT NULL,
    PRIMARY KEY (role_id, level, salary)
);

INSERT INTO band_salaries (role_id, level, salary, n)
    SELECT role_id, level, salary, COUNT(*) FROM employees
    WHERE status = 'active' GROUP BY 1, 2, 3;

CREATE FUNCTION band_salaries_follow_employees() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        IF OLD.status = 'active' THEN
            UPDATE band_salaries SET n = n - 1
                WHERE role_id = OLD.role_id AND level = OLD.level AND salary = OLD.salary;
        END IF;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        IF NEW.status = 'active' THEN
            INSERT INTO band_salaries (role_id, level, salary, n)
                VALUES (NEW.role_id, NEW.level, NEW.salary, 1)
                ON CONFLICT (role_id, level, salary) DO UPDATE SET n = band_salaries.n + 1;
        END IF;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER employees_band_salaries
    AFTER INSERT OR DELETE OR UPDATE OF role_id, level, salary, status
    ON employees FOR EACH ROW EXECUTE FUNCTION band_salaries_follow_employees();
