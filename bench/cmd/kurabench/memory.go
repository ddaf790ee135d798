package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// The memory graph phases (issue 5): memory_ingest writes nodes through the
// API on a fresh kurad; memory_trace, memory_derived and memory_search read
// the data dir memdata.go builds through the store, each on its own kurad
// started on it. The read phases time one request at a time (latencyLoop).

// The targets on the 2-core box.
const (
	traceDepth     = 3
	traceP99Target = 10.0    // ms, trace depth 3, any graph size
	derivedTarget  = 100.0   // ms for 10,000 descendants
	searchTarget   = 20.0    // ms p99 over a 100,000-node scope
	ingestTarget   = 10000.0 // nodes/s through POST .../memory/nodes/batch (issue 18; issue 5 asked 5,000)
)

// startMemKurad starts kurad on the shared data dir for one phase.
func (b *bench) startMemKurad(ctx context.Context, d *memData, name string) (*kuradProc, error) {
	return b.startKuradDir(ctx, d.dir, d.dir+"-"+name+".log")
}

// stopKuradKeep stops kurad like stopKurad but leaves its data dir.
func (b *bench) stopKuradKeep(k *kuradProc, res *PhaseResult) {
	if err := k.stop(); err != nil {
		res.Notes = append(res.Notes, "shutdown: "+err.Error()+"\nlog tail:\n"+tail(k.logPath, 1024))
	}
}

// loop is what one timed sequence of requests saw.
type loop struct {
	lat      []time.Duration
	sizes    []int
	errs     int
	statuses map[int]int
	firstErr string
	elapsed  time.Duration
	cpu      *CPU
}

// latencyLoop sends n requests one after another, from one client: the
// targets are per-request latency, so a lone client measures the request
// and not a queue. A request is timed from just before it is sent to its
// last body byte read; check then looks at the answer, off the clock. A
// wrong answer ends the loop with an error; transport errors and other
// statuses are counted (50 in a row end it).
func (b *bench) latencyLoop(ctx context.Context, k *kuradProc, n int, req func(i int) (string, string, []byte), check func(i int, body []byte) error) (*loop, error) {
	l := &loop{statuses: map[int]int{}}
	cpu := k.meter()
	t0 := time.Now()
	consecutive := 0
	for i := 0; i < n && ctx.Err() == nil; i++ {
		method, u, body := req(i)
		s := time.Now()
		st, rb, err := b.do(ctx, method, u, body)
		el := time.Since(s)
		if err == nil {
			l.statuses[st]++
		}
		if err != nil || st != http.StatusOK {
			l.errs++
			consecutive++
			if l.firstErr == "" {
				if err != nil {
					l.firstErr = err.Error()
				} else {
					l.firstErr = httpError(method+" "+u, st, rb).Error()
				}
			}
			if consecutive >= maxConsecutiveErrors {
				break
			}
			continue
		}
		consecutive = 0
		l.lat = append(l.lat, el)
		l.sizes = append(l.sizes, len(rb))
		if check != nil {
			if err := check(i, rb); err != nil {
				l.elapsed, l.cpu = time.Since(t0), cpu.stop()
				return l, fmt.Errorf("%s %s: %w", method, u, err)
			}
		}
	}
	l.elapsed, l.cpu = time.Since(t0), cpu.stop()
	return l, ctx.Err()
}

// warmErr is why an untimed loop failed, or nil.
func warmErr(l *loop, err error) error {
	if err != nil {
		return err
	}
	if l.errs > 0 {
		return fmt.Errorf("%d requests failed; first: %s", l.errs, l.firstErr)
	}
	return nil
}

// run turns a loop into a Run labelled op.
func (l *loop) run(op string) Run {
	xs := make([]float64, len(l.lat))
	for i, d := range l.lat {
		xs[i] = ms(d)
	}
	return Run{Op: op, Requests: len(l.lat) + l.errs, Errors: l.errs, Seconds: round(l.elapsed.Seconds()),
		Ms: round(median(xs)), P50ms: round(percentile(l.lat, 0.50)), P99ms: round(percentile(l.lat, 0.99)),
		CPU: l.cpu, Statuses: l.statuses, FirstError: l.firstErr}
}

func medianInt(xs []int) float64 {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return median(f)
}

