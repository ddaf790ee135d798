package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
)

// defaultEmbedQueryTimeout bounds embedding a search's query: a search
// waits this long at most for the embedder before it answers by words.
const defaultEmbedQueryTimeout = 2 * time.Second

// SearchMemory answers GET .../memory/search in every mode. lexical is
// SearchNodes. semantic ranks the scope's nodes by the cosine between
// their vectors and the query's; hybrid fuses the lexical and the
// semantic lists by reciprocal rank (recall.Fuse). Without an embedder, or
// when it does not answer in time, a semantic or hybrid search answers by
// words and says so in Warnings: search never fails for the embedder.
func (db *DB) SearchMemory(ctx context.Context, scope string, q kura.SearchQuery) (*kura.SearchAnswer, error) {
	emb := db.cfg.Embedder
	mode := q.Mode
	if mode == "" {
		mode = kura.SearchLexical
		if emb != nil {
			mode = kura.SearchHybrid
		}
	}
	if !slices.Contains(kura.SearchModes, mode) {
		return nil, kura.Invalid("mode", "mode must be one of %s", strings.Join(kura.SearchModes, ", "))
	}
	ans := &kura.SearchAnswer{Results: []kura.SearchResult{}}
	lq := q
	lq.Mode = kura.SearchLexical
	byWords := func() (*kura.SearchAnswer, error) {
		res, err := db.SearchNodes(ctx, scope, lq)
		if err != nil {
			return nil, err
		}
		ans.Results = res
		return ans, nil
	}
	// Without words there is nothing to embed: the filters alone select
	// (or, for a q of punctuation only, nothing), as in lexical search.
	if mode == kura.SearchLexical || len(recall.Words(q.Q)) == 0 {
		return byWords()
	}
	if emb == nil {
		ans.Warnings = append(ans.Warnings, "mode="+mode+" needs an embedder and none is configured (KURA_EMBEDDER_URL); these results are by words only")
		return byWords()
	}
	lexical := func() ([]kura.SearchResult, error) { return db.SearchNodes(ctx, scope, lq) }
	if mode == kura.SearchHybrid {
		// A hybrid search needs the words list whatever the embedder
		// does: it runs while the query is embedded (the longest part of
		// a search on a small machine) and the semantic list is ranked.
		lexical = db.searchNodesAsync(ctx, scope, lq)
		defer lexical() // never outlive the search
	}
	qv, err := db.embedQuery(ctx, emb, q.Q)
	if err != nil {
		if ctx.Err() != nil {
			return nil, mapErr(ctx.Err())
		}
		if now := time.Now(); now.Sub(time.Unix(0, db.embed.queryLog.Load())) > time.Minute {
			// Once a minute at most: while the embedder is down every
			// search would say it.
			db.embed.queryLog.Store(now.UnixNano())
			db.log.Warn("a search's query could not be embedded; searches are answered by words", "err", err)
		}
		ans.Warnings = append(ans.Warnings, "the embedder did not answer ("+publicError(err)+"); these results are by words only")
		if ans.Results, err = lexical(); err != nil {
			return nil, err
		}
		return ans, nil
	}
	sid, ok, err := db.readScope(ctx, scope)
	if err != nil || !ok {
		return ans, err
	}
	k := q.Limit
	if k <= 0 {
		k = 100
	}
	model := emb.Model()
	sem, err := db.semanticHits(ctx, sid, model, qv, q, k)
	if err != nil {
		return nil, err
	}
	nodes, err := db.nodesByNID(ctx, scope, sem)
	if err != nil {
		return nil, err
	}
	semReason := func(h semanticHit) kura.SearchReason {
		return kura.SearchReason{Code: "semantic_match", Detail: strconv.FormatFloat(h.cos, 'f', 3, 64) + " " + model}
	}
	semResult := func(h semanticHit) kura.SearchResult {
		n := nodes[h.nid]
		reasons := append([]kura.SearchReason{semReason(h)}, filterReasons(q, &n.Node)...)
		return kura.SearchResult{Ref: n.Ref, Reasons: reasons, Node: &n.Node}
	}
	if mode == kura.SearchSemantic {
		for _, h := range sem {
			r := semResult(h)
			r.Score = recall.RoundScore(max(0, h.cos))
			ans.Results = append(ans.Results, r)
		}
		return ans, nil
	}
	lex, err := lexical()
	if err != nil {
		return nil, err
	}
	ans.Results = fuseResults(lex, sem, nodes, semResult, semReason, k)
	return ans, nil
}

