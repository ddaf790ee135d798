package kb_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kb/kbtest"
	"github.com/kura-memory/kura/internal/kura"
)

func TestWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"spec identifier", "Uniswap contract addresses on Ethereum mainnet.", []string{"uniswap", "contract", "addresses", "on", "ethereum", "mainnet"}},
		{"case variants once", "AAVE, aave; Aave!", []string{"aave"}},
		{"digits stay in words", "Pool: 0x12312313, v2", []string{"pool", "0x12312313", "v2"}},
		{"dots and dashes split", "v2.0-beta", []string{"v2", "0", "beta"}},
		{"underscore is punctuation", "snake_case_name", []string{"snake", "case", "name"}},
		{"apostrophe splits", "don't", []string{"don", "t"}},
		{"slashes", "api/users.go", []string{"api", "users", "go"}},
		{"every kind of space", "a\tb\nc\u00a0d\u2003e\u3000f", []string{"a", "b", "c", "d", "e", "f"}},
		{"NUL splits", "a\x00b", []string{"a", "b"}},
		{"accented letters", "Crème Brûlée, déjà vu", []string{"crème", "brûlée", "déjà", "vu"}},
		{"uppercase accents fold", "DÉJÀ déjà", []string{"déjà"}},
		{"CJK runs are words", "東京タワー the 東京", []string{"東京タワー", "the", "東京"}},
		{"CJK punctuation splits", "東京、大阪。", []string{"東京", "大阪"}},
		{"Greek final sigma folds with sigma", "ΟΔΟΣ οδος οδοσ", []string{"οδοσ"}},
		{"Kelvin sign is k", "\u212a k K", []string{"k"}},
		{"long s is s", "ſ S", []string{"s"}},
		{"Arabic-Indic digits", "١٢٣ abc", []string{"١٢٣", "abc"}},
		{"superscripts and fractions are not digits", "x² ½", []string{"x"}},
		{"emoji and symbols split", "🚀rocket ★ $5 €", []string{"rocket", "5"}},
		{"combining marks split", "e\u0301t\u00e9", []string{"e", "t\u00e9"}},
		{"no full case folding", "STRASSE straße", []string{"strasse", "straße"}},
		{"dotted capital I stays apart", "İstanbul istanbul", []string{"İstanbul", "istanbul"}},
		{"only punctuation", "?!", nil},
		{"empty", "", nil},
		{"blank", "  \t ", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kb.Words(tc.text); !slices.Equal(got, tc.want) {
				t.Errorf("Words(%q): got %q, want %q", tc.text, got, tc.want)
			}
		})
	}
	// Past the small-slice path: a long text keeps each word once.
	long := strings.Repeat("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho ", 4)
	if got := kb.Words(long); len(got) != 17 || got[16] != "rho" {
		t.Errorf("long text: got %q, want the 17 words once each", got)
	}
}

func TestFoldKeys(t *testing.T) {
	t.Parallel()
	got := kb.FoldKeys([]string{"Dex", "dex", "AMM", "Contract Address", "contract address", "ΟΔΟΣ", "οδος"})
	if want := []string{"dex", "amm", "contract address", "οδοσ"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := kb.FoldKeys(nil); got == nil || len(got) != 0 {
		t.Errorf("nil keys: got %#v, want an empty list", got)
	}
}

// orbit is every rune unicode.SimpleFold cycles through from r.
func orbit(r rune) []rune {
	out := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		out = append(out, f)
	}
	return out
}

