-- A department roster is read a page at a time: people outside any team
-- first, then by team id and employee id (src/page_order.rs; ids compare
-- as bytes, employee ids lowercased as SQLite's NOCASE does). This index
-- holds that order for each department's active people, so a page is a
-- range read whatever the department's size.
CREATE INDEX employees_roster ON employees (department_id, status, team_id, lower(id));

-- A department's teams by id (the roster lists the first ones).
CREATE INDEX teams_department ON teams (department_id, id);

-- employees_roster starts with the same columns.
DROP INDEX employees_department;

-- The counts that lead a roster (active people per team, and per level and
-- location), kept by a trigger in the transaction of every change to
-- employees, as the report aggregates are (0005): a department of 30,000
-- people is summed from a row per team and per level and place.
-- team_id is '' for people outside any team.
CREATE TABLE roster_teams (
    department_id TEXT COLLATE "C" NOT NULL,
    team_id       TEXT COLLATE "C" NOT NULL,
    n             BIGINT NOT NULL,
    PRIMARY KEY (department_id, team_id)
);

CREATE TABLE roster_places (
    department_id TEXT COLLATE "C" NOT NULL,
    level         TEXT COLLATE "C" NOT NULL,
    location_id   BIGINT NOT NULL,
    n             BIGINT NOT NULL,
    PRIMARY KEY (department_id, level, location_id)
);

INSERT INTO roster_teams (department_id, team_id, n)
    SELECT department_id, COALESCE(team_id, ''), COUNT(*) FROM employees
    WHERE status = 'active' GROUP BY 1, 2;

INSERT INTO roster_places (department_id, level, location_id, n)
    SELECT department_id, level, location_id, COUNT(*) FROM employees
    WHERE status = 'active' GROUP BY 1, 2, 3;

CREATE FUNCTION roster_counts_follow_employees() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        IF OLD.status = 'active' THEN
            UPDATE roster_teams SET n = n - 1
                WHERE department_id = OLD.department_id
                  AND team_id = COALESCE(OLD.team_id, '');
            UPDATE roster_places SET n = n - 1
                WHERE department_id = OLD.department_id AND level = OLD.level
                  AND location_id = OLD.location_id;
        END IF;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        IF NEW.status = 'active' THEN
            INSERT INTO roster_teams (department_id, team_id, n)
                VALUES (NEW.department_id, COALESCE(NEW.team_id, ''), 1)
                ON CONFLICT (department_id, team_id) DO UPDATE SET n = roster_teams.n + 1;
            INSERT INTO roster_places (department_id, level, location_id, n)
                VALUES (NEW.department_id, NEW.level, NEW.location_id, 1)
                ON CONFLICT (department_id, level, location_id)
                DO UPDATE SET n = roster_places.n + 1;
        END IF;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER employees_roster_counts
    AFTER INSERT OR DELETE OR UPDATE OF department_id, team_id, level, location_id, status
    ON employees FOR EACH ROW EXECUTE FUNCTION roster_counts_follow_employees();
