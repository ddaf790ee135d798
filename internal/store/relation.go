package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/kura-memory/kura/internal/kura"
)

// CreateRelation writes a relation between two nodes of the scope.
func (db *DB) CreateRelation(ctx context.Context, scope string, in *kura.RelationInput, opts ...kura.WriteOption) (*kura.Relation, error) {
	if err := in.Validate(db.nodeKinds()); err != nil {
		return nil, err
	}
	var rel *kura.Relation
	err := db.write(ctx, opts, func(tx *Tx) error {
		sid, err := tx.scope(scope)
		if err != nil {
			return err
		}
		rel, err = tx.relate(sid, scope, in)
		if err != nil {
			return err
		}
		return tx.KeepAnswer(true, rel)
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return rel, nil
}

func (tx *Tx) relate(sid int64, scope string, in *kura.RelationInput) (*kura.Relation, error) {
	ends := [2]int64{}
	for i, s := range []string{in.From, in.To} {
		r, _ := kura.ParseRef(s, tx.db.nodeKinds(), false)
		if err := tx.QueryRow(qNodeNID, sid, r.Kind, r.ID).Scan(&ends[i]); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil, kura.Invalid([]string{"from", "to"}[i], "no node %s in scope %s", s, scope)
			}
			return nil, err
		}
	}
	rel := kura.Relation{ID: in.ID, Scope: scope, Kind: in.Kind, From: in.From, To: in.To, Confidence: 0.7,
		Reasons: in.Reasons, CreatedAt: tx.NowString()}
	if rel.ID == "" {
		rel.ID = uuid.Must(uuid.NewV7()).String()
	} else {
		var one int
		if err := tx.QueryRow(qRelationExists, sid, rel.ID).Scan(&one); err == nil {
			return nil, kura.Errorf(kura.EConflict, "relation %s already exists in scope %s", rel.ID, scope).WithDetail("field", "id")
		} else if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
	}
	if in.Confidence != nil {
		rel.Confidence = *in.Confidence
	}
	if rel.Reasons == nil {
		rel.Reasons = []string{}
	}
	if _, err := tx.Exec(qInsertRelation, sid, rel.ID, rel.Kind, ends[0], ends[1], rel.Confidence, jsonList(rel.Reasons), rel.CreatedAt); err != nil {
		return nil, err
	}
	if err := tx.AddEvent(kura.EventMemoryRelation, scope, map[string]string{"relation_id": rel.ID}, objectDigest(rel)); err != nil {
		return nil, err
	}
	return &rel, nil
}

// ListRelations lists a scope's relations touching ref (either end), or all
// of them, optionally of one kind, in creation order.
func (db *DB) ListRelations(ctx context.Context, scope, ref, kind, after string, limit int) ([]kura.Relation, string, error) {
	if ref != "" {
		if _, err := db.parseNodeRef(ref, "ref"); err != nil {
			return nil, "", err
		}
	}
	sid, ok, err := db.readScope(ctx, scope)
	if err != nil || !ok {
		return []kura.Relation{}, "", err
	}
	q := `SELECT r.rid, r.id, r.kind, f.kind || ':' || f.id, t.kind || ':' || t.id, r.confidence, r.reasons, r.created_at
		FROM relations r JOIN nodes f ON f.nid = r.from_nid JOIN nodes t ON t.nid = r.to_nid WHERE r.sid = ?`
	args := []any{sid}
	if ref != "" {
		r, err := db.parseNodeRef(ref, "ref")
		if err != nil {
			return nil, "", err
		}
		var nid int64
		err = db.rdb.QueryRowContext(ctx, "SELECT nid FROM nodes WHERE sid = ? AND kind = ? AND id = ?", sid, r.Kind, r.ID).Scan(&nid)
		if errors.Is(err, sql.ErrNoRows) {
			return []kura.Relation{}, "", nil
		}
		if err != nil {
			return nil, "", mapErr(err)
		}
		q += " AND r.rid IN (SELECT rid FROM relations WHERE from_nid = ?1 UNION SELECT rid FROM relations WHERE to_nid = ?1)"
		q = strings.Replace(q, "?1", "?", 1)
		q = strings.Replace(q, "?1", "?", 1)
		args = append(args, nid, nid)
	}
	if kind != "" {
		q += " AND r.kind = ?"
		args = append(args, kind)
	}
	if after != "" {
		a, err := strconv.ParseInt(after, 10, 64)
		if err != nil {
			return nil, "", kura.Invalid("cursor", "bad cursor")
		}
		q += " AND r.rid > ?"
		args = append(args, a)
	}
	q += " ORDER BY r.rid LIMIT " + strconv.Itoa(limit+1)
	rows, err := db.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", mapErr(err)
	}
	defer rows.Close()
	out := []kura.Relation{}
	var last int64
	for rows.Next() {
		var rel kura.Relation
		var rid int64
		var reasons string
		if err := rows.Scan(&rid, &rel.ID, &rel.Kind, &rel.From, &rel.To, &rel.Confidence, &reasons, &rel.CreatedAt); err != nil {
			return nil, "", mapErr(err)
		}
		if len(out) == limit {
			return out, strconv.FormatInt(last, 10), nil
		}
		rel.Scope = scope
		json.Unmarshal([]byte(reasons), &rel.Reasons)
		out = append(out, rel)
		last = rid
	}
	return out, "", mapErr(rows.Err())
}
