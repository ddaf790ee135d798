-- Context bundles: what a compile handed an agent, kept byte for byte as
-- the receipt of what it saw. A turn opened with memory names its bundle
-- in turns.context_bundle_id.
CREATE TABLE context_bundles (
    id         TEXT PRIMARY KEY,           -- UUIDv7
    scope      TEXT NOT NULL,
    digest     TEXT NOT NULL,              -- sha256:<hex> of the JCS of buckets
    as_of      TEXT NOT NULL,
    body       TEXT NOT NULL,              -- the compile answer, exactly
    created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX context_bundles_scope ON context_bundles(scope, created_at);
