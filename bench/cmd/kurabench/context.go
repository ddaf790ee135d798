package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
)

// The context phases (issue 6): preview and compile on one scope of N
// nodes and N/2 relations, written through the store in this process and
// served by a real kurad started on that data dir.
//
// Nodes are the memory phases' nodes (8 kinds, vocabulary text, weighted
// lifecycles and authorities, no lineage); relations join two random nodes
// of the scope, their kind uniform over the six kinds and their confidence
// uniform over 0.30..1.00, so rules 1 and 2 fire on some relations and not
// on others, and every bucket of the answer is used. Every request asks
// what a turn opened with memory asks (API.md: {"query", "budget_bytes":
// 8000}), with a query of one or two vocabulary words.
const (
	contextScope  = "ctx"
	contextBudget = 8000
)

// contextOps are the request kinds of a context phase.
var contextOps = []string{"preview", "compile"}

// ctxSize is one context phase's data and target.
type ctxSize struct {
	name        string
	nodes, rels int
	reqs        int     // timed requests of each kind
	target      float64 // p99 ms of each kind
}

// contextSizes are the two context phases at this run's sizes; the
// targets scale linearly with the nodes (only -quick shrinks them).
func (b *bench) contextSizes() []ctxSize {
	return []ctxSize{
		{"context_10k", b.cfg.ctxSmallN, b.cfg.ctxSmallN / 2, b.cfg.ctxSmallK, 50 * float64(b.cfg.ctxSmallN) / 10_000},
		{"context_100k", b.cfg.ctxBigN, b.cfg.ctxBigN / 2, b.cfg.ctxBigK, 500 * float64(b.cfg.ctxBigN) / 100_000},
	}
}

func (b *bench) contextSize(name string) ctxSize {
	for _, c := range b.contextSizes() {
		if c.name == name {
			return c
		}
	}
	panic("no context phase " + name)
}

