-- Skill search reads a page at a time: matched skills in rank order, and
-- within a skill the strongest first, then by employee id (lowercased, as
-- SQLite's NOCASE orders it; src/page_order.rs). This index holds that
-- order per skill.
CREATE INDEX employee_skills_page
    ON employee_skills (skill_id, proficiency DESC, lower(employee_id));

-- employee_skills_page starts with the same columns.
DROP INDEX employee_skills_skill;

-- Active holders per skill: a search's total is the sum over its matched
-- skills, whatever their size (a one-letter query matches most skills).
-- Kept by triggers in the transaction of every change, as the report
-- aggregates are (0005).
CREATE TABLE skill_counts (
    skill_id BIGINT NOT NULL PRIMARY KEY,
    n        BIGINT NOT NULL
);

INSERT INTO skill_counts (skill_id, n)
    SELECT es.skill_id, COUNT(*) FROM employee_skills es
    JOIN employees e ON e.id = es.employee_id
    WHERE e.status = 'active' GROUP BY es.skill_id;

-- Statement-level: an import's one INSERT of 500,000 holders adds one
-- row per skill, instead of updating a popular skill's row 20,000 times
-- (PostgreSQL keeps every version of a row updated inside a transaction,
-- so per-row counting would slow a large import quadratically). A holder
-- deleted with their employee (ON DELETE CASCADE) is no longer found
-- here: skill_counts_follow_employee_delete counted them out.
CREATE FUNCTION skill_counts_follow_holders() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE skill_counts c SET n = c.n - d.k
            FROM (SELECT r.skill_id, COUNT(*) AS k FROM removed r
                  JOIN employees e ON e.id = r.employee_id AND e.status = 'active'
                  GROUP BY r.skill_id) d
            WHERE c.skill_id = d.skill_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO skill_counts (skill_id, n)
            SELECT i.skill_id, COUNT(*) FROM inserted i
            JOIN employees e ON e.id = i.employee_id AND e.status = 'active'
            GROUP BY i.skill_id
            ON CONFLICT (skill_id) DO UPDATE SET n = skill_counts.n + excluded.n;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER employee_skills_count_insert AFTER INSERT ON employee_skills
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION skill_counts_follow_holders();
CREATE TRIGGER employee_skills_count_delete AFTER DELETE ON employee_skills
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION skill_counts_follow_holders();
CREATE TRIGGER employee_skills_count_update AFTER UPDATE ON employee_skills
    REFERENCING OLD TABLE AS removed NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION skill_counts_follow_holders();

-- A status change moves the employee's skills in or out, a statement at a
-- time (a mass termination updates each skill once).
CREATE FUNCTION skill_counts_follow_employee_status() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO skill_counts (skill_id, n)
        SELECT es.skill_id, SUM(CASE WHEN a.status = 'active' THEN 1 ELSE -1 END)
        FROM before_rows b
        JOIN after_rows a ON a.id = b.id
        JOIN employee_skills es ON es.employee_id = a.id
        WHERE (b.status = 'active') <> (a.status = 'active')
        GROUP BY es.skill_id
        ON CONFLICT (skill_id) DO UPDATE SET n = skill_counts.n + excluded.n;
    RETURN NULL;
END
$$;

CREATE TRIGGER employees_skill_count_status AFTER UPDATE ON employees
    REFERENCING OLD TABLE AS before_rows NEW TABLE AS after_rows
    FOR EACH STATEMENT EXECUTE FUNCTION skill_counts_follow_employee_status();

CREATE FUNCTION skill_counts_follow_employee_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status = 'active' THEN
        UPDATE skill_counts c SET n = c.n - 1
            FROM employee_skills es
            WHERE es.employee_id = OLD.id AND c.skill_id = es.skill_id;
    END IF;
    RETURN OLD;
END
$$;

CREATE TRIGGER employees_skill_count_delete BEFORE DELETE ON employees
    FOR EACH ROW EXECUTE FUNCTION skill_counts_follow_employee_delete();
