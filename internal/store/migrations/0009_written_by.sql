-- Who wrote each node version: the identity of the caller whose request
-- wrote it (sys:kurad for kurad's own writes, such as extraction at a
-- timeout). The version body in node_versions carries it as written_by
-- too. Versions written before this migration do not know it: the column
-- stays NULL and their bodies have no written_by.
ALTER TABLE nodes ADD COLUMN written_by TEXT;
