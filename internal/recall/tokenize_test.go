package recall_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/recall"
)

// The examples of Porter's paper and the rules' edge cases; the store's
// tests hold Stem to the engine over a quarter of a million words.
func TestStem(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"caresses", "caress"}, {"ponies", "poni"}, {"ties", "ti"}, {"caress", "caress"}, {"cats", "cat"},
		{"feed", "feed"}, {"agreed", "agre"}, {"plastered", "plaster"}, {"bled", "bled"}, {"motoring", "motor"}, {"sing", "sing"},
		{"conflated", "conflat"}, {"troubled", "troubl"}, {"sized", "size"}, {"hopping", "hop"}, {"tanned", "tan"},
		{"falling", "fall"}, {"hissing", "hiss"}, {"fizzed", "fizz"}, {"failing", "fail"}, {"filing", "file"},
		{"happy", "happi"}, {"sky", "sky"},
		{"relational", "relat"}, {"conditional", "condit"}, {"rational", "ration"}, {"valenci", "valenc"},
		{"digitizer", "digit"}, {"conformabli", "conform"}, {"radicalli", "radic"}, {"differentli", "differ"},
		{"vileli", "vile"}, {"analogousli", "analog"}, {"vietnamization", "vietnam"}, {"predication", "predic"},
		{"operator", "oper"}, {"feudalism", "feudal"}, {"decisiveness", "decis"}, {"hopefulness", "hope"},
		{"callousness", "callous"}, {"formaliti", "formal"}, {"sensitiviti", "sensit"}, {"sensibiliti", "sensibl"},
		{"triplicate", "triplic"}, {"formative", "form"}, {"formalize", "formal"}, {"electriciti", "electr"},
		{"electrical", "electr"}, {"hopeful", "hope"}, {"goodness", "good"},
		{"revival", "reviv"}, {"allowance", "allow"}, {"inference", "infer"}, {"airliner", "airlin"},
		{"gyroscopic", "gyroscop"}, {"adjustable", "adjust"}, {"defensible", "defens"}, {"irritant", "irrit"},
		{"replacement", "replac"}, {"adjustment", "adjust"}, {"dependent", "depend"}, {"adoption", "adopt"},
		{"homologou", "homolog"}, {"communism", "commun"}, {"activate", "activ"}, {"angulariti", "angular"},
		{"homologous", "homolog"}, {"effective", "effect"}, {"bowdlerize", "bowdler"},
		{"probate", "probat"}, {"rate", "rate"}, {"cease", "ceas"}, {"controll", "control"}, {"roll", "roll"},
		{"addresses", "address"}, {"address", "address"}, {"routing", "rout"}, {"routers", "router"},
		{"uniswap", "uniswap"}, {"atayying", "atai"}, // a doubled y is undone like any doubled letter
		{"go", "go"}, {"is", "is"}, {"ies", "ie"}, {"1990s", "1990"}, {"cafés", "café"},
		{"cement", "cement"}, // the longest suffix decides: ement fails, ment is not tried
		{"a-very-long-token-" + string(make([]byte, 60)), "a-very-long-token-" + string(make([]byte, 60))},
	}
	for _, tc := range tests {
		if got := recall.Stem(tc.in); got != tc.want {
			t.Errorf("Stem(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"What is the Uniswap router address?", []string{"what", "is", "the", "uniswap", "router", "address"}},
		{"internal/api/users.go", []string{"intern", "api", "user", "go"}},
		{"Addresses, ADDRESSES and addresses", []string{"address", "address", "and", "address"}},
		{"Ünïcode ÉCOLE naïve café", []string{"unicod", "ecol", "naiv", "cafe"}},
		{"e\u0301cole", []string{"ecol"}}, // a combining accent is dropped inside the word
		{"東京 déjà-vu", []string{"東京", "deja", "vu"}},
		{"x²+½ ＡＢＣ ﬁle", []string{"x²", "½", "ａｂｃ", "ﬁle"}},
		{"snake_case camelCase v2.1", []string{"snake", "case", "camelcas", "v2", "1"}},
		{"emoji 😀 here", []string{"emoji", "here"}},
		{"", nil},
		{"...---...", nil},
	}
	for _, tc := range tests {
		if got := recall.Tokens(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Tokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()
	fields := []recall.Field{
		{Code: "title_match", Text: "Uniswap router addresses"},
		{Code: "id_match", Text: "fact uniswap-v3"},
		{Code: "summary_match", Text: "The router lives at 0x68b3; see the docs."},
		{Code: "metadata_match", Text: ""},
	}
	tests := []struct {
		words []string
		want  []recall.Reason
	}{
		{[]string{"uniswap", "address"}, []recall.Reason{{"title_match", "uniswap, address"}, {"id_match", "uniswap"}}},
		{[]string{"routers"}, []recall.Reason{{"title_match", "routers"}, {"summary_match", "routers"}}}, // both stem to router
		{[]string{"routing"}, nil}, // rout: not router
		{[]string{"docs", "doc"}, []recall.Reason{{"summary_match", "docs, doc"}}},
		{[]string{"v3"}, []recall.Reason{{"id_match", "v3"}}},
		{[]string{"nothing"}, nil},
		{[]string{"?!"}, nil}, // no token: matches nothing
		{nil, nil},
	}
	for _, tc := range tests {
		if got := recall.Explain(fields, tc.words); !slices.Equal(got, tc.want) {
			t.Errorf("Explain(%q) = %+v, want %+v", tc.words, got, tc.want)
		}
	}
	// A word of two tokens is a phrase: its tokens in a row.
	if got := recall.Explain([]recall.Field{{Code: "c", Text: "a x b"}, {Code: "d", Text: "x a b"}}, []string{"a\u0300b"}); len(got) != 0 {
		t.Errorf("a phrase matched tokens not in a row: %+v", got)
	}
}

func TestBM25(t *testing.T) {
	t.Parallel()
	doc := func(cols ...string) recall.Doc {
		d := recall.Doc{}
		for _, c := range cols {
			d = append(d, recall.Tokens(c))
		}
		return d
	}
	phrase := func(ws ...string) [][]string {
		var ps [][]string
		for _, w := range ws {
			ps = append(ps, recall.Phrase(w))
		}
		return ps
	}
	w := []float64{3, 1}
	filler := doc("", "nothing to see here at all")
	t.Run("RareOutweighsCommon", func(t *testing.T) {
		docs := []recall.Doc{doc("", "common rare"), doc("", "common common"), doc("", "common words"), doc("", "common text"), filler, filler}
		s := recall.BM25(docs, phrase("common", "rare"), w)
		if !(s[0] > s[1] && s[1] > 0) {
			t.Errorf("scores %v: the rare word should lift doc 0 above all", s)
		}
	})
	t.Run("TitleOutweighsSummary", func(t *testing.T) {
		docs := []recall.Doc{doc("cache", "words words"), doc("words", "cache words"), filler, filler}
		s := recall.BM25(docs, phrase("cache"), w)
		if !(s[0] > s[1] && s[1] > 0) {
			t.Errorf("scores %v: a title hit should outweigh a summary hit", s)
		}
	})
	t.Run("TermFrequencyCounts", func(t *testing.T) {
		docs := []recall.Doc{doc("", "retry retry retry again"), doc("", "retry once more again"), filler, filler, filler}
		s := recall.BM25(docs, phrase("retry"), w)
		if !(s[0] > s[1] && s[1] > 0) {
			t.Errorf("scores %v: three mentions should outweigh one", s)
		}
	})
	t.Run("CommonWordsFloor", func(t *testing.T) {
		// In most documents a word's IDF is floored: it weighs almost
		// nothing, yet still more than nothing.
		docs := []recall.Doc{doc("", "the cat"), doc("", "the dog"), doc("", "the end")}
		s := recall.BM25(docs, phrase("the"), w)
		for i, x := range s {
			if !(x > 0 && x < 1e-5) {
				t.Errorf("doc %d: score %v, want a tiny positive score", i, x)
			}
		}
	})
	t.Run("Nothing", func(t *testing.T) {
		if s := recall.BM25(nil, phrase("x"), w); len(s) != 0 {
			t.Errorf("no docs: %v", s)
		}
		if s := recall.BM25([]recall.Doc{filler}, nil, w); s[0] != 0 {
			t.Errorf("no phrases: %v", s)
		}
		if s := recall.BM25([]recall.Doc{filler, doc("x", "")}, phrase("absent"), w); s[0] != 0 || s[1] != 0 || math.IsNaN(s[0]) {
			t.Errorf("absent phrase: %v", s)
		}
	})
}

// WithinEdits answers what comparing EditDistance with the bound answers.
func TestWithinEdits(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2, 9))
	alphabet := []rune("abcdé東")
	word := func() string {
		w := make([]rune, r.IntN(9))
		for i := range w {
			w[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(w)
	}
	for range 20000 {
		a, b, k := word(), word(), r.IntN(4)
		if r.IntN(2) == 0 { // near pairs: b is a with a few edits
			rb := []rune(a)
			for range r.IntN(3) {
				if len(rb) > 1 {
					i := r.IntN(len(rb) - 1)
					rb[i], rb[i+1] = rb[i+1], rb[i]
				}
			}
			b = string(rb)
		}
		if got, want := recall.WithinEdits(a, b, k), recall.EditDistance(a, b) <= k; got != want {
			t.Fatalf("WithinEdits(%q, %q, %d) = %v, EditDistance says %d", a, b, k, got, recall.EditDistance(a, b))
		}
	}
	long := strings.Repeat("a", 70)
	if !recall.WithinEdits(long, long+"b", 1) || recall.WithinEdits(long, long+"bb", 1) {
		t.Error("words longer than 64 runes")
	}
}

// TestStemKeepsPrefix: a stem less its last letter begins the word it was
// made from, for words through every rule of the algorithm (Explain skips
// stemming a token that does not begin so).
func TestStemKeepsPrefix(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 5))
	suffixes := strings.Fields("s es ies sses ss ed eed ing ly y ational tional enci anci izer bli abli alli entli eli ousli ization ation ator " +
		"alism iveness fulness ousness aliti iviti biliti logi icate ative alize iciti ical ful ness al ance ence er ic able ible ant " +
		"ement ment ent sion tion ion ou ism ate iti ous ive ize e ll at bl iz yy")
	for range 250000 {
		var b strings.Builder
		for range r.IntN(7) {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		for range 1 + r.IntN(3) {
			b.WriteString(suffixes[r.IntN(len(suffixes))])
		}
		w := b.String()
		if s := recall.Stem(w); s != "" && !strings.HasPrefix(w, s[:len(s)-1]) {
			t.Fatalf("Stem(%q) = %q: %q does not begin the word", w, s, s[:len(s)-1])
		}
	}
}