// searchNodesAsync starts SearchNodes and returns what waits for its
// answer (once; later calls return the same).
func (db *DB) searchNodesAsync(ctx context.Context, scope string, q kura.SearchQuery) func() ([]kura.SearchResult, error) {
	type answer struct {
		res []kura.SearchResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := db.SearchNodes(ctx, scope, q)
		done <- answer{res, err}
	}()
	return sync.OnceValues(func() ([]kura.SearchResult, error) {
		a := <-done
		return a.res, a.err
	})
}

// fuseResults merges the lexical results and the semantic hits by
// reciprocal rank, k at most. A node in both keeps its lexical reasons and
// gains a semantic_match before its filter reasons; score is the fused
// score, so it falls as the order does.
func fuseResults(lex []kura.SearchResult, sem []semanticHit, nodes map[int64]*nodeRow,
	semResult func(semanticHit) kura.SearchResult, semReason func(semanticHit) kura.SearchReason, k int) []kura.SearchResult {
	lexRefs := make([]string, len(lex))
	for i, r := range lex {
		lexRefs[i] = r.Ref
	}
	semRefs := make([]string, len(sem))
	for i, h := range sem {
		semRefs[i] = nodes[h.nid].Ref
	}
	fused := recall.Fuse(lexRefs, semRefs)
	out := make([]kura.SearchResult, 0, min(k, len(fused)))
	for _, f := range fused[:min(k, len(fused))] {
		var r kura.SearchResult
		switch li, si := f.Ranks[0], f.Ranks[1]; {
		case li > 0 && si > 0:
			r = lex[li-1]
			r.Reasons = insertBeforeFilters(r.Reasons, semReason(sem[si-1]))
		case li > 0:
			r = lex[li-1]
		default:
			r = semResult(sem[si-1])
		}
		r.Score = recall.RoundScore(f.Score)
		out = append(out, r)
	}
	return out
}

// insertBeforeFilters adds a match reason after the other match reasons
// and before the *_filter ones, the order results list reasons in.
func insertBeforeFilters(rs []kura.SearchReason, r kura.SearchReason) []kura.SearchReason {
	i := len(rs)
	for j, x := range rs {
		if strings.HasSuffix(x.Code, "_filter") {
			i = j
			break
		}
	}
	return slices.Insert(slices.Clone(rs), i, r)
}

// embedQuery embeds a search's query under the query timeout.
func (db *DB) embedQuery(ctx context.Context, emb Embedder, q string) ([]float32, error) {
	d := db.cfg.EmbedQueryTimeout
	if d <= 0 {
		d = defaultEmbedQueryTimeout
	}
	qctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	vs, err := emb.Embed(qctx, []string{truncate(q, maxEmbedText)})
	if err == nil && (len(vs) != 1 || len(vs[0]) == 0) {
		err = fmt.Errorf("embedder answered %d vectors for one query", len(vs))
	}
	if err != nil {
		if ctx.Err() == nil { // not a caller who went away
			db.embed.note(err, db.now())
		}
		return nil, err
	}
	return vs[0], nil
}

// semanticHit is a node near the query, with the cosine of the angle.
type semanticHit struct {
	nid int64
	cos float64
}

// Rerank pool bounds: how many candidates the codes pick for exact
// cosine, and how far a filtered search widens its look.
const (
	minRerank     = 256
	maxRerank     = 4096
	maxCandidates = 16384
)

// semanticHits returns the k nodes of scope sid nearest to the query
// vector qv among those passing q's filters, best first (ties: older
// node first). Only vectors of model, of the query's dimensions and of
// the node's current version count: a node without one is not a hit.
func (db *DB) semanticHits(ctx context.Context, sid int64, model string, qv []float32, q kura.SearchQuery, k int) ([]semanticHit, error) {
	e, err := db.scopeVectors(ctx, sid, model, len(qv))
	if err != nil {
		return nil, err
	}
	pool := min(max(4*k, minRerank), maxRerank)
	// Filters (and vectors of older versions) may drop most candidates:
	// widen the look until enough pass or the index is used up.
	target := min(max(2*k, 64), pool)
	where, fargs := filterSQL(q)
	var hits []semanticHit
	seen := map[int64]bool{}
	for want := pool; ; want *= 4 {
		cands, total := e.nearest(qv, min(want, maxCandidates))
		fresh := make([]int64, 0, len(cands))
		for _, nid := range cands {
			if !seen[nid] {
				seen[nid] = true
				fresh = append(fresh, nid)
			}
		}
		if len(fresh) > 0 {
			got, err := db.rerank(ctx, sid, fresh, model, qv, where, fargs)
			if err != nil {
				return nil, err
			}
			hits = append(hits, got...)
		}
		if len(hits) >= target || len(cands) >= total || len(cands) >= maxCandidates {
			break
		}
	}
	slices.SortFunc(hits, func(a, b semanticHit) int {
		if a.cos != b.cos {
			if a.cos > b.cos {
				return -1
			}
			return 1
		}
		return int(a.nid - b.nid)
	})
	return hits[:min(k, len(hits))], nil
}

