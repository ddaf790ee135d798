package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kura-memory/kura/bench/internal/bm25"
	"github.com/kura-memory/kura/bench/internal/evalset"
	"github.com/kura-memory/kura/internal/kura"
)

// The recall phases (issue 18): the bench's own evaluation set
// (bench/internal/evalset) asked through a real kurad, every question once,
// and the same questions ranked by a textbook Okapi BM25 over the same text
// in this process (bench/internal/bm25), so the two are compared on equal
// terms in one run.
//
//	recall_memory  every dialog turn an episode node, one scope per
//	               conversation; every question through
//	               GET .../memory/search?q=&limit=10&mode=lexical (and
//	               mode=hybrid against -embedder-url when one is given)
//	recall_kb      every entry in one knowledge base; every question through
//	               GET /v1/kb/{kb}/lookup?q=&limit=10 (the text a model
//	               gets; the entries it lists are read back from it) and,
//	               when kurad serves it, GET /v1/kb/{kb}/search?q=&limit=10
//
// Metrics. Memory: recall@k is the share of a question's evidence turns
// among the first k results, averaged over the questions (the figure
// public long-conversation benchmarks report); hit@k counts a question
// when any of its evidence turns is among the first k. Knowledge base:
// hit@k counts a question when any entry answering it is among the first k
// entries listed; "no knowledge found" counts the lookups answered so
// although every question has an answering entry.
const (
	recallSeed      = 18
	recallLimit     = 10
	recallMemTarget = 1.15 // memory recall@10 ≥ 1.15 × BM25's
	recallKB        = "recall"
)

// recallSizes: conversations of the memory set, questions of the KB set.
func (b *bench) recallSizes() (convs, kbQuestions int) {
	if b.cfg.quick {
		return 3, 300
	}
	return 12, 1200
}

// RecallResult is what a recall phase measured (results.json
// phases[].recall).
type RecallResult struct {
	Set      map[string]any `json:"set"`
	Headline string         `json:"headline"` // the metric the target is on
	Engines  []*Engine      `json:"engines"`
	// ByTag is the headline metric per kind of question (evalset tags),
	// per engine: where each engine gains and loses.
	ByTag  map[string]map[string]float64 `json:"by_tag"`
	Tagged map[string]int                `json:"tagged"` // questions per tag
}

// Engine is one way of answering the set: kurad through one route, or
// the baseline.
type Engine struct {
	Name      string             `json:"name"`
	Via       string             `json:"via"`
	Questions int                `json:"questions"`
	Metrics   map[string]float64 `json:"metrics,omitempty"`
	// Counts: "empty" (questions answered with no result), "errors",
	// "no_knowledge_found", "warnings" (answers carrying warnings),
	// "semantic_match" (answers with a semantic_match reason).
	Counts   map[string]int `json:"counts,omitempty"`
	P50ms    float64        `json:"p50_ms,omitempty"`
	P99ms    float64        `json:"p99_ms,omitempty"`
	Skipped  string         `json:"skipped,omitempty"`
	Embedded *embedProgress `json:"embedded,omitempty"`

	ranked [][]string // per question, the ids it ranked, best first
	lat    []time.Duration
}

