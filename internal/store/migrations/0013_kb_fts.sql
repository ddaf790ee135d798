-- Knowledge-base entries move into two SQLite FTS5 indexes, kept in the
-- transaction that writes the entry. Both key a row by
-- sp * 2^40 + eid, so one (knowledge base, scope) is one rowid range,
-- which FTS5 seeks to in every posting: a query never reads another
-- scope's entries, and a scope's rows come in insertion order.
--
-- kb_terms answers the strict queries exactly (entries?identifier=, key=,
-- any_keys=, all_keys=). Its one column holds an entry's folded identifier
-- words (internal/kb.Words) and folded keys (internal/kb.FoldKeys), each
-- written as one token of hex digits behind a letter that says which it is
-- ("w" + hex of the word's UTF-8, "k" + hex of the key's). FTS5's own
-- tokenizer folds case by older Unicode tables, splits where Go does not
-- and knows nothing of final sigma or the Kelvin sign; a token of ASCII
-- hex digits leaves it nothing to fold or split, so a query token matches
-- exactly the words and keys kb.Fold says are equal. detail=none: the
-- strict queries need only which entries hold a token.
CREATE VIRTUAL TABLE kb_terms USING fts5(
    terms,
    content = '', contentless_delete = 1, detail = none,
    tokenize = 'unicode61 remove_diacritics 0'
);

-- kb_fts ranks (GET .../search, and lookup beyond the strict matches):
-- the identifier, the keys (one a line) and the value, stemmed (porter),
-- case and accents folded, weighted by bm25() at query time.
CREATE VIRTUAL TABLE kb_fts USING fts5(
    identifier, keys, value,
    content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Back-fill from what the entries and the word and key indexes hold. SQL's
-- hex() writes uppercase digits, which the tokenizer folds to the
-- lowercase kurad writes.
INSERT INTO kb_terms(rowid, terms)
SELECT e.sp * 1099511627776 + e.eid, coalesce(w.t, '') || ' ' || coalesce(k.t, '')
FROM kb_entries e
LEFT JOIN (SELECT eid, group_concat('w' || hex(word), ' ') AS t FROM kb_words GROUP BY eid) w ON w.eid = e.eid
LEFT JOIN (SELECT eid, group_concat('k' || hex(key), ' ') AS t FROM kb_keys GROUP BY eid) k ON k.eid = e.eid;

INSERT INTO kb_fts(rowid, identifier, keys, value)
SELECT e.sp * 1099511627776 + e.eid, e.identifier,
       coalesce((SELECT group_concat(j.value, char(10)) FROM json_each(e.keys) j), ''), e.value
FROM kb_entries e;

-- The hand-written inverted index is retired: kb_terms does its job.
-- kb_df stays: a query plans from it (the rarest condition first, the
-- count of a one-word query without counting), and its words are the
-- vocabulary a misspelt query word is corrected from.
DROP TABLE kb_words;
DROP TABLE kb_keys;
DROP TABLE kb_entry_words;
