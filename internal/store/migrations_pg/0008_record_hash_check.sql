-- Schema version 8: a second unique index over records' hashes (SQLite's
-- migration 0017), so that a UNIQUE(hash) index that lost a row does not
-- let a second record with that hash in. The same expression as SQLite's,
-- for the statements both engines run.
CREATE UNIQUE INDEX records_hash_check ON records (lower(hash));