func (r *RecallResult) engine(name string) *Engine {
	for _, e := range r.Engines {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// turnNode is a dialog turn as the node kurad stores.
func turnNode(t *evalset.Turn) nodeIn {
	return nodeIn{Kind: "episode", ID: t.ID, Title: t.Title, Summary: t.Text, Lifecycle: "active",
		Authority: "verified", Confidence: 0.9, SourceType: "direct_experience"}
}

func recallScope(conv int) string { return fmt.Sprintf("recall-c%02d", conv) }

// writeTurns writes every conversation into its own scope through
// POST .../memory/nodes/batch, checking every answer.
func (b *bench) writeTurns(ctx context.Context, k *kuradProc, set *evalset.MemorySet) error {
	for ci := range set.Conversations {
		c := &set.Conversations[ci]
		u := k.base + "/v1/scopes/" + recallScope(c.Index) + "/memory/nodes/batch"
		for i := 0; i < len(c.Turns); i += nodesPerBatch {
			ns := make([]nodeIn, 0, nodesPerBatch)
			for j := i; j < min(i+nodesPerBatch, len(c.Turns)); j++ {
				ns = append(ns, turnNode(&c.Turns[j]))
			}
			body, err := json.Marshal(map[string]any{"nodes": ns})
			if err != nil {
				return err
			}
			st, rb, err := b.post(ctx, u, body, false)
			if err != nil {
				return fmt.Errorf("POST %s: %w", u, err)
			}
			if st != http.StatusCreated {
				return httpError("POST /v1/scopes/{scope}/memory/nodes/batch", st, rb)
			}
		}
	}
	return nil
}

// searchAnswer is the part of a memory search answer the recall phase reads.
type searchAnswer struct {
	Results []struct {
		Ref     string              `json:"ref"`
		Reasons []kura.SearchReason `json:"reasons"`
	} `json:"results"`
	Warnings []json.RawMessage `json:"warnings"`
}

// askMemory asks every question of the set through memory search in mode
// and records the turn ids of each answer, best first.
func (b *bench) askMemory(ctx context.Context, k *kuradProc, set *evalset.MemorySet, mode string) (*Engine, error) {
	e := &Engine{Name: "kura", Via: fmt.Sprintf("GET /v1/scopes/{scope}/memory/search?q=&limit=%d&mode=%s", recallLimit, mode),
		Questions: len(set.Questions), Counts: map[string]int{}, ranked: make([][]string, len(set.Questions))}
	if mode != "lexical" {
		e.Name = "kura " + mode
	}
	firstErr := ""
	for i, q := range set.Questions {
		if ctx.Err() != nil {
			return e, ctx.Err()
		}
		u := fmt.Sprintf("%s/v1/scopes/%s/memory/search?q=%s&limit=%d&mode=%s", k.base, recallScope(q.Conv), url.QueryEscape(q.Text), recallLimit, mode)
		t0 := time.Now()
		st, body, err := b.do(ctx, http.MethodGet, u, nil)
		el := time.Since(t0)
		if err == nil && st != http.StatusOK {
			err = httpError("GET .../memory/search", st, body)
		}
		var a searchAnswer
		if err == nil {
			err = json.Unmarshal(body, &a)
		}
		if err != nil {
			e.Counts["errors"]++
			if firstErr == "" {
				firstErr = fmt.Sprintf("%q: %v", q.Text, err)
			}
			if e.Counts["errors"] == i+1 && i+1 >= maxConsecutiveErrors {
				return e, fmt.Errorf("memory search keeps failing; first: %s", firstErr)
			}
			continue
		}
		e.lat = append(e.lat, el)
		if len(a.Results) > recallLimit {
			return e, fmt.Errorf("search %q with limit=%d: %d results", q.Text, recallLimit, len(a.Results))
		}
		if len(a.Results) == 0 {
			e.Counts["empty"]++
		}
		if len(a.Warnings) > 0 {
			e.Counts["warnings"]++
		}
		semantic := false
		for _, r := range a.Results {
			_, id, ok := strings.Cut(r.Ref, ":")
			if !ok {
				return e, fmt.Errorf("search %q: result ref %q is not kind:id", q.Text, r.Ref)
			}
			e.ranked[i] = append(e.ranked[i], id)
			for _, rs := range r.Reasons {
				semantic = semantic || rs.Code == "semantic_match"
			}
		}
		if semantic {
			e.Counts["semantic_match"]++
		}
	}
	if e.Counts["errors"] > 0 {
		return e, fmt.Errorf("%d of %d searches failed; first: %s", e.Counts["errors"], len(set.Questions), firstErr)
	}
	e.P50ms, e.P99ms = round(percentile(e.lat, 0.50)), round(percentile(e.lat, 0.99))
	return e, nil
}

// baselineMemory ranks every question with BM25 over its conversation's
// turns (title + summary, the text kurad is given).
func baselineMemory(set *evalset.MemorySet) *Engine {
	e := &Engine{Name: "bm25", Via: "Okapi BM25 (k1 1.2, b 0.75) over title + summary, in the bench", Questions: len(set.Questions),
		ranked: make([][]string, len(set.Questions))}
	ix := map[int]*bm25.Index{}
	ids := map[int][]string{}
	for ci := range set.Conversations {
		c := &set.Conversations[ci]
		docs := make([]string, len(c.Turns))
		for i := range c.Turns {
			docs[i] = c.Turns[i].Title + " " + c.Turns[i].Text
			ids[c.Index] = append(ids[c.Index], c.Turns[i].ID)
		}
		ix[c.Index] = bm25.New(docs)
	}
	for i, q := range set.Questions {
		for _, h := range ix[q.Conv].Search(q.Text, recallLimit) {
			e.ranked[i] = append(e.ranked[i], ids[q.Conv][h.Doc])
		}
	}
	return e
}

// foundIn is how many of want are among the first k of got.
func foundIn(want, got []string, k int) int {
	n := 0
	for _, w := range want {
		if slices.Contains(got[:min(k, len(got))], w) {
			n++
		}
	}
	return n
}

// scoreMemory sets recall@k and hit@k for k = 1, 5, 10.
func scoreMemory(e *Engine, qs []evalset.Question) {
	e.Metrics = map[string]float64{}
	for _, k := range []int{1, 5, 10} {
		var rec, hit float64
		for i, q := range qs {
			n := foundIn(q.Evidence, e.ranked[i], k)
			rec += float64(n) / float64(len(q.Evidence))
			if n > 0 {
				hit++
			}
		}
		e.Metrics[fmt.Sprintf("recall@%d", k)] = round(rec / float64(len(qs)))
		e.Metrics[fmt.Sprintf("hit@%d", k)] = round(hit / float64(len(qs)))
	}
}

// byTag computes metric(e, questions of the tag) for every tag and engine.
func byTag(r *RecallResult, tags [][]string, metric func(e *Engine, idx []int) float64) {
	groups := map[string][]int{}
	for i, ts := range tags {
		groups["all"] = append(groups["all"], i)
		if !slices.Contains(ts, "multi") && !slices.Contains(ts, "several") {
			groups["single"] = append(groups["single"], i)
		}
		for _, t := range ts {
			groups[t] = append(groups[t], i)
		}
	}
	r.ByTag, r.Tagged = map[string]map[string]float64{}, map[string]int{}
	for tag, idx := range groups {
		r.Tagged[tag] = len(idx)
		r.ByTag[tag] = map[string]float64{}
		for _, e := range r.Engines {
			if e.ranked != nil {
				r.ByTag[tag][e.Name] = round(metric(e, idx))
			}
		}
	}
}

func (b *bench) recallMemoryPhase(ctx context.Context, be backend) (*PhaseResult, error) {
	convs, _ := b.recallSizes()
	set := evalset.Memory(evalset.MemoryConfig{Seed: recallSeed, Conversations: convs})
	multi := 0
	for _, q := range set.Questions {
		if len(q.Evidence) > 1 {
			multi++
		}
	}
	res := &PhaseResult{
		Title:     fmt.Sprintf("memory search recall: %d questions over %d conversations (%s turns)%s", len(set.Questions), convs, thousands(float64(set.Turns())), be.title(b.cfg.hostCPUs)),
		Metric:    "recall@10",
		LatencyOf: fmt.Sprintf("one GET .../memory/search?limit=%d&mode=lexical, one client", recallLimit),
		DataDir:   "one fresh kurad data dir; every turn an episode node, one scope per conversation, written through POST .../nodes/batch",
	}
	rr := &RecallResult{Headline: "recall@10", Set: map[string]any{
		"seed": recallSeed, "conversations": convs, "turns": set.Turns(), "questions": len(set.Questions),
		"two_evidence_questions": multi, "generator": "bench/internal/evalset (Memory)",
	}}
	res.Recall = rr
	if be.pg {
		res.DataDir = "one fresh kurad and PostgreSQL database; every turn an episode node, one scope per conversation, written through POST .../nodes/batch"
		res.Params = map[string]any{}
		be.params(res, b.cfg.hostCPUs)
	}
	f, err := b.startBackend(ctx, be, "recall-memory")
	if err != nil {
		return res, err
	}
	k := f.kurads[0]
	t0 := time.Now()
	if err := b.writeTurns(ctx, k, set); err != nil {
		b.stopFleet(f, res)
		return res, err
	}
	rr.Set["write_seconds"] = round(time.Since(t0).Seconds())
	cpu := f.meter()
	lex, err := b.askMemory(ctx, k, set, "lexical")
	res.CPU = *cpu.stop()
	b.stopFleet(f, res)
	rr.Engines = append(rr.Engines, lex)
	if err != nil {
		return res, err
	}
	if b.cfg.embedderURL != "" && !be.pg {
		hy, err := b.recallHybrid(ctx, set, res)
		if hy != nil {
			rr.Engines = append(rr.Engines, hy)
		}
		if err != nil {
			return res, err
		}
	}
	rr.Engines = append(rr.Engines, baselineMemory(set))
	for _, e := range rr.Engines {
		scoreMemory(e, set.Questions)
	}
	tags := make([][]string, len(set.Questions))
	for i, q := range set.Questions {
		tags[i] = q.Tags
	}
	byTag(rr, tags, func(e *Engine, idx []int) float64 {
		var s float64
		for _, i := range idx {
			s += float64(foundIn(set.Questions[i].Evidence, e.ranked[i], 10)) / float64(len(set.Questions[i].Evidence))
		}
		return s / float64(len(idx))
	})
	res.Median = lex.Metrics["recall@10"]
	res.P50ms, res.P99ms = lex.P50ms, lex.P99ms
	res.Runs = append(res.Runs, Run{Op: "lexical", Requests: len(set.Questions), P50ms: lex.P50ms, P99ms: lex.P99ms, Seconds: res.CPU.WallSeconds})
	b.logf("memory recall@10: kura %.3f, bm25 %.3f", lex.Metrics["recall@10"], rr.engine("bm25").Metrics["recall@10"])
	return res, nil
}

// recallHybrid asks the memory set in mode=hybrid of a kurad embedding
// through -embedder-url (behind the bench's counting proxy).
func (b *bench) recallHybrid(ctx context.Context, set *evalset.MemorySet, res *PhaseResult) (*Engine, error) {
	up := b.cfg.embedderURL
	if !strings.HasSuffix(strings.TrimRight(up, "/"), "/embeddings") {
		up = strings.TrimRight(up, "/") + "/v1/embeddings"
	}
	es, err := startEmbedServer(up)
	if err != nil {
		return nil, err
	}
	defer es.Close()
	env := []string{"KURA_EMBEDDER_URL=" + es.URL()}
	if b.cfg.embedderModel != "" {
		env = append(env, "KURA_EMBEDDER_MODEL="+b.cfg.embedderModel)
	}
	if t := os.Getenv("KURA_EMBEDDER_TOKEN"); t != "" {
		env = append(env, "KURA_EMBEDDER_TOKEN="+t)
	}
	dir := filepath.Join(b.tmp, "data-recall-hybrid")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	k, err := b.startKuradEnv(ctx, dir, dir+".log", env)
	if err != nil {
		return nil, err
	}
	defer b.stopKurad(k, res)
	if err := b.writeTurns(ctx, k, set); err != nil {
		return nil, err
	}
	prog, err := b.waitEmbedded(ctx, k, es, set.Turns(), time.Minute, 15*time.Second, 30*time.Minute)
	if err == errNoEmbedder {
		return &Engine{Name: "kura hybrid", Questions: len(set.Questions), Embedded: prog,
			Skipped: "kurad made no request to the embedder within a minute: no embedder support"}, nil
	}
	if err != nil {
		return &Engine{Name: "kura hybrid", Embedded: prog}, err
	}
	e, err := b.askMemory(ctx, k, set, "hybrid")
	e.Embedded = prog
	e.Via += " (embedder " + b.cfg.embedderURL + ")"
	return e, err
}

// lookupIdentifiers reads the entries a lookup answer lists ("--- <id>
// ---" lines, kb.FormatLookup), keeping only identifiers of the set, in
// order.
func lookupIdentifiers(text string, known map[string]bool) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if id, ok := strings.CutPrefix(line, "--- "); ok {
			if id, ok = strings.CutSuffix(id, " ---"); ok && known[id] {
				out = append(out, id)
			}
		}
	}
	return out
}

