-- Schema version 7: the planner's statistics keep no sample of a
-- record's content or of a stored answer (which may hold one). ANALYZE
-- copies sampled values of every column into pg_statistic, where a
-- redaction cannot reach them: they stayed readable there (pg_stats, and
-- the catalog's file) after the record's own row was purged. No statement
-- filters or joins on these columns, so no plan needs their statistics.
-- Setting a column's type again drops the samples ANALYZE took before
-- (migratePG then rewrites pg_statistic, so that its file keeps no dead
-- copy of them either); statistics target 0 keeps ANALYZE from taking
-- new ones.
ALTER TABLE records ALTER COLUMN content TYPE TEXT;
ALTER TABLE idempotency ALTER COLUMN body TYPE TEXT;
ALTER TABLE records ALTER COLUMN content SET STATISTICS 0;
ALTER TABLE idempotency ALTER COLUMN body SET STATISTICS 0;
