-- A department roster is read a page at a time: people outside any team
-- first, then by team id and employee id (src/page_order.rs). This index
-- holds that order for each department's active people, so a page is a
-- range read whatever the department's size, and the per-team counts are
-- read from it without touching the table.
CREATE INDEX employees_roster ON employees (department_id, status, team_id, id);

-- The per-level and per-location counts of a roster, read from the index.
CREATE INDEX employees_roster_counts ON employees (department_id, status, level, location_id);

-- A department's teams by id (the roster lists the first ones).
CREATE INDEX teams_department ON teams (department_id, id COLLATE BINARY);

-- employees_roster starts with the same columns.
DROP INDEX employees_department;
