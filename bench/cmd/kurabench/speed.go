package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/kura-memory/kura/bench/internal/evalset"
)

// The search speed phases of issue 18, on conversation text rather than
// the made-up vocabulary of memory_search: one scope of 100,000 dialog
// turns of the evaluation set's generator (written through the store, like
// the memory graph), queried with the set's own natural questions.
//
//	search_lexical_100k  mode=lexical, limit=10 and the default limit (100)
//	search_hybrid_100k   mode=hybrid with a kurad embedding through the
//	                     bench's stand-in endpoint (384 dimensions); the
//	                     phase waits until kurad's background worker has
//	                     embedded every node, then times searches with the
//	                     query embedding taken out (see searchHybridPhase)
const (
	speedScope         = "conversations"
	lexicalP99Target   = 10.0 // ms, lexical search over 100,000 nodes
	hybridP99Target    = 25.0 // ms, hybrid, query embedding excluded
	speedLimit         = 10
	embedFirstRequest  = 30 * time.Second
	embedQuiet         = 10 * time.Second
	speedWarmup        = 300
	speedDefaultShare  = 3 // the default-limit op runs a third as many queries
	turnsSeedOfSpeedDB = recallSeed + 1
)

// speedSizes: nodes of the scope, timed queries per op.
func (b *bench) speedSizes() (nodes, queries int) {
	if b.cfg.quick {
		return 20_000, 300
	}
	return 100_000, 3_000
}

// speedData is the data dir both speed phases read.
type speedData struct {
	dir       string
	nodes     int
	questions []string
	build     map[string]any
	err       error
}

var speedReaders = []string{"search_lexical_100k", "search_hybrid_100k"}

func (b *bench) speedShared(ctx context.Context) (*speedData, error) {
	if b.speed != nil {
		return b.speed, b.speed.err
	}
	n, _ := b.speedSizes()
	d := &speedData{dir: filepath.Join(b.tmp, "data-speed"), nodes: n}
	b.speed = d
	d.build, d.questions, d.err = b.buildTurns(ctx, d.dir, n)
	return d, d.err
}

// speedDone removes the shared data dir once no later selected phase reads it.
func (b *bench) speedDone(name string) {
	i := slices.Index(speedReaders, name)
	for _, later := range speedReaders[i+1:] {
		if b.wants(later) {
			return
		}
	}
	if b.speed != nil && !b.cfg.keep {
		_ = os.RemoveAll(b.speed.dir)
	}
}

// buildTurns writes n dialog turns of the evaluation set's generator (as
// many conversations as it takes) into scope speedScope of a fresh data
// dir, through the store, and returns the questions about the
// conversations written in full.
func (b *bench) buildTurns(ctx context.Context, dir string, n int) (map[string]any, []string, error) {
	build := map[string]any{"synchronous": buildSync, "scope": speedScope}
	convs := n/600 + 1
	var set *evalset.MemorySet
	for {
		set = evalset.Memory(evalset.MemoryConfig{Seed: turnsSeedOfSpeedDB, Conversations: convs})
		if set.Turns() >= n {
			break
		}
		convs += convs/4 + 1
	}
	turns := make([]*evalset.Turn, 0, n)
	whole := 0
	for ci := range set.Conversations {
		c := &set.Conversations[ci]
		if len(turns)+len(c.Turns) <= n {
			whole++
		}
		for i := range c.Turns {
			if len(turns) < n {
				turns = append(turns, &c.Turns[i])
			}
		}
	}
	var qs []string
	for _, q := range set.Questions {
		if q.Conv < whole {
			qs = append(qs, q.Text)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return build, nil, err
	}
	t0 := time.Now()
	db, err := openBuildStore(ctx, dir)
	if err != nil {
		return build, nil, err
	}
	defer db.Close(context.Background())
	b.logf("building scope %q through the store: %s conversation turns", speedScope, thousands(float64(n)))
	el, err := b.putNodes(ctx, db, speedScope, n, func(i int) nodeIn { return turnNode(turns[i]) })
	if err != nil {
		return build, nil, err
	}
	if err := closeBuildStore(ctx, db); err != nil {
		return build, nil, err
	}
	build["nodes"], build["conversations"], build["questions"] = n, convs, len(qs)
	build["nodes_seconds"] = round(el.Seconds())
	build["nodes_per_s"] = round(float64(n) / el.Seconds())
	build["total_seconds"] = round(time.Since(t0).Seconds())
	build["db_bytes"] = dbBytes(dir)
	return build, qs, nil
}

// checkSpeedSearch checks a search answer: JSON, at most limit results of
// the scope, each with a reason; it returns whether a result carries a
// semantic_match reason and whether the answer carries warnings.
func checkSpeedSearch(body []byte, limit int) (semantic, warned bool, err error) {
	var a searchAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return false, false, fmt.Errorf("search answer: %w", err)
	}
	if len(a.Results) > limit {
		return false, false, fmt.Errorf("%d results with limit=%d", len(a.Results), limit)
	}
	for _, r := range a.Results {
		if len(r.Reasons) == 0 {
			return false, false, fmt.Errorf("result %s has no reason", r.Ref)
		}
		for _, rs := range r.Reasons {
			semantic = semantic || rs.Code == "semantic_match"
		}
	}
	return semantic, len(a.Warnings) > 0, nil
}

