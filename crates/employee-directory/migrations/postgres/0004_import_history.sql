-- Imports of HR data (employee-mcp-server import): who, when, how, the
-- files' digests and what changed per entity. Written in the import's own
-- transaction; not directory data, so it does not bump the generation.
CREATE TABLE import_history (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    imported_at TEXT COLLATE "C" NOT NULL,
    actor       TEXT COLLATE "C" NOT NULL,
    mode        TEXT COLLATE "C" NOT NULL CHECK (mode IN ('merge', 'replace')),
    format      TEXT COLLATE "C" NOT NULL,
    source      TEXT COLLATE "C" NOT NULL,
    -- JSON: [{"file", "rows", "sha256"}].
    files       TEXT COLLATE "C" NOT NULL,
    -- JSON: {"ENTITY": {"added", "updated", "unchanged", "removed"}}.
    counts      TEXT COLLATE "C" NOT NULL
);