// summarizeOps sets a latency phase's figures from runs labelled by op:
// the median and p50/p99 over every request of the phase, each op's n,
// p50 and p99, and the CPU over the whole timed part.
func (r *PhaseResult) summarizeOps(all []time.Duration, cpu *CPU) {
	xs := make([]float64, len(all))
	for i, d := range all {
		xs[i] = ms(d)
	}
	r.Median = round(median(xs))
	r.P50ms = round(percentile(all, 0.50))
	r.P99ms = round(percentile(all, 0.99))
	r.Ops = map[string]OpLatency{}
	for _, x := range r.Runs {
		if x.Op != "" {
			r.Ops[x.Op] = OpLatency{N: x.Requests - x.Errors, P50ms: x.P50ms, P99ms: x.P99ms}
		}
	}
	if cpu != nil {
		r.CPU = *cpu
	}
}

// sumCPU adds meters taken back to back into one over their whole span.
func sumCPU(cs ...*CPU) *CPU {
	var t CPU
	var busy float64
	for _, c := range cs {
		if c == nil {
			continue
		}
		t.WallSeconds += c.WallSeconds
		t.BenchSeconds += c.BenchSeconds
		t.KuradSeconds += c.KuradSeconds
		t.PostgresSeconds += c.PostgresSeconds
		busy += c.OtherShare * c.WallSeconds
	}
	if t.WallSeconds > 0 {
		capacity := t.WallSeconds * float64(runtime.NumCPU())
		t.BenchShare = round(t.BenchSeconds / capacity)
		t.KuradShare = round(t.KuradSeconds / capacity)
		t.PostgresShare = round(t.PostgresSeconds / capacity)
		t.OtherShare = round(busy / t.WallSeconds)
	}
	t.WallSeconds, t.BenchSeconds, t.KuradSeconds, t.PostgresSeconds = round(t.WallSeconds), round(t.BenchSeconds), round(t.KuradSeconds), round(t.PostgresSeconds)
	return &t
}

// memIngestPhase: POST .../memory/nodes/batch, 1,000 nodes a request,
// from batchCli clients, on a fresh kurad per run.
func (b *bench) memIngestPhase(ctx context.Context) (*PhaseResult, error) {
	res := &PhaseResult{
		Title:     fmt.Sprintf("POST /v1/scopes/{scope}/memory/nodes/batch ×%d, %d clients", nodesPerBatch, b.cfg.batchCli),
		Metric:    "nodes/s",
		LatencyOf: fmt.Sprintf("request (%d nodes)", nodesPerBatch),
		DataDir:   "fresh kurad and data dir per run (holding only the warm-up batch)",
		Params: map[string]any{
			"clients":          b.cfg.batchCli,
			"nodes_per_req":    nodesPerBatch,
			"requests_per_run": b.cfg.memIngestReqs,
			"node":             "kind of 8, 2-word title, 3-5-word summary, mixed lifecycle/authority; derived_from up to 2 earlier nodes of the same request (l/2 and one of the 100 before)",
		},
	}
	for run := range b.cfg.runs {
		r, err := b.memIngestRun(ctx, run, res)
		if err != nil {
			return res, err
		}
		res.Runs = append(res.Runs, r)
	}
	res.summarizeThroughput()
	return res, res.runErrors()
}

// ingestBody is one request of the ingest phase: nodes of scope-unique ids
// tag-<first+j>, each derived from up to two earlier nodes of the same
// request (two requests in flight must not depend on each other).
func ingestBody(r *rand.Rand, tag string, first int) ([]byte, []nodeIn) {
	ns := make([]nodeIn, nodesPerBatch)
	for j := range ns {
		var ps []string
		if j >= 1 {
			ps = append(ps, nodeRef(tag, first+j/2))
		}
		if j >= 2 {
			p := j - 1 - r.IntN(min(j-1, 100))
			if p != j/2 {
				ps = append(ps, nodeRef(tag, first+p))
			}
		}
		ns[j] = genNode(r, kindOf(first+j), tag+strconv.Itoa(first+j), ps)
	}
	body, _ := json.Marshal(map[string]any{"nodes": ns})
	return body, ns
}

