package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kura-memory/kura/internal/keys"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/store"
)

// The data the memory read phases (issue 5) measure: a large graph written
// through the store in this process (the HTTP API would take many minutes
// to fill it), then served by a real kurad started on that data dir. The
// context phases (context.go) write their scopes the same way.
//
// Shape of the lineage graph (scope "graph", memNodes nodes):
//
//   - main nodes 0 .. main-1: node i derives from node i/2 and from one of
//     the parentWindow nodes just before it (a second, different parent), so
//     every node but the first two has two parents, a depth-3 trace
//     backward meets up to 14 sources with real fan-in (diamonds), and the
//     forward side has about three children a level;
//   - a record (written through the store) and memDescendants nodes
//     derived from it: the first 1% cite the record and one random main
//     node, every other one derives from node k/2 and one of the
//     parentWindow nodes before it, all inside this block, so `derived` of
//     the record is exactly the block (diamonds included) and nothing else.
//
// About two derived_from edges per node. A separate scope "search" holds
// memSearchNodes nodes without lineage for the search phase. Node text is
// drawn from a vocabulary of vocabSize made-up words (a 2-word title and a
// 3-5-word summary), so the search index stays small and every query word
// matches about 2% of a scope's nodes.
const (
	graphScope    = "graph"
	searchScope   = "search"
	vocabSize     = 256
	parentWindow  = 1000
	nodesPerBatch = store.MaxNodeBatch
	// buildSync is the build's SQLite synchronous mode: the build is setup,
	// and NORMAL (no fsync per commit in WAL mode) keeps it short. kurad
	// itself runs with its default (FULL).
	buildSync = "NORMAL"
)

// graphKinds are the node kinds the bench writes, in turn.
var graphKinds = []string{"episode", "note", "fact", "belief", "decision", "procedure", "claim", "preference"}

// Lifecycles and authorities are drawn with these weights, so every
// admission bucket holds nodes of its own accord (the context phases add
// relations on top).
var (
	lifecycleMix = weighted(map[string]int{"active": 10, "candidate": 3, "contested": 1, "suppressed": 1,
		"archived": 1, "retired": 1, "blocked": 1, "rehydrate_required": 1})
	authorityMix = weighted(map[string]int{"verified": 3, "trusted": 4, "advisory": 2, "unknown": 2, "rejected": 1})
)

func weighted(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // map order is random; the draw must not be
	var out []string
	for _, k := range keys {
		for range m[k] {
			out = append(out, k)
		}
	}
	return out
}

// vocab is vocabSize two-syllable made-up words ("kazo"), from a fixed
// permutation so every run writes the same text.
var vocab = func() []string {
	const cons, vows = "bdfgklmnprstvz", "aeiou"
	var syl []string
	for _, c := range cons {
		for _, v := range vows {
			syl = append(syl, string(c)+string(v))
		}
	}
	perm := rand.New(rand.NewPCG(5, 7)).Perm(len(syl) * len(syl))
	out := make([]string, vocabSize)
	for i := range out {
		out[i] = syl[perm[i]/len(syl)] + syl[perm[i]%len(syl)]
	}
	return out
}()

func words(r *rand.Rand, n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(vocab[r.IntN(len(vocab))])
	}
	return sb.String()
}

// distinctWords returns n different vocabulary words joined by spaces.
func distinctWords(r *rand.Rand, n int) string {
	idx := r.Perm(len(vocab))[:n]
	ws := make([]string, n)
	for i, j := range idx {
		ws[i] = vocab[j]
	}
	return strings.Join(ws, " ")
}

// nodeIn is a node as the bench writes it: the HTTP body of one node, and
// (through input) the store's input.
type nodeIn struct {
	Kind        string   `json:"kind"`
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Summary     string   `json:"summary"`
	Lifecycle   string   `json:"lifecycle"`
	Authority   string   `json:"authority"`
	Confidence  float64  `json:"confidence"`
	SourceType  string   `json:"source_type"`
	DerivedFrom []string `json:"derived_from,omitempty"`
}

func (n *nodeIn) input() kura.NodeInput {
	c := n.Confidence
	return kura.NodeInput{Kind: n.Kind, ID: n.ID, Title: &n.Title, Summary: &n.Summary, Lifecycle: &n.Lifecycle,
		Authority: &n.Authority, Confidence: &c, SourceType: &n.SourceType, DerivedFrom: n.DerivedFrom}
}

