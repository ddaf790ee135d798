-- Session verify checks a session's head against the newest session.head
-- leaf of the log (a history cut short consistently, ledgers, reflog and
-- head rewound together, no longer matches it): find a session's head
-- moves, and its creation, by session. Only those two event types are
-- indexed, so no other write pays for it.
CREATE INDEX events_session ON events(json_extract(refs, '$.session_id'), seq)
    WHERE type IN ('session.created', 'session.head');