// Fold must agree with strings.EqualFold: both compare rune by rune, so it
// is enough that every rune folds into its own case orbit and that every
// member of an orbit folds to the same rune. Checked for every rune.
func TestFold_AgreesWithEqualFoldForEveryRune(t *testing.T) {
	t.Parallel()
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		f := kb.Fold(string(r))
		o := orbit(r)
		fr, size := utf8.DecodeRuneInString(f)
		if size != len(f) || !slices.Contains(o, fr) {
			t.Fatalf("Fold(%U) = %q, not one rune of its case orbit %q", r, f, string(o))
		}
		for _, m := range o[1:] {
			if g := kb.Fold(string(m)); g != f {
				t.Fatalf("Fold(%U) = %q but Fold(%U) = %q: one orbit, two folds", r, f, m, g)
			}
		}
		if l := unicode.ToLower(r); l != r && slices.Contains(o, l) && unicode.ToLower(fr) != fr {
			t.Fatalf("Fold(%U) = %q: not a lowercase although %q is in the orbit", r, f, string(l))
		}
	}
}

func TestFold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"Contract Address", "contract address"},
		{"ΟΔΟΣ", "οδοσ"},
		{"Straße", "straße"},
		{"ẞ", "ß"},
		{"µ", "μ"}, // the micro sign folds with Greek mu
		{"\u212a", "k"},
		{"İ", "İ"}, // its own orbit: EqualFold("İ", "i") is false
		{"", ""},
	} {
		if got := kb.Fold(tc.in); got != tc.want {
			t.Errorf("Fold(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	w := kbtest.Workload{R: rng}
	for range 2000 {
		a, b := w.Text(2), w.Text(2)
		if rng.IntN(2) == 0 {
			b = flipCase(rng, a)
		}
		if got, want := kb.Fold(a) == kb.Fold(b), strings.EqualFold(a, b); got != want {
			t.Fatalf("%q vs %q: Fold equal %v, EqualFold %v", a, b, got, want)
		}
	}
}

func flipCase(rng *rand.Rand, s string) string {
	return strings.Map(func(r rune) rune {
		o := orbit(r)
		return o[rng.IntN(len(o))]
	}, s)
}

// spec holds the two spec entries in a fresh Space.
func spec(t *testing.T) *kb.Space {
	t.Helper()
	var l kb.Space
	for _, e := range kbtest.Entries {
		if !l.Insert(e.Identifier, e.Keys, e.Value) {
			t.Fatalf("insert %q: not new", e.Identifier)
		}
	}
	return &l
}

func identifiers(es []kura.KBEntry) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Identifier)
	}
	return out
}

func want(idx []int) []string {
	out := []string{}
	for _, i := range idx {
		out = append(out, kbtest.Entries[i].Identifier)
	}
	return out
}

func TestLedger_SpecExamples(t *testing.T) {
	t.Parallel()
	l := spec(t)
	for _, ex := range kbtest.Examples {
		t.Run(ex.Name, func(t *testing.T) {
			if got := identifiers(l.Query(&ex.Query)); !slices.Equal(got, want(ex.Want)) {
				t.Errorf("got %q, want %q", got, want(ex.Want))
			}
		})
	}
	// The builder methods are the same queries.
	for _, tc := range []struct {
		name string
		got  []kura.KBEntry
		want []int
	}{
		{"FromIdentifier", l.FromIdentifier("contract addresses"), []int{0, 1}},
		{"FromKey", l.FromKey("Contract"), nil},
		{"FromAnyKeys", l.FromAnyKeys([]string{"Dex", "Lending"}), []int{0, 1}},
		{"FromExactKeys", l.FromExactKeys([]string{"AAVE", "Lending"}), []int{1}},
		{"FromExactKeys none", l.FromExactKeys(nil), []int{0, 1}},
		{"FromAnyKeys none", l.FromAnyKeys(nil), nil},
		{"FromIdentifier without words", l.FromIdentifier("?!"), []int{0, 1}},
	} {
		if got := identifiers(tc.got); !slices.Equal(got, want(tc.want)) {
			t.Errorf("%s: got %q, want %q", tc.name, got, want(tc.want))
		}
	}
}

