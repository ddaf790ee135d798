package recall

import (
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Tokens returns the tokens SQLite's FTS5 makes of text under
// tokenize='porter unicode61 remove_diacritics 2', in order, repeats
// kept: runs of the code points unicode61 keeps in tokens (letters,
// digits and the like; its tables, generated from the engine, are in
// unicode61_table.go), each folded (lowercase, diacritics removed) and
// then stemmed (Stem). The store's tests hold it to the engine: what
// Tokens says a field holds is what the index holds.
func Tokens(text string) []string {
	var out []string
	var tok []byte
	flush := func() {
		if len(tok) > 0 {
			out = append(out, Stem(string(tok)))
			tok = tok[:0]
		}
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
				tok = append(tok, c)
			case c >= 'A' && c <= 'Z':
				tok = append(tok, c+'a'-'A')
			default:
				flush()
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		i += n
		if r == utf8.RuneError && n == 1 || !isTokenRune(r) {
			flush()
			continue
		}
		if f, ok := fold(r); ok {
			if f == 0 {
				continue // a diacritic on its own: dropped, the token goes on
			}
			r = f
		}
		tok = utf8.AppendRune(tok, r)
	}
	flush()
	return out
}

// isTokenRune reports whether unicode61 keeps r in a token.
func isTokenRune(r rune) bool {
	i := sort.Search(len(tokenRanges), func(i int) bool { return tokenRanges[i][1] >= r })
	return i < len(tokenRanges) && tokenRanges[i][0] <= r
}

// fold is what unicode61 makes of the token rune r, if anything else.
func fold(r rune) (rune, bool) {
	i := sort.Search(len(foldPairs), func(i int) bool { return foldPairs[i][0] >= r })
	if i < len(foldPairs) && foldPairs[i][0] == r {
		return foldPairs[i][1], true
	}
	return 0, false
}

// Phrase is a query word as the engine matches it: the tokens of the word
// (usually one), which a field must hold one after another. A word of no
// token (only characters the engine drops) is an empty phrase, which
// matches nothing and must not be sent to the engine.
func Phrase(word string) []string { return Tokens(word) }

// contains reports whether tokens hold phrase, its tokens in a row.
func contains(tokens, phrase []string) bool {
	if len(phrase) == 0 {
		return false
	}
	for i := 0; i+len(phrase) <= len(tokens); i++ {
		if tokens[i] == phrase[0] && equalAt(tokens[i:], phrase) {
			return true
		}
	}
	return false
}

func equalAt(tokens, phrase []string) bool {
	for j, p := range phrase {
		if tokens[j] != p {
			return false
		}
	}
	return true
}

// Field is one searchable text of a record (as the index holds it: one
// column), with the reason code a query word found in it reports
// (title_match, summary_match, ...).
type Field struct {
	Code string
	Text string
}

// Reason explains part of a ranking: a field, and the query words found
// in it.
type Reason struct {
	Code   string
	Detail string
}

// Explain names, for each field in which any of the query words occur as
// the engine matches them, the words found there, comma-separated in
// query order; fields in the order given. Fields sharing a code report
// once, under the first.
func Explain(fields []Field, words []string) []Reason {
	phrases := make([][]string, len(words))
	for i, w := range words {
		phrases[i] = Phrase(w)
	}
	var out []Reason
	at := map[string]int{} // code -> index in out
	for _, f := range fields {
		toks := Tokens(f.Text)
		for i, p := range phrases {
			if !contains(toks, p) {
				continue
			}
			j, ok := at[f.Code]
			if !ok {
				j = len(out)
				at[f.Code] = j
				out = append(out, Reason{Code: f.Code})
			}
			if r := &out[j]; !slices.Contains(strings.Split(r.Detail, ", "), words[i]) {
				if r.Detail != "" {
					r.Detail += ", "
				}
				r.Detail += words[i]
			}
		}
	}
	return out
}
