package recall

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// IndexForm is the form under which SQLite FTS5's "porter unicode61
// remove_diacritics 2" tokenizer indexes a word: case-folded, Latin accents
// removed, then Porter-stemmed. Two words match in the full-text index when
// their index forms are equal ("Addresses" and "address" are "address"), so
// explanations computed from it name the words the engine matched.
func IndexForm(word string) string { return Stem(Unaccent(foldCase(word))) }

// foldCase lowercases s the way the tokenizer folds case: every rune to
// the lowercase of the first capital of its case-folding orbit, so "ς"
// and "σ" are both "σ", "ſ" is "s" and the Kelvin sign is "k".
func foldCase(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Map(foldRune, s)
		}
	}
	return strings.ToLower(s)
}

func foldRune(r rune) rune {
	first := rune(-1)
	for f := unicode.SimpleFold(r); ; f = unicode.SimpleFold(f) {
		if unicode.IsUpper(f) && (first < 0 || f < first) {
			first = f
		}
		if f == r {
			break
		}
	}
	if first < 0 {
		return unicode.ToLower(r)
	}
	return unicode.ToLower(first)
}

// Unaccent removes the diacritics of Latin letters ("café" → "cafe",
// "Ångström" → "Angstrom"), as the FTS5 tokenizer's remove_diacritics does
// for the letters of Latin-1 and Latin Extended-A; other runes are kept.
func Unaccent(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	return strings.Map(func(r rune) rune {
		if b, ok := unaccented[r]; ok {
			return b
		}
		return r
	}, s)
}

// FoldRune is one rune as IndexForm folds it: case folded, accent removed.
func FoldRune(r rune) rune {
	if r < utf8.RuneSelf {
		return unicode.ToLower(r)
	}
	r = foldRune(r)
	if b, ok := unaccented[r]; ok {
		return b
	}
	return r
}

// unaccented maps Latin letters with diacritics to their base letter.
var unaccented = func() map[rune]rune {
	m := map[rune]rune{}
	add := func(base rune, letters string) {
		for _, r := range letters {
			m[r] = base
			if u := unicode.ToUpper(r); u != r {
				m[u] = unicode.ToUpper(base)
			}
		}
	}
	add('a', "àáâãäåāăą")
	add('c', "çćĉċč")
	add('d', "ď")
	add('e', "èéêëēĕėęě")
	add('g', "ĝğġģ")
	add('h', "ĥ")
	add('i', "ìíîïĩīĭį")
	add('j', "ĵ")
	add('k', "ķ")
	add('l', "ĺļľ")
	add('n', "ñńņňŉ")
	add('o', "òóôõöōŏő")
	add('r', "ŕŗř")
	add('s', "śŝşš")
	add('t', "ţťŧ")
	add('u', "ùúûüũūŭůűų")
	add('w', "ŵ")
	add('y', "ýÿŷ")
	add('z', "źżž")
	return m
}()

// maxStemLen is the longest token, in bytes, the FTS5 porter stemmer
// stems; longer and shorter than three bytes pass unchanged.
const maxStemLen = 64

// Stem reduces a lowercase word to its Porter stem (M. F. Porter, "An
// algorithm for suffix stripping", 1980) the way SQLite's FTS5 porter
// tokenizer does: "addresses" → "address", "connected" and "connecting"
// → "connect", "relational" → "relat". Bytes other than ASCII lowercase
// letters count as consonants, so words of other scripts mostly pass
// unchanged; words shorter than three bytes or longer than 64 are kept.
func Stem(w string) string {
	if len(w) < 3 || len(w) > maxStemLen {
		return w
	}
	b := []byte(w)
	b = step1a(b)
	b = step1b(b)
	if n := len(b); b[n-1] == 'y' && hasVowel(b[:n-1]) {
		b[n-1] = 'i' // step 1c
	}
	b = replaceSuffix(b, step2, 0)
	b = replaceSuffix(b, step3, 0)
	b = step4(b)
	b = step5(b)
	return string(b)
}

// isVowel reports whether b[i] is a vowel: a, e, i, o, u, and y after a
// consonant.
func isVowel(b []byte, i int) bool {
	switch b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	case 'y':
		return i > 0 && !isVowel(b, i-1)
	}
	return false
}

