package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/provenance"
)

// Provenance reads walk the lineage table and leave the shaping to
// internal/provenance. The walks go over the two indexes of lineage
// ((child, parent) backward, (parent, child) forward), breadth first, one
// query per level, each vertex expanded once, within a budget of edges
// (provenance_walk.go); vertex details then come in one query per table over
// the whole visited set.
//
// Scopes: writes resolve derived_from inside the writer's scope, so a
// node's parents are records or nodes of its scope, and so are its
// children. Records are the exception: they are global, and many scopes
// may cite one. The walks therefore check the scope only on a step forward
// out of a record (fromRecordInScope, with the parent vertex and the scope
// parameter); elsewhere the check would cost a lookup per edge to re-prove
// what writes guarantee. Node details are read for the scope only, so even
// a damaged table cannot show another scope's node.
const fromRecordInScope = "(%[1]s > 0 OR EXISTS (SELECT 1 FROM nodes s WHERE s.nid = l.child AND s.sid = %[2]s))"

// Derived items carry only what a derived item shows (docs/api.md lists
// no summary). CROSS JOIN fixes the join order (SQLite never reorders one) and
// the unary + keeps nodes_updated(sid, ...) out of reach: left to itself the
// planner may scan the whole scope, a million rows in a large one, to find
// the few nodes the walk reached.
var qDerivedNodes = `SELECT n.nid, n.kind, n.id, n.title, n.source_type, n.created_at
		FROM json_each(?1) j CROSS JOIN nodes n ON n.nid = CAST(j.value AS BIGINT) WHERE +n.sid = ?2`

// Vertex details. Text is cut in SQL (substr counts characters, so the cut
// is on a character boundary; Go then cuts to bytes), so a large summary
// or record content never leaves the database whole. A record whose
// content is a JSON string shows the string itself. The unary + on n.sid
// keeps the planner off nodes_updated(sid, ...): with it, SQLite would scan
// the whole scope (a million rows in a large one) instead of probing the
// few keys by primary key.
const (
	nodeDetailCols = `n.nid, n.kind, n.id, n.title, substr(n.summary, 1, 280), n.source_type, n.confidence,
		n.lifecycle, n.created_at`
	qLineageNodes = `SELECT ` + nodeDetailCols + ` FROM nodes n
		WHERE n.nid IN (SELECT CAST(value AS BIGINT) FROM json_each(?1)) AND +n.sid = ?2`
	sqlRecordText = `CASE WHEN r.content IS NULL THEN ''
		WHEN substr(r.content, 1, 1) = '"' THEN substr(json_extract(r.content, '$'), 1, 280)
		ELSE substr(r.content, 1, 280) END`
	qLineageRecords = `SELECT -lr.vid, r.id, r.type, ` + sqlRecordText + `, r.author_id, r.redacted, r.created_at
		FROM lineage_records lr JOIN records r ON r.id = lr.record_id WHERE lr.vid IN (SELECT -CAST(value AS BIGINT) FROM json_each(?1))`
	qRecordRoot = `SELECT coalesce(lr.vid, 0), r.id, r.type, ` + sqlRecordText + `, r.author_id, r.redacted, r.created_at
		FROM records r LEFT JOIN lineage_records lr ON lr.record_id = r.id WHERE r.id = ?`
)

// lineageRoot is the resolved subject of a provenance read.
type lineageRoot struct {
	sid  int64 // 0 when the scope was never written
	key  int64 // lineage vertex; 0 for a record no node ever cited
	ref  string
	node *kura.Node
	rec  *provenance.Vertex
}

// parseLineageRef checks a provenance ref: a node ref or record:<id>.
func (db *DB) parseLineageRef(s string) (kura.Ref, error) {
	r, ok := kura.ParseRef(s, db.nodeKinds(), true)
	if !ok {
		return r, kura.Invalid("ref", "%q is not a node ref (kind:id) or record:<id>", s).WithDetail("allowed_kinds", slices.Concat(db.nodeKinds(), []string{"record"}))
	}
	return r, nil
}

