package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
)

// Bounds of a compile request.
const (
	MaxBudgetBytes  = 16 << 20
	MaxPerBucketCap = 100000
)

// validMaxPerBucket checks a max_per_bucket: absent (no limit), or 0 (keep
// none) to MaxPerBucketCap.
func validMaxPerBucket(field string, m *int) error {
	if m != nil && (*m < 0 || *m > MaxPerBucketCap) {
		return kura.Invalid(field, "max_per_bucket must be 0 (keep none) to %d; leave it out for no limit", MaxPerBucketCap)
	}
	return nil
}

// validateCompile checks a request and returns its as_of (now when absent)
// and whether it was asked for.
func (db *DB) validateCompile(req *admission.Request) (string, bool, error) {
	if len(req.Query) > 1024 {
		return "", false, kura.Invalid("query", "query is longer than 1024 bytes")
	}
	if len(req.TargetFiles) > kura.MaxTargetFiles {
		return "", false, kura.Invalid("target_files", "at most %d target files", kura.MaxTargetFiles)
	}
	for _, k := range req.Kinds {
		if !slices.Contains(db.nodeKinds(), k) {
			return "", false, kura.Invalid("kinds", "unknown node kind %q", k).WithDetail("allowed", db.nodeKinds())
		}
	}
	if err := validMaxPerBucket("max_per_bucket", req.MaxPerBucket); err != nil {
		return "", false, err
	}
	if req.BudgetBytes < 0 || req.BudgetBytes > MaxBudgetBytes {
		return "", false, kura.Invalid("budget_bytes", "budget_bytes must be 0 (no limit) to %d", MaxBudgetBytes)
	}
	if req.AsOf == "" {
		return kura.FormatTime(db.now()), false, nil
	}
	t, err := kura.ParseTime(req.AsOf)
	if err != nil {
		return "", false, kura.Invalid("as_of", "as_of must be an RFC 3339 time")
	}
	return kura.FormatTime(t), true, nil
}

