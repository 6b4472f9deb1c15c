-- Substring search over skill names through an index: a pg_trgm GIN index
-- on lower(name), which answers `lower(name) LIKE '%…%'`. pg_trgm ships
-- with PostgreSQL (Debian's postgresql-NN package) and is a trusted
-- extension, so a database owner may create it; where it is missing or
-- not allowed, search keeps working by reading the skills table.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm unavailable (%): skill search reads the skills table', SQLERRM;
END
$$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        EXECUTE 'CREATE INDEX IF NOT EXISTS skills_name_trgm ON skills USING gin (lower(name) gin_trgm_ops)';
    END IF;
END
$$;