func (b *bench) speedURL(k *kuradProc, q, mode string, limit int) string {
	u := k.base + "/v1/scopes/" + speedScope + "/memory/search?mode=" + mode + "&q=" + url.QueryEscape(q)
	if limit > 0 {
		u += fmt.Sprintf("&limit=%d", limit)
	}
	return u
}

func (b *bench) searchLexicalPhase(ctx context.Context) (*PhaseResult, error) {
	defer b.speedDone("search_lexical_100k")
	n, queries := b.speedSizes()
	res := &PhaseResult{
		Title:     fmt.Sprintf("GET /v1/scopes/%s/memory/search?q=<natural question>&mode=lexical over %s conversation turns", speedScope, thousands(float64(n))),
		Metric:    "ms",
		LatencyOf: fmt.Sprintf("one search, one client: limit=%d (op lexical) and the default limit of 100 (op lexical_limit_100)", speedLimit),
		DataDir:   "a data dir of dialog turns (episode nodes) of the recall set's generator, built through the store",
		Params:    map[string]any{"nodes": n, "queries": queries, "queries_default_limit": queries / speedDefaultShare},
	}
	d, err := b.speedShared(ctx)
	res.Params["speed_build"] = d.build
	if err != nil {
		return res, err
	}
	k, err := b.startKuradDir(ctx, d.dir, d.dir+"-lexical.log")
	if err != nil {
		return res, err
	}
	defer b.stopKuradKeep(k, res)
	q := func(i int) string { return d.questions[i%len(d.questions)] }
	if l, err := b.latencyLoop(ctx, k, speedWarmup, func(i int) (string, string, []byte) {
		return http.MethodGet, b.speedURL(k, q(i+queries), "lexical", speedLimit), nil
	}, nil); warmErr(l, err) != nil {
		return res, fmt.Errorf("warm-up searches: %w", warmErr(l, err))
	}
	var all []time.Duration
	var cpus []*CPU
	for _, op := range []struct {
		name         string
		limit, count int
	}{{"lexical", speedLimit, queries}, {"lexical_limit_100", 0, queries / speedDefaultShare}} {
		most := op.limit
		if most == 0 {
			most = 100
		}
		l, err := b.latencyLoop(ctx, k, op.count, func(i int) (string, string, []byte) {
			return http.MethodGet, b.speedURL(k, q(i), "lexical", op.limit), nil
		}, func(i int, body []byte) error {
			_, _, err := checkSpeedSearch(body, most)
			return err
		})
		if l != nil {
			run := l.run(op.name)
			res.Runs = append(res.Runs, run)
			all = append(all, l.lat...)
			cpus = append(cpus, l.cpu)
			res.Params["median_answer_bytes_"+op.name] = medianInt(l.sizes)
			b.logf("search %s: %d requests p50 %.2f ms p99 %.2f ms errors %d", op.name, len(l.lat), run.P50ms, run.P99ms, l.errs)
		}
		if err != nil {
			res.summarizeOps(all, sumCPU(cpus...))
			return res, err
		}
	}
	res.summarizeOps(all, sumCPU(cpus...))
	return res, res.runErrors()
}

