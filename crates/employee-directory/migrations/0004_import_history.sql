-- Imports of HR data (employee-mcp-server import): who, when, how, the
-- files' digests and what changed per entity. Written in the import's own
-- transaction; not directory data, so it does not bump the generation.
CREATE TABLE import_history (
    id          INTEGER NOT NULL PRIMARY KEY,
    imported_at TEXT NOT NULL,
    actor       TEXT NOT NULL,
    mode        TEXT NOT NULL CHECK (mode IN ('merge', 'replace')),
    format      TEXT NOT NULL,
    source      TEXT NOT NULL,
    -- JSON: [{"file", "rows", "sha256"}].
    files       TEXT NOT NULL,
    -- JSON: {"ENTITY": {"added", "updated", "unchanged", "removed"}}.
    counts      TEXT NOT NULL
);
