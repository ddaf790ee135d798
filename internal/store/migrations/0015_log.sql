-- The one Merkle log (shared/API.md, "Log, checkpoints and witnesses"):
-- leaf i is the event with seq i+1. digest is the hash of what the event
-- names, part of the leaf data; events written before this migration keep
-- '' and commit to their ids alone, except record.written, whose digest is
-- always the record's seal, read from the record (never stored here).
ALTER TABLE events ADD COLUMN digest TEXT NOT NULL DEFAULT '';

-- The tree's stored hashes (golang.org/x/mod/sumdb/tlog), one row per
-- leaf: the hashes appending leaf `leaf` stored, concatenated (its leaf
-- hash, then the hash of each complete subtree it closed, level by level;
-- 32 bytes each). Written in the writer's transaction with the events they
-- hash. Never compacted: compacting the feed drops event rows, not these.
CREATE TABLE log_hashes (
    leaf   INTEGER PRIMARY KEY,
    hashes BLOB NOT NULL
);

-- A rollback or fork a witness reported and an admin acknowledged: the
-- witness's checkpoint (origin, size, root) no longer counts against this
-- database. The acknowledgement itself is an event, so a leaf.
CREATE TABLE log_acknowledged (
    origin  TEXT NOT NULL,
    size    INTEGER NOT NULL,
    root    TEXT NOT NULL,
    witness TEXT NOT NULL,
    reason  TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    at      TEXT NOT NULL,
    PRIMARY KEY (origin, size, root)
) WITHOUT ROWID;

-- An export proves each ledger's place in the log: find its event by id.
CREATE INDEX events_ledger ON events(refs) WHERE type = 'ledger.written';