// searchHybridPhase times hybrid search with the query embedding
// excluded. The stand-in endpoint answers from vectors it computes in
// microseconds, and it measures the time its handler spends on every
// request; the searches run one at a time, so the handler time that falls
// inside a search is that search's query embedding, and it is subtracted
// (op hybrid; the time as measured is op hybrid_raw, the subtracted time
// op query_embedding). What stays in is kurad's side of the embedding
// call: encoding the request, the loopback round trip, decoding 384
// numbers.
func (b *bench) searchHybridPhase(ctx context.Context) (*PhaseResult, error) {
	defer b.speedDone("search_hybrid_100k")
	n, queries := b.speedSizes()
	res := &PhaseResult{
		Title:     fmt.Sprintf("GET /v1/scopes/%s/memory/search?q=<natural question>&mode=hybrid&limit=%d over %s turns with %d-dimensional vectors", speedScope, speedLimit, thousands(float64(n)), standInDims),
		Metric:    "ms",
		LatencyOf: "one search, one client, less the stand-in embedder's handling of the query embedding (op hybrid; as measured: hybrid_raw)",
		DataDir:   "the data dir of search_lexical_100k, served by a kurad with KURA_EMBEDDER_URL set to the bench's stand-in endpoint, after its background worker embedded every node",
		Params:    map[string]any{"nodes": n, "queries": queries, "dimensions": standInDims, "embedder": "in-process stand-in, OpenAI /v1/embeddings protocol, deterministic hash-seeded vectors"},
	}
	d, err := b.speedShared(ctx)
	res.Params["speed_build"] = d.build
	if err != nil {
		return res, err
	}
	es, err := startEmbedServer("")
	if err != nil {
		return res, err
	}
	defer es.Close()
	k, err := b.startKuradEnv(ctx, d.dir, d.dir+"-hybrid.log", []string{"KURA_EMBEDDER_URL=" + es.URL(), "KURA_EMBEDDER_MODEL=" + standInModel})
	if err != nil {
		return res, err
	}
	defer b.stopKuradKeep(k, res)
	limit := 20 * time.Minute
	if b.cfg.quick {
		limit = 5 * time.Minute
	}
	prog, err := b.waitEmbedded(ctx, k, es, d.nodes, embedFirstRequest, embedQuiet, limit)
	res.Params["embedded"] = prog
	if errors.Is(err, errNoEmbedder) {
		var info map[string]any
		if st, body, err := b.do(ctx, http.MethodGet, k.base+"/v1/info", nil); err == nil && st == http.StatusOK {
			_ = json.Unmarshal(body, &info)
		}
		if infoMentions(info, "embed") {
			return res, fmt.Errorf("kurad's /v1/info names an embedder, but kurad made no request to %s within %s of ready", es.URL(), embedFirstRequest)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("skipped: the kurad under test made no request to the embeddings endpoint within %s of ready and its /v1/info names no embedder, so it has no embedder support; nothing was measured", embedFirstRequest))
		return res, nil
	}
	if err != nil {
		return res, err
	}
	// Fewer inputs than nodes can be right (kurad may embed an equal text
	// once); fewer than half means the nodes written through the store
	// were not embedded, and hybrid search would be measured over a few
	// vectors, which is not what the target is about.
	if prog.Inputs < int64(d.nodes/2) {
		return res, fmt.Errorf("kurad asked for %s embeddings for %s nodes and then stopped for %s: it does not embed the nodes already in its data dir", thousands(float64(prog.Inputs)), thousands(float64(d.nodes)), embedQuiet)
	}
	b.logf("embedded: %s inputs in %d requests, %.1f s (%s inputs/s), complete %v", thousands(float64(prog.Inputs)), prog.Requests, prog.Seconds, thousands(prog.InputsPerSec), prog.Complete)
	if !prog.Complete {
		res.Notes = append(res.Notes, fmt.Sprintf("kurad stopped asking for embeddings after %s inputs for %s nodes (equal texts embedded once, or nodes skipped); measured anyway", thousands(float64(prog.Inputs)), thousands(float64(d.nodes))))
	}
	q := func(i int) string { return d.questions[i%len(d.questions)] }
	if l, err := b.latencyLoop(ctx, k, speedWarmup, func(i int) (string, string, []byte) {
		return http.MethodGet, b.speedURL(k, q(i+queries), "hybrid", speedLimit), nil
	}, nil); warmErr(l, err) != nil {
		return res, fmt.Errorf("warm-up searches: %w", warmErr(l, err))
	}
	var before time.Duration
	var embed []time.Duration
	semantic, warned := 0, 0
	l, err := b.latencyLoop(ctx, k, queries, func(i int) (string, string, []byte) {
		before = es.stats().Busy
		return http.MethodGet, b.speedURL(k, q(i), "hybrid", speedLimit), nil
	}, func(i int, body []byte) error {
		embed = append(embed, es.stats().Busy-before)
		s, w, err := checkSpeedSearch(body, speedLimit)
		if s {
			semantic++
		}
		if w {
			warned++
		}
		return err
	})
	if l == nil {
		return res, err
	}
	adjusted := make([]time.Duration, len(l.lat))
	for i, x := range l.lat {
		adjusted[i] = max(x-embed[i], 0)
	}
	raw := l.run("hybrid_raw")
	adj := *l
	adj.lat = adjusted
	res.Runs = append(res.Runs, adj.run("hybrid"), raw)
	res.summarizeOps(adjusted, l.cpu)
	res.Ops["query_embedding"] = OpLatency{N: len(embed), P50ms: round(percentile(embed, 0.50)), P99ms: round(percentile(embed, 0.99))}
	res.Params["answers_with_semantic_match"] = semantic
	res.Params["answers_with_warnings"] = warned
	if semantic == 0 {
		res.Notes = append(res.Notes, "no answer carried a semantic_match reason: the vectors may not have been used")
	}
	if warned > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d answers carried warnings (an embedder problem degrades hybrid to lexical)", warned))
	}
	b.logf("hybrid: p99 %.2f ms (as measured %.2f ms, query embedding p99 %.3f ms), %d of %d answers with a semantic match", res.Ops["hybrid"].P99ms, raw.P99ms, res.Ops["query_embedding"].P99ms, semantic, len(l.lat))
	if err != nil {
		return res, err
	}
	return res, res.runErrors()
}

