-- Knowledge bases: named, scoped identifier/keys/value entries, an inverted
-- index for word and key queries, and an append-only history of every
-- change (the current row is replaced or deleted; its past is kept).

-- One row per (knowledge base, scope); the small integer key keeps the
-- index rows short. entries counts the live entries, so a scope's size is
-- read, not counted.
CREATE TABLE kb_spaces (
    sp      INTEGER PRIMARY KEY,
    kb      TEXT NOT NULL,
    scope   TEXT NOT NULL,             -- '' is the default scope
    entries INTEGER NOT NULL DEFAULT 0,
    UNIQUE (kb, scope)
);

-- The live entries. eid orders them by insertion (an upsert updates the
-- row in place, so a replaced entry keeps its position); id is the
-- entry's UUIDv7, kept across replaces and ended by a delete.
CREATE TABLE kb_entries (
    eid        INTEGER PRIMARY KEY,
    sp         INTEGER NOT NULL REFERENCES kb_spaces(sp),
    id         TEXT NOT NULL UNIQUE,
    identifier TEXT NOT NULL,
    keys       TEXT NOT NULL,            -- JSON array, as given
    value      TEXT NOT NULL,
    version    INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (sp, identifier)
);
-- (sp, eid): a scope's entries in insertion order without a sort.
CREATE INDEX kb_entries_sp ON kb_entries(sp);

-- Each live entry's folded words, each between two U+001F (a word is
-- letters and digits only, so it never holds one): a query confirms a
-- candidate's other words with instr() on one short row instead of an
-- index lookup per word. Apart from kb_entries so that it stays small
-- enough to stay in the page cache.
CREATE TABLE kb_entry_words (
    eid   INTEGER PRIMARY KEY,
    words TEXT NOT NULL
);

-- Inverted index of identifier words (internal/kb.Words: folded, each
-- once per entry). A word query walks the postings of its rarest word;
-- sig and sig2, the 128-bit signature of all the entry's words
-- (internal/kb.Signature), let that walk skip entries lacking another
-- query word without a lookup. An identifier never changes, so neither do
-- its rows.
CREATE TABLE kb_words (
    sp   INTEGER NOT NULL,
    word TEXT NOT NULL,
    eid  INTEGER NOT NULL,
    sig  INTEGER NOT NULL,
    sig2 INTEGER NOT NULL,
    PRIMARY KEY (sp, word, eid)
) WITHOUT ROWID;

-- Inverted index of keys, folded (internal/kb.FoldKeys); sig and sig2
-- are the signature of all the entry's folded keys, rewritten with them.
CREATE TABLE kb_keys (
    sp   INTEGER NOT NULL,
    key  TEXT NOT NULL,
    eid  INTEGER NOT NULL,
    sig  INTEGER NOT NULL,
    sig2 INTEGER NOT NULL,
    PRIMARY KEY (sp, key, eid)
) WITHOUT ROWID;

-- How many live entries of a space hold a word (kind 0) or a folded key
-- (kind 1): exactly the number of its index rows. A query starts from its
-- rarest condition, and a query of one word or one key reads its count
-- here instead of counting.
CREATE TABLE kb_df (
    sp   INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    term TEXT NOT NULL,
    n    INTEGER NOT NULL,
    PRIMARY KEY (sp, kind, term)
) WITHOUT ROWID;

-- Every version of every identifier of a scope, never updated or deleted.
-- Versions count on across a delete and a later re-insert of the same
-- identifier. A delete or clear row is a tombstone: keys and value NULL,
-- entry_id the incarnation that ended.
CREATE TABLE kb_history (
    sp         INTEGER NOT NULL,
    identifier TEXT NOT NULL,
    version    INTEGER NOT NULL,
    op         TEXT NOT NULL CHECK (op IN ('put', 'update', 'update_keys', 'delete', 'clear')),
    entry_id   TEXT NOT NULL,
    keys       TEXT,
    value      TEXT,
    at         TEXT NOT NULL,
    PRIMARY KEY (sp, identifier, version)
) WITHOUT ROWID;
