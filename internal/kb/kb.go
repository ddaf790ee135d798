// Package kb holds the knowledge-base rules (what shared/seeds calls the
// "Ledger"; named Space here, beside kura.Ledger, the Merkle ledger):
// how identifiers and queries are cut into words, how keys compare, what
// each query form matches, how a question in a model's own words scores an
// entry and why (rank.go), and the text a lookup hands a model. It is
// pure: the store indexes with these functions and answers with SQL, and
// Space (space.go) is the same semantics as a plain in-memory scan, the
// reference the store is tested against.
package kb

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/kura"
)

// Fold maps s to the form used to compare words and keys, so that
// Fold(a) == Fold(b) exactly when strings.EqualFold(a, b): Unicode simple
// case folding, rune by rune. strings.ToLower alone is not enough: it
// leaves "ς" and "σ" apart although both are the lowercase of "Σ", and
// sends the Kelvin sign to "k" but not "k" to the Kelvin sign's class.
// Each rune becomes a fixed member of its case-folding orbit (see
// foldRune), lowercase wherever the orbit has one, so for ASCII Fold is
// strings.ToLower.
func Fold(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Map(foldRune, s)
		}
	}
	return strings.ToLower(s)
}

// foldRune returns the representative of r's simple case-folding orbit
// (the runes unicode.SimpleFold cycles through): the lowercase mapping of
// the orbit's smallest member that maps to another member, or, when none
// does, the orbit's smallest member. It depends only on the orbit, which
// is what makes Fold agree with strings.EqualFold; preferring a lowercase
// keeps folded text readable ("μ", not the micro sign "µ").
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	smallest, from, lower := r, rune(-1), rune(-1)
	consider := func(f rune) {
		smallest = min(smallest, f)
		if l := unicode.ToLower(f); l != f && (from < 0 || f < from) && inOrbit(l, r) {
			from, lower = f, l
		}
	}
	consider(r)
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		consider(f)
	}
	if lower >= 0 {
		return lower
	}
	return smallest
}

func inOrbit(x, r rune) bool {
	if x == r {
		return true
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == x {
			return true
		}
	}
	return false
}

// isWordRune reports whether r belongs to a word: Unicode letters and
// decimal digits. Everything else (white space, punctuation, symbols,
// combining marks) separates words.
func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// Words cuts text into its folded words: the runs of letters and digits,
// each folded, each once, in first-seen order. "Uniswap contract
// addresses on Ethereum mainnet." gives uniswap, contract, addresses, on,
// ethereum, mainnet; "v2.0-beta" gives v2, 0, beta. Text is split before it
// is folded, so a fold can never join or split words.
func Words(text string) []string {
	var out []string
	var seen map[string]bool
	for w := range strings.FieldsFuncSeq(text, func(r rune) bool { return !isWordRune(r) }) {
		f := Fold(w)
		// Identifiers are short; a map pays only for long texts.
		if seen == nil && len(out) >= 16 {
			seen = make(map[string]bool, 2*len(out))
			for _, o := range out {
				seen[o] = true
			}
		}
		if seen != nil {
			if seen[f] {
				continue
			}
			seen[f] = true
		} else if contains(out, f) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// FoldKeys folds keys and drops repeats, keeping first-seen order: the key
// set a query compares with. ["Dex", "dex", "AMM"] gives dex, amm.
func FoldKeys(keys []string) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if f := Fold(k); !contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Match reports whether entry e answers q: every condition q asks holds.
// It is the definition the store's indexes must reproduce; q's scope and
// paging are not conditions on an entry and are ignored.
func Match(e *kura.KBEntry, q *kura.KBQuery) bool {
	if q.ExactIdentifier != nil && e.Identifier != *q.ExactIdentifier {
		return false
	}
	if q.Identifier != nil {
		have := Words(e.Identifier)
		for _, w := range Words(*q.Identifier) {
			if !contains(have, w) {
				return false
			}
		}
	}
	if q.Key == nil && q.AnyKeys == nil && q.AllKeys == nil {
		return true
	}
	keys := FoldKeys(e.Keys)
	if q.Key != nil && !contains(keys, Fold(*q.Key)) {
		return false
	}
	if q.AnyKeys != nil {
		found := false
		for _, k := range q.AnyKeys {
			if contains(keys, Fold(k)) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for _, k := range q.AllKeys {
		if !contains(keys, Fold(k)) {
			return false
		}
	}
	return true
}

// LookupQueries are the queries a lookup of q runs, in order; the first
// that matches anything answers. This is the spec's tool bridge widened by
// one step: entries whose identifier holds every word of q, and when there
// are none, entries with a key equal to q (a model often asks with a tag).
func LookupQueries(scope, q string) []kura.KBQuery {
	return []kura.KBQuery{{Scope: scope, Identifier: &q}, {Scope: scope, Key: &q}}
}

// NoKnowledge is what a lookup that found nothing answers.
func NoKnowledge(q string) string { return "No knowledge found for: " + q }

// FormatLookup renders entries the way the spec's tool bridge hands them to
// a model: "--- <identifier> ---\n<value>\n\n" per entry, or NoKnowledge
// when there are none. more counts matches left out (a page limit); when
// some were, one last line says so, so a model knows to narrow its question
// rather than believe it saw everything.
func FormatLookup(q string, entries []kura.KBEntry, more int) string {
	if len(entries) == 0 {
		return NoKnowledge(q)
	}
	n := 0
	for i := range entries {
		n += len(entries[i].Identifier) + len(entries[i].Value) + 10
	}
	var b strings.Builder
	b.Grow(n + 64)
	for i := range entries {
		b.WriteString("--- ")
		b.WriteString(entries[i].Identifier)
		b.WriteString(" ---\n")
		b.WriteString(entries[i].Value)
		b.WriteString("\n\n")
	}
	switch {
	case more == 1:
		b.WriteString("(1 more entry matches; ask a narrower question to see it)\n")
	case more > 1:
		b.WriteString("(" + strconv.Itoa(more) + " more entries match; ask a narrower question to see them)\n")
	}
	return b.String()
}

// FormatRankedLookup renders a ranked lookup: the strict matches as
// FormatLookup does, then the ranked entries, best first, in the same
// blocks behind one line that says what they are, so a model tells an
// entry that holds every word of its question from one that holds some.
// Without ranked entries it is FormatLookup's text, byte for byte; strict
// matches left out (more > 0) fill the page, so none are ranked then.
func FormatRankedLookup(q string, strict []kura.KBEntry, more int, ranked []kura.KBEntry) string {
	if len(ranked) == 0 {
		return FormatLookup(q, strict, more)
	}
	var b strings.Builder
	if len(strict) > 0 {
		b.WriteString(FormatLookup(q, strict, 0))
		b.WriteString(RankedAfterStrict)
	} else {
		b.WriteString(RankedOnly)
	}
	for i := range ranked {
		b.WriteString("--- ")
		b.WriteString(ranked[i].Identifier)
		b.WriteString(" ---\n")
		b.WriteString(ranked[i].Value)
		b.WriteString("\n\n")
	}
	return b.String()
}

// The lines that introduce ranked entries in a lookup's text.
const (
	RankedOnly        = "(No entry matches every word of the question; the closest entries follow, best match first.)\n\n"
	RankedAfterStrict = "(The entries below match only some words of the question, best match first.)\n\n"
)
