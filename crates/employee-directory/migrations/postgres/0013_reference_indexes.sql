-- The department head and team manager references, indexed: removing
-- employees (a replace import, a leaver) checks each of these foreign keys
-- per removed employee, a scan of every team without them.
CREATE INDEX teams_manager ON teams (manager_id);
CREATE INDEX departments_head ON departments (head_id);
