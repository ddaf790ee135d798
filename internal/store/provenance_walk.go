package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kura-memory/kura/internal/provenance"
)

// Every provenance read walks the lineage breadth first from its root, one
// query per level: the level's vertices go in as one JSON array (in key
// order, so the index probes move forward) and the query lists every edge
// out of them. A Go map is the visited set, so each vertex is expanded once,
// at its shortest distance, whatever the number of paths that reach it: the
// cost is linear in the edges read. (A recursive CTE carrying the depth, as
// trace once used, expands a vertex once per path length and parent: six
// seconds of CPU on a dense graph of 300 nodes.)
//
// Each walk has a budget of edges. A level's query asks for at most what is
// left of it plus one, so one request can never read more than its budget
// however dense the graph; a walk that runs out stops and its answer says
// truncated.
const (
	// traceWalkEdges bounds a trace's walk, per direction. A trace shows at
	// most provenance.MaxTraceItems items, each an edge met at a vertex's
	// shortest distance, so this lets it reach the cap on any reasonable
	// graph while a dense one stops early.
	traceWalkEdges = 2 * provenance.MaxTraceItems
	// closureWalkEdges bounds the whole-lineage walks (evidence, raw
	// sources, derived): ten times the largest lineage the benchmark
	// derives (10,000 nodes, 19,900 edges), about 0.2 s of one core.
	closureWalkEdges = 200_000
)

var (
	// qLevelUp lists the parents of a level's vertices, a row per vertex
	// with its parents as one comma-separated list: a dense level is tens
	// of thousands of edges, and a row through database/sql costs more
	// than SQLite's reading it. Records have no parents: the walk never
	// puts one in a backward level. The rows are computed as they are
	// read, so a walk that stops reading when its budget runs out stops
	// the query too; the LIMIT (what is left of the budget) bounds the one
	// vertex being read then.
	qLevelUp = `SELECT CAST(j.value AS BIGINT), (SELECT group_concat(CAST(e.t AS TEXT)) FROM (
		SELECT l.parent AS t FROM lineage l WHERE l.child = CAST(j.value AS BIGINT) LIMIT ?2) e)
		FROM json_each(?1) j`
	// qLevelDown lists the children of a level's vertices, stepping out of
	// a record only into the scope's nodes.
	qLevelDown = `SELECT CAST(j.value AS BIGINT), (SELECT group_concat(CAST(e.t AS TEXT)) FROM (
		SELECT l.child AS t FROM lineage l WHERE l.parent = CAST(j.value AS BIGINT)
		AND ` + fmt.Sprintf(fromRecordInScope, "l.parent", "?2") + ` LIMIT ?3) e)
		FROM json_each(?1) j`
	// qEdgesUp and qEdgesDown list a level's edges a row each: what a
	// closure's levels read (no depth limit). A closure's levels are wide
	// and their vertices have a few neighbours each, where a row per edge
	// costs less than a subquery per vertex: on make bench's derived shape
	// (10,000 descendants, 19,900 edges) the walk took ~25 ms this way and
	// ~60 ms by qLevelDown. The LIMIT (what is left of the budget) stops
	// the query as the subquery's does.
	qEdgesUp = `SELECT CAST(j.value AS BIGINT), l.parent FROM json_each(?1) j
		CROSS JOIN lineage l ON l.child = CAST(j.value AS BIGINT) LIMIT ?2`
	qEdgesDown = `SELECT l.parent, l.child FROM json_each(?1) j
		CROSS JOIN lineage l ON l.parent = CAST(j.value AS BIGINT)
		WHERE ` + fmt.Sprintf(fromRecordInScope, "l.parent", "?2") + ` LIMIT ?3`
	// qMoreUp and qMoreDown list the vertices of a level that have any
	// neighbour: the look-ahead of a walk to a depth limit, one row per
	// vertex however many neighbours it has.
	qMoreUp = `SELECT CAST(j.value AS BIGINT) FROM json_each(?1) j
		WHERE EXISTS (SELECT 1 FROM lineage l WHERE l.child = CAST(j.value AS BIGINT))
		LIMIT ?2`
	qMoreDown = `SELECT CAST(j.value AS BIGINT) FROM json_each(?1) j
		WHERE EXISTS (SELECT 1 FROM lineage l WHERE l.parent = CAST(j.value AS BIGINT)
			AND ` + fmt.Sprintf(fromRecordInScope, "l.parent", "?2") + `)
		LIMIT ?3`
	// qRestUp and qRestDown are the rest of a closure's walk as one
	// recursive CTE seeded with a level (see walkRest). UNION on the vertex
	// alone expands each vertex once. The inner LIMIT bounds the vertices
	// SQLite collects (PostgreSQL allows no LIMIT in a recursive term and
	// evaluates the CTE only as far as the outer query reads it:
	// pgRestWalk); the outer LIMIT bounds the edges.
	qRestUp = `WITH RECURSIVE c(v) AS (
		SELECT CAST(value AS BIGINT) FROM json_each(?1)
		UNION
		SELECT l.parent FROM c JOIN lineage l ON l.child = c.v WHERE c.v > 0
		LIMIT ?2
	) SELECT l.child, l.parent FROM c CROSS JOIN lineage l ON l.child = c.v WHERE c.v > 0 LIMIT ?2`
	qRestDown = `WITH RECURSIVE c(v) AS (
		SELECT CAST(value AS BIGINT) FROM json_each(?1)
		UNION
		SELECT l.child FROM c JOIN lineage l ON l.parent = c.v
		WHERE ` + fmt.Sprintf(fromRecordInScope, "c.v", "?2") + `
		LIMIT ?3
	) SELECT l.parent, l.child FROM c CROSS JOIN lineage l ON l.parent = c.v
		WHERE ` + fmt.Sprintf(fromRecordInScope, "c.v", "?2") + ` LIMIT ?3`
)