// resolveLineage finds what ref names in scope. A record needs no scope:
// records are global, and one cited nowhere in this scope (or a scope never
// written) simply has no lineage here. A node must exist in the scope.
func (db *DB) resolveLineage(ctx context.Context, tx *sql.Tx, scope string, r kura.Ref) (*lineageRoot, error) {
	root := &lineageRoot{ref: r.String()}
	err := tx.QueryRowContext(ctx, "SELECT sid FROM scopes WHERE name = ?", scope).Scan(&root.sid)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if r.IsRecord() {
		v := &provenance.Vertex{Kind: "record"}
		var text string
		var redacted int
		err := tx.QueryRowContext(ctx, qRecordRoot, r.ID).Scan(&root.key, &v.ID, &v.Type, &text, &v.AuthorID, &redacted, &v.CreatedAt)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, kura.Errorf(kura.ENotFound, "no record %s", r.ID)
		}
		if err != nil {
			return nil, err
		}
		root.key = -root.key
		v.Text, v.Redacted, v.SourceType = provenance.Cut(text, provenance.TextBytes), redacted != 0, kura.RecordSourceType
		root.rec = v
		return root, nil
	}
	notFound := kura.Errorf(kura.ENotFound, "no node %s in scope %s", r, scope)
	if root.sid == 0 {
		return nil, notFound
	}
	n, err := scanNode(tx.QueryRowContext(ctx, "SELECT "+nodeCols+" FROM nodes n WHERE n.sid = ? AND n.kind = ? AND n.id = ?", root.sid, r.Kind, r.ID), scope)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	root.key, root.node = n.nid, &n.Node
	return root, nil
}

// readLineage runs fn in one read-only transaction, so every query of a
// provenance read sees the same snapshot: a node written between the walk
// and the detail query cannot show up half-known.
func (db *DB) readLineage(ctx context.Context, scope, ref string, fn func(tx *sql.Tx, root *lineageRoot) error) error {
	if !kura.ValidSlug(scope) {
		return kura.Invalid("scope", "scope must match ^[a-z0-9][a-z0-9_-]{0,63}$")
	}
	r, err := db.parseLineageRef(ref)
	if err != nil {
		return err
	}
	tx, done, err := db.beginHeavyRead(ctx)
	if err != nil {
		return mapErr(err)
	}
	defer done()
	root, err := db.resolveLineage(ctx, tx, scope, r)
	if err != nil {
		return mapErr(err)
	}
	return mapErr(fn(tx, root))
}

