package recall_test

import (
	"slices"
	"testing"

	"github.com/kura-memory/kura/internal/recall"
)

func TestQueryTerms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		q    string
		want []string
	}{
		{"what is the uniswap router address", []string{"uniswap", "router", "address"}},
		{"When did she go to the support group?", []string{"go", "support", "group"}},
		{"Addresses, ADDRESSES and addresses", []string{"addresses"}},
		{"the who", []string{"the", "who"}}, // only stop words: keep them
		{"api/users.go", []string{"api", "users", "go"}},
		{"Ünïcode ÉCOLE", []string{"ünïcode", "école"}},
		{"", nil},
		{"   ?!  ", nil},
	}
	for _, tc := range tests {
		if got := recall.QueryTerms(tc.q); !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("QueryTerms(%q) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

func TestMatchExpr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		terms   []string
		columns []string
		want    string
	}{
		{[]string{"uniswap", "router"}, nil, `"uniswap" OR "router"`},
		{[]string{"and", "near", "title"}, nil, `"and" OR "near" OR "title"`},
		{[]string{`a"b`}, nil, `"a""b"`},
		{[]string{"x"}, []string{"title", "summary"}, `{title summary} : ("x")`},
	}
	for _, tc := range tests {
		if got := recall.MatchExpr(tc.terms, tc.columns...); got != tc.want {
			t.Errorf("MatchExpr(%q, %q) = %s, want %s", tc.terms, tc.columns, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"uniswap", "uniswap", 0},
		{"uniswop", "uniswap", 1},
		{"unsiwap", "uniswap", 1}, // a swap of neighbours is one edit
		{"uniswp", "uniswap", 1},
		{"uniiswap", "uniswap", 1},
		{"adress", "address", 1},
		{"recieve", "receive", 1},
		{"kitten", "sitting", 3},
		{"café", "cafe", 1}, // runes, not bytes
		{"sessoin", "session", 1},
		{"sesion", "session", 1},
		{"ca", "abc", 3}, // a swap is not followed by an edit of the swapped pair
		{"ünïcode", "unicode", 2},
	}
	for _, tc := range tests {
		if got := recall.EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := recall.EditDistance(tc.b, tc.a); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestMaxEdits(t *testing.T) {
	t.Parallel()
	for runes, want := range map[int]int{1: 0, 3: 0, 4: 1, 7: 1, 8: 2, 20: 2} {
		if got := recall.MaxEdits(runes); got != want {
			t.Errorf("MaxEdits(%d) = %d, want %d", runes, got, want)
		}
	}
}

func TestFuse(t *testing.T) {
	t.Parallel()
	lexical := []string{"a", "b", "c"}
	semantic := []string{"c", "d", "a"}
	got := recall.Fuse(lexical, semantic)
	var ids []string
	for _, f := range got {
		ids = append(ids, f.ID)
	}
	// a: 1/61+1/63, c: 1/63+1/61 (equal: a first, it appeared first),
	// b: 1/62, d: 1/62 (b first).
	if want := []string{"a", "c", "b", "d"}; !slices.Equal(ids, want) {
		t.Fatalf("Fuse order %q, want %q", ids, want)
	}
	if !slices.Equal(got[0].Ranks, []int{1, 3}) || !slices.Equal(got[3].Ranks, []int{0, 2}) {
		t.Errorf("ranks a %v, d %v; want [1 3] and [0 2]", got[0].Ranks, got[3].Ranks)
	}
	if got := recall.Fuse(); len(got) != 0 {
		t.Errorf("Fuse() = %v, want nothing", got)
	}
	// A repeated id counts once per list, at its best rank.
	if got := recall.Fuse([]string{"x", "x"}); len(got) != 1 || got[0].Ranks[0] != 1 {
		t.Errorf("Fuse(x, x) = %v", got)
	}
}

func FuzzMatchExpr(f *testing.F) {
	f.Add(`what is "the" uniswap? router* AND NEAR(x y) title:z`)
	f.Fuzz(func(t *testing.T, q string) {
		terms := recall.QueryTerms(q)
		expr := recall.MatchExpr(terms)
		// Every term is one quoted string: the quotes balance.
		n := 0
		for _, r := range expr {
			if r == '"' {
				n++
			}
		}
		if n%2 != 0 {
			t.Fatalf("MatchExpr(%q) = %s: unbalanced quotes", terms, expr)
		}
	})
}

func TestStem_Examples(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"caresses": "caress", "ponies": "poni", "ties": "ti", "cats": "cat", "feed": "feed", "agreed": "agre",
		"plastered": "plaster", "motoring": "motor", "sing": "sing", "conflated": "conflat", "troubled": "troubl",
		"sized": "size", "hopping": "hop", "falling": "fall", "hissing": "hiss", "filing": "file", "happy": "happi",
		"sky": "sky", "relational": "relat", "conditional": "condit", "generalizations": "gener",
		"oscillators": "oscil", "addresses": "address", "address": "address", "connected": "connect",
		"connecting": "connect", "connection": "connect", "routers": "router", "ab": "ab",
	}
	for w, want := range tests {
		if got := recall.Stem(w); got != want {
			t.Errorf("Stem(%q) = %q, want %q", w, got, want)
		}
	}
}

func TestIndexForm(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"Addresses": "address", "CAFÉS": "cafe", "naïve": "naiv", "ΟΔΟΣ": "οδοσ", "οδος": "οδοσ",
		"\u212aelvin": "kelvin", "東京": "東京",
	}
	for w, want := range tests {
		if got := recall.IndexForm(w); got != want {
			t.Errorf("IndexForm(%q) = %q, want %q", w, got, want)
		}
	}
}

func TestVariants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		word string
		want []string
	}{
		{"go", []string{"went", "gone"}},
		{"went", []string{"go", "gone"}},
		{"bought", []string{"buy"}},
		{"buy", []string{"bought"}},
		{"read", nil},                       // the same in every form: nothing to add
		{"rise", []string{"rose", "risen"}}, // the verb reaches its forms...
		{"rose", nil},                       // ...but the flower does not lead to rising
		{"leave", []string{"left"}},         // and leaving finds "left"
		{"left", nil},                       // while "left" (the side) stays itself
		{"address", nil},
	}
	for _, tc := range tests {
		if got := recall.Variants(tc.word); !slices.Equal(got, tc.want) {
			t.Errorf("Variants(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}