func (b *bench) contextPhase(ctx context.Context, c ctxSize) (*PhaseResult, error) {
	res := &PhaseResult{
		Title:     fmt.Sprintf("POST /v1/scopes/{scope}/context/preview and /compile, %s nodes and %s relations", thousands(float64(c.nodes)), thousands(float64(c.rels))),
		Metric:    "ms",
		LatencyOf: "one preview or compile request, one client (p50/p99 of each kind under ops; median and p50/p99 over both)",
		DataDir:   "fresh data dir for this phase, built through the store, then one kurad",
		Params: map[string]any{
			"nodes": c.nodes, "relations": c.rels, "timed_requests_per_kind": c.reqs,
			"request": fmt.Sprintf(`{"query": 1-2 vocabulary words, "budget_bytes": %d}`, contextBudget),
		},
	}
	dir := filepath.Join(b.tmp, "data-"+c.name)
	build, err := b.buildContext(ctx, dir, "", c)
	res.Params["build"] = build
	if err != nil {
		return res, err
	}
	res.Params["build_summary"] = fmt.Sprintf("%s nodes in %.1f s (%s nodes/s), %s relations in %.1f s (%s relations/s, 32 writers), %.0f MB on disk",
		thousands(float64(c.nodes)), toF(build["nodes_seconds"]), thousands(toF(build["nodes_per_s"])),
		thousands(float64(c.rels)), toF(build["relations_seconds"]), thousands(toF(build["relations_per_s"])), toF(build["db_bytes"])/1e6)
	k, err := b.startKuradDir(ctx, dir, dir+".log")
	if err != nil {
		return res, err
	}
	defer b.stopKurad(k, res)
	base := k.base + "/v1/scopes/" + contextScope + "/context/"
	r := rand.New(rand.NewPCG(51, uint64(c.nodes)))
	body := func() []byte {
		b, _ := json.Marshal(admission.Request{Query: distinctWords(r, 1+r.IntN(2)), BudgetBytes: contextBudget})
		return b
	}

	// Untimed: one preview and one compile checked in full (every bucket
	// used, trace of every node, the stored bundle served back byte for
	// byte), then a warm-up of previews.
	st, rb, err := b.do(ctx, http.MethodPost, base+"preview", body())
	if err != nil {
		return res, fmt.Errorf("first preview: %w", err)
	}
	if st != http.StatusOK {
		return res, httpError("POST context/preview (first)", st, rb)
	}
	buckets, err := checkBundle(rb, false, c.nodes)
	if err != nil {
		return res, fmt.Errorf("preview: %w", err)
	}
	res.Params["trace_buckets"] = buckets
	for _, bk := range admission.BucketOrder {
		if buckets[bk] == 0 {
			return res, fmt.Errorf("preview: no node in bucket %s (trace buckets %v): the scope does not exercise every rule", bk, buckets)
		}
	}
	st, rb, err = b.do(ctx, http.MethodPost, base+"compile", body())
	if err != nil {
		return res, fmt.Errorf("first compile: %w", err)
	}
	if st != http.StatusOK {
		return res, httpError("POST context/compile (first)", st, rb)
	}
	if _, err := checkBundle(rb, true, c.nodes); err != nil {
		return res, fmt.Errorf("compile: %w", err)
	}
	var id struct {
		BundleID string `json:"bundle_id"`
	}
	_ = json.Unmarshal(rb, &id)
	st, got, err := b.do(ctx, http.MethodGet, base+"bundles/"+id.BundleID, nil)
	if err != nil || st != http.StatusOK || strings.TrimSpace(string(got)) != strings.TrimSpace(string(rb)) {
		return res, fmt.Errorf("GET context/bundles/%s: %v status %d, %d bytes; want the compile answer (%d bytes) byte for byte", id.BundleID, err, st, len(got), len(rb))
	}
	res.Params["answer_bytes"] = len(rb)
	warm := max(3, c.reqs/10)
	if l, err := b.latencyLoop(ctx, k, warm, func(int) (string, string, []byte) { return http.MethodPost, base + "preview", body() }, nil); warmErr(l, err) != nil {
		return res, fmt.Errorf("warm-up previews: %w", warmErr(l, err))
	}

	var all []time.Duration
	var cpus []*CPU
	for _, op := range contextOps {
		bodies := make([][]byte, c.reqs)
		for i := range bodies {
			bodies[i] = body()
		}
		l, err := b.latencyLoop(ctx, k, c.reqs, func(i int) (string, string, []byte) {
			return http.MethodPost, base + op, bodies[i]
		}, func(_ int, rb []byte) error {
			_, err := checkBundle(rb, op == "compile", c.nodes)
			return err
		})
		if l != nil {
			run := l.run(op)
			res.Runs = append(res.Runs, run)
			all = append(all, l.lat...)
			cpus = append(cpus, l.cpu)
			b.logf("%s: %d requests p50 %.2f ms p99 %.2f ms errors %d (median answer %s bytes)", op, len(l.lat), run.P50ms, run.P99ms, l.errs, thousands(medianInt(l.sizes)))
		}
		if err != nil {
			res.summarizeOps(all, sumCPU(cpus...))
			return res, err
		}
	}
	res.summarizeOps(all, sumCPU(cpus...))
	return res, res.runErrors()
}