func judgeSpeed(b *bench) {
	n, _ := b.speedSizes()
	add := func(name, op string, want float64) {
		r := b.result(name)
		if r == nil || r.Error != "" {
			return
		}
		if o, ok := r.Ops[op]; ok {
			w := fmt.Sprint(want)
			r.Targets = append(r.Targets, Target{Short: op + " p99≤" + w + "ms", Text: fmt.Sprintf("%s search p99 over %d nodes ≤ %s ms", op, n, w),
				Op: "<=", Want: want, Got: o.P99ms, Pass: o.P99ms <= want})
		}
	}
	add("search_lexical_100k", "lexical", lexicalP99Target)
	add("search_lexical_100k", "lexical_limit_100", lexicalP99Target)
	add("search_hybrid_100k", "hybrid", hybridP99Target)
}

func printSpeed(w io.Writer, rep *Report) {
	var lines []string
	data := false
	for _, r := range rep.Phases {
		if !slices.Contains(speedReaders, r.Name) {
			continue
		}
		if len(r.Ops) == 0 {
			lines = append(lines, "  "+r.Name+"	not measured (see its notes below)")
			continue
		}
		line := "  " + r.Name
		for _, op := range []string{"lexical", "lexical_limit_100", "hybrid", "hybrid_raw", "query_embedding"} {
			if o, ok := r.Ops[op]; ok {
				line += fmt.Sprintf("\t%s %.2f / %.2f (n=%d)", op, o.P50ms, o.P99ms, o.N)
			}
		}
		lines = append(lines, line)
		if p, ok := r.Params["embedded"].(*embedProgress); ok && p != nil {
			lines = append(lines, fmt.Sprintf("  %s\tembedding by kurad's worker: %s inputs in %d requests, %.1f s (%s inputs/s), complete %v",
				r.Name, thousands(float64(p.Inputs)), p.Requests, p.Seconds, thousands(p.InputsPerSec), p.Complete))
		}
		if bm, ok := r.Params["speed_build"].(map[string]any); ok && bm["nodes_per_s"] != nil && !data {
			data = true
			lines = append(lines, fmt.Sprintf("  %s\tdata: %s turns of %v conversations through the store in %.1f s (%s nodes/s), %.0f MB on disk",
				r.Name, thousands(toF(bm["nodes"])), bm["conversations"], toF(bm["nodes_seconds"]), thousands(toF(bm["nodes_per_s"])), toF(bm["db_bytes"])/1e6))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\nsearch speed on conversation text (ms p50 / p99 per request kind)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	tw.Flush()
}
