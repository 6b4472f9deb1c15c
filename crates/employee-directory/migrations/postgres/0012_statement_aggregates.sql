-- The roster counts (0008) and band salaries (0010) followed each row:
-- an import or seed of 100,000 people ran three upserts per person, and
-- PostgreSQL keeps a version of a counter row per update inside one
-- transaction, so a large write slowed down as it went (a million people
-- did not finish in 15 minutes). They now follow each statement, over its
-- transition tables, as the report aggregates (0005) and skill counts
-- (0009) do: one grouped upsert per aggregate per statement.
DROP TRIGGER employees_roster_counts ON employees;
DROP FUNCTION roster_counts_follow_employees();
DROP TRIGGER employees_band_salaries ON employees;
DROP FUNCTION band_salaries_follow_employees();

-- Old rows count -1 and new rows +1; groups whose sum is 0 (a row updated
-- without moving) are left alone.
CREATE FUNCTION employee_counts_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    changes text := CASE TG_OP
        WHEN 'INSERT' THEN 'SELECT 1 AS s, * FROM new_rows'
        WHEN 'DELETE' THEN 'SELECT -1 AS s, * FROM old_rows'
        ELSE 'SELECT -1 AS s, * FROM old_rows UNION ALL SELECT 1 AS s, * FROM new_rows'
    END;
BEGIN
    EXECUTE format($q$
        INSERT INTO roster_teams AS t (department_id, team_id, n)
        SELECT department_id, COALESCE(team_id, ''), SUM(s)
        FROM (%s) c WHERE status = 'active'
        GROUP BY 1, 2 HAVING SUM(s) <> 0
        ON CONFLICT (department_id, team_id) DO UPDATE SET n = t.n + excluded.n$q$, changes);
    EXECUTE format($q$
        INSERT INTO roster_places AS t (department_id, level, location_id, n)
        SELECT department_id, level, location_id, SUM(s)
        FROM (%s) c WHERE status = 'active'
        GROUP BY 1, 2, 3 HAVING SUM(s) <> 0
        ON CONFLICT (department_id, level, location_id)
        DO UPDATE SET n = t.n + excluded.n$q$, changes);
    EXECUTE format($q$
        INSERT INTO band_salaries AS t (role_id, level, salary, n)
        SELECT role_id, level, salary, SUM(s)
        FROM (%s) c WHERE status = 'active'
        GROUP BY 1, 2, 3 HAVING SUM(s) <> 0
        ON CONFLICT (role_id, level, salary) DO UPDATE SET n = t.n + excluded.n$q$, changes);
    RETURN NULL;
END
$$;

CREATE TRIGGER employees_counts_insert AFTER INSERT ON employees
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION employee_counts_changed();

CREATE TRIGGER employees_counts_update AFTER UPDATE ON employees
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION employee_counts_changed();

CREATE TRIGGER employees_counts_delete AFTER DELETE ON employees
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION employee_counts_changed();

-- TRUNCATE fires no row or transition trigger: empty these with the
-- employees (their holders go too, by CASCADE).
CREATE FUNCTION employee_counts_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE roster_teams, roster_places, band_salaries, skill_counts;
    RETURN NULL;
END
$$;

CREATE TRIGGER employees_counts_truncate AFTER TRUNCATE ON employees
    FOR EACH STATEMENT EXECUTE FUNCTION employee_counts_truncated();
