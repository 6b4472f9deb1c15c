-- A team is read a page at a time: its manager, then the others by level
-- (highest first), name and id, ASCII-lowercased (page_order::MEMBER_ORDER,
-- the same expressions). This index holds that order for each team's
-- active people, so a page is a range read whatever the team's size.
CREATE INDEX employees_team_page ON employees (
    team_id, status,
    (CASE level WHEN 'executive' THEN 1 WHEN 'director' THEN 2 WHEN 'principal' THEN 3
        WHEN 'staff' THEN 4 WHEN 'senior' THEN 5 WHEN 'mid' THEN 6 ELSE 7 END),
    lower(first_name || ' ' || last_name),
    lower(id)
);

-- The team's counts by level and place come from this index alone.
DROP INDEX employees_team;
CREATE INDEX employees_team ON employees (team_id, status, level, location_id);
