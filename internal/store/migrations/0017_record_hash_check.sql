-- A record is never inserted beside another with its hash, even when the
-- UNIQUE(hash) index has lost that other row (a damaged page, an edit of
-- the file): a second unique index over the same hashes, a b-tree of its
-- own, is checked by the same INSERT (ON CONFLICT DO NOTHING names no
-- index, so a conflict in either is a duplicate), and the write path
-- finds the record through it when UNIQUE(hash) does not (store/record.go).
-- It holds each hash as its 32 bytes, not 64 hex digits.
CREATE UNIQUE INDEX records_hash_check ON records(unhex(hash));
