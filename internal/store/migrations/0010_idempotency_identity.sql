-- Idempotency keys belong to the identity that sent them: a key is looked
-- up and stored as (identity, key), so one caller's key is nothing to
-- another (no 409 telling it the key exists, no key claimed ahead of its
-- owner, no replay of someone else's answer). Answers stored before this
-- version name no identity and cannot be given to the right one: they are
-- dropped, and a retry of such a write is applied afresh.
DROP INDEX idempotency_created;
DROP TABLE idempotency;
CREATE TABLE idempotency (
    identity    TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status      INTEGER NOT NULL,
    body        BLOB NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (identity, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_created ON idempotency (created_at);