// genNode draws a node's text and state.
func genNode(r *rand.Rand, kind, id string, derived []string) nodeIn {
	n := nodeIn{Kind: kind, ID: id, Title: words(r, 2), Summary: words(r, 3+r.IntN(3)),
		Lifecycle: lifecycleMix[r.IntN(len(lifecycleMix))], Authority: authorityMix[r.IntN(len(authorityMix))],
		Confidence: float64(10+r.IntN(91)) / 100, SourceType: "direct_experience", DerivedFrom: derived}
	if len(derived) > 0 {
		n.SourceType = "inference"
	}
	return n
}

func kindOf(i int) string { return graphKinds[i%len(graphKinds)] }

// nodeRef is the ref of node i of a scope whose ids are prefix+i.
func nodeRef(prefix string, i int) string { return kindOf(i) + ":" + prefix + strconv.Itoa(i) }

// secondParent picks a parent among the parentWindow nodes before k that
// is not first; -1 when there is none.
func secondParent(r *rand.Rand, k, first int) int {
	if k < 2 {
		return -1
	}
	p := k - 1 - r.IntN(min(k-1, parentWindow))
	if p == first {
		p = k - 1
	}
	if p == first {
		return -1
	}
	return p
}

// memData is the data dir the memory read phases share: built once per
// run through the store, then served by one kurad per phase.
type memData struct {
	dir      string
	recordID string
	nodes    int     // graph nodes (0: no graph built)
	main     int     // nodes before the record's block
	parents  []uint8 // derived_from count of every graph node
	edges    int
	search   int // nodes of the search scope (0: not built)
	build    map[string]any
	err      error
}

// memReaders are the phases that read the shared data dir, in run order.
var memReaders = []string{"memory_trace", "memory_derived", "memory_search"}

// wants reports whether a phase is selected in this invocation.
func (b *bench) wants(name string) bool { return len(b.selected) == 0 || b.selected[name] }

// memShared returns the shared data dir, building it on first use with
// what the selected phases need.
func (b *bench) memShared(ctx context.Context) (*memData, error) {
	if b.mem != nil {
		return b.mem, b.mem.err
	}
	d := &memData{dir: filepath.Join(b.tmp, "data-memory"), build: map[string]any{"synchronous": buildSync}}
	b.mem = d
	d.err = b.buildMem(ctx, d)
	return d, d.err
}

// memDone removes the shared data dir once no later selected phase reads it.
func (b *bench) memDone(name string) {
	i := slices.Index(memReaders, name)
	for _, later := range memReaders[i+1:] {
		if b.wants(later) {
			return
		}
	}
	if b.mem != nil && !b.cfg.keep {
		_ = os.RemoveAll(b.mem.dir)
	}
}

// openBuildStore opens a data dir's store in this process with the key
// kurad will load from the same place (<data-dir>/kurad.key, its default).
func openBuildStore(ctx context.Context, dir string) (*store.DB, error) {
	return openBuildStoreAt(ctx, dir, "")
}

// openBuildStoreAt is openBuildStore keeping the data in the PostgreSQL
// database at url instead of <dir>/kura.db when url is not empty (the key
// stays in dir, where kurad finds it).
func openBuildStoreAt(ctx context.Context, dir, url string) (*store.DB, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := keys.LoadOrCreate(filepath.Join(dir, "kurad.key"))
	if err != nil {
		return nil, err
	}
	db := store.New(store.Config{Path: filepath.Join(dir, "kura.db"), DatabaseURL: url, Synchronous: buildSync, Signer: key})
	if err := db.Open(ctx); err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	return db, nil
}