// A closure's walk by levels costs a query per level, ~10-20 µs before its
// first row, where the CTE costs a few µs a vertex: a deep and narrow graph
// (a long revision chain) would pay that per vertex; 5,000 deep took ~80 ms
// by levels against ~35 ms for the CTE. So past restLevels levels, the first
// level of fewer than restNarrow vertices hands the rest of the walk to one
// CTE. Wide levels stay with Go however deep they go: 100 levels of 100 took
// ~55 ms walked by level, ~95 ms by the CTE. A trace (at most 11 levels)
// never gets there.
const (
	restLevels = 16
	restNarrow = 16
)

// pgRestWalk drops the inner LIMIT of qRestUp and qRestDown, which
// PostgreSQL refuses in a recursive query; the outer one still stops it.
func pgRestWalk(q string) string {
	q = strings.Replace(q, "\n\t\tLIMIT ?2\n\t)", "\n\t)", 1)
	return strings.Replace(q, "\n\t\tLIMIT ?3\n\t)", "\n\t)", 1)
}

// args are the parameters of the walk's queries for the vertices in keys:
// the backward ones take no scope (PostgreSQL refuses a parameter a
// statement does not use).
func (w *lineageWalk) args(keys string) []any {
	if w.forward {
		return []any{keys, w.root.sid, w.budget + 1}
	}
	return []any{keys, w.budget + 1}
}

// lineageWalk is one breadth-first walk of the lineage from a root.
type lineageWalk struct {
	root    *lineageRoot
	forward bool
	// levels is how deep the walk goes: the root's neighbours are level 1;
	// the vertices at level levels are asked only whether they have
	// neighbours (more). Negative: no limit.
	levels int
	budget int // edges the walk may still read

	next    map[int64][]int64 // the edges read, from each expanded vertex
	more    map[int64]bool    // vertices at the level limit with neighbours
	reached []int64           // every vertex met, in order, not the root
	depth   map[int64]int     // each vertex's level (shortest distance)
	// truncated is set when the budget ran out: some edges were not read.
	truncated bool
}

func newLineageWalk(root *lineageRoot, forward bool, levels, budget int) *lineageWalk {
	return &lineageWalk{root: root, forward: forward, levels: levels, budget: budget,
		next: map[int64][]int64{}, depth: map[int64]int{root.key: 0}}
}

// run walks from the root until no vertex is left to expand, the level
// limit, or the budget.
func (w *lineageWalk) run(ctx context.Context, tx *sql.Tx, pg bool) error {
	if w.root.key == 0 {
		return nil
	}
	q, read := qLevelUp, w.neighbours
	if w.forward {
		q = qLevelDown
	}
	if w.levels < 0 {
		q, read = qEdgesUp, w.levelEdge
		if w.forward {
			q = qEdgesDown
		}
	}
	stmt, err := tx.PrepareContext(ctx, q)
	if err != nil {
		return err
	}
	defer stmt.Close()
	level := []int64{w.root.key}
	for d := 1; len(level) > 0; d++ {
		// A copy: level is the tail of w.reached, which stays in the
		// order met. Records have no parents: a backward walk asks
		// nothing of them.
		level = slices.DeleteFunc(slices.Clone(level), func(k int64) bool { return !w.forward && k < 0 })
		if len(level) == 0 {
			break
		}
		slices.Sort(level)
		keys := keysJSON(level)
		if d-1 == w.levels {
			return w.lookAhead(ctx, tx, keys)
		}
		if w.levels < 0 && d > restLevels && len(level) < restNarrow {
			return w.rest(ctx, tx, pg, keys)
		}
		first := len(w.reached)
		rows, err := stmt.QueryContext(ctx, w.args(keys)...)
		err = scanRows(rows, err, func(rows *sql.Rows) error { return read(rows, d) })
		if err != nil && !errors.Is(err, errBudgetSpent) {
			return err
		}
		if w.budget < 0 {
			w.truncated = true
			return nil
		}
		level = w.reached[first:]
	}
	return ctx.Err()
}

