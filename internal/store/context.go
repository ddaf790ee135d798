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
	"time"

	"github.com/google/uuid"
	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
)

// validateCompile checks a request and returns its as_of (now when absent)
// and whether it was asked for.
func (db *DB) validateCompile(req *admission.Request) (string, bool, error) {
	if len(req.Query) > admission.MaxQueryBytes {
		return "", false, kura.Invalid("query", "query is longer than %d bytes", admission.MaxQueryBytes)
	}
	if len(req.TargetFiles) > kura.MaxTargetFiles {
		return "", false, kura.Invalid("target_files", "at most %d target files", kura.MaxTargetFiles)
	}
	for _, k := range req.Kinds {
		if !slices.Contains(db.nodeKinds(), k) {
			return "", false, kura.Invalid("kinds", "unknown node kind %q", k).WithDetail("allowed", db.nodeKinds())
		}
	}
	if err := req.Check(""); err != nil {
		return "", false, err
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
	var texts admission.Texts
	if asked {
		withText := req.Query != "" || len(req.TargetFiles) > 0
		// The index holds today's text: memory as it was is ranked the same
		// way, over its own text, read one node at a time.
		ranker := newPastRanker(req.Query)
		read, err := scopeMemory(ctx, rtx, scope, asOf, false, withText, req.Kinds, ranker)
		if err != nil {
			return nil, mapErr(err)
		}
		rank = ranker.ranking()
		sc = admission.Prepare(read.nodes, read.rels)
		texts = summaries(ctx, rtx, db.pg != nil, read.nids, asOf, true)
	} else {
		var nids map[string]int64
		if sc, nids, err = db.currentScope(ctx, rtx, scope, asOf); err != nil {
			return nil, mapErr(err)
		}
		if rank, err = compileRanking(ctx, rtx, db.pg != nil, scope, req.Query); err != nil {
			return nil, mapErr(err)
		}
		texts = summaries(ctx, rtx, db.pg != nil, nids, "", false)
	}
	res, err := sc.Compile(req, rank, texts)
	if err != nil {
		return nil, mapErr(err)
	}
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
// The bundle's trace is written from the compile's order as the caller
// encodes it (admission.WriteBundle), so a preview holds no copy of it.
func (db *DB) PreviewContext(ctx context.Context, scope string, req *admission.Request) (*admission.Bundle, error) {
	return db.compile(ctx, scope, req)
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
	stored, err := db.packBundle(body)
	if err != nil {
		return nil, err
	}
	b.Result = admission.Result{} // the items are in body now: not held while the write waits
	err = db.write(ctx, opts, func(tx *Tx) error {
		if err := tx.storeBundle(b, stored); err != nil {
			return err
		}
		return tx.KeepAnswer(false, json.RawMessage(body))
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return body, nil
}

// encodeBundle is a bundle as context_bundles keeps it.
func (db *DB) encodeBundle(b *admission.Bundle) (any, error) {
	body, err := admission.Encode(b)
	if err != nil {
		return nil, err
	}
	return db.packBundle(body)
}

// storeBundle keeps b, stored as packBundle made it, and its event.
func (tx *Tx) storeBundle(b *admission.Bundle, stored any) error {
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
// answer: the JSON as text, or a gzip stream as a blob. It runs before
// the write, so that the writer only stores it.
func (db *DB) packBundle(body []byte) (any, error) {
	if len(body) < packThreshold {
		if db.pg != nil {
			return body, nil // PostgreSQL keeps both forms in one BYTEA column
		}
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