// scopeMemory reads a scope's nodes (of kinds, or all) and relations as they
// were at asOf, from one snapshot. current reads the nodes table itself
// (no version lookups) when asOf is now.
func scopeMemory(ctx context.Context, q queryer, scope, asOf string, current, withText bool, kinds []string) ([]kura.Node, []kura.Relation, error) {
	var sid int64
	err := q.QueryRowContext(ctx, "SELECT sid FROM scopes WHERE name = ?", scope).Scan(&sid)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	kindSQL, args := "", []any{sid}
	if len(kinds) > 0 {
		kindSQL = " AND n.kind IN (?" + strings.Repeat(",?", len(kinds)-1) + ")"
		for _, k := range kinds {
			args = append(args, k)
		}
	}
	// The node structs are large: size the slice once rather than grow it
	// (growing was a fifth of the read in a 10,000-node scope).
	var count int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM nodes n WHERE n.sid = ?"+kindSQL, args...).Scan(&count); err != nil {
		return nil, nil, err
	}
	nodes := make([]kura.Node, 0, count)
	if current {
		// Only what admission reads: a compile reads every node of the
		// scope, and the lineage and unused JSON columns would be most of
		// the decoding. Target files (which explain a compile asked about
		// files) come only with a query or target files; the search index
		// ranks a query, so no other text is read.
		cols := "n.kind, n.id, n.title, n.summary, n.lifecycle, n.authority, n.confidence, n.payload_ref, n.updated_at"
		if withText {
			cols += ", n.target_files"
		}
		rows, err := q.QueryContext(ctx, "SELECT "+cols+" FROM nodes n WHERE n.sid = ?"+kindSQL, args...)
		if err != nil {
			return nil, nil, err
		}
		for rows.Next() {
			var n kura.Node
			var payload sql.NullString
			var files string
			dst := []any{&n.Kind, &n.ID, &n.Title, &n.Summary, &n.Lifecycle, &n.Authority, &n.Confidence, &payload, &n.UpdatedAt}
			if withText {
				dst = append(dst, &files)
			}
			if err := rows.Scan(dst...); err != nil {
				rows.Close()
				return nil, nil, err
			}
			n.Ref, n.Scope = n.Kind+":"+n.ID, scope
			if payload.Valid {
				n.PayloadRef = &payload.String
			}
			if withText && files != "[]" { // "[]", the usual case, holds nothing to decode
				if err := json.Unmarshal([]byte(files), &n.TargetFiles); err != nil {
					rows.Close()
					return nil, nil, fmt.Errorf("node %s: target_files: %w", n.Ref, err)
				}
			}
			nodes = append(nodes, n)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, err
		}
	} else {
		// The version current at asOf: the newest whose valid_from is not
		// after it. Nodes created later have none and drop out.
		rows, err := q.QueryContext(ctx, `SELECT (SELECT v.body FROM node_versions v WHERE v.nid = n.nid AND v.valid_from <= ?
			ORDER BY v.version DESC LIMIT 1) AS body FROM nodes n WHERE n.sid = ?`+kindSQL+` AND n.created_at <= ?`,
			append(append([]any{asOf}, args...), asOf)...)
		if err != nil {
			return nil, nil, err
		}
		for rows.Next() {
			var body sql.NullString
			if err := rows.Scan(&body); err != nil {
				rows.Close()
				return nil, nil, err
			}
			if !body.Valid {
				continue
			}
			var n kura.Node
			if err := json.Unmarshal([]byte(body.String), &n); err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("node version: %w", err)
			}
			nodes = append(nodes, n)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, err
		}
	}
	// Only relations that can decide are read (admission.DecidingRelations).
	deciding, minConf := admission.DecidingRelations()
	relArgs := []any{sid, asOf, minConf}
	for _, k := range deciding {
		relArgs = append(relArgs, k)
	}
	rows, err := q.QueryContext(ctx, `SELECT r.id, r.kind, f.kind || ':' || f.id, t.kind || ':' || t.id, r.confidence, r.created_at
		FROM relations r JOIN nodes f ON f.nid = r.from_nid JOIN nodes t ON t.nid = r.to_nid
		WHERE r.sid = ? AND r.created_at <= ? AND r.confidence >= ?
		AND r.kind IN (?`+strings.Repeat(",?", len(deciding)-1)+`)`, relArgs...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var rels []kura.Relation
	for rows.Next() {
		var r kura.Relation
		if err := rows.Scan(&r.ID, &r.Kind, &r.From, &r.To, &r.Confidence, &r.CreatedAt); err != nil {
			return nil, nil, err
		}
		r.Scope = scope
		rels = append(rels, r)
	}
	return nodes, rels, rows.Err()
}

// compile builds a bundle (without an id) from one read snapshot.
func (db *DB) compile(ctx context.Context, scope string, req *admission.Request) (*admission.Bundle, error) {
	asOf, asked, err := db.validateCompile(req)
	if err != nil {
		return nil, err
	}
	rtx, err := db.beginRead(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rtx.Rollback()
	now := db.now()
	var sc *admission.Scope
	var rank admission.Ranking
	if asked {
		withText := req.Query != "" || len(req.TargetFiles) > 0
		nodes, rels, err := scopeMemory(ctx, rtx, scope, asOf, false, withText, req.Kinds)
		if err != nil {
			return nil, mapErr(err)
		}
		// The index holds today's text: memory as it was is ranked the same
		// way, over its own text.
		rank = rankPast(nodes, req.Query)
		sc = admission.Prepare(nodes, rels)
	} else {
		if sc, err = db.currentScope(ctx, rtx, scope, asOf); err != nil {
			return nil, mapErr(err)
		}
		if rank, err = compileRanking(ctx, rtx, db.pg != nil, scope, req.Query); err != nil {
			return nil, mapErr(err)
		}
	}
	res := sc.Compile(req, rank)
	if asked {
		t, _ := kura.ParseTime(asOf)
		if age := now.Sub(t); age > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("stale: memory as of %s is %s old", asOf, age.Round(time.Millisecond)))
		}
	}
	digest, err := admission.Digest(&res.Buckets)
	if err != nil {
		return nil, err
	}
	return &admission.Bundle{Digest: digest, Scope: scope, AsOf: asOf, Result: *res}, nil
}

