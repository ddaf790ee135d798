-- Schema version 4: json_each tells the planner its list is short.
--
-- The statements pass a list (node keys, record ids, projects, terms) as a
-- JSON array and join it through json_each, as on SQLite. Version 1's
-- json_each reads it with jsonb_array_elements_text and jsonb_each_text,
-- which the planner takes for a hundred rows each: two hundred keys, so
-- probing an index for each looked dearer than reading a table of ten or
-- twenty thousand rows whole and hashing it. A search's hundred nodes
-- were read that way, 5 ms where the probes take half of one.
--
-- The same rows, in the same order, through unnest of an array: the
-- planner reckons ten rows a branch (it cannot count an array built at
-- run time), so it probes the index. A list that is long is then probed
-- key by key too, which costs about what reading those rows costs.
-- Inlined as before (the function is one SELECT); a call per row of
-- another table (json_each(n.target_files)) costs about a microsecond
-- more.
CREATE OR REPLACE FUNCTION json_each(doc text) RETURNS TABLE (key text, value text)
LANGUAGE sql IMMUTABLE AS $$
    SELECT (e.ord - 1)::text, e.v
    FROM unnest(ARRAY(SELECT jsonb_array_elements_text(CASE WHEN jsonb_typeof(doc::jsonb) = 'array' THEN doc::jsonb ELSE '[]'::jsonb END)))
         WITH ORDINALITY AS e(v, ord)
    UNION ALL
    SELECT o.k, doc::jsonb ->> o.k
    FROM unnest(ARRAY(SELECT jsonb_object_keys(CASE WHEN jsonb_typeof(doc::jsonb) = 'object' THEN doc::jsonb ELSE '{}'::jsonb END))) AS o(k)
$$;
