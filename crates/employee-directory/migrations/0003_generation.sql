-- A counter bumped by every change to the directory's tables, in the
-- changing transaction, so a reader can tell cheaply whether data it
-- cached is still current (the audit trail's writes to the same file do
-- not touch it, unlike PRAGMA data_version).
CREATE TABLE directory_generation (
    id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO directory_generation (id, n) VALUES (1, 0);

CREATE TRIGGER departments_insert_generation AFTER INSERT ON departments
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER departments_update_generation AFTER UPDATE ON departments
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER departments_delete_generation AFTER DELETE ON departments
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER teams_insert_generation AFTER INSERT ON teams
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER teams_update_generation AFTER UPDATE ON teams
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER teams_delete_generation AFTER DELETE ON teams
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER locations_insert_generation AFTER INSERT ON locations
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER locations_update_generation AFTER UPDATE ON locations
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER locations_delete_generation AFTER DELETE ON locations
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER roles_insert_generation AFTER INSERT ON roles
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER roles_update_generation AFTER UPDATE ON roles
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER roles_delete_generation AFTER DELETE ON roles
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER compensation_bands_insert_generation AFTER INSERT ON compensation_bands
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER compensation_bands_update_generation AFTER UPDATE ON compensation_bands
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER compensation_bands_delete_generation AFTER DELETE ON compensation_bands
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER employees_insert_generation AFTER INSERT ON employees
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER employees_update_generation AFTER UPDATE ON employees
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER employees_delete_generation AFTER DELETE ON employees
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER skills_insert_generation AFTER INSERT ON skills
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER skills_update_generation AFTER UPDATE ON skills
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER skills_delete_generation AFTER DELETE ON skills
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER employee_skills_insert_generation AFTER INSERT ON employee_skills
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER employee_skills_update_generation AFTER UPDATE ON employee_skills
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER employee_skills_delete_generation AFTER DELETE ON employee_skills
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER employment_history_insert_generation AFTER INSERT ON employment_history
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER employment_history_update_generation AFTER UPDATE ON employment_history
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER employment_history_delete_generation AFTER DELETE ON employment_history
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER leave_balances_insert_generation AFTER INSERT ON leave_balances
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER leave_balances_update_generation AFTER UPDATE ON leave_balances
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER leave_balances_delete_generation AFTER DELETE ON leave_balances
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER directory_meta_insert_generation AFTER INSERT ON directory_meta
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER directory_meta_update_generation AFTER UPDATE ON directory_meta
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER directory_meta_delete_generation AFTER DELETE ON directory_meta
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1;
END;