// closeBuildStore marks every event the build wrote as published, so the
// kurad started next does not spend the measurements replaying a million
// memory.node events to NATS, and closes the store (which checkpoints).
func closeBuildStore(ctx context.Context, db *store.DB) error {
	err := db.SavePublishedSeq(ctx, db.LastEventSeq())
	if cerr := db.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

func dbBytes(dir string) int64 {
	var n int64
	for _, f := range []string{"kura.db", "kura.db-wal"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil {
			n += st.Size()
		}
	}
	return n
}

// putNodes writes n nodes (gen(i) for i in order) through the store, one
// transaction per batch of nodesPerBatch, one batch after another (a later
// batch derives from earlier ones, so they cannot race).
func (b *bench) putNodes(ctx context.Context, db *store.DB, scope string, n int, gen func(i int) nodeIn) (time.Duration, error) {
	batch := make([]nodeIn, 0, nodesPerBatch)
	ins := make([]kura.NodeInput, 0, nodesPerBatch)
	t0 := time.Now()
	last := t0
	for i := range n {
		batch = append(batch, gen(i))
		if len(batch) < nodesPerBatch && i < n-1 {
			continue
		}
		ins = ins[:0]
		for j := range batch {
			ins = append(ins, batch[j].input())
		}
		if _, err := db.PutNodes(ctx, scope, ins); err != nil {
			return 0, fmt.Errorf("store PutNodes %s nodes %d..%d: %w", scope, i+1-len(batch), i, err)
		}
		batch = batch[:0]
		if (i+1)%100_000 == 0 {
			now := time.Now()
			b.logf("  %s: %s nodes written, %s nodes/s over the last 100,000", scope, thousands(float64(i+1)), thousands(100_000/now.Sub(last).Seconds()))
			last = now
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
	return time.Since(t0), nil
}

// buildMem writes the graph and/or the search scope into d.dir.
func (b *bench) buildMem(ctx context.Context, d *memData) error {
	if err := os.RemoveAll(d.dir); err != nil {
		return err
	}
	t0 := time.Now()
	db, err := openBuildStore(ctx, d.dir)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	if b.wants("memory_trace") || b.wants("memory_derived") {
		if err := b.buildGraph(ctx, db, d); err != nil {
			return err
		}
	}
	if b.wants("memory_search") {
		n := b.cfg.memSearchNodes
		r := rand.New(rand.NewPCG(3, 3))
		b.logf("building scope %q through the store: %s nodes", searchScope, thousands(float64(n)))
		el, err := b.putNodes(ctx, db, searchScope, n, func(i int) nodeIn { return genNode(r, kindOf(i), "s"+strconv.Itoa(i), nil) })
		if err != nil {
			return err
		}
		d.search = n
		d.build["search_nodes"] = n
		d.build["search_seconds"] = round(el.Seconds())
		d.build["search_nodes_per_s"] = round(float64(n) / el.Seconds())
	}
	if err := closeBuildStore(ctx, db); err != nil {
		return err
	}
	d.build["total_seconds"] = round(time.Since(t0).Seconds())
	d.build["db_bytes"] = dbBytes(d.dir)
	b.logf("built %s in %.1f s: %s", d.dir, time.Since(t0).Seconds(), fmtBuild(d.build))
	return nil
}

func fmtBuild(m map[string]any) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// buildGraph writes the lineage graph (see the top of this file).
func (b *bench) buildGraph(ctx context.Context, db *store.DB, d *memData) error {
	n, desc := b.cfg.memNodes, b.cfg.memDescendants
	rec, err := db.CreateRecord(ctx, &kura.RecordInput{Type: recordType, AuthorID: recordAuthor,
		Content: json.RawMessage(`{"text":"bench ` + b.nonce + ` lineage root: the record every block node descends from"}`)})
	if err != nil {
		return fmt.Errorf("store CreateRecord: %w", err)
	}
	d.recordID, d.nodes, d.main = rec.ID, n, n-desc
	d.parents = make([]uint8, n)
	roots := max(1, desc/100)
	record := "record:" + rec.ID
	r := rand.New(rand.NewPCG(1, 1))
	b.logf("building scope %q through the store: %s nodes, %s of them derived from %s", graphScope, thousands(float64(n)), thousands(float64(desc)), record)
	el, err := b.putNodes(ctx, db, graphScope, n, func(i int) nodeIn {
		var ps []string
		if i < d.main {
			if i >= 1 {
				ps = append(ps, nodeRef("n", i/2))
			}
			if p := secondParent(r, i, i/2); p >= 0 {
				ps = append(ps, nodeRef("n", p))
			}
		} else if k := i - d.main; k < roots {
			ps = append(ps, record, nodeRef("n", r.IntN(d.main)))
		} else {
			ps = append(ps, nodeRef("n", d.main+k/2))
			if p := secondParent(r, k, k/2); p >= 0 {
				ps = append(ps, nodeRef("n", d.main+p))
			}
		}
		d.parents[i] = uint8(len(ps))
		d.edges += len(ps)
		return genNode(r, kindOf(i), "n"+strconv.Itoa(i), ps)
	})
	if err != nil {
		return err
	}
	d.build["graph_nodes"] = n
	d.build["graph_edges"] = d.edges
	d.build["record_descendants"] = desc
	d.build["graph_seconds"] = round(el.Seconds())
	d.build["graph_nodes_per_s"] = round(float64(n) / el.Seconds())
	return nil
}
