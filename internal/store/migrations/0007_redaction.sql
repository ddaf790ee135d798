-- Redaction: an admin drops a record's content for good (records.content
-- becomes NULL, records.redacted 1). Who did it, why and when are kept here
-- for good, next to the record.redacted event (seq) that logged it; the
-- event itself carries only ids, so the reason never travels on NATS.
CREATE TABLE redactions (
    record_id TEXT PRIMARY KEY REFERENCES records (id),
    by_id     TEXT NOT NULL,
    reason    TEXT NOT NULL,
    at        TEXT NOT NULL,
    event_seq INTEGER NOT NULL
) WITHOUT ROWID;
