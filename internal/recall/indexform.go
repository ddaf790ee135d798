package recall

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// IndexForm is the form under which the full-text index holds a word: its
// tokens (Tokens: folded, diacritics removed, stemmed) joined by a space;
// a plain word is one token. Two words match in the index when their
// index forms are equal ("Addresses" and "address" are "address"), so
// explanations computed from it name the words the engine matched.
func IndexForm(word string) string { return strings.Join(Tokens(word), " ") }

// FoldRune is one rune as the index folds it: lowercase, diacritics
// removed (unicode61's own tables, unicode61_table.go).
func FoldRune(r rune) rune {
	if r < utf8.RuneSelf {
		return unicode.ToLower(r)
	}
	if f, ok := fold(r); ok && f != 0 {
		return f
	}
	return r
}
