package store

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

func TestBinaryIndex_Rank(t *testing.T) {
	t.Parallel()
	// Without a mean, a code is the signs of the vector: these four differ
	// from the query (+ + + + - - - -) in 0, 2, 4 and 8 signs.
	vs := map[int64][]float32{
		10: {-1, -1, -1, -1, 1, 1, 1, 1},       // 8
		11: {1, 1, 1, 1, -1, -1, -1, -1},       // 0
		12: {1, 1, -1, -1, 1, 1, -1, -1},       // 4
		13: {0.5, 2, 1, 3, -1, -2, 1, 1},       // 2
		14: {1, 1, 1, 1, -1, -1, -1, -1, 1, 1}, // other dimensions: not indexed
	}
	tests := []struct {
		name  string
		order []int64 // upsert order
		q     []float32
		want  []int64
	}{
		{"ByDistance", []int64{10, 11, 12, 13, 14}, []float32{1, 1, 1, 1, -1, -1, -1, -1}, []int64{11, 13, 12, 10}},
		{"Opposite", []int64{10, 11, 12, 13}, []float32{-1, -1, -1, -1, 1, 1, 1, 1}, []int64{10, 12, 13, 11}},
		// 11 and 14's twin are both at distance 0: slot (insertion) order.
		{"TiesKeepSlotOrder", []int64{13, 12}, []float32{1, 1, -1, -1, 1, 1, -1, -1}, []int64{12, 13}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := newBinaryIndex(8, nil)
			for _, nid := range tc.order {
				x.upsert(nid, vs[nid])
			}
			var sc rankScratch
			var got []int64
			for _, s := range x.rank(tc.q, &sc) {
				got = append(got, x.nids[s])
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("rank = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("RefineBreaksHammingTies", func(t *testing.T) {
		// Both codes differ from the query's in one sign, so Hamming ties
		// them; but 20 flips where the query is large, 21 where it is
		// small, and the unquantised query tells them apart.
		x := newBinaryIndex(8, nil)
		x.upsert(20, []float32{-1, 1, 1, 1, -1, -1, -1, -1})
		x.upsert(21, []float32{1, -1, 1, 1, -1, -1, -1, -1})
		x.upsert(22, []float32{-1, -1, -1, -1, 1, 1, 1, 1})
		q := []float32{5, 1, 1, 1, -1, -1, -1, -1}
		var sc rankScratch
		var byHamming, refined []int64
		order := x.rank(q, &sc)
		for _, s := range order {
			byHamming = append(byHamming, x.nids[s])
		}
		for _, s := range x.refine(q, slices.Clone(order), &sc) {
			refined = append(refined, x.nids[s])
		}
		if !slices.Equal(byHamming, []int64{20, 21, 22}) || !slices.Equal(refined, []int64{21, 20, 22}) {
			t.Fatalf("by Hamming %v, refined %v; want [20 21 22] and [21 20 22]", byHamming, refined)
		}
	})
	t.Run("UpsertReplaces", func(t *testing.T) {
		x := newBinaryIndex(8, nil)
		x.upsert(1, vs[10])
		x.upsert(2, vs[12])
		x.upsert(1, vs[11]) // node 1's text changed: its code is replaced
		var sc rankScratch
		order := x.rank(vs[11], &sc)
		if x.len() != 2 || x.nids[order[0]] != 1 {
			t.Fatalf("len %d, nearest %d; want 2 nodes, node 1 nearest", x.len(), x.nids[order[0]])
		}
	})
	t.Run("Rebuild", func(t *testing.T) {
		x := newBinaryIndex(8, nil)
		x.built = 10
		for i := range int64(84) {
			x.upsert(i, vs[11])
		}
		if x.needsRebuild() {
			t.Fatal("84 nodes over 10 at build: rebuilt too early")
		}
		x.upsert(84, vs[11])
		if !x.needsRebuild() {
			t.Fatal("85 nodes over 10 at build: want a rebuild")
		}
		x.built = 5000
		if x.needsRebuild() {
			t.Fatal("an index built from 5,000 vectors is not rebuilt")
		}
	})
}

// TestBinaryIndex_Recall checks that the codes pick the right candidates
// on data shaped like embeddings (loose clusters around topics, and a
// large offset every vector shares, which centring removes): the exact top
// 10 by cosine is nearly always among the first 256 candidates, by
// Hamming distance alone and refined. Without the centring the Hamming
// distance alone finds about 0.84 of it.
func TestBinaryIndex_Recall(t *testing.T) {
	t.Parallel()
	const dims, n, topics, queries = 384, 5000, 500, 40
	r := rand.New(rand.NewPCG(1, 2))
	gauss := func(scale float64) []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale)
		}
		return v
	}
	offset := gauss(3)
	centres := make([][]float32, topics)
	for i := range centres {
		centres[i] = gauss(1)
	}
	near := func(c []float32) []float32 {
		v := gauss(1.3)
		for i := range v {
			v[i] += c[i] + offset[i]
		}
		return v
	}
	vecs := make([][]float32, n)
	mean := make([]float64, dims)
	for i := range vecs {
		vecs[i] = near(centres[i%topics])
		norm := vecNorm(vecs[i])
		for j, f := range vecs[i] {
			mean[j] += float64(f/norm) / n
		}
	}
	m := make([]float32, dims)
	for i := range m {
		m[i] = float32(mean[i])
	}
	x := newBinaryIndex(dims, m)
	for i, v := range vecs {
		x.upsert(int64(i), v)
	}
	var found, foundRefined, total int
	var sc rankScratch
	for qi := range queries {
		q := near(centres[qi%topics])
		exact := make([]int, n)
		score := make([]float64, n)
		for i := range exact {
			exact[i], score[i] = i, cosine(q, vecs[i])
		}
		sort.SliceStable(exact, func(a, b int) bool { return score[exact[a]] > score[exact[b]] })
		byHamming, refined := map[int64]bool{}, map[int64]bool{}
		order := x.rank(q, &sc)
		for _, s := range order[:minRerank] {
			byHamming[x.nids[s]] = true
		}
		for _, s := range x.refine(q, order[:minRefine], &sc)[:minRerank] {
			refined[x.nids[s]] = true
		}
		for _, i := range exact[:10] {
			total++
			if byHamming[int64(i)] {
				found++
			}
			if refined[int64(i)] {
				foundRefined++
			}
		}
	}
	for _, c := range []struct {
		name  string
		found int
	}{{"by Hamming distance", found}, {"refined", foundRefined}} {
		recall := float64(c.found) / float64(total)
		t.Logf("recall of the exact top 10 in the first %d %s: %.3f", minRerank, c.name, recall)
		if recall < 0.95 {
			t.Errorf("the first %d %s hold %.3f of the exact top 10; want >= 0.95", minRerank, c.name, recall)
		}
	}
}

func TestVectorEncoding(t *testing.T) {
	t.Parallel()
	v := []float32{0, 1, -1.5, float32(math.Pi), math.SmallestNonzeroFloat32, math.MaxFloat32}
	b := encodeVector(v)
	if len(b) != 4*len(v) || b[4] != 0 || b[7] != 0x3f { // 1.0 = 0x3f800000, little-endian
		t.Fatalf("encoding % x", b)
	}
	got, err := decodeVector(nil, b)
	if err != nil || !slices.Equal(got, v) {
		t.Fatalf("decode = %v, %v; want %v", got, err, v)
	}
	for _, bad := range [][]byte{nil, {1, 2, 3}, {1, 2, 3, 4, 5}} {
		if _, err := decodeVector(nil, bad); err == nil {
			t.Errorf("decode(% x) accepted", bad)
		}
	}
}

func TestEmbedText(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", maxEmbedText)
	tests := []struct {
		name                     string
		kind, id, title, summary string
		want                     string
	}{
		{"Both", "fact", "f", " Car ", " needs tyres ", "Car\nneeds tyres"},
		{"SummaryOnly", "fact", "f", "", "needs tyres", "needs tyres"},
		{"TitleOnly", "fact", "f", "Car", "", "Car"},
		{"Neither", "decision", "api-rest", "", " ", "decision api-rest"},
		{"CutOnARune", "fact", "f", "", long, long[:maxEmbedText]},
	}
	for _, tc := range tests {
		got := embedText(&embedCandidate{kind: tc.kind, id: tc.id, title: tc.title, summary: tc.summary})
		if got != tc.want {
			t.Errorf("%s: embedText = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCosine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b []float32
		want float64
	}{
		{[]float32{1, 0}, []float32{2, 0}, 1},
		{[]float32{1, 0}, []float32{0, 3}, 0},
		{[]float32{1, 1}, []float32{-1, -1}, -1},
		{[]float32{0, 0}, []float32{1, 1}, 0},
		{[]float32{1}, []float32{1, 1}, 0},
	}
	for _, tc := range tests {
		if got := cosine(tc.a, tc.b); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("cosine(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestFuseResults(t *testing.T) {
	t.Parallel()
	node := func(ref string) *nodeRow { return &nodeRow{Node: kura.Node{Ref: ref}} }
	nodes := map[int64]*nodeRow{1: node("fact:a"), 2: node("fact:c"), 3: node("fact:d")}
	kindFilter := kura.SearchReason{Code: "kind_filter", Detail: "fact"}
	lex := []kura.SearchResult{
		{Ref: "fact:a", Score: 9, Reasons: []kura.SearchReason{{Code: "title_match", Detail: "car"}, kindFilter}},
		{Ref: "fact:b", Score: 3, Reasons: []kura.SearchReason{{Code: "summary_match", Detail: "car"}, kindFilter}},
	}
	sem := []semanticHit{{nid: 2, cos: 0.9}, {nid: 1, cos: 0.8}, {nid: 3, cos: 0.1}}
	semReason := func(h semanticHit) kura.SearchReason {
		return kura.SearchReason{Code: "semantic_match", Detail: "x"}
	}
	semResult := func(h semanticHit) kura.SearchResult {
		return kura.SearchResult{Ref: nodes[h.nid].Ref, Reasons: []kura.SearchReason{semReason(h), kindFilter}}
	}
	type want struct {
		ref   string
		codes string
	}
	tests := []struct {
		name string
		lex  []kura.SearchResult
		sem  []semanticHit
		k    int
		want []want
	}{
		// a: 1/61 + 1/62; c: 1/61; b: 1/62 (b before d: lexical first); d: 1/63.
		{"Both", lex, sem, 10, []want{
			{"fact:a", "title_match semantic_match kind_filter"},
			{"fact:c", "semantic_match kind_filter"},
			{"fact:b", "summary_match kind_filter"},
			{"fact:d", "semantic_match kind_filter"},
		}},
		{"Cut", lex, sem, 2, []want{{"fact:a", "title_match semantic_match kind_filter"}, {"fact:c", "semantic_match kind_filter"}}},
		{"LexicalOnly", lex, nil, 10, []want{{"fact:a", "title_match kind_filter"}, {"fact:b", "summary_match kind_filter"}}},
		{"SemanticOnly", nil, sem[:1], 10, []want{{"fact:c", "semantic_match kind_filter"}}},
		{"Nothing", nil, nil, 10, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := fuseResults(tc.lex, tc.sem, nodes, semResult, semReason, tc.k)
			var gw []want
			for i, r := range got {
				var codes []string
				for _, why := range r.Reasons {
					codes = append(codes, why.Code)
				}
				gw = append(gw, want{r.Ref, strings.Join(codes, " ")})
				if i > 0 && r.Score > got[i-1].Score {
					t.Errorf("score %g after %g: scores must fall as the order does", r.Score, got[i-1].Score)
				}
			}
			if !slices.Equal(gw, tc.want) {
				t.Fatalf("fused %v, want %v", gw, tc.want)
			}
		})
	}
	// The lexical results given are not changed by fusion.
	if len(lex[0].Reasons) != 2 {
		t.Fatalf("fusion changed its input: %+v", lex[0].Reasons)
	}
}