func (b *bench) recallKBPhase(ctx context.Context, be backend) (*PhaseResult, error) {
	_, nq := b.recallSizes()
	set := evalset.KB(evalset.KBConfig{Seed: recallSeed, Questions: nq})
	several := 0
	for _, q := range set.Questions {
		if len(q.Relevant) > 1 {
			several++
		}
	}
	res := &PhaseResult{
		Title:     fmt.Sprintf("knowledge-base lookup hits: %d natural questions over %s entries%s", len(set.Questions), thousands(float64(len(set.Entries))), be.title(b.cfg.hostCPUs)),
		Metric:    "hit@5",
		LatencyOf: fmt.Sprintf("one GET /v1/kb/{kb}/lookup?q=&limit=%d, one client", recallLimit),
		DataDir:   "one fresh kurad data dir; the entries written through PUT .../entries/batch",
	}
	rr := &RecallResult{Headline: "hit@5", Set: map[string]any{
		"seed": recallSeed, "entries": len(set.Entries), "questions": len(set.Questions),
		"questions_with_several_answers": several, "generator": "bench/internal/evalset (KB)",
	}}
	res.Recall = rr
	if be.pg {
		res.DataDir = "one fresh kurad and PostgreSQL database; the entries written through PUT .../entries/batch"
		res.Params = map[string]any{}
		be.params(res, b.cfg.hostCPUs)
	}
	f, err := b.startBackend(ctx, be, "recall-kb")
	if err != nil {
		return res, err
	}
	defer b.stopFleet(f, res)
	k := f.kurads[0]
	ins := make([]kura.KBEntryInput, len(set.Entries))
	known := map[string]bool{}
	for i, e := range set.Entries {
		ins[i] = kura.KBEntryInput{Identifier: e.Identifier, Keys: e.Keys, Value: e.Value}
		known[e.Identifier] = true
	}
	bodies, err := kbBodies(ins)
	if err != nil {
		return res, err
	}
	t, written, _ := b.kbUpsert(ctx, k, bodies, 1)
	if t.errs > 0 || written != len(ins) {
		return res, fmt.Errorf("writing the knowledge base: %d of %d entries written, %d errors; first: %s", written, len(ins), t.errs, t.firstErr)
	}

	base := k.base + "/v1/kb/" + kbName
	lookup := &Engine{Name: "kura lookup", Via: fmt.Sprintf("GET /v1/kb/{kb}/lookup?q=&limit=%d (entries read from the text)", recallLimit),
		Questions: len(set.Questions), Counts: map[string]int{}, ranked: make([][]string, len(set.Questions))}
	search := &Engine{Name: "kura search", Via: fmt.Sprintf("GET /v1/kb/{kb}/search?q=&limit=%d", recallLimit),
		Questions: len(set.Questions), Counts: map[string]int{}, ranked: make([][]string, len(set.Questions))}
	firstErr := ""
	fail := func(e *Engine, msg string) {
		e.Counts["errors"]++
		if firstErr == "" {
			firstErr = msg
		}
	}
	cpu := f.meter()
	for i, q := range set.Questions {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		t0 := time.Now()
		st, body, err := b.do(ctx, http.MethodGet, fmt.Sprintf("%s/lookup?q=%s&limit=%d", base, url.QueryEscape(q.Text), recallLimit), nil)
		el := time.Since(t0)
		switch {
		case err != nil:
			fail(lookup, err.Error())
		case st != http.StatusOK:
			fail(lookup, httpError("GET /v1/kb/{kb}/lookup", st, body).Error())
		default:
			lookup.lat = append(lookup.lat, el)
			text := string(body)
			lookup.ranked[i] = lookupIdentifiers(text, known)
			switch {
			case strings.HasPrefix(text, "No knowledge found"):
				lookup.Counts["no_knowledge_found"]++
				lookup.Counts["empty"]++
			case len(lookup.ranked[i]) == 0:
				// An answer that is not "No knowledge found" but lists
				// no entry of the set: the format changed, or it lists
				// something else. Counted, not guessed at.
				lookup.Counts["unparsed"]++
				lookup.Counts["empty"]++
			}
		}
		if search.Skipped != "" {
			continue
		}
		t0 = time.Now()
		st, body, err = b.do(ctx, http.MethodGet, fmt.Sprintf("%s/search?q=%s&limit=%d", base, url.QueryEscape(q.Text), recallLimit), nil)
		el = time.Since(t0)
		switch {
		case err != nil:
			fail(search, err.Error())
		case i == 0 && (st == http.StatusNotFound || st == http.StatusMethodNotAllowed):
			search.Skipped = fmt.Sprintf("kurad does not serve GET /v1/kb/{kb}/search (HTTP %d)", st)
			search.ranked = nil
		case st != http.StatusOK:
			fail(search, httpError("GET /v1/kb/{kb}/search", st, body).Error())
		default:
			var a struct {
				Entries []struct {
					Identifier string `json:"identifier"`
				} `json:"entries"`
			}
			if err := json.Unmarshal(body, &a); err != nil {
				fail(search, "GET /v1/kb/{kb}/search answer: "+err.Error())
				continue
			}
			search.lat = append(search.lat, el)
			for _, x := range a.Entries {
				search.ranked[i] = append(search.ranked[i], x.Identifier)
			}
			if len(a.Entries) == 0 {
				search.Counts["empty"]++
			}
		}
	}
	res.CPU = *cpu.stop()
	for _, e := range []*Engine{lookup, search} {
		e.P50ms, e.P99ms = round(percentile(e.lat, 0.50)), round(percentile(e.lat, 0.99))
	}
	rr.Engines = append(rr.Engines, lookup, search)

	base25 := &Engine{Name: "bm25", Via: "Okapi BM25 (k1 1.2, b 0.75) over identifier + keys + value, in the bench",
		Questions: len(set.Questions), ranked: make([][]string, len(set.Questions))}
	docs := make([]string, len(set.Entries))
	for i, e := range set.Entries {
		docs[i] = e.Identifier + " " + strings.Join(e.Keys, " ") + " " + e.Value
	}
	ix := bm25.New(docs)
	for i, q := range set.Questions {
		for _, h := range ix.Search(q.Text, recallLimit) {
			base25.ranked[i] = append(base25.ranked[i], set.Entries[h.Doc].Identifier)
		}
	}
	rr.Engines = append(rr.Engines, base25)
	hit := func(e *Engine, idx []int, k int) float64 {
		n := 0
		for _, i := range idx {
			if foundIn(set.Questions[i].Relevant, e.ranked[i], k) > 0 {
				n++
			}
		}
		return float64(n) / float64(max(1, len(idx)))
	}
	all := make([]int, len(set.Questions))
	tags := make([][]string, len(set.Questions))
	for i, q := range set.Questions {
		all[i] = i
		tags[i] = append(slices.Clone(q.Tags), "category:"+q.Category)
	}
	for _, e := range rr.Engines {
		if e.ranked != nil {
			e.Metrics = map[string]float64{"hit@1": round(hit(e, all, 1)), "hit@5": round(hit(e, all, 5)), "hit@10": round(hit(e, all, 10))}
		}
	}
	byTag(rr, tags, func(e *Engine, idx []int) float64 { return hit(e, idx, 5) })
	res.Median = lookup.Metrics["hit@5"]
	res.P50ms, res.P99ms = lookup.P50ms, lookup.P99ms
	res.Runs = append(res.Runs, Run{Op: "lookup", Requests: len(set.Questions), Errors: lookup.Counts["errors"],
		P50ms: lookup.P50ms, P99ms: lookup.P99ms, Seconds: res.CPU.WallSeconds})
	if search.Skipped == "" {
		res.Runs = append(res.Runs, Run{Op: "search", Requests: len(set.Questions), Errors: search.Counts["errors"],
			P50ms: search.P50ms, P99ms: search.P99ms})
	}
	b.logf("kb hit@5: lookup %.3f (%d no knowledge found), search %v, bm25 %.3f", lookup.Metrics["hit@5"], lookup.Counts["no_knowledge_found"], search.Metrics["hit@5"], base25.Metrics["hit@5"])
	if n := lookup.Counts["errors"] + search.Counts["errors"]; n > 0 {
		return res, fmt.Errorf("%d requests failed; first: %s", n, firstErr)
	}
	return res, nil
}

