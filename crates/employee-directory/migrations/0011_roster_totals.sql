-- A roster's summary ranks a department's teams by size: at 100,000
-- people a department has thousands of teams. This index hands out the
-- largest first, so the summary reads 25 entries instead of sorting them
-- all. (A per-department row of totals would be one hot row updated by
-- every hire of the department: PostgreSQL keeps a version per update
-- inside a transaction, and a large import would slow to a crawl.)
CREATE INDEX roster_teams_largest ON roster_teams (department_id, n DESC, team_id);
