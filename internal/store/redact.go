package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/kurahash"
)

const (
	qRedactionByRecord = "SELECT record_id, by_id, reason, at, event_seq FROM redactions WHERE record_id = ?"
	qRedactRecord      = "UPDATE records SET content = NULL, redacted = 1 WHERE id = ?"
	qInsertRedaction   = "INSERT INTO redactions(record_id, by_id, reason, at, event_seq) VALUES(?,?,?,?,?)"
	// Stored idempotent answers are response bodies: an answer that names
	// the record (a create, a batch, a deduplicated write) may hold its
	// content, so it goes. A retry of that write is then applied afresh,
	// and a record write finds the redacted record by its hash.
	qPurgeIdemRecord = "DELETE FROM idempotency WHERE instr(CAST(body AS TEXT), ?) > 0"
)

// RedactRecord drops the content of record id for good: records.content
// becomes NULL, while content_hash, hash and seal stay, so every ledger
// holding the record still verifies. by (the caller's identity) and reason
// are kept in the redactions table and a record.redacted event (ids only;
// its leaf's digest commits to the redaction) is appended, all in one
// transaction. Redacting a redacted record writes
// nothing and answers the first redaction (AlreadyRedacted set).
//
// After the commit, backups still running are abandoned (their snapshot
// predates the redaction) and the content is purged from the files
// (purgeRedacted): the WAL is checkpointed into the database and truncated,
// retried for up to Config.RedactPurgeWait. Purge in the answer says
// whether that finished; if not, it goes on in the background.
func (db *DB) RedactRecord(ctx context.Context, id, by string, in *kura.RedactInput, opts ...kura.WriteOption) (*kura.RedactResult, error) {
	if !kura.ValidID(id) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", id)
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if by == "" {
		by = "unknown"
	}
	var out *kura.RedactResult
	err := db.write(ctx, opts, func(tx *Tx) error {
		rec, err := scanRecord(tx.QueryRow(qRecordByID, id))
		if err != nil {
			return err
		}
		out = &kura.RedactResult{}
		if rec.Redacted {
			rd, err := tx.redaction(id)
			if err != nil {
				return err
			}
			rec.Meta()
			out.Record, out.Redaction, out.AlreadyRedacted = rec, rd, true
			return tx.KeepAnswer(false, out)
		}
		if _, err := tx.Exec(qRedactRecord, id); err != nil {
			return err
		}
		if _, err := tx.Exec(qPurgeIdemRecord, id); err != nil {
			return err
		}
		// The same project rule as record.written: metadata.project_id,
		// else the configured default.
		project := db.cfg.DefaultProject
		if pid := rec.Meta()["project_id"]; kura.ValidSlug(pid) {
			project = pid
		}
		// The leaf commits to the redaction itself, not only to the
		// record's seal (which the redaction leaves as it was): an edited
		// who, why or when no longer hashes to it (scanLeafEvent).
		at := tx.NowString()
		digest, err := kurahash.RedactionDigest(kurahash.Redaction{RecordID: id, Seal: rec.Seal, By: by, Reason: in.Reason, At: at})
		if err != nil {
			return err
		}
		if err := tx.AddEvent(kura.EventRecordRedacted, project, map[string]string{"record_id": id}, digest); err != nil {
			return err
		}
		seq := tx.events[len(tx.events)-1].Seq
		if _, err := tx.Exec(qInsertRedaction, id, by, in.Reason, at, seq); err != nil {
			return err
		}
		rec.Content, rec.Redacted = nil, true
		out.Record = rec
		out.Redaction = &kura.Redaction{RecordID: id, By: by, Reason: in.Reason, At: at, Seq: seq}
		return tx.KeepAnswer(false, out)
	})
	if err != nil {
		return nil, err
	}
	if out.Record.Content == nil {
		out.Record.Content = []byte("null")
	}
	if !out.AlreadyRedacted {
		db.purge.wanted.Add(1)
		db.abandonBackups()
	}
	// A repeated redaction still reports (and pushes on) a purge that is
	// pending: the caller asks because it wants the content gone.
	out.Purge = db.purgeRedacted(ctx)
	if out.Purge == PurgePending {
		db.log.Warn("redaction committed; its content is still being purged from the database files", "record_id", id)
	}
	return out, nil
}

func (tx *Tx) redaction(id string) (*kura.Redaction, error) {
	var rd kura.Redaction
	err := tx.QueryRow(qRedactionByRecord, id).Scan(&rd.RecordID, &rd.By, &rd.Reason, &rd.At, &rd.Seq)
	if errors.Is(err, sql.ErrNoRows) {
		// Redacted elsewhere (an imported redacted record): no who or why here.
		return &kura.Redaction{RecordID: id}, nil
	}
	return &rd, err
}

// GetRedaction returns who redacted record id, why and when.
func (db *DB) GetRedaction(ctx context.Context, id string) (*kura.Redaction, error) {
	if !kura.ValidID(id) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", id)
	}
	var rd kura.Redaction
	err := db.rdb.QueryRowContext(ctx, "SELECT record_id, by_id, reason, at, event_seq FROM redactions WHERE record_id = ?", id).Scan(&rd.RecordID, &rd.By, &rd.Reason, &rd.At, &rd.Seq)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, kura.Errorf(kura.ENotFound, "record %s has no redaction", id)
	}
	return &rd, mapErr(err)
}
