-- Kura schema version 1: records, ledgers and the event log.
-- Records and ledgers are never updated (redaction, a later issue, empties
-- records.content and is logged). Every mutation appends one events row in
-- the same transaction: the audit log and the doorbell's outbox.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE records (
    id           TEXT PRIMARY KEY,          -- UUIDv7, lowercase canonical
    hash         TEXT NOT NULL UNIQUE,      -- dedup identity
    content_hash TEXT NOT NULL,
    seal         TEXT NOT NULL,
    type         TEXT NOT NULL,
    content      TEXT,                      -- RFC 8785 canonical JSON; NULL once redacted
    author_id    TEXT NOT NULL,
    metadata     TEXT NOT NULL,             -- canonical JSON object, '{}' when none
    created_at   TEXT NOT NULL,
    redacted     INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX records_type ON records (type, id);
CREATE INDEX records_author ON records (author_id, id);
CREATE INDEX records_created ON records (created_at);

CREATE TABLE ledgers (
    id           TEXT PRIMARY KEY,
    hash         TEXT NOT NULL,
    root_hash    TEXT NOT NULL,
    label        TEXT NOT NULL,
    record_count INTEGER NOT NULL,
    created_at   TEXT NOT NULL,
    signature    TEXT NOT NULL              -- hex Ed25519 over "kura-ledger-sig-v1\n" + hash
) WITHOUT ROWID;
CREATE INDEX ledgers_hash ON ledgers (hash);

-- Parents in order (the order enters the ledger hash).
CREATE TABLE ledger_parents (
    ledger_id TEXT NOT NULL REFERENCES ledgers (id),
    pos       INTEGER NOT NULL,
    parent_id TEXT NOT NULL REFERENCES ledgers (id),
    PRIMARY KEY (ledger_id, pos)
) WITHOUT ROWID;
CREATE INDEX ledger_parents_parent ON ledger_parents (parent_id);

-- leaf keeps the seal each position committed to, so verify can name the
-- position that changed (a swap, a removal, an insertion), not only say that
-- the root no longer matches.
CREATE TABLE ledger_records (
    ledger_id TEXT NOT NULL REFERENCES ledgers (id),
    pos       INTEGER NOT NULL,
    record_id TEXT NOT NULL REFERENCES records (id),
    leaf      TEXT NOT NULL,
    PRIMARY KEY (ledger_id, pos)
) WITHOUT ROWID;
CREATE INDEX ledger_records_record ON ledger_records (record_id);

-- seq is the rowid: each new event gets max(seq)+1. Clients keep seqs as
-- catch-up cursors, so a seq must never be reused: compaction of old events
-- always keeps the newest row (no AUTOINCREMENT, which would cost an extra
-- write per event).
CREATE TABLE events (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL,
    type       TEXT NOT NULL,
    project    TEXT NOT NULL,
    subject    TEXT NOT NULL,
    refs       TEXT NOT NULL,               -- JSON object of ids
    created_at TEXT NOT NULL
);
