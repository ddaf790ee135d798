package store

import (
	"context"

	"github.com/kura-memory/kura/internal/kura"
)

// This file is CreateRecord and CreateRecords for a writer limited to
// projects: the only difference is the project of each record's
// record.written event (kura.RecordEventProject), set on the prepared
// record the way turns set their session's; the writes are the same
// (lock-free, as theirs). It belongs in PrepareRecord (record.go) as a
// parameter; it lives here while record.go is being changed elsewhere.

// prepareRecordFor is PrepareRecord with the event project decided for a
// writer limited to projects (nil: all).
func (db *DB) prepareRecordFor(in *kura.RecordInput, field string, projects []string) (*PreparedRecord, error) {
	p, err := db.PrepareRecord(in, field)
	if err != nil {
		return nil, err
	}
	p.Project = kura.RecordEventProject(in.Metadata, db.cfg.DefaultProject, projects)
	return p, nil
}

// CreateRecordFor is CreateRecord for a writer limited to projects (nil:
// all): a record naming no metadata.project_id rings in the default
// project only if the writer holds it, else in the writer's first project.
func (db *DB) CreateRecordFor(ctx context.Context, in *kura.RecordInput, projects []string, opts ...kura.WriteOption) (*kura.Record, error) {
	p, err := db.prepareRecordFor(in, "", projects)
	if err != nil {
		return nil, err
	}
	var out *kura.Record
	err = db.writeLockFree(ctx, opts, func(tx *Tx) error {
		var err error
		if out, err = tx.InsertRecord(p); err != nil {
			return err
		}
		return tx.KeepAnswer(!out.Deduplicated, out)
	})
	return out, err
}

// CreateRecordsFor is CreateRecords (a batch, all or nothing) with the
// event projects of CreateRecordFor.
func (db *DB) CreateRecordsFor(ctx context.Context, ins []kura.RecordInput, projects []string, opts ...kura.WriteOption) ([]kura.Record, error) {
	if len(ins) == 0 {
		return nil, kura.Invalid("records", "records must hold at least one record")
	}
	if len(ins) > kura.MaxBatchRecords {
		return nil, kura.Invalid("records", "a batch holds at most %d records, got %d", kura.MaxBatchRecords, len(ins))
	}
	ps := make([]*PreparedRecord, len(ins))
	for i := range ins {
		p, err := db.prepareRecordFor(&ins[i], "records["+itoa(i)+"].", projects)
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	out := make([]kura.Record, len(ps))
	err := db.writeLockFree(ctx, opts, func(tx *Tx) error {
		for i, p := range ps {
			r, err := tx.InsertRecord(p)
			if err != nil {
				return err
			}
			out[i] = *r
		}
		return tx.KeepAnswer(true, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
