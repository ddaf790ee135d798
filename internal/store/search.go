package store

import (
	"context"
	"strconv"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/memory"
)

// scoreSQL sums the field weights of the matching index rows.
var scoreSQL = "sum(" + memory.WeightSQL("fields") + ")"

// SearchNodes answers GET .../memory/search. With query words, candidates
// come from the word index (only nodes holding a query word are touched)
// and are ranked in SQL by the same weights memory.Score explains; ties go
// to the ref, so the order is deterministic. Without words, the filters
// alone select, newest first. Search writes nothing.
func (db *DB) SearchNodes(ctx context.Context, scope string, q kura.SearchQuery) ([]kura.SearchResult, error) {
	out := []kura.SearchResult{}
	sid, ok, err := db.readScope(ctx, scope)
	if err != nil || !ok {
		return out, err
	}
	words := memory.Words(q.Q)
	if q.Q != "" && len(words) == 0 {
		return out, nil
	}
	var where strings.Builder
	var fargs []any
	var filters []kura.SearchReason
	for _, c := range []struct{ col, v, code string }{
		{"kind", q.Kind, "kind_filter"}, {"lifecycle", q.Lifecycle, "lifecycle_filter"},
		{"authority", q.Authority, "authority_filter"}, {"owner", q.Owner, "owner_filter"},
	} {
		if c.v != "" {
			where.WriteString(" AND n." + c.col + " = ?")
			fargs = append(fargs, c.v)
			filters = append(filters, kura.SearchReason{Code: c.code, Detail: c.v})
		}
	}
	if q.TargetFile != "" {
		where.WriteString(" AND EXISTS (SELECT 1 FROM json_each(n.target_files) WHERE value = ?)")
		fargs = append(fargs, q.TargetFile)
		filters = append(filters, kura.SearchReason{Code: "target_file_filter", Detail: q.TargetFile})
	}
	if q.MinConfidence != nil {
		where.WriteString(" AND n.confidence >= ?")
		fargs = append(fargs, *q.MinConfidence)
	}
	var sqlq string
	var args []any
	if len(words) > 0 {
		sqlq = "SELECT " + nodeCols + ", s.score FROM (SELECT nid, " + scoreSQL + " AS score FROM node_terms WHERE sid = ? AND term IN (?" +
			strings.Repeat(",?", len(words)-1) + ") GROUP BY nid) s CROSS JOIN nodes n ON n.nid = s.nid WHERE 1" + where.String() +
			" ORDER BY s.score DESC, n.kind, n.id LIMIT " + strconv.Itoa(q.Limit)
		args = append(args, sid)
		for _, w := range words {
			args = append(args, w)
		}
		args = append(args, fargs...)
	} else {
		sqlq = "SELECT " + nodeCols + ", 0 FROM nodes n WHERE n.sid = ?" + where.String() +
			" ORDER BY n.updated_at DESC, n.kind, n.id LIMIT " + strconv.Itoa(q.Limit)
		args = append(append(args, sid), fargs...)
	}
	rows, err := db.rdb.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var score int
		n, err := scanNode(extraScan{rows, []any{&score}}, scope)
		if err != nil {
			return nil, mapErr(err)
		}
		got, reasons := memory.Score(memory.Terms(&n.Node), words)
		if got != score {
			// The index and the node disagree: the node's own text wins,
			// and the log says the index needs a look.
			db.log.Warn("search index out of step with a node", "scope", scope, "ref", n.Ref, "index_score", score, "node_score", got)
		}
		reasons = append(reasons, filters...)
		if q.MinConfidence != nil {
			reasons = append(reasons, kura.SearchReason{Code: "min_confidence_filter",
				Detail: strconv.FormatFloat(n.Confidence, 'f', -1, 64) + " >= " + strconv.FormatFloat(*q.MinConfidence, 'f', -1, 64)})
		}
		if reasons == nil {
			reasons = []kura.SearchReason{}
		}
		node := n.Node
		out = append(out, kura.SearchResult{Ref: n.Ref, Score: got, Reasons: reasons, Node: &node})
	}
	return out, mapErr(rows.Err())
}

// extraScan scans a row whose leading columns are another scanner's and
// whose trailing ones go to extra.
type extraScan struct {
	r     rowScanner
	extra []any
}

func (e extraScan) Scan(dst ...any) error { return e.r.Scan(append(dst, e.extra...)...) }