func (b *bench) memIngestRun(ctx context.Context, run int, res *PhaseResult) (Run, error) {
	k, err := b.startKurad(ctx, fmt.Sprintf("memingest-%d", run))
	if err != nil {
		return Run{}, err
	}
	defer b.stopKurad(k, res)
	u := k.base + "/v1/scopes/ingest/memory/nodes/batch"
	r := rand.New(rand.NewPCG(uint64(run), 11))
	// One untimed request checks the answer and warms kurad up.
	body, sent := ingestBody(r, "w", 0)
	st, rb, err := b.post(ctx, u, body, true)
	if err != nil {
		return Run{}, fmt.Errorf("POST nodes/batch: %w", err)
	}
	if st != http.StatusCreated {
		return Run{}, httpError("POST /v1/scopes/ingest/memory/nodes/batch", st, rb)
	}
	var out kura.NodeBatch
	if err := json.Unmarshal(rb, &out); err != nil {
		return Run{}, fmt.Errorf("POST nodes/batch answer: %w", err)
	}
	if len(out.Nodes) != len(sent) {
		return Run{}, fmt.Errorf("POST nodes/batch: sent %d nodes, got %d back", len(sent), len(out.Nodes))
	}
	for i, n := range out.Nodes {
		s := sent[i]
		if n.Ref != s.Kind+":"+s.ID || n.Version != 1 || n.Summary != s.Summary || !slices.Equal(n.DerivedFrom, s.DerivedFrom) || n.Scope != "ingest" {
			return Run{}, fmt.Errorf("POST nodes/batch: answer %d is not node %d of the request: %s v%d derived_from %v", i, i, n.Ref, n.Version, n.DerivedFrom)
		}
	}
	bodies := make([][]byte, b.cfg.memIngestReqs)
	for i := range bodies {
		bodies[i], _ = ingestBody(r, fmt.Sprintf("r%d-", run), i*nodesPerBatch)
	}
	counters0 := b.serverCounters(ctx, k)
	cpu := startCPU(k.pid())
	t, elapsed := b.postWindow(ctx, u, bodies, http.StatusCreated)
	c := cpu.stop()
	rr := Run{
		ServerCounters: counterDelta(counters0, b.serverCounters(ctx, k)),
		Rows:           t.ok * nodesPerBatch, Requests: len(t.lat) + t.errs, Errors: t.errs, Seconds: round(elapsed.Seconds()),
		RowsPerSec: round(float64(t.ok*nodesPerBatch) / elapsed.Seconds()),
		P50ms:      round(percentile(t.lat, 0.50)), P99ms: round(percentile(t.lat, 0.99)),
		CPU: c, Statuses: t.statuses, FirstError: t.firstErr,
	}
	b.logf("run %d: %.0f nodes/s p50 %.2f ms p99 %.2f ms errors %d", run+1, rr.RowsPerSec, rr.P50ms, rr.P99ms, rr.Errors)
	return rr, nil
}

// postWindow sends every body once to u from batchCli clients pulling
// from a shared queue (batchWindow's loop for any batch endpoint).
func (b *bench) postWindow(ctx context.Context, u string, bodies [][]byte, want int) (*tally, time.Duration) {
	queue := make(chan []byte, len(bodies))
	for _, body := range bodies {
		queue <- body
	}
	close(queue)
	t := &tally{}
	var wg sync.WaitGroup
	start := time.Now()
	for range b.cfg.batchCli {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			statuses := map[int]int{}
			var ok, errs int
			var firstErr string
			for body := range queue {
				if ctx.Err() != nil {
					break
				}
				t0 := time.Now()
				st, rb, err := b.post(ctx, u, body, false)
				el := time.Since(t0)
				if err != nil {
					errs++
					if firstErr == "" {
						firstErr = err.Error()
					}
					continue
				}
				statuses[st]++
				if st != want {
					errs++
					if firstErr == "" {
						firstErr = httpError("POST "+u, st, rb).Error()
					}
					continue
				}
				ok++
				lat = append(lat, el)
			}
			t.add(lat, ok, 0, errs, statuses, firstErr)
		}()
	}
	wg.Wait()
	return t, time.Since(start)
}