func TestLedger_SpecMutations(t *testing.T) {
	t.Parallel()
	l := spec(t)
	uni := kbtest.Uniswap.Identifier
	if !l.Update(uni, kbtest.UpdatedValue) || l.FromKey("Uniswap")[0].Value != kbtest.UpdatedValue {
		t.Fatalf("update: got %+v", l.FromKey("Uniswap"))
	}
	if l.Update("uniswap contract addresses on ethereum mainnet.", "x") {
		t.Error("update matched an identifier that differs in case")
	}
	if !l.UpdateKeys(uni, kbtest.UpdatedKeys) {
		t.Fatal("update_keys: not found")
	}
	if got := identifiers(l.FromKey("amm")); !slices.Equal(got, []string{uni}) {
		t.Errorf("from_key(amm) after update_keys: got %q", got)
	}
	if got := l.FromKey("Dex contracts"); len(got) != 0 {
		t.Errorf("from_key(Dex contracts) after update_keys: got %q, want none", identifiers(got))
	}
	// An upsert replaces in place: the order is kept.
	if l.Insert(uni, []string{"Uniswap"}, "v3") {
		t.Error("insert of an existing identifier reported a new entry")
	}
	if got := l.Identifiers(); !slices.Equal(got, want([]int{0, 1})) {
		t.Errorf("identifiers after replace: got %q", got)
	}
	if l.Len() != 2 || l.IsEmpty() {
		t.Errorf("len %d, empty %v", l.Len(), l.IsEmpty())
	}
	if !l.Delete(uni) || l.Delete(uni) {
		t.Error("delete: want true once, then false")
	}
	if got := l.Identifiers(); !slices.Equal(got, want([]int{1})) || l.Len() != 1 {
		t.Errorf("after delete: got %q", got)
	}
	if l.UpdateKeys(uni, nil) || l.Update(uni, "x") {
		t.Error("update of a deleted entry reported true")
	}
	l.Insert(uni, nil, "back")
	if got := l.Identifiers(); !slices.Equal(got, want([]int{1, 0})) {
		t.Errorf("re-insert goes last: got %q", got)
	}
	if e := l.FromIdentifier("uniswap")[0]; e.Keys == nil || len(e.Keys) != 0 {
		t.Errorf("nil keys: got %#v, want an empty list", e.Keys)
	}
	if n := l.Clear(); n != 2 || !l.IsEmpty() || len(l.Entries()) != 0 || len(l.Identifiers()) != 0 {
		t.Errorf("clear: removed %d, left %d", n, l.Len())
	}
}

