package bm25_test

import (
	"math"
	"slices"
	"testing"

	"github.com/kura-memory/kura/bench/internal/bm25"
)

// The corpus of the hand computations below: 3 documents of 6, 3 and 3
// tokens, so N = 3 and avgdl = 4.
var corpus = []string{"The cat sat on the mat.", "the dog SAT", "cats and dogs"}

// Hand-computed pieces (k1 = 1.2, b = 0.75):
//
//	idf(n=1) = ln(1 + 2.5/1.5) = ln(8/3)  = 0.980829
//	idf(n=2) = ln(1 + 1.5/2.5) = ln(1.6)  = 0.470004
//	norm(|D|=6) = 1.2 · (0.25 + 0.75 · 6/4) = 1.65
//	norm(|D|=3) = 1.2 · (0.25 + 0.75 · 3/4) = 0.975
//	tf part, f=1, |D|=6: 2.2/2.65 = 0.830189;  f=2, |D|=6: 4.4/3.65 = 1.205479
//	tf part, f=1, |D|=3: 2.2/1.975 = 1.113924
func TestIndex_Score(t *testing.T) {
	t.Parallel()
	ix := bm25.New(corpus)
	tests := []struct {
		name string
		q    string
		want [3]float64
	}{
		// idf(1) · 0.830189
		{"OneRareWord", "cat", [3]float64{0.814273, 0, 0}},
		// d0: idf(2)·1.205479 + idf(2)·0.830189; d1: 2 · idf(2)·1.113924.
		// The short document wins although the long one holds "the" twice.
		{"ShortDocumentWins", "the sat", [3]float64{0.956771, 1.047097, 0}},
		{"TermFrequency", "the", [3]float64{0.566580, 0.523548, 0}},
		// No stemming: "cats" is not "cat", "dogs" is not "dog".
		{"NoStemming", "dogs cat", [3]float64{0.814273, 0, 1.092569}},
		// Case and punctuation do not matter; a repeated query word counts once.
		{"CaseAndRepeats", "CAT? cat, Cat!", [3]float64{0.814273, 0, 0}},
		{"UnknownWord", "giraffe", [3]float64{0, 0, 0}},
		{"Empty", "", [3]float64{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for d, want := range tt.want {
				if got := ix.Score(tt.q, d); math.Abs(got-want) > 5e-6 {
					t.Errorf("score(%q, doc %d): got %.6f, want %.6f", tt.q, d, got, want)
				}
			}
		})
	}
}

func TestIDF(t *testing.T) {
	t.Parallel()
	tests := []struct {
		N, n int
		want float64
	}{
		{3, 1, 0.980829},
		{3, 2, 0.470004},
		// A word in every document still weighs a little (never negative).
		{3, 3, 0.133531},
		{1000, 1, 6.503290},
	}
	for _, tt := range tests {
		if got := bm25.IDF(tt.N, tt.n); math.Abs(got-tt.want) > 5e-6 {
			t.Errorf("IDF(%d, %d): got %.6f, want %.6f", tt.N, tt.n, got, tt.want)
		}
	}
}

func TestIndex_Search(t *testing.T) {
	t.Parallel()
	ix := bm25.New(corpus)
	docs := func(hs []bm25.Hit) []int {
		out := []int{}
		for _, h := range hs {
			out = append(out, h.Doc)
		}
		return out
	}
	tests := []struct {
		name string
		q    string
		k    int
		want []int
	}{
		{"BestFirst", "the sat", 10, []int{1, 0}},
		{"OnlyMatches", "cat", 10, []int{0}},
		{"CutAtK", "the sat dogs", 2, []int{2, 1}},
		{"NoMatch", "giraffe", 10, []int{}},
		// "on" and "mat" are each in d0 only; "and" in d2 only; d0 and d2
		// have different lengths, so no tie here: see Ties for ties.
		{"Mixed", "mat and", 10, []int{2, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := docs(ix.Search(tt.q, tt.k)); !slices.Equal(got, tt.want) {
				t.Errorf("Search(%q, %d): got docs %v, want %v", tt.q, tt.k, got, tt.want)
			}
		})
	}
	t.Run("Ties", func(t *testing.T) {
		ix := bm25.New([]string{"x y", "a b", "a c", "a d"})
		if got := docs(ix.Search("a", 10)); !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("equal scores: got docs %v, want index order [1 2 3]", got)
		}
	})
	t.Run("EmptyCorpus", func(t *testing.T) {
		if got := bm25.New(nil).Search("a", 10); len(got) != 0 {
			t.Errorf("empty corpus: got %v", got)
		}
	})
}

func TestTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"Caroline's LGBTQ support-group, 2023!", []string{"caroline", "s", "lgbtq", "support", "group", "2023"}},
		{"0xAbC1 /var/log/app.log", []string{"0xabc1", "var", "log", "app", "log"}},
		{"Amélie  café", []string{"amélie", "café"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := bm25.Tokens(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Tokens(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}
