package kb_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kb/kbtest"
	"github.com/kura-memory/kura/internal/kura"
)

func TestIDF(t *testing.T) {
	t.Parallel()
	// Rarer words weigh more; a word every entry holds weighs almost
	// nothing but never turns negative.
	prev := math.Inf(1)
	for _, n := range []int{1, 10, 100, 500, 1000} {
		idf := kb.IDF(n, 1000)
		if idf <= 0 || idf >= prev {
			t.Errorf("IDF(%d, 1000) = %v after %v: want positive and falling", n, idf, prev)
		}
		prev = idf
	}
	if got := kb.IDF(1000, 1000); got > 0.001 {
		t.Errorf("IDF of a word in every entry = %v, want almost 0", got)
	}
}

func terms(words ...string) []kb.Term {
	out := make([]kb.Term, len(words))
	for i, w := range words {
		asked, used, _ := strings.Cut(w, "~")
		if used == "" {
			used = asked
		}
		out[i] = kb.NewTerm(asked, used)
	}
	return out
}

func entry(in kura.KBEntryInput) *kura.KBEntry {
	return &kura.KBEntry{Identifier: in.Identifier, Keys: in.Keys, Value: in.Value}
}

func TestOccurAndExplain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		e     *kura.KBEntry
		terms []kb.Term
		want  []kura.SearchReason
	}{
		{"StemsAndFields", entry(kbtest.Uniswap), terms("uniswap", "router", "address"), []kura.SearchReason{
			{Code: "identifier_match", Detail: "uniswap, address (addresses)"},
			{Code: "key_match", Detail: "uniswap, address"}, // a case difference is no other form
			{Code: "value_match", Detail: "router"},
		}},
		{"Typo", entry(kbtest.Uniswap), terms("uniswop~uniswap"), []kura.SearchReason{
			{Code: "identifier_match", Detail: "uniswap"},
			{Code: "key_match", Detail: "uniswap"},
			{Code: "typo_match", Detail: "uniswop ~ uniswap"},
		}},
		{"AccentsAndCase", &kura.KBEntry{Identifier: "Café menu", Value: "CAFÉS open at 8"}, terms("cafe"), []kura.SearchReason{
			{Code: "identifier_match", Detail: "cafe (Café)"},
			{Code: "value_match", Detail: "cafe (CAFÉS)"},
		}},
		{"NothingMatched", entry(kbtest.AAVE), terms("solana"), []kura.SearchReason{}},
		{"TypoNotMatchedSaysNothing", entry(kbtest.AAVE), terms("uniswop~uniswap"), []kura.SearchReason{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := kb.Occur(tc.e, tc.terms)
			if got := kb.Explain(tc.terms, &o); !slices.Equal(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestTermScore(t *testing.T) {
	t.Parallel()
	e := entry(kbtest.Uniswap)
	ts := terms("uniswap", "router", "mainnet", "solana")
	o := kb.Occur(e, ts)
	score := func(i int) float64 { return o.TermScore(i, 1, 0) }
	// A word in the identifier and the keys outweighs one in the value
	// only; one in the identifier only sits between; an absent word adds
	// nothing; no word adds more than the saturation bound.
	if !(score(0) > score(2) && score(2) > score(1) && score(1) > 0 && score(3) == 0) {
		t.Errorf("scores uniswap %v, mainnet %v, router %v, solana %v", score(0), score(2), score(1), score(3))
	}
	for i := range ts {
		if s := score(i); s > kb.MaxTermScore(1) {
			t.Errorf("term %d scores %v above the bound %v", i, s, kb.MaxTermScore(1))
		}
	}
	// A longer entry than the average counts an occurrence for less.
	if long, short := o.TermScore(0, 1, float64(o.Length)/2), o.TermScore(0, 1, float64(o.Length)*2); long >= short {
		t.Errorf("length discount: %v for a long entry, %v for a short one", long, short)
	}
}

func TestFormatRankedLookup(t *testing.T) {
	t.Parallel()
	uni, aave := *entry(kbtest.Uniswap), *entry(kbtest.AAVE)
	block := func(e kura.KBEntry) string { return "--- " + e.Identifier + " ---\n" + e.Value + "\n\n" }
	tests := []struct {
		name           string
		strict, ranked []kura.KBEntry
		more           int
		want           string
	}{
		{"StrictOnlyIsTheStrictText", []kura.KBEntry{uni}, nil, 0, kb.FormatLookup("q", []kura.KBEntry{uni}, 0)},
		{"StrictWithMore", []kura.KBEntry{uni}, nil, 3, kb.FormatLookup("q", []kura.KBEntry{uni}, 3)},
		{"Nothing", nil, nil, 0, "No knowledge found for: q"},
		{"RankedOnly", nil, []kura.KBEntry{aave, uni}, 0, kb.RankedOnly + block(aave) + block(uni)},
		{"StrictThenRanked", []kura.KBEntry{uni}, []kura.KBEntry{aave}, 0, block(uni) + kb.RankedAfterStrict + block(aave)},
	}
	for _, tc := range tests {
		if got := kb.FormatRankedLookup("q", tc.strict, tc.more, tc.ranked); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
