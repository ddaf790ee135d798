package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/kura-memory/kura/internal/kura"
)

var (
	qRedactionByRecord = wsql("SELECT record_id, by_id, reason, at, event_seq FROM redactions WHERE record_id = ?")
	qRedactRecord      = wsql("UPDATE records SET content = NULL, redacted = 1 WHERE id = ?")
	qInsertRedaction   = wsql("INSERT INTO redactions(record_id, by_id, reason, at, event_seq) VALUES(?,?,?,?,?)")
	// Stored idempotent answers are response bodies: an answer that names
	// the record (a create, a batch, a deduplicated write) may hold its
	// content, so it goes. A retry of that write is then applied afresh,
	// and a record write finds the redacted record by its hash.
	qPurgeIdemRecord = wsql("DELETE FROM idempotency WHERE instr(CAST(body AS TEXT), ?) > 0")
)

// RedactRecord drops the content of record id for good: records.content
// becomes NULL, while content_hash, hash and seal stay, so every ledger
// holding the record still verifies. by (the caller's identity) and reason
// are kept in the redactions table and a record.redacted event (ids only)
// is appended, all in one transaction. Redacting a redacted record writes
// nothing and answers the first redaction (AlreadyRedacted set).
//
// After the commit the WAL is checkpointed and truncated: with
// secure_delete on the write connection, the freed bytes were zeroed in the
// pages written, and the checkpoint puts those pages over the old ones in
// the database file, so the content cannot be read back from the files.
func (db *DB) RedactRecord(ctx context.Context, id, by string, in *kura.RedactInput) (*kura.RedactResult, error) {
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
	err := db.Update(ctx, func(tx *Tx) error {
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
			return tx.Answer(200, out)
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
		if err := tx.AddEvent("record.redacted", project, map[string]string{"record_id": id}); err != nil {
			return err
		}
		seq := tx.events[len(tx.events)-1].Seq
		at := tx.NowString()
		if _, err := tx.Exec(qInsertRedaction, id, by, in.Reason, at, seq); err != nil {
			return err
		}
		rec.Content, rec.Redacted = nil, true
		out.Record = rec
		out.Redaction = &kura.Redaction{RecordID: id, By: by, Reason: in.Reason, At: at, Seq: seq}
		return tx.Answer(200, out)
	})
	if err != nil {
		return nil, err
	}
	if out.Record.Content == nil {
		out.Record.Content = []byte("null")
	}
	if !out.AlreadyRedacted {
		if err := db.checkpointTruncate(ctx); err != nil {
			// The redaction is committed; the next checkpoints overwrite
			// the old pages in the database file, but the WAL may hold
			// them until it is reused.
			db.log.Warn("checkpoint after redaction", "record_id", id, "err", err)
		}
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

// checkpointTruncate copies the whole WAL into the database file and
// truncates the WAL to zero bytes. It waits (busy timeout) for the writer
// and for readers on older snapshots.
func (db *DB) checkpointTruncate(ctx context.Context) error {
	var busy, logFrames, done int
	if err := db.cdb.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done); err != nil {
		return err
	}
	if busy != 0 {
		return errors.New("the checkpoint could not finish: a reader or the writer held the database")
	}
	db.walFrames.Store(0)
	return nil
}
