-- Skill search reads a page at a time: matched skills in rank order, and
-- within a skill the strongest first, then by employee id
-- (src/page_order.rs). This index holds that order per skill.
CREATE INDEX employee_skills_page
    ON employee_skills (skill_id, proficiency DESC, employee_id COLLATE NOCASE);

-- employee_skills_page starts with the same columns.
DROP INDEX employee_skills_skill;

-- Active holders per skill: a search's total is the sum over its matched
-- skills, whatever their size (a one-letter query matches most skills).
-- Kept by triggers in the transaction of every change, as the report
-- aggregates are (0005).
CREATE TABLE skill_counts (
    skill_id INTEGER NOT NULL PRIMARY KEY,
    n        INTEGER NOT NULL
);

INSERT INTO skill_counts (skill_id, n)
    SELECT es.skill_id, COUNT(*) FROM employee_skills es
    JOIN employees e ON e.id = es.employee_id
    WHERE e.status = 'active' GROUP BY es.skill_id;

CREATE TRIGGER employee_skills_count_insert AFTER INSERT ON employee_skills
WHEN (SELECT status FROM employees WHERE id = NEW.employee_id) = 'active'
BEGIN
    INSERT INTO skill_counts (skill_id, n) VALUES (NEW.skill_id, 1)
        ON CONFLICT (skill_id) DO UPDATE SET n = n + 1;
END;

-- A holder deleted with their employee (ON DELETE CASCADE) is no longer
-- found here: employees_skill_count_delete has counted them out.
CREATE TRIGGER employee_skills_count_delete AFTER DELETE ON employee_skills
WHEN (SELECT status FROM employees WHERE id = OLD.employee_id) = 'active'
BEGIN
    UPDATE skill_counts SET n = n - 1 WHERE skill_id = OLD.skill_id;
END;

CREATE TRIGGER employee_skills_count_update AFTER UPDATE OF employee_id, skill_id
ON employee_skills
BEGIN
    UPDATE skill_counts SET n = n - 1 WHERE skill_id = OLD.skill_id
        AND (SELECT status FROM employees WHERE id = OLD.employee_id) = 'active';
    INSERT INTO skill_counts (skill_id, n)
        SELECT NEW.skill_id, 1
        WHERE (SELECT status FROM employees WHERE id = NEW.employee_id) = 'active'
        ON CONFLICT (skill_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER employees_skill_count_status AFTER UPDATE OF status ON employees
WHEN (OLD.status = 'active') <> (NEW.status = 'active')
BEGIN
    INSERT INTO skill_counts (skill_id, n)
        SELECT skill_id, CASE WHEN NEW.status = 'active' THEN 1 ELSE -1 END
        FROM employee_skills WHERE employee_id = NEW.id
        ON CONFLICT (skill_id) DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER employees_skill_count_delete BEFORE DELETE ON employees
WHEN OLD.status = 'active'
BEGIN
    UPDATE skill_counts SET n = n - 1
        WHERE skill_id IN (SELECT skill_id FROM employee_skills WHERE employee_id = OLD.id);
END;
