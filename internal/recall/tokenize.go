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
// unicode61.txt), each folded (lowercase, diacritics removed) and
// then stemmed (Stem). The store's tests hold it to the engine: what
// Tokens says a field holds is what the index holds.
func Tokens(text string) []string {
	var out []string
	foldTokens(text, func(tok []byte) { out = append(out, Stem(string(tok))) })
	return out
}

// foldTokens calls fn with each token of text, folded but not stemmed;
// fn must not keep tok.
func foldTokens(text string, fn func(tok []byte)) {
	var buf [maxWordLen]byte
	tok := buf[:0]
	flush := func() {
		if len(tok) > 0 {
			fn(tok)
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
//
// A search explains every result of its page, a compile every match of
// its scope, so most of the text is tokens no query word can match; Stem
// is called only for a token that begins like a query word's stem. That
// is sound because Stem only rewrites a word's end: a stem less its last
// letter always begins the word it was made from (TestStemKeepsPrefix
// holds it over a quarter of a million words).
func Explain(fields []Field, words []string) []Reason {
	phrases := make([][]string, len(words))
	multi := false
	for i, w := range words {
		phrases[i] = Phrase(w)
		multi = multi || len(phrases[i]) > 1
	}
	var out []Reason
	at := map[string]int{} // code -> index in out
	var toks []string
	for _, f := range fields {
		toks = toks[:0]
		if multi {
			toks = append(toks, Tokens(f.Text)...)
		} else {
			// Tokens a query word may match, stemmed; the rest as "".
			foldTokens(f.Text, func(tok []byte) {
				for _, p := range phrases {
					if len(p) == 1 && couldStemTo(tok, p[0]) {
						toks = append(toks, Stem(string(tok)))
						return
					}
				}
			})
		}
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

// couldStemTo reports whether Stem(tok) may be stem: whether tok begins
// with stem less its last byte (a UTF-8 sequence cut short only makes the
// test looser).
func couldStemTo(tok []byte, stem string) bool {
	if len(stem) == 0 {
		return false
	}
	p := stem[:len(stem)-1]
	return len(tok) >= len(p) && string(tok[:len(p)]) == p
}