// Trace answers the lineage tree of ref in scope: backward (sources),
// forward (derived) or both, depth levels deep (1..10).
func (db *DB) Trace(ctx context.Context, scope, ref, direction string, depth int) (*kura.Trace, error) {
	switch direction {
	case kura.DirectionBackward, kura.DirectionForward, kura.DirectionBoth:
	default:
		return nil, kura.Invalid("direction", "direction must be backward, forward or both, not %q", direction)
	}
	if depth < 1 || depth > kura.MaxTraceDepth {
		return nil, kura.Invalid("depth", "depth must be from 1 to %d, not %d", kura.MaxTraceDepth, depth)
	}
	var out *kura.Trace
	err := db.readLineage(ctx, scope, ref, func(tx *sql.Tx, root *lineageRoot) error {
		t := &kura.Trace{Direction: direction, Depth: depth}
		if root.node != nil {
			t.Memory.Node = root.node
		} else {
			it := root.rec.Item()
			t.Memory.Record = &it
		}
		for _, forward := range []bool{false, true} {
			if forward && direction == kura.DirectionBackward || !forward && direction == kura.DirectionForward {
				continue
			}
			items, truncated, err := db.traceTree(ctx, tx, root, depth, forward)
			if err != nil {
				return err
			}
			t.Truncated = t.Truncated || truncated
			if forward {
				t.Forward = &kura.TraceForward{Derived: items}
				continue
			}
			t.Backward = &kura.TraceBackward{Sources: items}
			if root.node != nil {
				t.Backward.SourceType, t.Backward.CreatedAt = root.node.SourceType, root.node.CreatedAt
			} else {
				t.Backward.SourceType, t.Backward.CreatedAt = root.rec.SourceType, root.rec.CreatedAt
			}
		}
		out = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// traceTree walks one direction to depth (asking the vertices at the limit
// whether they have more lineage) and builds the tree.
func (db *DB) traceTree(ctx context.Context, tx *sql.Tx, root *lineageRoot, depth int, forward bool) ([]kura.Lineage, bool, error) {
	w := newLineageWalk(root, forward, depth, traceWalkEdges)
	if err := w.run(ctx, tx, db.pg != nil); err != nil {
		return nil, false, err
	}
	vs, err := lineageVertices(ctx, tx, root.sid, w.within(depth))
	if err == nil {
		// A request given up during the walk shapes nothing.
		err = ctx.Err()
	}
	if err != nil {
		return nil, false, err
	}
	items, truncated := provenance.Tree(w.graph(), vs, depth, provenance.MaxTraceItems, forward)
	return items, truncated || w.truncated, nil
}

// closure walks the whole lineage of the root in one direction and fetches
// every vertex it reached. truncated says the walk ran out of its budget.
func (db *DB) closure(ctx context.Context, tx *sql.Tx, root *lineageRoot, forward bool) (g *provenance.Graph, vs map[int64]*provenance.Vertex, truncated bool, err error) {
	w := newLineageWalk(root, forward, -1, closureWalkEdges)
	if err := w.run(ctx, tx, db.pg != nil); err != nil {
		return nil, nil, false, err
	}
	g = w.graph()
	if forward {
		vs = make(map[int64]*provenance.Vertex, len(w.reached)+1)
		if root.rec != nil {
			vs[root.key] = root.rec
		}
		err = derivedVertices(ctx, tx, root, g, w.reached, vs)
	} else {
		vs, err = lineageVertices(ctx, tx, root.sid, w.reached)
		if root.rec != nil && err == nil {
			vs[root.key] = root.rec
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, nil, false, err
	}
	return g, vs, w.truncated, nil
}

// derivedVertices fetches the nodes a forward closure reached, with only
// what a derived item carries. An edge to a vertex without details is
// dropped, as is the vertex, so the answer never steps through another
// scope: that vertex is a node of another scope, which only a damaged table
// could link (writes never do, and the walk checks every step out of a
// record).
func derivedVertices(ctx context.Context, tx *sql.Tx, root *lineageRoot, g *provenance.Graph, reached []int64, vs map[int64]*provenance.Vertex) error {
	if len(reached) == 0 {
		return nil
	}
	reached = slices.Clone(reached)
	slices.Sort(reached)
	// One allocation for every vertex rather than one each.
	buf := make([]provenance.Vertex, len(reached))
	n := 0
	err := eachRow(ctx, tx, qDerivedNodes, []any{keysJSON(reached), root.sid}, func(rows *sql.Rows) error {
		if n == len(buf) {
			return fmt.Errorf("derived: more node rows than nodes reached")
		}
		v := &buf[n]
		var k int64
		if err := rows.Scan(&k, &v.Kind, &v.ID, &v.Title, &v.SourceType, &v.CreatedAt); err != nil {
			return err
		}
		n++
		vs[k] = v
		return nil
	})
	if err != nil {
		return err
	}
	if n < len(reached) {
		for p, cs := range g.Next {
			g.Next[p] = slices.DeleteFunc(cs, func(c int64) bool { return vs[c] == nil })
		}
	}
	return nil
}

// scanNodeVertex reads nodeDetailCols.
func scanNodeVertex(row rowScanner) (int64, *provenance.Vertex, error) {
	var k int64
	v := &provenance.Vertex{}
	if err := row.Scan(&k, &v.Kind, &v.ID, &v.Title, &v.Summary, &v.SourceType, &v.Confidence, &v.Lifecycle, &v.CreatedAt); err != nil {
		return 0, nil, err
	}
	v.Summary = provenance.Cut(v.Summary, provenance.TextBytes)
	return k, v, nil
}

// lineageVertices fetches what each vertex is: nodes of the scope in one
// query, records in another, whatever the number of vertices.
func lineageVertices(ctx context.Context, tx *sql.Tx, sid int64, keys []int64) (map[int64]*provenance.Vertex, error) {
	vs := make(map[int64]*provenance.Vertex, len(keys))
	var nodes, recs []byte
	for _, k := range keys {
		if k > 0 {
			nodes = appendKey(nodes, k)
		} else if k < 0 {
			recs = appendKey(recs, k)
		}
	}
	if nodes != nil {
		err := eachRow(ctx, tx, qLineageNodes, []any{string(append(nodes, ']')), sid}, func(rows *sql.Rows) error {
			k, v, err := scanNodeVertex(rows)
			if err != nil {
				return err
			}
			vs[k] = v
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if recs != nil {
		err := eachRow(ctx, tx, qLineageRecords, []any{string(append(recs, ']'))}, func(rows *sql.Rows) error {
			var k int64
			var redacted int
			v := &provenance.Vertex{Kind: "record", SourceType: kura.RecordSourceType}
			if err := rows.Scan(&k, &v.ID, &v.Type, &v.Text, &v.AuthorID, &redacted, &v.CreatedAt); err != nil {
				return err
			}
			v.Text, v.Redacted = provenance.Cut(v.Text, provenance.TextBytes), redacted != 0
			vs[k] = v
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return vs, nil
}

// eachRow runs q in tx and calls fn on every row. The rows are closed
// before it returns: the queries of one read share the transaction's one
// connection, so each result set must be done with before the next starts.
func eachRow(ctx context.Context, tx *sql.Tx, q string, args []any, fn func(*sql.Rows) error) error {
	rows, err := tx.QueryContext(ctx, q, args...)
	return scanRows(rows, err, fn)
}

// scanRows calls fn on every row of a query's result and closes it.
func scanRows(rows *sql.Rows, err error, fn func(*sql.Rows) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// appendKey adds k to a JSON array being built in b (json_each reads it:
// one bound parameter however many keys).
func appendKey(b []byte, k int64) []byte {
	if b == nil {
		b = append(b, '[')
	} else {
		b = append(b, ',')
	}
	return strconv.AppendInt(b, k, 10)
}

// Evidence lists the episodes, notes and records in ref's whole backward
// lineage, each once.
func (db *DB) Evidence(ctx context.Context, scope, ref string) (*kura.Evidence, error) {
	var out *kura.Evidence
	err := db.readLineage(ctx, scope, ref, func(tx *sql.Tx, root *lineageRoot) error {
		g, vs, truncated, err := db.closure(ctx, tx, root, false)
		if err != nil {
			return err
		}
		out = provenance.Evidence(root.ref, g, vs)
		out.Truncated = truncated
		return nil
	})
	return out, err
}

// RawSources lists the records at the roots of ref's lineage.
func (db *DB) RawSources(ctx context.Context, scope, ref string) (*kura.RawSources, error) {
	var out *kura.RawSources
	err := db.readLineage(ctx, scope, ref, func(tx *sql.Tx, root *lineageRoot) error {
		g, vs, truncated, err := db.closure(ctx, tx, root, false)
		if err != nil {
			return err
		}
		out = provenance.RawSources(root.ref, g, vs)
		out.Truncated = truncated
		return nil
	})
	return out, err
}

// Derived lists every node of the scope transitively derived from ref,
// complete.
func (db *DB) Derived(ctx context.Context, scope, ref string) (*kura.Derived, error) {
	var out *kura.Derived
	err := db.readLineage(ctx, scope, ref, func(tx *sql.Tx, root *lineageRoot) error {
		g, vs, truncated, err := db.closure(ctx, tx, root, true)
		if err != nil {
			return err
		}
		out = provenance.Derived(root.ref, g, vs)
		out.Truncated = truncated
		return nil
	})
	return out, err
}