func (b *bench) memTracePhase(ctx context.Context) (*PhaseResult, error) {
	defer b.memDone("memory_trace")
	res := &PhaseResult{
		Title:     fmt.Sprintf("GET /v1/scopes/%s/provenance/{ref}?depth=%d, random nodes of a %s-node graph", graphScope, traceDepth, thousands(float64(b.cfg.memNodes))),
		Metric:    "ms",
		LatencyOf: "one trace request, one client (backward and both; p50/p99 per direction under ops)",
		DataDir:   "shared data dir of the memory phases, built through the store (see params.build)",
		Params:    map[string]any{"requests_per_direction": b.cfg.memTraceN, "depth": traceDepth},
	}
	d, err := b.memShared(ctx)
	res.Params["build"] = d.build
	if err != nil {
		return res, err
	}
	k, err := b.startMemKurad(ctx, d, "trace")
	if err != nil {
		return res, err
	}
	defer b.stopKuradKeep(k, res)
	r := rand.New(rand.NewPCG(21, 1))
	var items []int
	var truncated int
	traceURL := func(i int, dir string) string {
		return fmt.Sprintf("%s/v1/scopes/%s/provenance/%s?direction=%s&depth=%d", k.base, graphScope, nodeRef("n", i), dir, traceDepth)
	}
	// Warm-up, untimed and unchecked beyond the status: the first requests
	// after a start read a cold page cache of kurad's connections.
	warm := max(50, b.cfg.memTraceN/10)
	if l, err := b.latencyLoop(ctx, k, warm, func(int) (string, string, []byte) {
		return http.MethodGet, traceURL(r.IntN(d.nodes), kura.DirectionBoth), nil
	}, nil); warmErr(l, err) != nil {
		return res, fmt.Errorf("warm-up traces: %w", warmErr(l, err))
	}
	var all []time.Duration
	var cpus []*CPU
	for _, dir := range []string{kura.DirectionBackward, kura.DirectionBoth} {
		refs := make([]int, b.cfg.memTraceN)
		for i := range refs {
			refs[i] = r.IntN(d.nodes)
		}
		l, err := b.latencyLoop(ctx, k, len(refs), func(i int) (string, string, []byte) {
			return http.MethodGet, traceURL(refs[i], dir), nil
		}, func(i int, body []byte) error {
			n, trunc, err := checkTrace(body, refs[i], dir, d)
			items = append(items, n)
			if trunc {
				truncated++
			}
			return err
		})
		if l != nil {
			run := l.run(dir)
			res.Runs = append(res.Runs, run)
			all = append(all, l.lat...)
			cpus = append(cpus, l.cpu)
			res.Params["median_answer_bytes_"+dir] = medianInt(l.sizes)
			b.logf("trace %s: %d requests p50 %.2f ms p99 %.2f ms errors %d", dir, len(l.lat), run.P50ms, run.P99ms, l.errs)
		}
		if err != nil {
			res.summarizeOps(all, sumCPU(cpus...))
			return res, err
		}
	}
	res.summarizeOps(all, sumCPU(cpus...))
	res.Params["median_items_per_trace"] = medianInt(items)
	res.Params["truncated_share"] = round(float64(truncated) / float64(max(1, len(items))))
	return res, res.runErrors()
}

// checkTrace checks a trace answer names the traced node, its direction
// and depth, lists every direct source (the node's derived_from), and
// carries the forward tree when asked; it returns the items in the tree.
func checkTrace(body []byte, i int, dir string, d *memData) (int, bool, error) {
	var t kura.Trace
	if err := json.Unmarshal(body, &t); err != nil {
		return 0, false, fmt.Errorf("trace answer: %w", err)
	}
	ref := nodeRef("n", i)
	if t.Memory.Ref() != ref || t.Direction != dir || t.Depth != traceDepth {
		return 0, false, fmt.Errorf("trace of %s: answer is about %q, direction %q, depth %d", ref, t.Memory.Ref(), t.Direction, t.Depth)
	}
	if t.Backward == nil || len(t.Backward.Sources) != int(d.parents[i]) {
		n := -1
		if t.Backward != nil {
			n = len(t.Backward.Sources)
		}
		return 0, false, fmt.Errorf("trace of %s: %d direct sources, the node derives from %d", ref, n, d.parents[i])
	}
	n := countLineage(t.Backward.Sources)
	if dir == kura.DirectionBoth {
		if t.Forward == nil {
			return 0, false, fmt.Errorf("trace of %s direction both: no forward tree", ref)
		}
		n += countLineage(t.Forward.Derived)
	}
	return n, t.Truncated, nil
}