// rerank reads the stored vectors of candidate nodes of scope sid that
// pass the filters and measures each against qv exactly.
func (db *DB) rerank(ctx context.Context, sid int64, nids []int64, model string, qv []float32, where string, fargs []any) ([]semanticHit, error) {
	var keys []byte
	for _, nid := range nids {
		keys = appendKey(keys, nid)
	}
	// The candidates come from the scope's own index; the scope is
	// checked again here, where the nodes are read, all the same.
	args := append([]any{string(append(keys, ']')), sid, model, len(qv)}, fargs...)
	rows, err := db.rdb.QueryContext(ctx, `SELECT v.nid, v.vec FROM json_each(?) j
		CROSS JOIN node_vectors v ON v.nid = CAST(j.value AS BIGINT)
		CROSS JOIN nodes n ON n.nid = v.nid
		WHERE n.sid = ? AND v.model = ? AND v.dims = ? AND v.version = n.version`+where, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []semanticHit
	var buf []float32
	var raw sql.RawBytes // the driver's copy, not another
	for rows.Next() {
		var nid int64
		if err := rows.Scan(&nid, &raw); err != nil {
			return nil, mapErr(err)
		}
		if buf, err = decodeVector(buf, raw); err != nil {
			return nil, fmt.Errorf("node %d: %w", nid, err)
		}
		out = append(out, semanticHit{nid: nid, cos: cosine(qv, buf)})
	}
	return out, mapErr(rows.Err())
}

// nodesByNID reads the nodes of semantic hits.
func (db *DB) nodesByNID(ctx context.Context, scope string, hits []semanticHit) (map[int64]*nodeRow, error) {
	out := make(map[int64]*nodeRow, len(hits))
	if len(hits) == 0 {
		return out, nil
	}
	var keys []byte
	for _, h := range hits {
		keys = appendKey(keys, h.nid)
	}
	rows, err := db.rdb.QueryContext(ctx, "SELECT "+nodeCols+" FROM json_each(?) j CROSS JOIN nodes n ON n.nid = CAST(j.value AS BIGINT)", string(append(keys, ']')))
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		n, err := scanNode(rows, scope)
		if err != nil {
			return nil, mapErr(err)
		}
		out[n.nid] = n
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	for _, h := range hits {
		if out[h.nid] == nil {
			// Nodes are never deleted: a hit without its node is damage.
			return nil, fmt.Errorf("semantic hit: node %d is missing", h.nid)
		}
	}
	return out, nil
}

// filterSQL is the search filters as conditions on nodes n, the same
// SearchNodes applies.
func filterSQL(q kura.SearchQuery) (string, []any) {
	var where strings.Builder
	var args []any
	for _, c := range []struct{ col, v string }{
		{"kind", q.Kind}, {"lifecycle", q.Lifecycle}, {"authority", q.Authority}, {"owner", q.Owner},
	} {
		if c.v != "" {
			where.WriteString(" AND n." + c.col + " = ?")
			args = append(args, c.v)
		}
	}
	if q.TargetFile != "" {
		where.WriteString(" AND EXISTS (SELECT 1 FROM json_each(n.target_files) WHERE value = ?)")
		args = append(args, q.TargetFile)
	}
	if q.MinConfidence != nil {
		where.WriteString(" AND n.confidence >= ?")
		args = append(args, *q.MinConfidence)
	}
	return where.String(), args
}

// filterReasons are the reasons of the filters a result passed, as
// SearchNodes gives them.
func filterReasons(q kura.SearchQuery, n *kura.Node) []kura.SearchReason {
	var out []kura.SearchReason
	for _, c := range []struct{ v, code string }{
		{q.Kind, "kind_filter"}, {q.Lifecycle, "lifecycle_filter"}, {q.Authority, "authority_filter"},
		{q.Owner, "owner_filter"}, {q.TargetFile, "target_file_filter"},
	} {
		if c.v != "" {
			out = append(out, kura.SearchReason{Code: c.code, Detail: c.v})
		}
	}
	if q.MinConfidence != nil {
		out = append(out, kura.SearchReason{Code: "min_confidence_filter",
			Detail: strconv.FormatFloat(n.Confidence, 'f', -1, 64) + " >= " + strconv.FormatFloat(*q.MinConfidence, 'f', -1, 64)})
	}
	return out
}
