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

CREATE FUNCTION skill_counts_follow_holders() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- A holder deleted with their employee (ON DELETE CASCADE) is no
    -- longer found: skill_counts_follow_employee_delete counted them out.
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE skill_counts SET n = n - 1 WHERE skill_id = OLD.skill_id
            AND EXISTS (SELECT 1 FROM employees
                        WHERE id = OLD.employee_id AND status = 'active');
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO skill_counts (skill_id, n)
            SELECT NEW.skill_id, 1
            WHERE EXISTS (SELECT 1 FROM employees
                          WHERE id = NEW.employee_id AND status = 'active')
            ON CONFLICT (skill_id) DO UPDATE SET n = skill_counts.n + 1;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER employee_skills_count
    AFTER INSERT OR DELETE OR UPDATE OF employee_id, skill_id ON employee_skills
    FOR EACH ROW EXECUTE FUNCTION skill_counts_follow_holders();

CREATE FUNCTION skill_counts_follow_employee_status() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (OLD.status = 'active') <> (NEW.status = 'active') THEN
        INSERT INTO skill_counts (skill_id, n)
            SELECT skill_id, CASE WHEN NEW.status = 'active' THEN 1 ELSE -1 END
            FROM employee_skills WHERE employee_id = NEW.id
            ON CONFLICT (skill_id) DO UPDATE SET n = skill_counts.n + excluded.n;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER employees_skill_count_status AFTER UPDATE OF status ON employees
    FOR EACH ROW EXECUTE FUNCTION skill_counts_follow_employee_status();

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
