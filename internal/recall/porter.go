package recall

import "strings"

// Stem is M. F. Porter's suffix-stripping algorithm ("An algorithm for
// suffix stripping", 1980) as SQLite's FTS5 porter tokenizer applies it to
// the tokens it indexes and queries: "addresses" and "address" both become
// "address", "routing" and "routed" both "rout". It works on bytes: only
// a, e, i, o and u (and y after a consonant) are vowels, so digits and the
// bytes of non-ASCII letters count as consonants, as they do in the engine.
// Tokens shorter than three bytes or longer than 64 are left as they are.
// The store's tests hold it to the engine, word for word.
func Stem(w string) string {
	if len(w) < 3 || len(w) > maxWordLen {
		return w
	}
	s := stemmer{b: []byte(w)}
	s.step1a()
	s.step1b()
	s.step1c()
	s.step2()
	s.step3()
	s.step4()
	s.step5()
	return string(s.b)
}

type stemmer struct{ b []byte }

// cons reports whether b[i] is a consonant: not a vowel, and not a y that
// follows a consonant.
func (s *stemmer) cons(i int) bool {
	switch s.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !s.cons(i-1)
	}
	return true
}

// measure is m of b[:n], which has the form [C](VC)^m[V].
func (s *stemmer) measure(n int) int {
	m, i := 0, 0
	for i < n && s.cons(i) {
		i++
	}
	for i < n {
		for i < n && !s.cons(i) {
			i++
		}
		if i == n {
			break
		}
		for i < n && s.cons(i) {
			i++
		}
		m++
	}
	return m
}

// hasVowel reports whether b[:n] holds a vowel.
func (s *stemmer) hasVowel(n int) bool {
	for i := range n {
		if !s.cons(i) {
			return true
		}
	}
	return false
}

// doubleCons reports whether b[:n] ends in a doubled consonant.
func (s *stemmer) doubleCons(n int) bool {
	return n >= 2 && s.b[n-1] == s.b[n-2] && s.cons(n-1)
}

// cvc reports whether b[:n] ends consonant-vowel-consonant, the last not
// w, x or y (hop, wil: a short syllable).
func (s *stemmer) cvc(n int) bool {
	if n < 3 || !s.cons(n-1) || s.cons(n-2) || !s.cons(n-3) {
		return false
	}
	switch s.b[n-1] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

func (s *stemmer) ends(suffix string) bool {
	return len(s.b) > len(suffix) && string(s.b[len(s.b)-len(suffix):]) == suffix
}

// stemLen is the length of b without suffix (which it ends with).
func (s *stemmer) stemLen(suffix string) int { return len(s.b) - len(suffix) }

func (s *stemmer) replace(suffix, with string) {
	s.b = append(s.b[:s.stemLen(suffix)], with...)
}

// rule is one suffix rule of steps 2 to 4: a word ending in suffix whose
// stem has a measure above min becomes stem+with.
type rule struct {
	suffix, with string
}

// applyRules applies the first rule whose suffix the word ends with, if
// the stem's measure is above min; a matching suffix whose condition fails
// ends the step all the same (the longest suffix decides).
func (s *stemmer) applyRules(rules []rule, min int) {
	for _, r := range rules {
		if s.ends(r.suffix) {
			if s.measure(s.stemLen(r.suffix)) > min {
				s.replace(r.suffix, r.with)
			}
			return
		}
	}
}

func (s *stemmer) step1a() {
	switch {
	case s.ends("sses"):
		s.replace("sses", "ss")
	case s.ends("ies"):
		s.replace("ies", "i")
	case s.ends("ss"):
	case s.ends("s"):
		s.replace("s", "")
	}
}

func (s *stemmer) step1b() {
	if s.ends("eed") {
		if s.measure(s.stemLen("eed")) > 0 {
			s.replace("eed", "ee")
		}
		return
	}
	cut := ""
	for _, suf := range []string{"ed", "ing"} {
		if s.ends(suf) && s.hasVowel(s.stemLen(suf)) {
			cut = suf
			break
		}
	}
	if cut == "" {
		return
	}
	s.replace(cut, "")
	switch n := len(s.b); {
	case s.ends("at"), s.ends("bl"), s.ends("iz"):
		s.b = append(s.b, 'e')
	case n >= 2 && s.b[n-1] == s.b[n-2] && !strings.ContainsRune("aeioulsz", rune(s.b[n-1])):
		// A doubled letter here is undone by the letter alone: yy counts
		// as doubled although its second y follows a consonant.
		s.b = s.b[:n-1]
	case s.measure(n) == 1 && s.cvc(n):
		s.b = append(s.b, 'e')
	}
}

func (s *stemmer) step1c() {
	if s.ends("y") && s.hasVowel(s.stemLen("y")) {
		s.b[len(s.b)-1] = 'i'
	}
}

var step2Rules = []rule{
	{"ational", "ate"}, {"tional", "tion"},
	{"enci", "ence"}, {"anci", "ance"},
	{"izer", "ize"},
	{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"},
	{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"},
	{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"},
	{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
	{"logi", "log"},
}

var step3Rules = []rule{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"}, {"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

var step4Rules = []rule{
	{"al", ""}, {"ance", ""}, {"ence", ""}, {"er", ""}, {"ic", ""}, {"able", ""}, {"ible", ""}, {"ant", ""},
	{"ement", ""}, {"ment", ""}, {"ent", ""}, {"ion", ""}, {"ou", ""}, {"ism", ""}, {"ate", ""}, {"iti", ""},
	{"ous", ""}, {"ive", ""}, {"ize", ""},
}

// longestFirst groups rules by the letter before their last, as the
// algorithm does, so that a longer suffix is tried before a shorter one
// ending the same way (ational before tional, ement before ment).
func longestFirst(rules []rule) map[byte][]rule {
	m := map[byte][]rule{}
	for _, r := range rules {
		k := r.suffix[len(r.suffix)-2]
		m[k] = append(m[k], r)
	}
	return m
}

var (
	step2ByLetter = longestFirst(step2Rules)
	step3ByLetter = longestFirst(step3Rules)
	step4ByLetter = longestFirst(step4Rules)
)

// penultimate is the letter before the last (0 for a word of one letter,
// which no rule matches).
func (s *stemmer) penultimate() byte {
	if len(s.b) < 2 {
		return 0
	}
	return s.b[len(s.b)-2]
}

func (s *stemmer) step2() { s.applyRules(step2ByLetter[s.penultimate()], 0) }
func (s *stemmer) step3() { s.applyRules(step3ByLetter[s.penultimate()], 0) }

func (s *stemmer) step4() {
	for _, r := range step4ByLetter[s.penultimate()] {
		if !s.ends(r.suffix) {
			continue
		}
		n := s.stemLen(r.suffix)
		ok := s.measure(n) > 1
		if r.suffix == "ion" {
			ok = ok && n > 0 && (s.b[n-1] == 's' || s.b[n-1] == 't')
		}
		if ok {
			s.replace(r.suffix, "")
		}
		return
	}
}

func (s *stemmer) step5() {
	if n := len(s.b); s.b[n-1] == 'e' {
		m := s.measure(n - 1)
		if m > 1 || (m == 1 && !s.cvc(n-1)) {
			s.b = s.b[:n-1]
		}
	}
	if n := len(s.b); s.b[n-1] == 'l' && s.doubleCons(n) && s.measure(n) > 1 {
		s.b = s.b[:n-1]
	}
}
