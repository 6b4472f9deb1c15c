-- Indexes for the lookups and aggregates the directory runs (as ../0002).
CREATE INDEX employees_department ON employees (department_id, status);
CREATE INDEX employees_team ON employees (team_id, status);
CREATE INDEX employees_manager ON employees (manager_id);
CREATE INDEX employees_role_level ON employees (role_id, level);
CREATE INDEX employees_name ON employees (lower(last_name), lower(first_name));
CREATE INDEX employee_skills_skill ON employee_skills (skill_id, proficiency);
CREATE INDEX employment_history_employee ON employment_history (employee_id, start_date);
