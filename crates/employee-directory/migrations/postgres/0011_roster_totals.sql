-- A roster's summary ranks a department's teams by size: at 100,000
-- people a department has thousands of teams. This index hands out the
-- largest first, and roster_departments keeps each department's number
-- of teams with people and of people (kept from roster_teams by a
-- trigger, in the same transaction), so a summary reads 25 index entries
-- and one row whatever the department's size.
CREATE INDEX roster_teams_largest ON roster_teams (department_id, n DESC, team_id);

CREATE TABLE roster_departments (
    department_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    teams         BIGINT NOT NULL,
    people        BIGINT NOT NULL
);

INSERT INTO roster_departments (department_id, teams, people)
    SELECT department_id, COUNT(*) FILTER (WHERE n > 0), SUM(n) FROM roster_teams
    GROUP BY department_id;

CREATE FUNCTION roster_departments_follow_teams() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE roster_departments
            SET teams = teams - (OLD.n > 0)::int, people = people - OLD.n
            WHERE department_id = OLD.department_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO roster_departments (department_id, teams, people)
            VALUES (NEW.department_id, (NEW.n > 0)::int, NEW.n)
            ON CONFLICT (department_id) DO UPDATE
            SET teams = roster_departments.teams + (NEW.n > 0)::int,
                people = roster_departments.people + NEW.n;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER roster_teams_totals AFTER INSERT OR UPDATE OR DELETE ON roster_teams
    FOR EACH ROW EXECUTE FUNCTION roster_departments_follow_teams();
