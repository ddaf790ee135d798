-- A record is never inserted beside another with its hash, even when the
-- UNIQUE(hash) index has lost that other row (a damaged page, an edit of
-- the file): a second unique index over the same hashes, a b-tree of its
-- own, is checked by the same INSERT (ON CONFLICT DO NOTHING names no
-- index, so a conflict in either is a duplicate), and the write path
-- finds the record through it when UNIQUE(hash) does not (store/record.go).
-- Its expression is lower(hash), which is the hash itself (hashes are
-- lowercase hex): any SQLite reads it (unhex(), which would keep 32 bytes
-- instead of 64 digits, needs SQLite 3.41, newer than Debian 12's).
CREATE UNIQUE INDEX records_hash_check ON records(lower(hash));
