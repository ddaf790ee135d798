package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/google/uuid"
	"github.com/kura-memory/kura/internal/kura"
)

// CreateFeedback stores an outcome report on a node.
func (db *DB) CreateFeedback(ctx context.Context, scope string, in *kura.FeedbackInput, opts ...kura.WriteOption) (*kura.Feedback, error) {
	if err := in.Validate(db.nodeKinds()); err != nil {
		return nil, err
	}
	r, _ := kura.ParseRef(in.Ref, db.nodeKinds(), false)
	var fb *kura.Feedback
	err := db.write(ctx, opts, func(tx *Tx) error {
		sid, err := tx.scope(scope)
		if err != nil {
			return err
		}
		var nid int64
		if err := tx.QueryRow(qNodeNID, sid, r.Kind, r.ID).Scan(&nid); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return kura.Errorf(kura.ENotFound, "no node %s in scope %s", in.Ref, scope)
			}
			return err
		}
		fb = &kura.Feedback{ID: uuid.Must(uuid.NewV7()).String(), Scope: scope, Ref: in.Ref, Outcome: in.Outcome,
			Note: in.Note, AuthorID: in.AuthorID, CreatedAt: tx.NowString()}
		if _, err := tx.Exec(qInsertFeedback, fb.ID, sid, nid, fb.Outcome, fb.Note, fb.AuthorID, fb.CreatedAt); err != nil {
			return err
		}
		if err := tx.AddEvent(kura.EventMemoryFeedback, scope, map[string]string{"ref": in.Ref, "feedback_id": fb.ID}, objectDigest(fb)); err != nil {
			return err
		}
		return tx.KeepAnswer(true, fb)
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return fb, nil
}
