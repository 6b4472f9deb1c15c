-- A department roster is read a page at a time: people outside any team
-- first, then by team id and employee id (src/page_order.rs). This index
-- holds that order for each department's active people, so a page is a
-- range read whatever the department's size.
CREATE INDEX employees_roster ON employees (department_id, status, team_id, id);

-- A department's teams by id (the roster lists the first ones).
CREATE INDEX teams_department ON teams (department_id, id COLLATE BINARY);

-- employees_roster starts with the same columns.
DROP INDEX employees_department;

-- The counts that lead a roster (active people per team, and per level and
-- location), kept by triggers in the transaction of every change to
-- employees, as the report aggregates are (0005): a department of 30,000
-- people is summed from a row per team and per level and place, not by
-- reading 30,000 index entries. team_id is '' for people outside any team.
CREATE TABLE roster_teams (
    department_id TEXT NOT NULL,
    team_id       TEXT NOT NULL,
    n             INTEGER NOT NULL,
    PRIMARY KEY (department_id, team_id)
) WITHOUT ROWID;

CREATE TABLE roster_places (
    department_id TEXT NOT NULL,
    level         TEXT NOT NULL,
    location_id   INTEGER NOT NULL,
    n             INTEGER NOT NULL,
    PRIMARY KEY (department_id, level, location_id)
) WITHOUT ROWID;

INSERT INTO roster_teams (department_id, team_id, n)
    SELECT department_id, COALESCE(team_id, ''), COUNT(*) FROM employees
    WHERE status = 'active' GROUP BY 1, 2;

INSERT INTO roster_places (department_id, level, location_id, n)
    SELECT department_id, level, location_id, COUNT(*) FROM employees
    WHERE status = 'active' GROUP BY 1, 2, 3;

CREATE TRIGGER employees_roster_insert AFTER INSERT ON employees
WHEN NEW.status = 'active'
BEGIN
    INSERT INTO roster_teams (department_id, team_id, n)
        VALUES (NEW.department_id, COALESCE(NEW.team_id, ''), 1)
        ON CONFLICT (department_id, team_id) DO UPDATE SET n = n + 1;
    INSERT INTO roster_places (department_id, level, location_id, n)
        VALUES (NEW.department_id, NEW.level, NEW.location_id, 1)
        ON CONFLICT (department_id, level, location_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER employees_roster_delete AFTER DELETE ON employees
WHEN OLD.status = 'active'
BEGIN
    UPDATE roster_teams SET n = n - 1
        WHERE department_id = OLD.department_id AND team_id = COALESCE(OLD.team_id, '');
    UPDATE roster_places SET n = n - 1
        WHERE department_id = OLD.department_id AND level = OLD.level
          AND location_id = OLD.location_id;
END;

CREATE TRIGGER employees_roster_update
AFTER UPDATE OF department_id, team_id, level, location_id, status ON employees
BEGIN
    UPDATE roster_teams SET n = n - 1
        WHERE OLD.status = 'active' AND department_id = OLD.department_id
          AND team_id = COALESCE(OLD.team_id, '');
    UPDATE roster_places SET n = n - 1
        WHERE OLD.status = 'active' AND department_id = OLD.department_id
          AND level = OLD.level AND location_id = OLD.location_id;
    INSERT INTO roster_teams (department_id, team_id, n)
        SELECT NEW.department_id, COALESCE(NEW.team_id, ''), 1 WHERE NEW.status = 'active'
        ON CONFLICT (department_id, team_id) DO UPDATE SET n = n + 1;
    INSERT INTO roster_places (department_id, level, location_id, n)
        SELECT NEW.department_id, NEW.level, NEW.location_id, 1 WHERE NEW.status = 'active'
        ON CONFLICT (department_id, level, location_id) DO UPDATE SET n = n + 1;
END;
