-- The memory graph: scoped, versioned nodes; relations; feedback; lineage
-- as an indexed edge table; a word index for search. Nothing here is ever
-- deleted: a node's current row is replaced by a new version, and every
-- version is kept in node_versions.

-- Scopes get small integer keys so the per-node index rows stay short.
CREATE TABLE scopes (
    sid  INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

-- The current version of every node. nid is the node's key in the lineage,
-- relation and word tables.
CREATE TABLE nodes (
    nid          INTEGER PRIMARY KEY,
    sid          INTEGER NOT NULL REFERENCES scopes(sid),
    kind         TEXT NOT NULL,
    id           TEXT NOT NULL,
    version      INTEGER NOT NULL,
    title        TEXT NOT NULL,
    summary      TEXT NOT NULL,
    lifecycle    TEXT NOT NULL,
    authority    TEXT NOT NULL,
    confidence   REAL NOT NULL,
    target_files TEXT NOT NULL,            -- JSON array
    payload_ref  TEXT,
    owner        TEXT,
    source_type  TEXT NOT NULL,
    derived_from TEXT NOT NULL,            -- JSON array of refs, as written
    metadata     TEXT NOT NULL,            -- JSON object
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (sid, kind, id)
);
CREATE INDEX nodes_updated ON nodes(sid, updated_at);

-- Every version ever written, as the JSON the API served for it.
CREATE TABLE node_versions (
    nid        INTEGER NOT NULL,
    version    INTEGER NOT NULL,
    valid_from TEXT NOT NULL,
    body       TEXT NOT NULL,
    PRIMARY KEY (nid, version)
) WITHOUT ROWID;

CREATE TABLE confidence_history (
    nid     INTEGER NOT NULL,
    version INTEGER NOT NULL,
    at      TEXT NOT NULL,
    old     REAL,
    new     REAL NOT NULL,
    reason  TEXT NOT NULL,
    PRIMARY KEY (nid, version)
) WITHOUT ROWID;

-- Records cited in lineage get a vertex key; in the lineage table a record
-- vertex is stored as -vid, a node as its nid.
CREATE TABLE lineage_records (
    vid       INTEGER PRIMARY KEY,
    record_id TEXT NOT NULL UNIQUE REFERENCES records(id)
);

-- child was derived from parent. Both directions are indexed, so a trace
-- backward or forward is an index walk, never a scan.
CREATE TABLE lineage (
    child  INTEGER NOT NULL,
    parent INTEGER NOT NULL,
    PRIMARY KEY (child, parent)
) WITHOUT ROWID;
CREATE INDEX lineage_parent ON lineage(parent, child);

CREATE TABLE relations (
    rid        INTEGER PRIMARY KEY,
    sid        INTEGER NOT NULL,
    id         TEXT NOT NULL,
    kind       TEXT NOT NULL,
    from_nid   INTEGER NOT NULL REFERENCES nodes(nid),
    to_nid     INTEGER NOT NULL REFERENCES nodes(nid),
    confidence REAL NOT NULL,
    reasons    TEXT NOT NULL,              -- JSON array
    created_at TEXT NOT NULL,
    UNIQUE (sid, id)
);
CREATE INDEX relations_to ON relations(to_nid, kind);
CREATE INDEX relations_from ON relations(from_nid, kind);

CREATE TABLE feedback (
    id         TEXT PRIMARY KEY,
    sid        INTEGER NOT NULL,
    nid        INTEGER NOT NULL REFERENCES nodes(nid),
    outcome    TEXT NOT NULL,
    note       TEXT NOT NULL,
    author_id  TEXT NOT NULL,
    created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX feedback_node ON feedback(nid, created_at);

-- The search index: one row per (scope, word, node) with a bit per field
-- the word occurs in (see internal/memory for the bits).
CREATE TABLE node_terms (
    sid    INTEGER NOT NULL,
    term   TEXT NOT NULL,
    nid    INTEGER NOT NULL,
    fields INTEGER NOT NULL,
    PRIMARY KEY (sid, term, nid)
) WITHOUT ROWID;

-- The nodes a turn's close extracted from its memory.* records.
CREATE TABLE turn_extracted (
    turn_id TEXT NOT NULL,
    pos     INTEGER NOT NULL,
    ref     TEXT NOT NULL,
    PRIMARY KEY (turn_id, pos)
) WITHOUT ROWID;
