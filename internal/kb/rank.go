package kb

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
)

// The fields a ranked query searches, in the order of kb_fts's columns and
// of Weights.
const (
	FieldIdentifier = iota
	FieldKeys
	FieldValue
	NumFields
)

// Weights are what one occurrence of a word counts for in each field: a
// word of the identifier (what the entry is about) outweighs a tag, which
// outweighs a word somewhere in the value. They multiply the word's count
// inside BM25's saturation, so a word found in the identifier adds about
// twice what one found only in the value adds, not ten times.
var Weights = [NumFields]float64{10, 5, 1}

// BM25 constants: k1 (how fast repeated occurrences saturate) and b (how
// much a long entry's occurrences are discounted), SQLite's bm25() values.
const (
	BM25K1 = 1.2
	BM25B  = 0.75
)

// fieldCodes name the fields in explanations.
var fieldCodes = [NumFields]string{"identifier_match", "key_match", "value_match"}

// Term is one word of a ranked question.
type Term struct {
	Asked string  // as the question has it (lowercase)
	Used  string  // what is searched: Asked, or the vocabulary word a misspelling was taken for
	IDF   float64 // how much an occurrence counts (BM25 inverse document frequency)
	form  string
}

// NewTerm returns the term searching for used on behalf of asked.
func NewTerm(asked, used string) Term {
	return Term{Asked: asked, Used: used, form: recall.IndexForm(used)}
}

// Form is the indexed form the term matches (recall.IndexForm).
func (t Term) Form() string { return t.form }

// Corrected reports whether the term searches a correction of the word asked.
func (t Term) Corrected() bool { return t.Asked != t.Used }

// IDF is BM25's inverse document frequency of a word held by n of total
// entries, in the form that never turns negative: ln(1 + (total-n+0.5) /
// (n+0.5)). A word every entry holds weighs almost nothing; one held by a
// single entry of a thousand weighs about 7.
func IDF(n, total int) float64 {
	return math.Log(1 + (float64(total-n)+0.5)/(float64(n)+0.5))
}

// Occurrences is where a ranked question's terms occur in one entry: for
// each term and field, how many of the field's words have the term's
// form, and the words of each field that did (as the entry writes them).
type Occurrences struct {
	Count  [][NumFields]int
	Words  [][NumFields][]string
	Length int // words in all fields, the entry's length for BM25
}

// Occur finds terms in an entry's identifier, keys and value, cutting each
// field into words as the full-text index does and comparing index forms.
// Only words that start as some term does are stemmed, so a long value
// costs little more than reading it.
func Occur(e *kura.KBEntry, terms []Term) Occurrences {
	o := Occurrences{Count: make([][NumFields]int, len(terms)), Words: make([][NumFields][]string, len(terms))}
	first := map[rune]bool{}
	for _, t := range terms {
		if r, _ := utf8.DecodeRuneInString(t.form); r != utf8.RuneError {
			first[r] = true
		}
	}
	fields := [NumFields]string{e.Identifier, strings.Join(e.Keys, "\n"), e.Value}
	for f, text := range fields {
		for w := range strings.FieldsFuncSeq(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			o.Length++
			// A stem keeps its word's first letter.
			if r, _ := utf8.DecodeRuneInString(w); !first[recall.FoldRune(r)] {
				continue
			}
			form := recall.IndexForm(w)
			for i, t := range terms {
				if t.form == form {
					o.Count[i][f]++
					if !containsFold(o.Words[i][f], w) {
						o.Words[i][f] = append(o.Words[i][f], w)
					}
				}
			}
		}
	}
	return o
}

func containsFold(s []string, w string) bool {
	for _, x := range s {
		if strings.EqualFold(x, w) {
			return true
		}
	}
	return false
}

// Matched reports whether term i occurs anywhere in the entry.
func (o *Occurrences) Matched(i int) bool {
	c := o.Count[i]
	return c[0]+c[1]+c[2] > 0
}

// TermScore is BM25's contribution of term i to the entry's score: its
// occurrences weighted by field (Weights) and saturated, times its IDF,
// discounted for an entry longer than avgLength (<= 0: no discount).
func (o *Occurrences) TermScore(i int, idf, avgLength float64) float64 {
	tf := 0.0
	for f := range NumFields {
		tf += Weights[f] * float64(o.Count[i][f])
	}
	if tf == 0 {
		return 0
	}
	norm := 1.0
	if avgLength > 0 {
		norm = 1 - BM25B + BM25B*float64(o.Length)/avgLength
	}
	return idf * tf * (BM25K1 + 1) / (tf + BM25K1*norm)
}

// MaxTermScore bounds TermScore for a term of this IDF in any entry: BM25
// saturates at (k1+1) times the IDF.
func MaxTermScore(idf float64) float64 { return idf * (BM25K1 + 1) }

// Explain names, field by field, the question's words an entry matched:
// identifier_match, key_match and value_match list them (a word matched in
// another form shows it: "address (addresses)"), and typo_match says which
// misspelt word was taken for which ("uniswop ~ uniswap").
func Explain(terms []Term, o *Occurrences) []kura.SearchReason {
	reasons := []kura.SearchReason{}
	for f := range NumFields {
		var hit []string
		for i, t := range terms {
			if o.Count[i][f] == 0 {
				continue
			}
			w := t.Used
			var other []string
			for _, x := range o.Words[i][f] {
				if !strings.EqualFold(x, w) {
					other = append(other, x)
				}
			}
			if len(other) > 0 {
				w += " (" + strings.Join(other, ", ") + ")"
			}
			hit = append(hit, w)
		}
		if len(hit) > 0 {
			reasons = append(reasons, kura.SearchReason{Code: fieldCodes[f], Detail: strings.Join(hit, ", ")})
		}
	}
	for i, t := range terms {
		if t.Corrected() && o.Matched(i) {
			reasons = append(reasons, kura.SearchReason{Code: "typo_match", Detail: t.Asked + " ~ " + t.Used})
		}
	}
	return reasons
}

// RoundScore keeps four decimals of a score: enough to order by, and the
// same score prints the same on every platform.
func RoundScore(s float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(s, 'f', 4, 64), 64)
	return r
}