func countLineage(ls []kura.Lineage) int {
	n := len(ls)
	for i := range ls {
		n += countLineage(ls[i].Sources) + countLineage(ls[i].Derived)
	}
	return n
}

func (b *bench) memDerivedPhase(ctx context.Context) (*PhaseResult, error) {
	defer b.memDone("memory_derived")
	want := b.cfg.memDescendants
	res := &PhaseResult{
		Title:     fmt.Sprintf("GET /v1/scopes/%s/provenance/record:{id}/derived, a record with %s descendants in a %s-node graph", graphScope, thousands(float64(want)), thousands(float64(b.cfg.memNodes))),
		Metric:    "ms",
		LatencyOf: "one derived request (complete list); p99 of the timed runs is their max",
		DataDir:   "shared data dir of the memory phases, built through the store (see params.build)",
		Params:    map[string]any{"descendants": want, "timed_requests": b.cfg.memDerivedK},
	}
	d, err := b.memShared(ctx)
	res.Params["build"] = d.build
	if err != nil {
		return res, err
	}
	if d.nodes == 0 {
		return res, fmt.Errorf("the shared data dir has no graph")
	}
	k, err := b.startMemKurad(ctx, d, "derived")
	if err != nil {
		return res, err
	}
	defer b.stopKuradKeep(k, res)
	u := fmt.Sprintf("%s/v1/scopes/%s/provenance/record:%s/derived", k.base, graphScope, d.recordID)
	req := func(int) (string, string, []byte) { return http.MethodGet, u, nil }
	// The first request reads cold pages; it is reported, not counted,
	// and its answer is checked in full: every node of the block, once.
	first, err := b.latencyLoop(ctx, k, 1, req, func(_ int, body []byte) error { return checkDerived(body, d, true) })
	if err != nil {
		return res, err
	}
	if first.errs > 0 {
		return res, fmt.Errorf("first derived: %s", first.firstErr)
	}
	res.Params["first_ms"] = round(ms(first.lat[0]))
	res.Params["answer_bytes"] = first.sizes[0]
	l, err := b.latencyLoop(ctx, k, b.cfg.memDerivedK, req, func(_ int, body []byte) error { return checkDerived(body, d, false) })
	for i, el := range l.lat {
		res.Runs = append(res.Runs, Run{Rows: want, Requests: 1, Seconds: round(el.Seconds()), Ms: round(ms(el))})
		b.logf("derived %d: %.2f ms (%d descendants)", i+1, ms(el), want)
	}
	if l.errs > 0 {
		res.Runs = append(res.Runs, Run{Requests: l.errs, Errors: l.errs, Statuses: l.statuses, FirstError: l.firstErr})
	}
	res.CPU = *l.cpu
	res.summarizeLatency(l.lat)
	if err != nil {
		return res, err
	}
	return res, res.runErrors()
}