// measure is Porter's m: the number of vowel-consonant sequences in
// [C](VC)^m[V].
func measure(b []byte) int {
	m, i := 0, 0
	for i < len(b) && !isVowel(b, i) {
		i++
	}
	for i < len(b) {
		for i < len(b) && isVowel(b, i) {
			i++
		}
		if i == len(b) {
			break
		}
		for i < len(b) && !isVowel(b, i) {
			i++
		}
		m++
	}
	return m
}

// hasVowel is Porter's *v*, as SQLite writes it: a, e, i, o, u anywhere,
// or y anywhere but first.
func hasVowel(b []byte) bool {
	for i, c := range b {
		switch c {
		case 'a', 'e', 'i', 'o', 'u':
			return true
		case 'y':
			if i > 0 {
				return true
			}
		}
	}
	return false
}

// cvc is Porter's *o: the stem ends consonant, vowel, consonant, the last
// not w, x or y.
func cvc(b []byte) bool {
	n := len(b)
	if n < 3 {
		return false
	}
	switch b[n-1] {
	case 'w', 'x', 'y':
		return false
	}
	return !isVowel(b, n-1) && isVowel(b, n-2) && !isVowel(b, n-3)
}

func hasSuffix(b []byte, s string) bool {
	return len(b) > len(s) && string(b[len(b)-len(s):]) == s
}

func step1a(b []byte) []byte {
	switch {
	case hasSuffix(b, "sses"), hasSuffix(b, "ies"):
		return b[:len(b)-2]
	case hasSuffix(b, "ss"):
		return b
	case hasSuffix(b, "s"):
		return b[:len(b)-1]
	}
	return b
}

func step1b(b []byte) []byte {
	var stem []byte
	switch {
	case hasSuffix(b, "eed"):
		if measure(b[:len(b)-3]) > 0 {
			return b[:len(b)-1]
		}
		return b
	case hasSuffix(b, "ed") && hasVowel(b[:len(b)-2]):
		stem = b[:len(b)-2]
	case hasSuffix(b, "ing") && hasVowel(b[:len(b)-3]):
		stem = b[:len(b)-3]
	default:
		return b
	}
	n := len(stem)
	switch {
	case hasSuffix(stem, "at"), hasSuffix(stem, "bl"), hasSuffix(stem, "iz"):
		return append(stem, 'e')
	case n >= 2 && stem[n-1] == stem[n-2] && !isPlainVowel(stem[n-1]) && stem[n-1] != 'l' && stem[n-1] != 's' && stem[n-1] != 'z':
		return stem[:n-1]
	case measure(stem) == 1 && cvc(stem):
		return append(stem, 'e')
	}
	return stem
}

func isPlainVowel(c byte) bool { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' }

// A suffix rule: a word ending in from (its stem not empty and of measure
// above min) ends in to instead. Within a step the first rule whose suffix
// the word has decides, whether or not its condition holds.
type suffixRule struct{ from, to string }

var step2 = []suffixRule{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"}, {"izer", "ize"}, {"logi", "log"},
	{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"}, {"ization", "ize"},
	{"ation", "ate"}, {"ator", "ate"}, {"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"},
	{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
}

var step3 = []suffixRule{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"}, {"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

// replaceSuffix applies the rule of the longest suffix of rules the word
// has when the stem's measure is above min.
func replaceSuffix(b []byte, rules []suffixRule, min int) []byte {
	best := -1
	for i, r := range rules {
		if hasSuffix(b, r.from) && (best < 0 || len(r.from) > len(rules[best].from)) {
			best = i
		}
	}
	if best < 0 {
		return b
	}
	stem := b[:len(b)-len(rules[best].from)]
	if measure(stem) <= min {
		return b
	}
	return append(stem, rules[best].to...)
}

var step4Suffixes = []string{"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
	"ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize"}

func step4(b []byte) []byte {
	best := ""
	for _, s := range step4Suffixes {
		if hasSuffix(b, s) && len(s) > len(best) {
			best = s
		}
	}
	if best == "" {
		return b
	}
	stem := b[:len(b)-len(best)]
	if measure(stem) <= 1 {
		return b
	}
	if best == "ion" {
		if c := stem[len(stem)-1]; c != 's' && c != 't' {
			return b
		}
	}
	return stem
}

func step5(b []byte) []byte {
	if n := len(b); b[n-1] == 'e' {
		stem := b[:n-1]
		if m := measure(stem); m > 1 || m == 1 && !cvc(stem) {
			b = stem
		}
	}
	if n := len(b); n > 1 && b[n-1] == 'l' && b[n-2] == 'l' && measure(b[:n-1]) > 1 {
		b = b[:n-1]
	}
	return b
}
