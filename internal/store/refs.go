package store

import (
	"fmt"

	"github.com/kura-memory/kura/internal/kura"
)

// preparedRef is a record of a turn request: new (prepared) or existing.
type preparedRef struct {
	rec *PreparedRecord
	id  string
}

func (db *DB) prepareRefs(refs []kura.RecordRef, field, project string) ([]preparedRef, error) {
	out := make([]preparedRef, len(refs))
	for i := range refs {
		f := fmt.Sprintf("%s[%d].", field, i)
		if refs[i].RecordID != "" {
			if refs[i].Type != "" || len(refs[i].Content) > 0 || refs[i].AuthorID != "" || refs[i].Metadata != nil {
				return nil, kura.Invalid(f+"record_id", "give either record_id or a new record (type, content, author_id), not both")
			}
			if !kura.ValidID(refs[i].RecordID) {
				return nil, kura.Invalid(f+"record_id", "%q is not a lowercase UUID", refs[i].RecordID)
			}
			out[i].id = refs[i].RecordID
			continue
		}
		p, err := db.PrepareRecord(&refs[i].RecordInput, f)
		if err != nil {
			return nil, err
		}
		p.Project = project
		out[i].rec = p
	}
	return out, nil
}

// resolve writes new records and reads existing ones, in order; missing
// ids are a 400 naming them.
func (tx *Tx) resolve(refs []preparedRef) ([]kura.Record, error) {
	out := make([]kura.Record, len(refs))
	var missing []string
	for i, r := range refs {
		if r.rec != nil {
			rec, err := tx.InsertRecord(r.rec)
			if err != nil {
				return nil, err
			}
			out[i] = *rec
			continue
		}
		rec, err := scanRecord(tx.QueryRow(qRecordByID, r.id))
		if kura.IsCode(err, kura.ENotFound) {
			missing = append(missing, r.id)
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i] = *rec
	}
	if len(missing) > 0 {
		return nil, kura.Errorf(kura.EInvalid, "%d record(s) do not exist", len(missing)).WithDetail("missing", missing)
	}
	return out, nil
}
