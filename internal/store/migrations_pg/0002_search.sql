-- Search on PostgreSQL, schema version 2: what SQLite's FTS5 tables do
-- (migrations/0012 and 0013), on PostgreSQL's own full-text engine:
-- tsvector documents with GIN indexes, matched by tsquery (@@) and ranked
-- by ts_rank with a weight per field class.
--
-- The terms are made by kurad, not by a text search configuration:
-- recall.Tokens is SQLite's tokenizer ('porter unicode61
-- remove_diacritics 2') and search explains a hit, corrects a misspelt
-- word and scores knowledge-base entries by tokenizing in Go. PostgreSQL's
-- 'english' configuration stems by Snowball, not Porter, and folds
-- differently, so its terms would disagree with all three; a document is
-- therefore written as tsvector text (store/search_pg.go: pgDoc) and a
-- query as tsquery text of the same terms.
--
-- Every index keeps SQLite's row key (rowid): sid << 40 | nid for a node,
-- sp << 40 | eid for an entry, so a scope is one key range
-- (rowid BETWEEN lo AND hi), as on SQLite, and the statements that write
-- or clear by key are shared with SQLite.

-- node_text is the one definition of what search reads of a node, one
-- text per field (migrations/0012_node_fts.sql says what and why; this
-- is the same view in PostgreSQL's terms). kura_json_values is the
-- metadata's values in document order, strings as they read, numbers and
-- booleans as written (json, not jsonb, keeps both).
CREATE FUNCTION kura_json_values(doc text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    WITH RECURSIVE t(path, v) AS (
        SELECT ARRAY[]::bigint[], doc::json
        UNION ALL
        SELECT t.path || c.ord, c.v
        FROM t, LATERAL (
            SELECT e.ord, e.v
            FROM json_each(CASE WHEN json_typeof(t.v) = 'object' THEN t.v ELSE '{}'::json END) WITH ORDINALITY AS e(k, v, ord)
            UNION ALL
            SELECT e.ord, e.v
            FROM json_array_elements(CASE WHEN json_typeof(t.v) = 'array' THEN t.v ELSE '[]'::json END) WITH ORDINALITY AS e(v, ord)
        ) c
    )
    SELECT string_agg(CASE json_typeof(t.v) WHEN 'string' THEN t.v #>> '{}' ELSE t.v::text END, E'\n' ORDER BY t.path)
    FROM t WHERE json_typeof(t.v) IN ('string', 'number', 'boolean')
$$;

CREATE VIEW node_text(nid, sid, title, ident, files, summary, payload, meta) AS
SELECT n.nid, n.sid, n.title,
       n.kind || CASE WHEN n.id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN '' ELSE ' ' || n.id END,
       (SELECT string_agg(e.v, E'\n' ORDER BY e.o) FROM json_array_elements_text(n.target_files::json) WITH ORDINALITY AS e(v, o)),
       n.summary,
       concat_ws(E'\n', n.payload_ref, n.owner),
       kura_json_values(n.metadata)
FROM nodes n;

-- Memory search: a node's fields in one document, each term at its
-- positions, labelled by its field's weight class (title A; ident and
-- files B; summary and payload C; metadata D). The writer (re)indexes the
-- nodes a transaction wrote just before it commits (store/search.go:
-- indexNodeText).
CREATE TABLE node_fts (
    rowid BIGINT PRIMARY KEY,
    doc   TSVECTOR NOT NULL
);
CREATE INDEX node_fts_doc ON node_fts USING gin (doc);

-- Nodes are never deleted; if one were, its index row would go with it.
CREATE FUNCTION kura_node_fts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM node_fts WHERE rowid = (OLD.sid << 40) | OLD.nid;
    RETURN NULL;
END $$;
CREATE TRIGGER node_fts_delete AFTER DELETE ON nodes
    FOR EACH ROW EXECUTE FUNCTION kura_node_fts_delete();

-- kb_terms answers the strict knowledge-base queries exactly: terms is
-- SQLite's column (hex tokens of the folded identifier words and keys,
-- store/kb_index.go), written by the same statements; doc holds those
-- tokens as they are, no parser in between, so a query token matches
-- exactly the words and keys kb.Fold says are equal.
CREATE TABLE kb_terms (
    rowid BIGINT PRIMARY KEY,
    terms TEXT NOT NULL,
    doc   TSVECTOR GENERATED ALWAYS AS (array_to_tsvector(array_remove(string_to_array(terms, ' '), ''))) STORED
);
CREATE INDEX kb_terms_doc ON kb_terms USING gin (doc);

-- kb_fts ranks: an entry's identifier (A), keys (B) and value (C).
CREATE TABLE kb_fts (
    rowid BIGINT PRIMARY KEY,
    doc   TSVECTOR NOT NULL
);
CREATE INDEX kb_fts_doc ON kb_fts USING gin (doc);

-- A database at version 1 held no nodes or entries: kurad of that version
-- could not start without these tables. Nothing to back-fill.
