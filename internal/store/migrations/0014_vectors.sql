-- Embeddings of memory nodes, for semantic search. One row per node: the
-- vector of the node's text (title and summary) as of node version
-- `version`, from model `model`. A vector counts only while its model is
-- the configured one and its version is the node's current one, so a
-- ranking never mixes models or shows a node for text it no longer has.
-- text_hash (SHA-256 of the embedded text) lets a new version whose text
-- did not change take its vector over without asking the embedder again.
-- The rows are derived data, like the search index: written after commit
-- by the embedding worker, never by a request, and never in the event log.
CREATE TABLE node_vectors (
    nid         INTEGER PRIMARY KEY REFERENCES nodes(nid),
    sid         INTEGER NOT NULL,
    model       TEXT NOT NULL,
    dims        INTEGER NOT NULL,
    version     INTEGER NOT NULL,
    text_hash   BLOB NOT NULL,
    vec         BLOB NOT NULL,            -- dims float32, little-endian
    embedded_at TEXT NOT NULL
);
CREATE INDEX node_vectors_scope ON node_vectors(sid, model);
-- What the worker compares a node with, without reading the vectors: the
-- look over every node at start reads this index, not 1.5 KB a node.
CREATE INDEX node_vectors_state ON node_vectors(nid, model, version, text_hash);
