// Package recall holds the pure rules of finding things the way models ask
// for them: which query words carry meaning (stop words weigh nothing), how
// a query becomes a full-text match expression in which no word is
// required, how far a misspelt word may be from the one it meant, and how
// ranked lists from different engines are fused. Memory search and
// knowledge-base lookup both use it; the engines themselves (SQLite FTS5,
// an embeddings index) live in the store.
package recall

import (
	"strings"
	"unicode"
)

// maxWordLen keeps one pathological token out of a query.
const maxWordLen = 64

// Words splits text into lowercase words, the runs of Unicode letters and
// digits (the same split FTS5's unicode61 tokenizer makes), each once, in
// first-seen order.
func Words(text string) []string {
	var out []string
	seen := map[string]bool{}
	for w := range strings.FieldsFuncSeq(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(w) > maxWordLen || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// QueryTerms returns the words of a query that carry meaning: its words
// without stop words. A query made only of stop words keeps them all (a
// search for "the who" should still find the band).
func QueryTerms(q string) []string {
	words := Words(q)
	out := make([]string, 0, len(words))
	for _, w := range words {
		if !IsStopWord(w) {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return words
	}
	return out
}

// MatchExpr is an FTS5 match expression in which any of terms matches: a
// document needs only some of a query's words, and ranking (bm25) decides
// how much each is worth. Every term is a quoted string, so no query word
// is ever read as FTS5 syntax (AND, NEAR, a column filter, a prefix star).
// columns, when given, limits the match to those columns.
func MatchExpr(terms []string, columns ...string) string {
	var b strings.Builder
	if len(columns) > 0 {
		b.WriteString("{" + strings.Join(columns, " ") + "} : (")
	}
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(t, `"`, `""`))
		b.WriteByte('"')
	}
	if len(columns) > 0 {
		b.WriteByte(')')
	}
	return b.String()
}
