-- Kura schema version 6: who created a session, and the indexes the access
-- checks of project-restricted tokens use (internal/store/access.go).

-- The identity that created the session; it may move the head by hand
-- (POST /v1/sessions/{id}/head) besides admins. NULL for sessions made
-- before this version or loaded by import: only admins move those.
ALTER TABLE sessions ADD COLUMN created_by TEXT;

-- "Is this ledger reachable from a session of these projects?" looks a
-- ledger up in the turns' context and output ledgers and in the reflog.
CREATE INDEX turns_context_ledger ON turns (context_ledger_id);
CREATE INDEX turns_output_ledger ON turns (output_ledger_id) WHERE output_ledger_id IS NOT NULL;
CREATE INDEX session_reflog_to ON session_reflog (to_ledger_id);
CREATE INDEX turn_output_record ON turn_output (record_id);