func TestBase_ScopesAreIsolated(t *testing.T) {
	t.Parallel()
	var b kb.Base
	defi, nft := b.Scope("defi"), b.Scope("nft")
	defi.Insert("Uniswap pools", []string{"Uniswap", "DEX"}, "Pool: 0x123...")
	nft.Insert("OpenSea collections", []string{"OpenSea", "NFT"}, "Top collections: ...")
	if got := identifiers(defi.FromKey("Uniswap")); !slices.Equal(got, []string{"Uniswap pools"}) {
		t.Errorf("defi: got %q", got)
	}
	if got := nft.FromKey("Uniswap"); len(got) != 0 {
		t.Errorf("nft sees defi: %q", identifiers(got))
	}
	if b.Scope("defi") != defi || b.Scope("").Len() != 0 {
		t.Error("scope views are not stable or the default scope is not empty")
	}
	nft.Clear()
	if defi.Len() != 1 {
		t.Error("clearing one scope emptied another")
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	l := spec(t)
	uni := "--- Uniswap contract addresses on Ethereum mainnet. ---\nPool: 0x12312313, Router: 0x456456456, Factory: 0x789789789\n\n"
	aave := "--- AAVE contract addresses on Ethereum mainnet. ---\nPool: 0x756745, MoneyMarket: 0x7890789, FlashLoan: 0xabc123\n\n"
	for _, tc := range []struct{ q, want string }{
		{"Uniswap", uni},
		{"contract addresses", uni + aave},
		{"AAVE Ethereum", aave},
		{"Solana", "No knowledge found for: Solana"},
		// No identifier holds "contracts", but a key is "Dex contracts".
		{"Dex contracts", uni},
		{"lending", aave},
		{"Contract", uni + aave}, // an identifier word, though no key
		{"Polygon", "No knowledge found for: Polygon"},
		{"?!", uni + aave}, // no words: every entry
	} {
		if got := kb.FormatLookup(tc.q, l.Lookup(tc.q), 0); got != tc.want {
			t.Errorf("lookup %q:\ngot  %q\nwant %q", tc.q, got, tc.want)
		}
	}
	if got := kb.FormatLookup("x", l.Entries()[:1], 3); got != uni+"(3 more entries match; ask a narrower question to see them)\n" {
		t.Errorf("truncated: got %q", got)
	}
}

// FuzzWords checks the tokenizer's invariants on any input: words are
// non-empty runs of letters and digits, folded, distinct; the words of the
// folded text are the words of the text; an identifier always matches
// itself and its case variants.
func FuzzWords(f *testing.F) {
	for _, s := range []string{"Uniswap contract addresses on Ethereum mainnet.", "?!", "", "ΟΔΟΣ", "e\u0301", "\xff\xfe", "東京タワー", "a\x00b", "İı"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words := kb.Words(s)
		seen := map[string]bool{}
		for _, w := range words {
			if w == "" || seen[w] {
				t.Fatalf("Words(%q) = %q: empty or repeated word", s, words)
			}
			seen[w] = true
			if kb.Fold(w) != w {
				t.Fatalf("Words(%q): %q is not folded", s, w)
			}
			for _, r := range w {
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					t.Fatalf("Words(%q): %q holds %U", s, w, r)
				}
			}
		}
		if !utf8.ValidString(s) {
			return
		}
		// Stored identifiers are valid UTF-8 (kura.ValidKBIdentifier).
		if got := kb.Words(kb.Fold(s)); !slices.Equal(got, words) {
			t.Fatalf("Words(Fold(%q)) = %q, Words = %q", s, got, words)
		}
		e := kura.KBEntry{Identifier: s}
		upper := strings.ToUpper(s)
		for _, q := range []string{s, upper, strings.ToLower(s)} {
			if strings.EqualFold(q, s) && !kb.Match(&e, &kura.KBQuery{Identifier: &q}) {
				t.Fatalf("identifier %q does not match the query %q", s, q)
			}
		}
	})
}

// FuzzValidate checks the limits on any input: Validate refuses exactly
// what breaks a rule, counting characters, and never panics.
func FuzzValidate(f *testing.F) {
	f.Add("Uniswap", "Dex", "v", 1, 1)
	f.Add("é", "東", "", 512, 33)
	f.Add("\xff", "", "x", 1, 0)
	f.Fuzz(func(t *testing.T, ident, key, value string, rep, nkeys int) {
		rep, nkeys = 1+abs(rep)%600, abs(nkeys)%40
		in := kura.KBEntryInput{Identifier: strings.Repeat(ident, rep), Value: value}
		for range nkeys {
			in.Keys = append(in.Keys, key)
		}
		err := in.Validate("")
		id := in.Identifier
		wantOK := id != "" && utf8.ValidString(id) && utf8.RuneCountInString(id) <= kura.MaxKBIdentifier &&
			utf8.ValidString(value) && utf8.RuneCountInString(value) <= kura.MaxKBValue &&
			(nkeys == 0 || (key != "" && utf8.ValidString(key) && utf8.RuneCountInString(key) <= kura.MaxKBKey && nkeys <= kura.MaxKBKeys))
		if (err == nil) != wantOK {
			t.Fatalf("Validate(%q x%d, %d x %q, %q): %v, want ok %v", ident, rep, nkeys, key, value, err, wantOK)
		}
		if err != nil && !kura.IsCode(err, kura.EInvalid) {
			t.Fatalf("error %v is not invalid_argument", err)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -(n + 1)
	}
	return n
}
