-- A counter bumped by every change to the directory's tables, in the
-- changing transaction, so a reader can tell cheaply whether data it
-- cached is still current (same as the SQLite migration of this name).
CREATE TABLE directory_generation (
    id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    n  BIGINT NOT NULL
);
INSERT INTO directory_generation (id, n) VALUES (1, 0);

CREATE FUNCTION bump_directory_generation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER departments_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON departments
    FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();

CREATE TRIGGER teams_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON teams
    FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();

CREATE TRIGGER locations_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON locations
    FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();

CREATE TRIGGER roles_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON roles
    FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();

CREATE TRIGGER compensation_bands_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON compensation_bands
    FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();

CREATE TRIGGER employees_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON employees
    FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();

CREATE TRIGGER skills_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON skills
    FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();

CREATE TRIGGER employee_skills_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON employee_skills
    FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();

CREATE TRIGGER employment_history_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON employment_history
    FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();

CREATE TRIGGER leave_balances_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON leave_balances
    FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();

CREATE TRIGGER directory_meta_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON directory_meta
    FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();
