-- Schema version 8: a second unique index over records' hashes (SQLite's
-- migration 0017), so that a UNIQUE(hash) index that lost a row does not
-- let a second record with that hash in. unhex is SQLite's function, for
-- the statements both engines run.
CREATE FUNCTION unhex(s text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT decode(s, 'hex') $$;
CREATE UNIQUE INDEX records_hash_check ON records (unhex(hash));