// neighbours reads one vertex's neighbours met at level d, a
// comma-separated list.
func (w *lineageWalk) neighbours(rows *sql.Rows, d int) error {
	var from int64
	var list []byte // valid until the next row: parsed here
	if err := rows.Scan(&from, &list); err != nil {
		return err
	}
	for len(list) > 0 {
		i := bytes.IndexByte(list, ',')
		if i < 0 {
			i = len(list)
		}
		to, err := strconv.ParseInt(string(list[:i]), 10, 64)
		if err != nil {
			return fmt.Errorf("lineage level: %w", err)
		}
		w.add(from, to, d)
		list = list[min(i+1, len(list)):]
	}
	if w.budget < 0 {
		return errBudgetSpent
	}
	return nil
}

// errBudgetSpent stops reading a level's rows once the walk's budget is
// spent.
var errBudgetSpent = errors.New("lineage walk: budget spent")

// levelEdge reads one edge of a closure's level d.
func (w *lineageWalk) levelEdge(rows *sql.Rows, d int) error {
	if err := w.edge(rows, d); err != nil {
		return err
	}
	if w.budget < 0 {
		return errBudgetSpent
	}
	return nil
}

// edge reads one edge met at level d.
func (w *lineageWalk) edge(rows *sql.Rows, d int) error {
	var from, to int64
	if err := rows.Scan(&from, &to); err != nil {
		return err
	}
	w.add(from, to, d)
	return nil
}

// add counts an edge met at level d against the budget and keeps it.
func (w *lineageWalk) add(from, to int64, d int) {
	w.budget--
	if w.budget < 0 {
		// The one edge past the budget: proof that something is left out.
		return
	}
	w.next[from] = append(w.next[from], to)
	if _, seen := w.depth[to]; !seen {
		w.depth[to] = d
		w.reached = append(w.reached, to)
	}
}

// lookAhead marks the vertices in keys, at the level limit, that have
// neighbours, without reading them.
func (w *lineageWalk) lookAhead(ctx context.Context, tx *sql.Tx, keys string) error {
	q := qMoreUp
	if w.forward {
		q = qMoreDown
	}
	w.more = map[int64]bool{}
	rows, err := tx.QueryContext(ctx, q, w.args(keys)...)
	err = scanRows(rows, err, func(rows *sql.Rows) error {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return err
		}
		if w.budget--; w.budget >= 0 {
			w.more[v] = true
		}
		return nil
	})
	if w.budget < 0 {
		w.truncated = true
	}
	return err
}

// rest finishes a closure's walk with one recursive CTE seeded with the
// level in keys. It may list again the edges of a vertex the levels
// expanded (met again by a longer path); a repeated edge changes no depth,
// and the closures compute depths from the graph, not from w.depth.
func (w *lineageWalk) rest(ctx context.Context, tx *sql.Tx, pg bool, keys string) error {
	q := qRestUp
	if w.forward {
		q = qRestDown
	}
	if pg {
		q = pgRestWalk(q)
	}
	rows, err := tx.QueryContext(ctx, q, w.args(keys)...)
	if err := scanRows(rows, err, func(rows *sql.Rows) error { return w.edge(rows, -1) }); err != nil {
		return err
	}
	if w.budget < 0 {
		w.truncated = true
	}
	return nil
}

// within returns the vertices reached at depth 1 to maxDepth.
func (w *lineageWalk) within(maxDepth int) []int64 {
	out := make([]int64, 0, len(w.reached))
	for _, v := range w.reached {
		if d := w.depth[v]; d >= 1 && d <= maxDepth {
			out = append(out, v)
		}
	}
	return out
}

// graph is the walked part of the lineage, for internal/provenance.
func (w *lineageWalk) graph() *provenance.Graph {
	return &provenance.Graph{Root: w.root.key, Next: w.next, More: w.more}
}

// keysJSON is keys as a JSON array (json_each reads it: one bound
// parameter however many keys).
func keysJSON(keys []int64) string {
	var b []byte
	for _, k := range keys {
		b = appendKey(b, k)
	}
	return string(append(b, ']'))
}
