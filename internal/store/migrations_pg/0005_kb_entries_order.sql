-- Schema version 5: a space's entries in the order of their keys.
--
-- SQLite's index on kb_entries(sp) holds each row's rowid (eid) after sp,
-- so the statements that walk a space in eid order (a page of entries,
-- eid > ? ORDER BY eid; the end of a lookup's sample, ORDER BY eid LIMIT 1
-- OFFSET ?) read the index and stop. PostgreSQL's index on (sp) keeps no
-- such order. With two spaces of 100,000 entries, analysed and vacuumed,
-- the sample's end in the second took 23 ms (the planner walked the
-- primary key past the whole first space); on (sp, eid), 0.3 ms. (sp, eid)
-- is SQLite's index in PostgreSQL's terms and serves everything (sp) did.
-- Until a table is vacuumed and analysed the planner may still walk the
-- primary key or sort the space (kura restore analyses; autovacuum does
-- both).
CREATE INDEX kb_entries_sp_eid ON kb_entries (sp, eid);
DROP INDEX kb_entries_sp;
