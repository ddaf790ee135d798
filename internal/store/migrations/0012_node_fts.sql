-- Memory search on SQLite FTS5: ranked by bm25() over a node's fields,
-- words stemmed (porter), folded (unicode61, diacritics removed). It
-- replaces the hand-written word index node_terms.

-- node_text is the one definition of what search reads of a node, one
-- text per index column: the index is filled from it, and search reads it
-- back to explain a hit (store/search.go tokenizes it as the engine does).
-- target_files and the metadata's values (not its keys: strings as they
-- read, numbers and booleans as written) are joined by newlines; ident is
-- the kind and the id, unless the id is a UUID (a generated id holds no
-- words, and five unique tokens a node would be most of the index's
-- vocabulary); payload is the payload_ref and the owner.
CREATE VIEW node_text(nid, sid, title, ident, files, summary, payload, meta) AS
SELECT n.nid, n.sid, n.title,
       n.kind || CASE WHEN n.id GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]' THEN '' ELSE ' ' || n.id END,
       (SELECT group_concat(value, char(10) ORDER BY key) FROM json_each(n.target_files)),
       n.summary,
       concat_ws(char(10), n.payload_ref, n.owner),
       (SELECT group_concat(CASE j.type WHEN 'text' THEN j.atom ELSE n.metadata -> j.fullkey END, char(10) ORDER BY j.id)
          FROM json_tree(n.metadata) j WHERE j.type IN ('text', 'integer', 'real', 'true', 'false'))
FROM nodes n;

-- Contentless: the text lives in nodes (and node_text); the index keeps
-- only its tokens, about half the size of a table holding a copy, and a
-- row is deleted by its rowid alone (contentless_delete), so no old text
-- is needed to take a node's old words out. The rowid is sid << 40 | nid:
-- a scope's nodes are one rowid range, which the engine skips to, so a
-- search reads only its own scope's postings.
CREATE VIRTUAL TABLE node_fts USING fts5(
    title, ident, files, summary, payload, meta,
    content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- The index's vocabulary (stemmed terms), for the misspelling fallback.
CREATE VIRTUAL TABLE node_fts_vocab USING fts5vocab(node_fts, 'row');

-- The writer indexes the nodes a transaction wrote, in one statement
-- before it commits (store/search.go: indexNodeText; a trigger per node
-- would make FTS5 write a segment per node). Nodes are never deleted; if
-- one were, its index row would go with it.
CREATE TRIGGER node_fts_delete AFTER DELETE ON nodes BEGIN
    DELETE FROM node_fts WHERE rowid = (OLD.sid << 40) | OLD.nid;
END;

INSERT INTO node_fts(rowid, title, ident, files, summary, payload, meta)
SELECT (t.sid << 40) | t.nid, t.title, t.ident, t.files, t.summary, t.payload, t.meta FROM node_text t ORDER BY t.nid;

DROP TABLE node_terms;