// checkDerived checks the answer lists exactly the record's block: count
// and list length, and with full every ref once and inside the block.
func checkDerived(body []byte, d *memData, full bool) error {
	want := d.nodes - d.main
	var out struct {
		Ref     string `json:"ref"`
		Count   int    `json:"count"`
		Derived []struct {
			Ref   string `json:"ref"`
			Depth int    `json:"depth"`
		} `json:"derived"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return fmt.Errorf("derived answer: %w", err)
	}
	if out.Ref != "record:"+d.recordID || out.Count != want || len(out.Derived) != want {
		return fmt.Errorf("derived of record:%s: ref %q, count %d, %d items; want %d (the record's whole block, nothing else)", d.recordID, out.Ref, out.Count, len(out.Derived), want)
	}
	if !full {
		return nil
	}
	seen := make([]bool, want)
	for _, it := range out.Derived {
		_, id, _ := strings.Cut(it.Ref, ":")
		i, err := strconv.Atoi(strings.TrimPrefix(id, "n"))
		if err != nil || i < d.main || i >= d.nodes || nodeRef("n", i) != it.Ref || seen[i-d.main] || it.Depth < 1 {
			return fmt.Errorf("derived of record:%s lists %q (depth %d): not a node of the block, or listed twice", d.recordID, it.Ref, it.Depth)
		}
		seen[i-d.main] = true
	}
	return nil
}

// searchOps label the queries by their number of words.
var searchOps = []string{"1_word", "2_words", "3_words"}

func (b *bench) memSearchPhase(ctx context.Context) (*PhaseResult, error) {
	defer b.memDone("memory_search")
	n := b.cfg.memSearchNodes
	res := &PhaseResult{
		Title:     fmt.Sprintf("GET /v1/scopes/%s/memory/search?q= (1-3 words, default limit 100), a %s-node scope", searchScope, thousands(float64(n))),
		Metric:    "ms",
		LatencyOf: "one search request, one client (p50/p99 by query length under ops)",
		DataDir:   "shared data dir of the memory phases, built through the store (see params.build)",
		Params:    map[string]any{"scope_nodes": n, "queries": b.cfg.memSearchN, "vocabulary": vocabSize, "words_per_node": "2 in the title, 3-5 in the summary, uniform over the vocabulary"},
	}
	d, err := b.memShared(ctx)
	res.Params["build"] = d.build
	if err != nil {
		return res, err
	}
	if d.search == 0 {
		return res, fmt.Errorf("the shared data dir has no search scope")
	}
	k, err := b.startMemKurad(ctx, d, "search")
	if err != nil {
		return res, err
	}
	defer b.stopKuradKeep(k, res)
	r := rand.New(rand.NewPCG(31, 1))
	searchURL := func(q string) string {
		return k.base + "/v1/scopes/" + searchScope + "/memory/search?q=" + url.QueryEscape(q)
	}
	warm := max(50, b.cfg.memSearchN/10)
	if l, err := b.latencyLoop(ctx, k, warm, func(i int) (string, string, []byte) {
		return http.MethodGet, searchURL(distinctWords(r, 1+i%3)), nil
	}, nil); warmErr(l, err) != nil {
		return res, fmt.Errorf("warm-up searches: %w", warmErr(l, err))
	}
	var all []time.Duration
	var cpus []*CPU
	var hits []int
	for w, op := range searchOps {
		qs := make([]string, b.cfg.memSearchN/len(searchOps))
		for i := range qs {
			qs[i] = distinctWords(r, w+1)
		}
		l, err := b.latencyLoop(ctx, k, len(qs), func(i int) (string, string, []byte) {
			return http.MethodGet, searchURL(qs[i]), nil
		}, func(i int, body []byte) error {
			h, err := checkSearch(body, qs[i], ":s")
			hits = append(hits, h)
			return err
		})
		if l != nil {
			run := l.run(op)
			res.Runs = append(res.Runs, run)
			all = append(all, l.lat...)
			cpus = append(cpus, l.cpu)
			res.Params["median_answer_bytes_"+op] = medianInt(l.sizes)
			b.logf("search %s: %d requests p50 %.2f ms p99 %.2f ms errors %d", op, len(l.lat), run.P50ms, run.P99ms, l.errs)
		}
		if err != nil {
			res.summarizeOps(all, sumCPU(cpus...))
			return res, err
		}
	}
	res.summarizeOps(all, sumCPU(cpus...))
	res.Params["median_results"] = medianInt(hits)
	return res, res.runErrors()
}

// checkSearch checks the results are nodes of the scope asked (their ids
// hold idMark: ":s" for the search scope), at most the default limit, best
// first, each with a positive score and a reason.
func checkSearch(body []byte, q, idMark string) (int, error) {
	var out struct {
		Results []struct {
			Ref     string              `json:"ref"`
			Score   float64             `json:"score"`
			Reasons []kura.SearchReason `json:"reasons"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return 0, fmt.Errorf("search answer: %w", err)
	}
	// Every vocabulary word is in about 2% of the scope's nodes.
	if len(out.Results) == 0 || len(out.Results) > 100 {
		return len(out.Results), fmt.Errorf("search %q: %d results, want 1..100", q, len(out.Results))
	}
	for i, x := range out.Results {
		if !strings.Contains(x.Ref, idMark) || x.Score <= 0 || len(x.Reasons) == 0 || (i > 0 && x.Score > out.Results[i-1].Score) {
			return len(out.Results), fmt.Errorf("search %q: result %d (%s, score %v, %d reasons) is not a scored hit in order", q, i, x.Ref, x.Score, len(x.Reasons))
		}
	}
	return len(out.Results), nil
}

