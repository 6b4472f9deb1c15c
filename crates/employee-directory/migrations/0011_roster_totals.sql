-- A roster's summary ranks a department's teams by size: at 100,000
-- people a department has thousands of teams. This index hands out the
-- largest first, and roster_departments keeps each department's number
-- of teams with people and of people (kept from roster_teams by
-- triggers, in the same transaction), so a summary reads 25 index
-- entries and one row whatever the department's size.
CREATE INDEX roster_teams_largest ON roster_teams (department_id, n DESC, team_id);

CREATE TABLE roster_departments (
    department_id TEXT NOT NULL PRIMARY KEY,
    teams         INTEGER NOT NULL,
    people        INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO roster_departments (department_id, teams, people)
    SELECT department_id, SUM(n > 0), SUM(n) FROM roster_teams GROUP BY department_id;

CREATE TRIGGER roster_teams_totals_insert AFTER INSERT ON roster_teams
BEGIN
    INSERT INTO roster_departments (department_id, teams, people)
        VALUES (NEW.department_id, NEW.n > 0, NEW.n)
        ON CONFLICT (department_id)
        DO UPDATE SET teams = teams + (NEW.n > 0), people = people + NEW.n;
END;

CREATE TRIGGER roster_teams_totals_update AFTER UPDATE ON roster_teams
BEGIN
    UPDATE roster_departments
        SET teams = teams - (OLD.n > 0), people = people - OLD.n
        WHERE department_id = OLD.department_id;
    INSERT INTO roster_departments (department_id, teams, people)
        VALUES (NEW.department_id, NEW.n > 0, NEW.n)
        ON CONFLICT (department_id)
        DO UPDATE SET teams = teams + (NEW.n > 0), people = people + NEW.n;
END;

CREATE TRIGGER roster_teams_totals_delete AFTER DELETE ON roster_teams
BEGIN
    UPDATE roster_departments
        SET teams = teams - (OLD.n > 0), people = people - OLD.n
        WHERE department_id = OLD.department_id;
END;
