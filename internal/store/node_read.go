package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/kura-memory/kura/internal/kura"
)

// readScope returns the key of a scope for reads; ok is false when the
// scope has never been written (so it holds nothing).
func (db *DB) readScope(ctx context.Context, scope string) (int64, bool, error) {
	var sid int64
	err := db.rdb.QueryRowContext(ctx, "SELECT sid FROM scopes WHERE name = ?", scope).Scan(&sid)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, mapErr(err)
	}
	return sid, true, nil
}

// GetNode reads a node's current version, or with asOf the version that
// was current at that instant.
func (db *DB) GetNode(ctx context.Context, scope, ref, asOf string) (*kura.Node, error) {
	r, err := db.parseNodeRef(ref, "ref")
	if err != nil {
		return nil, err
	}
	sid, ok, err := db.readScope(ctx, scope)
	if err != nil {
		return nil, err
	}
	notFound := kura.Errorf(kura.ENotFound, "no node %s in scope %s", r, scope)
	if !ok {
		return nil, notFound
	}
	if asOf == "" {
		n, err := scanNode(db.rdb.QueryRowContext(ctx, "SELECT "+nodeCols+" FROM nodes n WHERE n.sid = ? AND n.kind = ? AND n.id = ?", sid, r.Kind, r.ID), scope)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, notFound
		}
		if err != nil {
			return nil, mapErr(err)
		}
		return &n.Node, nil
	}
	var body string
	err = db.rdb.QueryRowContext(ctx, `SELECT v.body FROM nodes n JOIN node_versions v ON v.nid = n.nid
		WHERE n.sid = ? AND n.kind = ? AND n.id = ? AND v.valid_from <= ? ORDER BY v.version DESC LIMIT 1`,
		sid, r.Kind, r.ID, asOf).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, kura.Errorf(kura.ENotFound, "node %s did not exist in scope %s at %s", r, scope, asOf)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	var n kura.Node
	if err := json.Unmarshal([]byte(body), &n); err != nil {
		return nil, err
	}
	return &n, nil
}

// NodeHistory lists every version of a node and its confidence changes.
func (db *DB) NodeHistory(ctx context.Context, scope, ref string) (*kura.NodeHistory, error) {
	r, err := db.parseNodeRef(ref, "ref")
	if err != nil {
		return nil, err
	}
	sid, ok, err := db.readScope(ctx, scope)
	if err != nil {
		return nil, err
	}
	var nid int64
	if ok {
		err = db.rdb.QueryRowContext(ctx, "SELECT nid FROM nodes WHERE sid = ? AND kind = ? AND id = ?", sid, r.Kind, r.ID).Scan(&nid)
	}
	if !ok || errors.Is(err, sql.ErrNoRows) {
		return nil, kura.Errorf(kura.ENotFound, "no node %s in scope %s", r, scope)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	h := &kura.NodeHistory{Ref: r.String(), Versions: []json.RawMessage{}, ConfidenceHistory: []kura.ConfidenceChange{}}
	rows, err := db.rdb.QueryContext(ctx, "SELECT body FROM node_versions WHERE nid = ? ORDER BY version", nid)
	if err != nil {
		return nil, mapErr(err)
	}
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			rows.Close()
			return nil, mapErr(err)
		}
		h.Versions = append(h.Versions, json.RawMessage(b))
	}
	rows.Close()
	rows, err = db.rdb.QueryContext(ctx, "SELECT at, old, new, reason, version FROM confidence_history WHERE nid = ? ORDER BY version", nid)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c kura.ConfidenceChange
		var old sql.NullFloat64
		if err := rows.Scan(&c.At, &old, &c.New, &c.Reason, &c.Version); err != nil {
			return nil, mapErr(err)
		}
		if old.Valid {
			c.Old = &old.Float64
		}
		h.ConfidenceHistory = append(h.ConfidenceHistory, c)
	}
	return h, mapErr(rows.Err())
}

// ListNodes lists a scope's nodes in creation order, filtered.
func (db *DB) ListNodes(ctx context.Context, scope string, f kura.NodeFilter) ([]kura.Node, string, error) {
	sid, ok, err := db.readScope(ctx, scope)
	if err != nil || !ok {
		return []kura.Node{}, "", err
	}
	q := "SELECT " + nodeCols + " FROM nodes n WHERE n.sid = ?"
	args := []any{sid}
	for _, c := range []struct{ col, v string }{{"kind", f.Kind}, {"lifecycle", f.Lifecycle}, {"authority", f.Authority}, {"owner", f.Owner}} {
		if c.v != "" {
			q += " AND n." + c.col + " = ?"
			args = append(args, c.v)
		}
	}
	if f.MinConfidence != nil {
		q += " AND n.confidence >= ?"
		args = append(args, *f.MinConfidence)
	}
	if f.UpdatedSince != "" {
		q += " AND n.updated_at >= ?"
		args = append(args, f.UpdatedSince)
	}
	if f.After != "" {
		after, err := strconv.ParseInt(f.After, 10, 64)
		if err != nil {
			return nil, "", kura.Invalid("cursor", "bad cursor")
		}
		q += " AND n.nid > ?"
		args = append(args, after)
	}
	q += " ORDER BY n.nid LIMIT " + strconv.Itoa(f.Limit+1)
	rows, err := db.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", mapErr(err)
	}
	defer rows.Close()
	out := []kura.Node{}
	var last int64
	for rows.Next() {
		n, err := scanNode(rows, scope)
		if err != nil {
			return nil, "", mapErr(err)
		}
		if len(out) == f.Limit {
			return out, strconv.FormatInt(last, 10), nil
		}
		out = append(out, n.Node)
		last = n.nid
	}
	return out, "", mapErr(rows.Err())
}