// judgeMemory sets the targets of the memory and context phases, scaled to
// the sizes run where they depend on size (only -quick shrinks them).
func judgeMemory(b *bench) {
	add := func(name string, t Target) {
		if r := b.result(name); r != nil && r.Error == "" {
			r.Targets = append(r.Targets, t)
		}
	}
	upper := func(name, short, text string, got, want float64) {
		w := strconv.FormatFloat(round(want), 'f', -1, 64)
		add(name, Target{Short: short + "≤" + w + "ms", Text: text + " ≤ " + w + " ms", Op: "<=", Want: round(want), Got: got, Pass: got <= want})
	}
	if r := b.result("memory_ingest"); r != nil {
		add("memory_ingest", Target{Short: "≥" + thousands(ingestTarget) + "/s", Text: fmt.Sprintf("nodes/s in batches of %d ≥ %s", nodesPerBatch, thousands(ingestTarget)),
			Op: ">=", Want: ingestTarget, Got: r.Median, Pass: r.Median >= ingestTarget})
	}
	if r := b.result("memory_trace"); r != nil {
		for _, dir := range []string{kura.DirectionBackward, kura.DirectionBoth} {
			if o, ok := r.Ops[dir]; ok {
				upper("memory_trace", dir+" p99", fmt.Sprintf("trace depth %d %s p99", traceDepth, dir), o.P99ms, traceP99Target)
			}
		}
	}
	if r := b.result("memory_derived"); r != nil {
		n := b.cfg.memDescendants
		upper("memory_derived", "", fmt.Sprintf("median derived of a record with %d descendants (complete)", n), r.Median, derivedTarget*float64(n)/10_000)
	}
	if r := b.result("memory_search"); r != nil {
		n := b.cfg.memSearchNodes
		upper("memory_search", "p99", fmt.Sprintf("search p99 over a %d-node scope", n), r.P99ms, searchTarget*float64(n)/100_000)
	}
	for _, c := range b.contextSizes() {
		r := b.result(c.name)
		if r == nil {
			continue
		}
		for _, op := range contextOps {
			if o, ok := r.Ops[op]; ok {
				upper(c.name, op+" p99", fmt.Sprintf("%s p99 on %d nodes and %d relations", op, c.nodes, c.rels), o.P99ms, c.target)
			}
		}
	}
}

// opOrder lists the ops of the memory and context phases in print order.
var opOrder = map[string][]string{
	"memory_trace":  {kura.DirectionBackward, kura.DirectionBoth},
	"memory_search": searchOps,
	"context_10k":   contextOps,
	"context_100k":  contextOps,
}

// printMemory lists, for the memory and context phases, the latency of
// each request kind and how the graph was built.
func printMemory(w io.Writer, rep *Report) {
	var lines []string
	var build map[string]any
	for _, r := range rep.Phases {
		if ops, ok := opOrder[r.Name]; ok && len(r.Ops) > 0 {
			line := "  " + r.Name
			for _, op := range ops {
				if o, ok := r.Ops[op]; ok {
					line += fmt.Sprintf("\t%s %.2f / %.2f (n=%d)", op, o.P50ms, o.P99ms, o.N)
				}
			}
			lines = append(lines, line)
		}
		if bm, ok := r.Params["build"].(map[string]any); ok && build == nil && len(bm) > 1 {
			build = bm
		}
		if s, ok := r.Params["build_summary"].(string); ok {
			lines = append(lines, "  "+r.Name+"\tbuilt through the store: "+s)
		}
	}
	if build != nil {
		var parts []string
		if n, ok := build["graph_nodes"]; ok {
			parts = append(parts, fmt.Sprintf("graph %s nodes, %s edges in %.1f s (%s nodes/s)", thousands(toF(n)), thousands(toF(build["graph_edges"])), toF(build["graph_seconds"]), thousands(toF(build["graph_nodes_per_s"]))))
		}
		if n, ok := build["search_nodes"]; ok {
			parts = append(parts, fmt.Sprintf("search scope %s nodes in %.1f s (%s nodes/s)", thousands(toF(n)), toF(build["search_seconds"]), thousands(toF(build["search_nodes_per_s"]))))
		}
		parts = append(parts, fmt.Sprintf("%.0f MB on disk", toF(build["db_bytes"])/1e6))
		lines = append(lines, "  memory data\tbuilt through the store (synchronous "+buildSync+"): "+strings.Join(parts, "; "))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\nmemory and context (ms p50 / p99 per request kind)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	tw.Flush()
}

func toF(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}
