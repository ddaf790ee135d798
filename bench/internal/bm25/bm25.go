// Package bm25 is a textbook Okapi BM25 ranker: the baseline the bench's
// recall phases compare Kura's search and lookup with. It is deliberately
// plain — no stemming, no stop words, no field weights, no typo tolerance —
// so "beats the baseline" means beating what any search library does out of
// the box over the same text, not a tuned competitor.
//
// Definitions (Robertson and Zaragoza's formulation, with Lucene's
// non-negative idf):
//
//	tokens(text) = the lowercase runs of Unicode letters and digits
//	N            = number of documents, avgdl = mean document length in tokens
//	n(t)         = number of documents holding t, f(t, D) = occurrences of t in D
//	idf(t)       = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5))
//	score(D, Q)  = Σ over the distinct tokens t of Q of
//	               idf(t) · f(t, D) · (k1 + 1) / (f(t, D) + k1 · (1 − b + b · |D| / avgdl))
//
// with k1 = 1.2 and b = 0.75. A query token repeated in the query counts
// once. Documents scoring 0 (holding no query token) are never returned.
package bm25

import (
	"math"
	"sort"
	"strings"
	"unicode"
)

// The textbook parameters.
const (
	K1 = 1.2
	B  = 0.75
)

// Tokens splits text into lowercase words: the runs of Unicode letters and
// digits, in order, repeats kept (term frequency counts them).
func Tokens(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// IDF is the inverse document frequency of a token held by n of N documents.
func IDF(N, n int) float64 {
	return math.Log(1 + (float64(N)-float64(n)+0.5)/(float64(n)+0.5))
}

type posting struct {
	doc int
	tf  int
}

// Index ranks a fixed list of documents.
type Index struct {
	postings map[string][]posting
	lens     []int
	avgdl    float64
}

// New indexes docs; document i is docs[i].
func New(docs []string) *Index {
	ix := &Index{postings: map[string][]posting{}, lens: make([]int, len(docs))}
	total := 0
	for i, d := range docs {
		toks := Tokens(d)
		ix.lens[i] = len(toks)
		total += len(toks)
		tf := map[string]int{}
		for _, t := range toks {
			tf[t]++
		}
		for t, f := range tf {
			ix.postings[t] = append(ix.postings[t], posting{i, f})
		}
	}
	if len(docs) > 0 {
		ix.avgdl = float64(total) / float64(len(docs))
	}
	return ix
}

// Len is the number of documents.
func (ix *Index) Len() int { return len(ix.lens) }

// Hit is one ranked document.
type Hit struct {
	Doc   int
	Score float64
}

// scores adds every query token's contribution to the documents holding it.
func (ix *Index) scores(q string) map[int]float64 {
	acc := map[int]float64{}
	seen := map[string]bool{}
	N := len(ix.lens)
	for _, t := range Tokens(q) {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := ix.postings[t]
		if len(ps) == 0 {
			continue
		}
		idf := IDF(N, len(ps))
		for _, p := range ps {
			f := float64(p.tf)
			norm := K1 * (1 - B + B*float64(ix.lens[p.doc])/ix.avgdl)
			acc[p.doc] += idf * f * (K1 + 1) / (f + norm)
		}
	}
	return acc
}

// Score is document doc's score for q (0 when it holds no query token).
func (ix *Index) Score(q string, doc int) float64 { return ix.scores(q)[doc] }

// Search returns up to k documents with a positive score, best first; equal
// scores go to the lower document index, so the order is deterministic.
func (ix *Index) Search(q string, k int) []Hit {
	acc := ix.scores(q)
	hits := make([]Hit, 0, len(acc))
	for d, s := range acc {
		if s > 0 {
			hits = append(hits, Hit{d, s})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Doc < hits[j].Doc
	})
	if k >= 0 && len(hits) > k {
		hits = hits[:k]
	}
	return hits
}
