package kb_test

import (
	"math"
	"testing"

	"github.com/kura-memory/kura/internal/kb"
)

func TestIDF_Values(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n, total int
		want     float64
	}{
		{1, 1, math.Log(1 + 0.5/1.5)}, // held by every entry: small, positive
		{1000, 1000, math.Log(1 + 0.5/1000.5)},
		{1, 1000, math.Log(1 + 999.5/1.5)}, // one of a thousand: about 7
		{0, 10, math.Log(1 + 10.5/0.5)},
		{5, 10, math.Log(2)}, // half the entries: ln 2 exactly
	}
	for _, tt := range tests {
		if got := kb.IDF(tt.n, tt.total); math.Abs(got-tt.want) > 1e-12 || got <= 0 {
			t.Errorf("IDF(%d, %d): got %v, want %v", tt.n, tt.total, got, tt.want)
		}
	}
}

func TestTermScore_Values(t *testing.T) {
	t.Parallel()
	// Weights 10, 5, 1 (identifier, keys, value); k1 1.2, b 0.75.
	bm25 := func(idf, tf, norm float64) float64 { return idf * tf * 2.2 / (tf + 1.2*norm) }
	tests := []struct {
		name   string
		count  [kb.NumFields]int
		length int
		idf    float64
		avg    float64
		want   float64
	}{
		{"Absent", [kb.NumFields]int{}, 10, 2, 10, 0},
		{"OnceInTheValue", [kb.NumFields]int{0, 0, 1}, 10, 2, 10, bm25(2, 1, 1)},
		{"OnceInTheKeys", [kb.NumFields]int{0, 1, 0}, 10, 2, 10, bm25(2, 5, 1)},
		{"OnceInTheIdentifier", [kb.NumFields]int{1, 0, 0}, 10, 2, 10, bm25(2, 10, 1)},
		{"FieldsAdd", [kb.NumFields]int{1, 1, 2}, 10, 2, 10, bm25(2, 17, 1)},
		{"NoAverageNoDiscount", [kb.NumFields]int{0, 0, 1}, 40, 2, 0, bm25(2, 1, 1)},
		{"TwiceTheAverageLength", [kb.NumFields]int{0, 0, 1}, 20, 2, 10, bm25(2, 1, 0.25+0.75*2)},
		{"HalfTheAverageLength", [kb.NumFields]int{0, 0, 1}, 5, 2, 10, bm25(2, 1, 0.25+0.75*0.5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := &kb.Occurrences{Count: [][kb.NumFields]int{tt.count}, Length: tt.length}
			got := o.TermScore(0, tt.idf, tt.avg)
			if math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("got %.15g, want %.15g", got, tt.want)
			}
			if got > kb.MaxTermScore(tt.idf) {
				t.Errorf("got %v, above the bound %v", got, kb.MaxTermScore(tt.idf))
			}
			if o.Matched(0) != (tt.want > 0) {
				t.Errorf("Matched: got %v, want %v", o.Matched(0), tt.want > 0)
			}
		})
	}
}

func TestMaxTermScore(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ idf, want float64 }{{0, 0}, {1, 2.2}, {7.5, 16.5}} {
		if got := kb.MaxTermScore(tt.idf); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("MaxTermScore(%v): got %v, want %v", tt.idf, got, tt.want)
		}
	}
}

func TestRoundScore(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want float64 }{
		{0, 0},
		{1.23456, 1.2346},
		{1.23454, 1.2345},
		{12.00004, 12},
		{0.00004, 0},
		{0.1 + 0.2, 0.3},
		{-3.14159, -3.1416},
	}
	for _, tt := range tests {
		if got := kb.RoundScore(tt.in); got != tt.want {
			t.Errorf("RoundScore(%v): got %v, want %v", tt.in, got, tt.want)
		}
	}
}
