-- Kura schema version 2: sessions with a moving head, turns, idempotency keys.

CREATE TABLE sessions (
    id             TEXT PRIMARY KEY,
    project        TEXT NOT NULL,
    name           TEXT NOT NULL,
    scope          TEXT NOT NULL,
    head_ledger_id TEXT REFERENCES ledgers (id),   -- NULL until the first head move
    turn_count     INTEGER NOT NULL DEFAULT 0,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    UNIQUE (project, name)
) WITHOUT ROWID;

-- Every head move, signed: "kura-head-v1\n" + session id + "\n" + seq + "\n" + head hash.
CREATE TABLE session_reflog (
    session_id     TEXT NOT NULL REFERENCES sessions (id),
    seq            INTEGER NOT NULL,
    from_ledger_id TEXT,
    to_ledger_id   TEXT NOT NULL REFERENCES ledgers (id),
    head_hash      TEXT NOT NULL,
    reason         TEXT NOT NULL,
    at             TEXT NOT NULL,
    signature      TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

CREATE TABLE turns (
    id                TEXT PRIMARY KEY,
    session_id        TEXT NOT NULL REFERENCES sessions (id),
    number            INTEGER NOT NULL,
    state             TEXT NOT NULL,       -- open, complete, failed, timeout
    context_ledger_id TEXT NOT NULL REFERENCES ledgers (id),
    output_ledger_id  TEXT REFERENCES ledgers (id),
    context_bundle_id TEXT,
    epoch             INTEGER NOT NULL DEFAULT 0,
    worker            TEXT,
    lease_expires_at  TEXT,
    dispatch          TEXT,
    deadline_at       TEXT NOT NULL,
    opened_at         TEXT NOT NULL,
    closed_at         TEXT
) WITHOUT ROWID;
CREATE INDEX turns_session ON turns (session_id, id);
-- One open turn per session, held by the database itself.
CREATE UNIQUE INDEX turns_one_open ON turns (session_id) WHERE state = 'open';
CREATE INDEX turns_deadline ON turns (deadline_at) WHERE state = 'open';

CREATE TABLE turn_output (
    turn_id   TEXT NOT NULL REFERENCES turns (id),
    pos       INTEGER NOT NULL,
    record_id TEXT NOT NULL REFERENCES records (id),
    PRIMARY KEY (turn_id, pos)
) WITHOUT ROWID;

-- memory.fact / memory.decision records of closed turns waiting for the
-- memory graph to take them in.
CREATE TABLE pending_extractions (
    turn_id    TEXT NOT NULL,
    record_id  TEXT NOT NULL,
    scope      TEXT NOT NULL,
    kind       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (turn_id, record_id)
) WITHOUT ROWID;

-- The first answer to a write carrying an Idempotency-Key, stored in the
-- same transaction as the write itself.
CREATE TABLE idempotency (
    key         TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    status      INTEGER NOT NULL,
    body        BLOB NOT NULL,
    created_at  TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX idempotency_created ON idempotency (created_at);