// PreviewContext compiles without writing anything: no bundle, no event.
func (db *DB) PreviewContext(ctx context.Context, scope string, req *admission.Request) (json.RawMessage, error) {
	b, err := db.compile(ctx, scope, req)
	if err != nil {
		return nil, err
	}
	return admission.Encode(b)
}

const (
	qInsertBundle = "INSERT INTO context_bundles(id, scope, digest, as_of, body, created_at) VALUES(?,?,?,?,?,?)"
)

// CompileContext compiles and keeps the bundle, with its context.compiled
// event, in one transaction. The answer is the stored body, byte for byte.
func (db *DB) CompileContext(ctx context.Context, scope string, req *admission.Request, opts ...kura.WriteOption) (json.RawMessage, error) {
	b, err := db.compile(ctx, scope, req)
	if err != nil {
		return nil, err
	}
	b.BundleID = uuid.Must(uuid.NewV7()).String()
	body, err := admission.Encode(b)
	if err != nil {
		return nil, err
	}
	err = db.write(ctx, opts, func(tx *Tx) error {
		if err := tx.storeBundle(b, body); err != nil {
			return err
		}
		return tx.KeepAnswer(false, json.RawMessage(body))
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return body, nil
}

func (tx *Tx) storeBundle(b *admission.Bundle, body []byte) error {
	stored, err := packBundle(body)
	if err != nil {
		return err
	}
	if s, ok := stored.(string); ok && tx.db.pg != nil {
		stored = []byte(s) // PostgreSQL keeps both forms in one BYTEA column
	}
	if _, err := tx.Exec(qInsertBundle, b.BundleID, b.Scope, b.Digest, b.AsOf, stored, tx.NowString()); err != nil {
		return err
	}
	return tx.AddEvent(kura.EventContextCompiled, b.Scope, map[string]string{"bundle_id": b.BundleID}, b.Digest)
}

// packThreshold is the body size above which a bundle is kept gzipped.
// A bundle's trace lists every node of its scope (1.5 MB for 10,000
// nodes); gzip at its fastest shrinks that tenfold in a few milliseconds,
// far less than writing and syncing the plain text costs the writer.
// Small bundles stay plain JSON, readable with any SQLite tool.
const packThreshold = 64 << 10

// packBundle returns what context_bundles.body keeps for a compile's
// answer: the JSON as text, or a gzip stream as a blob.
func packBundle(body []byte) (any, error) {
	if len(body) < packThreshold {
		return string(body), nil
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// unpackBundle returns the answer a stored body holds, byte for byte.
func unpackBundle(stored []byte) ([]byte, error) {
	if len(stored) < 2 || stored[0] != 0x1f || stored[1] != 0x8b {
		return stored, nil // plain JSON starts with '{'
	}
	zr, err := gzip.NewReader(bytes.NewReader(stored))
	if err != nil {
		return nil, fmt.Errorf("stored bundle: %w", err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("stored bundle: %w", err)
	}
	return body, nil
}

// GetBundle returns a stored bundle exactly as compile answered it.
func (db *DB) GetBundle(ctx context.Context, scope, id string) (json.RawMessage, error) {
	if !kura.ValidID(id) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", id)
	}
	var stored []byte
	err := db.rdb.QueryRowContext(ctx, "SELECT body FROM context_bundles WHERE id = ? AND scope = ?", id, scope).Scan(&stored)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, kura.Errorf(kura.ENotFound, "no context bundle %s in scope %s", id, scope)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	body, err := unpackBundle(stored)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(body), nil
}
