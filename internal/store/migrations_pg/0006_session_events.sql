-- Schema version 6: a session's head moves and its creation, found by
-- session (SQLite's migration 0016): session verify checks the head
-- against the newest session.head leaf of the log. json_extract is the
-- IMMUTABLE function of 0001, so the statements' own expression matches
-- the index's.
CREATE INDEX events_session ON events (json_extract(refs, '$.session_id'), seq)
    WHERE type IN ('session.created', 'session.head');
