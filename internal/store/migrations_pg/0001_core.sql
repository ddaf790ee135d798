-- Kura on PostgreSQL, schema version 1: every table of the SQLite schema
-- (migrations/0001 to 0015) as it stands after the last SQLite migration,
-- with the same names and columns, so the store's statements read and
-- write both. Types follow what SQLite stores: 64-bit integers (BIGINT),
-- text for times and JSON (the bytes that were hashed are kept as
-- written), BYTEA for blobs. SQLite's auto-numbered INTEGER PRIMARY KEYs
-- are identity columns. Search (SQLite's FTS5 tables) is in 0002.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE records (
    id           TEXT PRIMARY KEY,
    hash         TEXT NOT NULL UNIQUE,
    content_hash TEXT NOT NULL,
    seal         TEXT NOT NULL,
    type         TEXT NOT NULL,
    content      TEXT,
    author_id    TEXT NOT NULL,
    metadata     TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    redacted     BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX records_type ON records (type, id);
CREATE INDEX records_author ON records (author_id, id);
CREATE INDEX records_created ON records (created_at);

CREATE TABLE ledgers (
    id           TEXT PRIMARY KEY,
    hash         TEXT NOT NULL,
    root_hash    TEXT NOT NULL,
    label        TEXT NOT NULL,
    record_count BIGINT NOT NULL,
    created_at   TEXT NOT NULL,
    signature    TEXT NOT NULL
);
CREATE INDEX ledgers_hash ON ledgers (hash);

CREATE TABLE ledger_parents (
    ledger_id TEXT NOT NULL REFERENCES ledgers (id),
    pos       BIGINT NOT NULL,
    parent_id TEXT NOT NULL REFERENCES ledgers (id),
    PRIMARY KEY (ledger_id, pos)
);
CREATE INDEX ledger_parents_parent ON ledger_parents (parent_id);

CREATE TABLE ledger_records (
    ledger_id TEXT NOT NULL REFERENCES ledgers (id),
    pos       BIGINT NOT NULL,
    record_id TEXT NOT NULL REFERENCES records (id),
    leaf      TEXT NOT NULL,
    PRIMARY KEY (ledger_id, pos)
);
CREATE INDEX ledger_records_record ON ledger_records (record_id);

-- seq is given by the writer (max + 1 under the store's write lock), never
-- by a sequence: a sequence would leave gaps where a transaction rolled
-- back, and the feed promises none.
CREATE TABLE events (
    seq        BIGINT PRIMARY KEY,
    id         TEXT NOT NULL,
    type       TEXT NOT NULL,
    project    TEXT NOT NULL,
    subject    TEXT NOT NULL,
    refs       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    digest     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_ledger ON events (refs) WHERE type = 'ledger.written';

CREATE TABLE sessions (
    id             TEXT PRIMARY KEY,
    project        TEXT NOT NULL,
    name           TEXT NOT NULL,
    scope          TEXT NOT NULL,
    head_ledger_id TEXT REFERENCES ledgers (id),
    turn_count     BIGINT NOT NULL DEFAULT 0,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    created_by     TEXT,
    UNIQUE (project, name)
);

CREATE TABLE session_reflog (
    session_id     TEXT NOT NULL REFERENCES sessions (id),
    seq            BIGINT NOT NULL,
    from_ledger_id TEXT,
    to_ledger_id   TEXT NOT NULL REFERENCES ledgers (id),
    head_hash      TEXT NOT NULL,
    reason         TEXT NOT NULL,
    at             TEXT NOT NULL,
    signature      TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX session_reflog_to ON session_reflog (to_ledger_id);

CREATE TABLE turns (
    id                TEXT PRIMARY KEY,
    session_id        TEXT NOT NULL REFERENCES sessions (id),
    number            BIGINT NOT NULL,
    state             TEXT NOT NULL,
    context_ledger_id TEXT NOT NULL REFERENCES ledgers (id),
    output_ledger_id  TEXT REFERENCES ledgers (id),
    context_bundle_id TEXT,
    epoch             BIGINT NOT NULL DEFAULT 0,
    worker            TEXT,
    lease_expires_at  TEXT,
    dispatch          TEXT,
    deadline_at       TEXT NOT NULL,
    opened_at         TEXT NOT NULL,
    closed_at         TEXT
);
CREATE INDEX turns_session ON turns (session_id, id);
CREATE UNIQUE INDEX turns_one_open ON turns (session_id) WHERE state = 'open';
CREATE INDEX turns_deadline ON turns (deadline_at) WHERE state = 'open';
CREATE INDEX turns_context_ledger ON turns (context_ledger_id);
CREATE INDEX turns_output_ledger ON turns (output_ledger_id) WHERE output_ledger_id IS NOT NULL;

CREATE TABLE turn_output (
    turn_id   TEXT NOT NULL REFERENCES turns (id),
    pos       BIGINT NOT NULL,
    record_id TEXT NOT NULL REFERENCES records (id),
    PRIMARY KEY (turn_id, pos)
);
CREATE INDEX turn_output_record ON turn_output (record_id);

CREATE TABLE pending_extractions (
    turn_id    TEXT NOT NULL,
    record_id  TEXT NOT NULL,
    scope      TEXT NOT NULL,
    kind       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (turn_id, record_id)
);

CREATE TABLE idempotency (
    identity    TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status      BIGINT NOT NULL,
    body        TEXT NOT NULL,             -- a JSON answer (redaction searches it as text)
    created_at  TEXT NOT NULL,
    PRIMARY KEY (identity, key)
);
CREATE INDEX idempotency_created ON idempotency (created_at);

CREATE TABLE scopes (
    sid  BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    gen  BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE nodes (
    nid          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    sid          BIGINT NOT NULL REFERENCES scopes (sid),
    kind         TEXT NOT NULL,
    id           TEXT NOT NULL,
    version      BIGINT NOT NULL,
    title        TEXT NOT NULL,
    summary      TEXT NOT NULL,
    lifecycle    TEXT NOT NULL,
    authority    TEXT NOT NULL,
    confidence   DOUBLE PRECISION NOT NULL,
    target_files TEXT NOT NULL,
    payload_ref  TEXT,
    owner        TEXT,
    source_type  TEXT NOT NULL,
    derived_from TEXT NOT NULL,
    metadata     TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    written_by   TEXT,
    UNIQUE (sid, kind, id)
);
CREATE INDEX nodes_updated ON nodes (sid, updated_at);

CREATE TABLE node_versions (
    nid        BIGINT NOT NULL,
    version    BIGINT NOT NULL,
    valid_from TEXT NOT NULL,
    body       TEXT NOT NULL,
    PRIMARY KEY (nid, version)
);

CREATE TABLE confidence_history (
    nid     BIGINT NOT NULL,
    version BIGINT NOT NULL,
    at      TEXT NOT NULL,
    old     DOUBLE PRECISION,
    new     DOUBLE PRECISION NOT NULL,
    reason  TEXT NOT NULL,
    PRIMARY KEY (nid, version)
);

CREATE TABLE lineage_records (
    vid       BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    record_id TEXT NOT NULL UNIQUE REFERENCES records (id)
);

CREATE TABLE lineage (
    child  BIGINT NOT NULL,
    parent BIGINT NOT NULL,
    PRIMARY KEY (child, parent)
);
CREATE INDEX lineage_parent ON lineage (parent, child);

CREATE TABLE relations (
    rid        BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    sid        BIGINT NOT NULL,
    id         TEXT NOT NULL,
    kind       TEXT NOT NULL,
    from_nid   BIGINT NOT NULL REFERENCES nodes (nid),
    to_nid     BIGINT NOT NULL REFERENCES nodes (nid),
    confidence DOUBLE PRECISION NOT NULL,
    reasons    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (sid, id)
);
CREATE INDEX relations_to ON relations (to_nid, kind);
CREATE INDEX relations_from ON relations (from_nid, kind);

CREATE TABLE feedback (
    id         TEXT PRIMARY KEY,
    sid        BIGINT NOT NULL,
    nid        BIGINT NOT NULL REFERENCES nodes (nid),
    outcome    TEXT NOT NULL,
    note       TEXT NOT NULL,
    author_id  TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX feedback_node ON feedback (nid, created_at);

CREATE TABLE turn_extracted (
    turn_id TEXT NOT NULL,
    pos     BIGINT NOT NULL,
    ref     TEXT NOT NULL,
    PRIMARY KEY (turn_id, pos)
);

CREATE TABLE context_bundles (
    id         TEXT PRIMARY KEY,
    scope      TEXT NOT NULL,
    digest     TEXT NOT NULL,
    as_of      TEXT NOT NULL,
    body       BYTEA NOT NULL,           -- the answer, gzipped from 64 KiB (store/context.go)
    created_at TEXT NOT NULL
);
CREATE INDEX context_bundles_scope ON context_bundles (scope, created_at);

CREATE TABLE kb_spaces (
    sp      BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    kb      TEXT NOT NULL,
    scope   TEXT NOT NULL,
    entries BIGINT NOT NULL DEFAULT 0,
    gen     BIGINT NOT NULL DEFAULT 0,
    UNIQUE (kb, scope)
);

CREATE TABLE kb_entries (
    eid        BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    sp         BIGINT NOT NULL REFERENCES kb_spaces (sp),
    id         TEXT NOT NULL UNIQUE,
    identifier TEXT NOT NULL,
    keys       TEXT NOT NULL,
    value      TEXT NOT NULL,
    version    BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (sp, identifier)
);
CREATE INDEX kb_entries_sp ON kb_entries (sp);

CREATE TABLE kb_df (
    sp   BIGINT NOT NULL,
    kind BIGINT NOT NULL,
    term TEXT NOT NULL,
    n    BIGINT NOT NULL,
    PRIMARY KEY (sp, kind, term)
);

CREATE TABLE kb_history (
    sp         BIGINT NOT NULL,
    identifier TEXT NOT NULL,
    version    BIGINT NOT NULL,
    op         TEXT NOT NULL CHECK (op IN ('put', 'update', 'update_keys', 'delete', 'clear')),
    entry_id   TEXT NOT NULL,
    keys       TEXT,
    value      TEXT,
    at         TEXT NOT NULL,
    PRIMARY KEY (sp, identifier, version)
);

CREATE TABLE redactions (
    record_id TEXT PRIMARY KEY REFERENCES records (id),
    by_id     TEXT NOT NULL,
    reason    TEXT NOT NULL,
    at        TEXT NOT NULL,
    event_seq BIGINT NOT NULL
);

CREATE TABLE node_vectors (
    nid         BIGINT PRIMARY KEY REFERENCES nodes (nid),
    sid         BIGINT NOT NULL,
    model       TEXT NOT NULL,
    dims        BIGINT NOT NULL,
    version     BIGINT NOT NULL,
    text_hash   BYTEA NOT NULL,
    vec         BYTEA NOT NULL,
    embedded_at TEXT NOT NULL
);
CREATE INDEX node_vectors_scope ON node_vectors (sid, model);
CREATE INDEX node_vectors_state ON node_vectors (nid, model, version, text_hash);

CREATE TABLE log_hashes (
    leaf   BIGINT PRIMARY KEY,
    hashes BYTEA NOT NULL
);

CREATE TABLE log_acknowledged (
    origin  TEXT NOT NULL,
    size    BIGINT NOT NULL,
    root    TEXT NOT NULL,
    witness TEXT NOT NULL,
    reason  TEXT NOT NULL,
    seq     BIGINT NOT NULL,
    at      TEXT NOT NULL,
    PRIMARY KEY (origin, size, root)
);

-- A scope's generation moves with every change to its nodes and relations:
-- the context cache compares it instead of re-reading the graph.
CREATE FUNCTION kura_bump_scope_gen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE scopes SET gen = gen + 1 WHERE sid = NEW.sid;
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.sid <> NEW.sid) THEN
        UPDATE scopes SET gen = gen + 1 WHERE sid = OLD.sid;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER nodes_gen AFTER INSERT OR UPDATE OR DELETE ON nodes
    FOR EACH ROW EXECUTE FUNCTION kura_bump_scope_gen();
CREATE TRIGGER relations_gen AFTER INSERT OR UPDATE OR DELETE ON relations
    FOR EACH ROW EXECUTE FUNCTION kura_bump_scope_gen();

-- Instances of one database take turns with leases (the outbox publisher).
CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);

-- SQLite's functions the store's statements use, so one SQL serves both
-- engines. json_each over a JSON text yields its elements (or an object's
-- members) as text: key, value; compare value with integer columns
-- through CAST(value AS BIGINT), as the statements do.
CREATE FUNCTION json_each(doc text) RETURNS TABLE (key text, value text)
LANGUAGE sql IMMUTABLE AS $$
    SELECT (e.ord - 1)::text, e.v
    FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(doc::jsonb) = 'array' THEN doc::jsonb ELSE '[]'::jsonb END)
         WITH ORDINALITY AS e(v, ord)
    UNION ALL
    SELECT o.k, o.v
    FROM jsonb_each_text(CASE WHEN jsonb_typeof(doc::jsonb) = 'object' THEN doc::jsonb ELSE '{}'::jsonb END) AS o(k, v)
$$;

-- json_extract(doc, '$.a.b') as text ('$' alone: the document).
CREATE FUNCTION json_extract(doc text, path text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN path = '$' THEN doc::jsonb #>> '{}'
                ELSE doc::jsonb #>> string_to_array(substr(path, 3), '.') END
$$;

-- An integer, as substr() takes its positions (a bigint finds no substr).
CREATE FUNCTION instr(s text, sub text) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT strpos(s, sub) $$;

CREATE FUNCTION kura_concat_step(acc text, v text, sep text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN v IS NULL THEN acc WHEN acc IS NULL THEN v ELSE acc || sep || v END
$$;
CREATE FUNCTION kura_concat_step(acc text, v text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT kura_concat_step(acc, v, ',') $$;
CREATE AGGREGATE group_concat(text, text) (SFUNC = kura_concat_step, STYPE = text);
CREATE AGGREGATE group_concat(text) (SFUNC = kura_concat_step, STYPE = text);

-- json_quote(s): s as a JSON string (the hydrate queries build a record's
-- JSON in SQL).
CREATE FUNCTION json_quote(s text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT to_json(s)::text $$;
