// Package memory holds the memory graph's pure rules: how node text is cut
// into search words, which field each word came from, and how a search
// scores a node and explains the score. The store indexes with the same
// functions it scores with, so the index can never disagree with a score.
package memory

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/kura-memory/kura/internal/kura"
)

// Field bits: where in a node a word occurs. The index stores them OR-ed
// per (word, node).
const (
	FieldTitle = 1 << iota
	FieldID
	FieldTargetFiles
	FieldSummary
	FieldPayload // payload_ref and owner
	FieldMetadata
)

// Fields in scoring order, with the weight of one query word found there
// and the reason code it reports. A title hit outweighs a summary hit; the
// id and target files name the thing itself, so they weigh nearly as much.
var Fields = []struct {
	Bit    int
	Weight int
	Code   string
}{
	{FieldTitle, 8, "title_match"},
	{FieldID, 6, "id_match"},
	{FieldTargetFiles, 5, "target_file_match"},
	{FieldSummary, 3, "summary_match"},
	{FieldPayload, 2, "payload_match"},
	{FieldMetadata, 1, "metadata_match"},
}

// maxTermLen keeps one pathological token from bloating the index.
const maxTermLen = 64

// Words splits text into lowercase words: runs of Unicode letters and
// digits. Everything else separates words, so "api/users.go" gives "api",
// "users", "go". Each word is returned once, in first-seen order.
func Words(text string) []string {
	var out []string
	seen := map[string]bool{}
	for w := range strings.FieldsFuncSeq(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(w) > maxTermLen || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// Terms maps every word of a node to the fields it occurs in: what the
// store writes to the search index.
func Terms(n *kura.Node) map[string]int {
	m := map[string]int{}
	fieldTexts(n, func(bit int, text string) {
		for _, w := range Words(text) {
			m[w] |= bit
		}
	})
	return m
}

// fieldTexts calls fn with every text of n that search reads, and the bit
// of the field it belongs to: the one list Terms and ScoreNode share.
func fieldTexts(n *kura.Node, fn func(bit int, text string)) {
	fn(FieldTitle, n.Title)
	fn(FieldID, n.ID)
	for _, f := range n.TargetFiles {
		fn(FieldTargetFiles, f)
	}
	fn(FieldSummary, n.Summary)
	if n.PayloadRef != nil {
		fn(FieldPayload, *n.PayloadRef)
	}
	if n.Owner != nil {
		fn(FieldPayload, *n.Owner)
	}
	if len(n.Metadata) > 2 { // "{}" holds nothing to read
		var v any
		if json.Unmarshal(n.Metadata, &v) == nil {
			walkPrimitives(v, func(s string) { fn(FieldMetadata, s) })
		}
	}
}

// walkPrimitives calls fn with every string, number and boolean in v.
// Object keys are structure, not content, and are left out.
func walkPrimitives(v any, fn func(string)) {
	switch x := v.(type) {
	case string:
		fn(x)
	case float64:
		fn(strconv.FormatFloat(x, 'f', -1, 64))
	case bool:
		fn(strconv.FormatBool(x))
	case []any:
		for _, e := range x {
			walkPrimitives(e, fn)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkPrimitives(x[k], fn)
		}
	}
}

// Reason explains part of a search score or a filter a result passed.
type Reason = kura.SearchReason

// Score scores a node against the query words: for each word, the weight
// of every field it occurs in. Reasons name each field that matched and
// the words found there, in Fields order. terms is Terms(n).
func Score(terms map[string]int, query []string) (int, []Reason) {
	return scoreFields(query, func(i int) int { return terms[query[i]] })
}

// scoreFields adds up the weights of the fields each query word occurs
// in (fields(i) holds the bits of word i) and names them, in Fields order.
func scoreFields(query []string, fields func(i int) int) (int, []Reason) {
	score := 0
	var reasons []Reason
	for _, f := range Fields {
		var hit []string
		for i, w := range query {
			if fields(i)&f.Bit != 0 {
				hit = append(hit, w)
			}
		}
		if len(hit) > 0 {
			score += f.Weight * len(hit)
			reasons = append(reasons, Reason{Code: f.Code, Detail: strings.Join(hit, ", ")})
		}
	}
	return score, reasons
}

// ScoreNode is Score(Terms(n), query) without building n's word map: it
// marks, for each query word, the fields it occurs in. Admission scores
// every node of a scope per compile, where the map would be most of the
// cost.
func ScoreNode(n *kura.Node, query []string) (int, []Reason) {
	if len(query) == 0 {
		return 0, nil
	}
	idx := make(map[string]int, len(query))
	for i, w := range query {
		idx[w] = i
	}
	found := make([]int, len(query))
	fieldTexts(n, func(bit int, text string) {
		if text == "" {
			return
		}
		for w := range strings.FieldsFuncSeq(strings.ToLower(text), notWordRune) {
			if i, ok := idx[w]; ok && len(w) <= maxTermLen {
				found[i] |= bit
			}
		}
	})
	return scoreFields(query, func(i int) int { return found[i] })
}

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }
