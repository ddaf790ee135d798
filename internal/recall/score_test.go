package recall_test

import (
	"math"
	"slices"
	"testing"

	"github.com/kura-memory/kura/internal/recall"
)

// bm25Term is one phrase's part of a BM25 score, written out from the
// formula with the constants FTS5 uses, for the expected values below.
func bm25Term(idf, f, docLen, avgdl float64) float64 {
	return idf * (f * 2.2) / (f + 1.2*(0.25+0.75*docLen/avgdl))
}

func TestBM25_Scores(t *testing.T) {
	t.Parallel()
	toks := func(s ...string) []string { return s }
	// Four documents, two columns weighted 3 and 1; every document is 4
	// tokens long, so |D|/avgdl is 1 unless a case says otherwise.
	filler := recall.Doc{toks(), toks("x", "y", "z", "w")}
	ln := math.Log
	tests := []struct {
		name    string
		docs    []recall.Doc
		phrases [][]string
		weights []float64
		want    []float64
	}{
		{
			name:    "OneWordInTheSecondColumn",
			docs:    []recall.Doc{{toks(), toks("cache", "a", "b", "c")}, filler, filler, filler},
			phrases: [][]string{{"cache"}},
			weights: []float64{3, 1},
			want:    []float64{bm25Term(ln(3.5/1.5), 1, 4, 4), 0, 0, 0},
		},
		{
			name:    "ColumnWeightMultipliesTheFrequency",
			docs:    []recall.Doc{{toks("cache"), toks("a", "b", "c")}, filler, filler, filler},
			phrases: [][]string{{"cache"}},
			weights: []float64{3, 1},
			want:    []float64{bm25Term(ln(3.5/1.5), 3, 4, 4), 0, 0, 0},
		},
		{
			name:    "RepeatsCount",
			docs:    []recall.Doc{{toks(), toks("go", "go", "go", "c")}, filler, filler, filler},
			phrases: [][]string{{"go"}},
			weights: []float64{3, 1},
			want:    []float64{bm25Term(ln(3.5/1.5), 3, 4, 4), 0, 0, 0},
		},
		{
			name:    "PhraseNeedsItsTokensInARow",
			docs:    []recall.Doc{{toks(), toks("group", "commit", "a", "b")}, {toks(), toks("commit", "group", "a", "b")}, filler, filler},
			phrases: [][]string{{"group", "commit"}},
			weights: []float64{3, 1},
			want:    []float64{bm25Term(ln(3.5/1.5), 1, 4, 4), 0, 0, 0},
		},
		{
			// Two of four documents hold it: ln(2.5/2.5) = 0, floored.
			name: "LongerDocumentWeighsLess",
			docs: []recall.Doc{{toks(), toks("wal", "a")}, {toks(), toks("wal", "a", "b", "c", "d", "e")},
				{toks(), toks("x", "y", "z", "w")}, {toks(), toks("x", "y", "z", "w")}},
			phrases: [][]string{{"wal"}},
			weights: []float64{3, 1},
			want:    []float64{bm25Term(1e-6, 1, 2, 4), bm25Term(1e-6, 1, 6, 4), 0, 0},
		},
		{
			name:    "PhrasesAdd",
			docs:    []recall.Doc{{toks(), toks("wal", "fsync", "a", "b")}, {toks(), toks("wal", "a", "b", "c")}, filler, filler, filler, filler},
			phrases: [][]string{{"wal"}, {"fsync"}},
			weights: []float64{3, 1},
			want: []float64{bm25Term(ln(4.5/2.5), 1, 4, 4) + bm25Term(ln(5.5/1.5), 1, 4, 4),
				bm25Term(ln(4.5/2.5), 1, 4, 4), 0, 0, 0, 0},
		},
		{
			// Held in a column without a weight: the document counts as
			// holding the phrase (for the IDF) but scores nothing for it.
			name:    "UnweightedColumnCountsForIDFOnly",
			docs:    []recall.Doc{{toks(), toks("a", "b", "c", "d"), toks("k")}, {toks(), toks("k", "b", "c", "d")}, filler, filler, filler},
			phrases: [][]string{{"k"}},
			weights: []float64{3, 1},
			want:    []float64{0, bm25Term(ln(3.5/2.5), 1, 4, 4.2), 0, 0, 0},
		},
		{
			name:    "EmptyPhraseScoresNothing",
			docs:    []recall.Doc{{toks("a"), toks("a")}, filler},
			phrases: [][]string{{}},
			weights: []float64{3, 1},
			want:    []float64{0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := recall.BM25(tt.docs, tt.phrases, tt.weights)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d scores, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > 1e-12*math.Max(1, math.Abs(tt.want[i])) {
					t.Errorf("doc %d: got %.15g, want %.15g", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestRoundScore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want float64
	}{
		{0, 0},
		{1, 1},
		{1.23456789, 1.23457},
		{12.3456789, 12.3457},
		{123456789, 123457000},
		{1.23456789e-6, 1.23457e-6}, // a floored IDF's score keeps its digits
		{-2.5000049, -2.5},
		{0.1 + 0.2, 0.3},
	}
	for _, tt := range tests {
		if got := recall.RoundScore(tt.in); got != tt.want {
			t.Errorf("RoundScore(%v): got %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestFuse_Table(t *testing.T) {
	t.Parallel()
	type fused struct {
		id    string
		score float64
		ranks []int
	}
	r := func(ranks ...int) float64 {
		s := 0.0
		for _, k := range ranks {
			s += 1 / float64(recall.RRFK+k)
		}
		return s
	}
	tests := []struct {
		name  string
		lists [][]string
		want  []fused
	}{
		{"NoLists", nil, nil},
		{"EmptyLists", [][]string{{}, {}}, nil},
		{"OneListKeepsItsOrder", [][]string{{"a", "b", "c"}},
			[]fused{{"a", r(1), []int{1}}, {"b", r(2), []int{2}}, {"c", r(3), []int{3}}}},
		{"InBothOutranksFirstInOne", [][]string{{"a", "b"}, {"c", "b"}},
			[]fused{{"b", r(2, 2), []int{2, 2}}, {"a", r(1), []int{1, 0}}, {"c", r(1), []int{0, 1}}}},
		{"TiesKeepFirstAppearance", [][]string{{"x", "y"}, {"y", "x"}},
			[]fused{{"x", r(1, 2), []int{1, 2}}, {"y", r(2, 1), []int{2, 1}}}},
		{"RepeatCountsOnceAtBestRank", [][]string{{"a", "b", "a"}},
			[]fused{{"a", r(1), []int{1}}, {"b", r(2), []int{2}}}},
		{"ThreeLists", [][]string{{"a"}, {"b", "a"}, {"c", "b", "a"}},
			[]fused{{"a", r(1, 2, 3), []int{1, 2, 3}}, {"b", r(1, 2), []int{0, 1, 2}}, {"c", r(1), []int{0, 0, 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := recall.Fuse(tt.lists...)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d ids (%v), want %d", len(got), got, len(tt.want))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.ID != w.id || math.Abs(g.Score-w.score) > 1e-15 || !slices.Equal(g.Ranks, w.ranks) {
					t.Errorf("place %d: got %s %.17g %v, want %s %.17g %v", i, g.ID, g.Score, g.Ranks, w.id, w.score, w.ranks)
				}
			}
		})
	}
}