// judgeRecall sets issue 18's recall targets, on SQLite and on
// PostgreSQL alike: a team that moves to PostgreSQL keeps what it recalls.
func judgeRecall(b *bench) {
	for _, store := range []string{"", "pg_"} {
		judgeRecallOn(b, store)
	}
}

func judgeRecallOn(b *bench, store string) {
	if r := b.result(store + "recall_memory"); r != nil && r.Error == "" && r.Recall != nil {
		kura, base := r.Recall.engine("kura"), r.Recall.engine("bm25")
		if kura != nil && base != nil {
			got, ref := kura.Metrics["recall@10"], base.Metrics["recall@10"]
			want := recallMemTarget * ref
			r.Targets = append(r.Targets, Target{Short: "r@10≥1.15×bm25", Unit: "fraction", Ref: ref,
				Text: fmt.Sprintf("memory search recall@10 ≥ 1.15 × BM25's (%.3f)", ref),
				Op:   ">=", Want: round(want), Got: got, Ratio: round(got / max(ref, 1e-9)), Pass: got >= want})
		}
	}
	if r := b.result(store + "recall_kb"); r != nil && r.Error == "" && r.Recall != nil {
		lookup, base := r.Recall.engine("kura lookup"), r.Recall.engine("bm25")
		if lookup != nil && base != nil {
			got, ref := lookup.Metrics["hit@5"], base.Metrics["hit@5"]
			r.Targets = append(r.Targets,
				Target{Short: "hit@5≥bm25", Unit: "fraction", Ref: ref, Text: fmt.Sprintf("lookup hit@5 ≥ BM25's (%.3f)", ref),
					Op: ">=", Want: ref, Got: got, Ratio: round(got / max(ref, 1e-9)), Pass: got >= ref},
				Target{Short: "0 no-knowledge", Unit: "count", Text: "lookups answered \"No knowledge found\" although an entry answers = 0",
					Op: "<=", Want: 0, Got: float64(lookup.Counts["no_knowledge_found"]), Pass: lookup.Counts["no_knowledge_found"] == 0})
		}
	}
}

