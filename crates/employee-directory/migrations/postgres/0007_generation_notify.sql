-- Replicas keep answers while the directory is unchanged. Instead of
-- reading the counter on every call, each one LISTENs: the bump also
-- announces the new value, delivered when the changing transaction
-- commits (several bumps in one transaction announce each value).
CREATE OR REPLACE FUNCTION bump_directory_generation() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    next BIGINT;
BEGIN
    UPDATE directory_generation SET n = n + 1 WHERE id = 1 RETURNING n INTO next;
    PERFORM pg_notify('directory_generation', next::text);
    RETURN NULL;
END
$$;
