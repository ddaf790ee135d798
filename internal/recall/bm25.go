package recall

import (
	"math"
	"strconv"
)

// The Okapi BM25 constants SQLite's FTS5 bm25() uses.
const (
	BM25K1 = 1.2
	BM25B  = 0.75
)

// Doc is a document as BM25 reads it: the tokens of each of its columns
// (Tokens of the column's text).
type Doc [][]string

// BM25 scores docs against phrases (Phrase of each query word) exactly as
// FTS5's bm25() with column weights does when docs are the whole table,
// but positive (higher is better; bm25() returns the negation): for each
// phrase, IDF × f×(k1+1) / (f + k1×(1 − b + b×|D|/avgdl)), where f is the
// phrase's occurrences in the document, each weighted by its column's
// weight, |D| the document's tokens in all columns, avgdl their mean over
// docs, and IDF = ln((N − n + 0.5)/(n + 0.5)) over the N docs, n of which
// hold the phrase, floored at 1e-6 as FTS5 floors it (a phrase in most
// documents weighs almost nothing, never less than nothing). A document
// holding no phrase scores 0. It exists for ranking what the index does
// not hold (memory as of a past time) the way the index ranks the rest.
func BM25(docs []Doc, phrases [][]string, weights []float64) []float64 {
	scores := make([]float64, len(docs))
	if len(docs) == 0 || len(phrases) == 0 {
		return scores
	}
	lens := make([]float64, len(docs))
	total := 0.0
	for i, d := range docs {
		for _, col := range d {
			lens[i] += float64(len(col))
		}
		total += lens[i]
	}
	avgdl := total / float64(len(docs))
	n := float64(len(docs))
	freq := make([][]float64, len(phrases)) // weighted frequency per phrase per doc
	for p, ph := range phrases {
		freq[p] = make([]float64, len(docs))
		if len(ph) == 0 {
			continue
		}
		holding := 0.0
		for i, d := range docs {
			found := false
			for c, col := range d {
				k := count(col, ph)
				if k > 0 {
					found = true
					if c < len(weights) {
						freq[p][i] += weights[c] * float64(k)
					}
				}
			}
			if found {
				holding++
			}
		}
		idf := math.Log((n - holding + 0.5) / (holding + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		for i := range docs {
			f := freq[p][i]
			if f == 0 {
				continue
			}
			// Evaluated in the order FTS5 evaluates it, so the scores
			// agree to the last bit and ties stay ties.
			scores[i] += idf * ((f * (BM25K1 + 1.0)) / (f + BM25K1*(1-BM25B+BM25B*lens[i]/avgdl)))
		}
	}
	return scores
}

// count is how many times phrase occurs in tokens, its tokens in a row.
func count(tokens, phrase []string) int {
	k := 0
	for i := 0; i+len(phrase) <= len(tokens); i++ {
		if tokens[i] == phrase[0] && equalAt(tokens[i:], phrase) {
			k++
		}
	}
	return k
}

// RoundScore is how a score is shown: six significant digits. A word in
// most of the indexed records weighs next to nothing (its IDF is floored
// at 1e-6), so a match on it alone scores around 1e-6; a fixed number of
// decimals would show all such matches as 0, though they are ranked.
// Ranking uses the exact score.
func RoundScore(s float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(s, 'g', 6, 64), 64)
	return r
}