// printRecall prints the recall phases' engines side by side, and the
// headline metric by kind of question.
func printRecall(w io.Writer, rep *Report) {
	for _, r := range rep.Phases {
		rr := r.Recall
		if rr == nil || len(rr.Engines) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s; bench/internal/evalset, seed %v)\n", r.Name, r.Title, rr.Set["seed"])
		var metrics []string
		for _, e := range rr.Engines {
			for m := range e.Metrics {
				if !slices.Contains(metrics, m) {
					metrics = append(metrics, m)
				}
			}
		}
		sort.Slice(metrics, func(i, j int) bool { return metricOrder(metrics[i]) < metricOrder(metrics[j]) })
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  engine\t%s\tp50 / p99 ms\tnotes\n", strings.Join(metrics, "\t"))
		base := rr.engine("bm25")
		for _, e := range rr.Engines {
			fmt.Fprintf(tw, "  %s", e.Name)
			if e.Skipped != "" {
				fmt.Fprintf(tw, "%s\t\tskipped: %s\n", strings.Repeat("\t-", len(metrics)), e.Skipped)
				continue
			}
			for _, m := range metrics {
				fmt.Fprintf(tw, "\t%.3f", e.Metrics[m])
			}
			lat := "-"
			if e.P99ms > 0 {
				lat = fmt.Sprintf("%.2f / %.2f", e.P50ms, e.P99ms)
			}
			var notes []string
			for _, c := range []string{"no_knowledge_found", "unparsed", "empty", "errors", "warnings", "semantic_match"} {
				if n := e.Counts[c]; n > 0 {
					notes = append(notes, fmt.Sprintf("%s %d", strings.ReplaceAll(c, "_", " "), n))
				}
			}
			fmt.Fprintf(tw, "\t%s\t%s\n", lat, strings.Join(notes, ", "))
		}
		if base != nil {
			for _, e := range rr.Engines {
				if e == base || e.Skipped != "" {
					continue
				}
				fmt.Fprintf(tw, "  %s / bm25", e.Name)
				for _, m := range metrics {
					if base.Metrics[m] > 0 {
						fmt.Fprintf(tw, "\t%.2f×", e.Metrics[m]/base.Metrics[m])
					} else {
						fmt.Fprint(tw, "\t-")
					}
				}
				fmt.Fprintln(tw, "\t\t")
			}
		}
		tw.Flush()
		var tags []string
		for t := range rr.ByTag {
			tags = append(tags, t)
		}
		sort.Slice(tags, func(i, j int) bool {
			if (tags[i] == "all") != (tags[j] == "all") {
				return tags[i] == "all"
			}
			return tags[i] < tags[j]
		})
		fmt.Fprintf(w, "  %s by kind of question (questions: %s)\n", rr.Headline, engineNames(rr))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, t := range tags {
			fmt.Fprintf(tw, "    %s\t%d", t, rr.Tagged[t])
			for _, e := range rr.Engines {
				if v, ok := rr.ByTag[t][e.Name]; ok {
					fmt.Fprintf(tw, "\t%.3f", v)
				}
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
}

func engineNames(rr *RecallResult) string {
	var ns []string
	for _, e := range rr.Engines {
		if e.ranked != nil || e.Skipped == "" {
			ns = append(ns, e.Name)
		}
	}
	return strings.Join(ns, " / ")
}

// metricOrder sorts recall@k before hit@k, each by k.
func metricOrder(m string) int {
	kind, k, _ := strings.Cut(m, "@")
	n := 0
	fmt.Sscan(k, &n)
	if kind == "hit" {
		n += 1000
	}
	return n
}
