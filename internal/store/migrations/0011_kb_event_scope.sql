-- kb.changed events carry their knowledge base's scope as their project
-- (the default scope "" as "default"), as memory and context events carry
-- theirs, so that the feed shows a scope-limited token only its scopes'
-- knowledge-base changes. Events appended before took the configured
-- default project: give them their scope, found through the entry id each
-- names (kb_history keeps every incarnation of every entry, deleted ones
-- included), and the subject that goes with it.
UPDATE events
SET project = m.name,
    subject = 'oclaw.v1.' || m.name || '.evt.kb.changed'
FROM (SELECT DISTINCT h.entry_id AS entry_id,
             CASE s.scope WHEN '' THEN 'default' ELSE s.scope END AS name
      FROM kb_history h JOIN kb_spaces s ON s.sp = h.sp) AS m
WHERE events.type = 'kb.changed'
  AND m.entry_id = json_extract(events.refs, '$.entry_id');
