// Package evalset generates the bench's own retrieval evaluation sets, from a
// seed, with no data from elsewhere:
//
//   - Memory: long conversations between two named people over many
//     sessions, every dialog turn one episode node ("Caroline, session 3" /
//     what she said), and questions about what was said, asked the way a
//     model asks them: the person by name (or a pronoun) where the turn says
//     "I", other inflections and synonyms, stop words, now and then a typo
//     or a bare list of keywords, and a few questions needing two turns.
//     Each question carries the ids of its evidence turns.
//   - Knowledge base: entries of the kind a team keeps for its models
//     (contract addresses, API endpoints, config keys, owners, log
//     locations, prices, error codes) and natural questions about them, each
//     with the identifiers of every entry that answers it.
//
// The sets are not tuned to any engine: the question templates are written
// the way people and models ask, many ask in words the evidence does not
// hold at all, and every fact comes with distractor turns or entries that
// share its words without answering it. The same seed always yields the
// same set.
package evalset

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode"
	"unicode/utf8"
)

// fill replaces every {key} of tpl by v[key]. A key whose first letter is a
// capital and that v lacks takes v's value of the lowercase key with its
// first letter capitalised ("{When}" from "when"). An unknown key panics:
// it is a bug in a template, and the package's tests expand every one.
func fill(tpl string, v map[string]string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(tpl, '{')
		if i < 0 {
			b.WriteString(tpl)
			return b.String()
		}
		j := strings.IndexByte(tpl[i:], '}')
		if j < 0 {
			panic("evalset: unterminated key in template " + tpl)
		}
		b.WriteString(tpl[:i])
		key := tpl[i+1 : i+j]
		val, ok := v[key]
		if !ok {
			r, n := utf8.DecodeRuneInString(key)
			low, ok2 := v[string(unicode.ToLower(r))+key[n:]]
			if !ok2 || !unicode.IsUpper(r) {
				panic(fmt.Sprintf("evalset: template %q has key %q, which the draw did not set", tpl, key))
			}
			val = upperFirst(low)
		}
		b.WriteString(val)
		tpl = tpl[i+j+1:]
	}
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// words splits text into lowercase words (runs of letters and digits).
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// functionWords are the words a keyword-style query leaves out and the
// overlap diagnostic ignores: articles, pronouns, auxiliaries, prepositions
// and question words. The set's own list, independent of any engine's.
var functionWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but of in on at to for from with by about as into over after before
		is are was were be been being am do does did has have had having will would can could should may might must
		i me my mine we us our ours you your yours he him his she her hers it its they them their theirs
		what when where which who whom whose why how that this these those there here than then so if
		s t d ll m re ve not no any some all each every much many more most very just also too get got`) {
		m[w] = true
	}
	return m
}()

// keywords turns a question into what a model often sends a search tool
// instead: its words without function words or punctuation, original case.
func keywords(q string) string {
	var out []string
	for _, w := range strings.FieldsFunc(q, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '-' && r != '$' && r != ','
	}) {
		w = strings.Trim(w, "',")
		base, _, _ := strings.Cut(strings.ToLower(w), "'")
		if w == "" || functionWords[base] {
			continue
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

// neighbours are letters next to each other on a QWERTY keyboard: the
// substitutions a fast typist makes.
var neighbours = map[rune]string{
	'a': "sqz", 'b': "vn", 'c': "xv", 'd': "sf", 'e': "wr", 'f': "dg", 'g': "fh", 'h': "gj", 'i': "uo",
	'j': "hk", 'k': "jl", 'l': "k", 'm': "n", 'n': "bm", 'o': "ip", 'p': "o", 'q': "w", 'r': "et",
	's': "ad", 't': "ry", 'u': "yi", 'v': "cb", 'w': "qe", 'x': "zc", 'y': "tu", 'z': "x",
}

// typo misspells one word of at least five letters (never its first
// letter): two letters swapped, one dropped, one doubled, or one replaced by
// a keyboard neighbour. ok is false when the text has no such word.
func typo(r *rand.Rand, text string) (string, bool) {
	type span struct{ i, j int }
	var cands []span
	start := -1
	for i, c := range text + " " {
		letter := c < utf8.RuneSelf && unicode.IsLetter(c)
		switch {
		case letter && start < 0:
			start = i
		case !letter && start >= 0:
			if i-start >= 5 {
				cands = append(cands, span{start, i})
			}
			start = -1
		}
	}
	if len(cands) == 0 {
		return text, false
	}
	s := cands[r.IntN(len(cands))]
	w := []byte(text[s.i:s.j])
	k := 1 + r.IntN(len(w)-2) // an inner letter
	switch r.IntN(4) {
	case 0:
		w[k], w[k+1] = w[k+1], w[k]
		if w[k] == w[k+1] { // swapping equal letters changes nothing: drop one instead
			w = append(w[:k], w[k+1:]...)
		}
	case 1:
		w = append(w[:k], w[k+1:]...)
	case 2:
		w = append(w[:k+1], w[k:]...)
	default:
		lower := unicode.ToLower(rune(w[k]))
		if n := neighbours[lower]; n != "" {
			c := n[r.IntN(len(n))]
			if unicode.IsUpper(rune(w[k])) {
				c = byte(unicode.ToUpper(rune(c)))
			}
			w[k] = c
		} else {
			w = append(w[:k], w[k+1:]...)
		}
	}
	return text[:s.i] + string(w) + text[s.j:], true
}

// article puts "a" or "an" before a noun phrase, by its first letter.
func article(s string) string {
	if s != "" && strings.ContainsRune("aeiouAEIOU", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}