// buildContext writes the phase's scope through the store: nodes in
// batches, then relations from 32 concurrent writers (kurad's writer
// groups them into shared transactions; there is no batch relation write).
// A url keeps the data in that PostgreSQL database instead of dir.
func (b *bench) buildContext(ctx context.Context, dir, url string, c ctxSize) (map[string]any, error) {
	build := map[string]any{"synchronous": buildSync}
	if url != "" {
		build = map[string]any{"store": "postgresql"}
	}
	db, err := openBuildStoreAt(ctx, dir, url)
	if err != nil {
		return build, err
	}
	defer db.Close(context.Background())
	r := rand.New(rand.NewPCG(41, uint64(c.nodes)))
	b.logf("building scope %q through the store: %s nodes, %s relations", contextScope, thousands(float64(c.nodes)), thousands(float64(c.rels)))
	el, err := b.putNodes(ctx, db, contextScope, c.nodes, func(i int) nodeIn { return genNode(r, kindOf(i), "c"+strconv.Itoa(i), nil) })
	if err != nil {
		return build, err
	}
	build["nodes_seconds"] = round(el.Seconds())
	build["nodes_per_s"] = round(float64(c.nodes) / el.Seconds())

	rels := make([]kura.RelationInput, c.rels)
	kinds := map[string]int{}
	for i := range rels {
		from, to := r.IntN(c.nodes), r.IntN(c.nodes-1)
		if to >= from {
			to++
		}
		conf := float64(30+r.IntN(71)) / 100
		rels[i] = kura.RelationInput{Kind: kura.RelationKind[r.IntN(len(kura.RelationKind))], From: nodeRef("c", from), To: nodeRef("c", to),
			Confidence: &conf, Reasons: []string{"bench"}}
		kinds[rels[i].Kind]++
	}
	build["relation_kinds"] = kinds
	t0 := time.Now()
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if _, err := db.CreateRelation(ctx, contextScope, &rels[i]); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("store CreateRelation %d: %w", i, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range rels {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return build, firstErr
	}
	if err := ctx.Err(); err != nil {
		return build, err
	}
	el = time.Since(t0)
	build["relations_seconds"] = round(el.Seconds())
	build["relations_per_s"] = round(float64(c.rels) / el.Seconds())
	if err := closeBuildStore(ctx, db); err != nil {
		return build, err
	}
	if url == "" {
		build["db_bytes"] = dbBytes(dir)
	} else if n, err := pgDatabaseBytes(ctx, url); err == nil {
		build["db_bytes"] = n
	}
	b.logf("built %s: %s", dir, fmtBuild(build))
	return build, nil
}

// checkBundle checks a preview or compile answer: a digest, the scope, a
// bundle id exactly for compile, a trace entry for every node, items
// within the budget, and each bucket's items plus omitted equal to the
// trace's count for it. It returns the trace's count per bucket.
func checkBundle(body []byte, compile bool, nodes int) (map[string]int, error) {
	var out struct {
		BundleID string `json:"bundle_id"`
		Digest   string `json:"digest"`
		Scope    string `json:"scope"`
		AsOf     string `json:"as_of"`
		Buckets  map[string][]struct {
			Ref string `json:"ref"`
		} `json:"buckets"`
		Trace []struct {
			Bucket string `json:"bucket"`
		} `json:"trace"`
		Omitted map[string]int `json:"omitted"`
		Bytes   int            `json:"bytes"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("answer: %w", err)
	}
	if compile != kura.ValidID(out.BundleID) {
		return nil, fmt.Errorf("bundle_id %q (compile %v)", out.BundleID, compile)
	}
	if hex, ok := strings.CutPrefix(out.Digest, "sha256:"); !ok || !kura.ValidHash(hex) || out.Scope != contextScope || out.AsOf == "" {
		return nil, fmt.Errorf("digest %q, scope %q, as_of %q", out.Digest, out.Scope, out.AsOf)
	}
	if len(out.Trace) != nodes {
		return nil, fmt.Errorf("trace lists %d nodes, the scope has %d", len(out.Trace), nodes)
	}
	if out.Bytes > contextBudget {
		return nil, fmt.Errorf("bytes %d over budget_bytes %d", out.Bytes, contextBudget)
	}
	counts := map[string]int{}
	for _, t := range out.Trace {
		counts[t.Bucket]++
	}
	for _, bk := range admission.BucketOrder {
		if got := len(out.Buckets[bk]) + out.Omitted[bk]; got != counts[bk] {
			return nil, fmt.Errorf("bucket %s: %d items + %d omitted, the trace puts %d nodes there", bk, len(out.Buckets[bk]), out.Omitted[bk], counts[bk])
		}
	}
	return counts, nil
}
