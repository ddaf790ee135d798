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
	stats := make([]DocStats, len(docs))
	for i, d := range docs {
		stats[i] = Stats(d, phrases, weights)
	}
	return BM25Stats(stats, len(phrases))
}

// DocStats is what BM25 needs of one document: its length in tokens and
// the phrases it holds. A caller that reads documents one at a time keeps
// these and lets the text go (memory as of a past time: every node of a
// scope, each up to 16 KiB of summary).
type DocStats struct {
	Len  float64
	Hits []Hit // the phrases the document holds, in phrase order
}

// Hit is a phrase a document holds and its frequency there, each
// occurrence weighted by its column's weight.
type Hit struct {
	Phrase int
	Freq   float64
}

// Stats reads one document for BM25.
func Stats(d Doc, phrases [][]string, weights []float64) DocStats {
	var st DocStats
	for _, col := range d {
		st.Len += float64(len(col))
	}
	for p, ph := range phrases {
		if len(ph) == 0 {
			continue
		}
		found, f := false, 0.0
		for c, col := range d {
			k := count(col, ph)
			if k > 0 {
				found = true
				if c < len(weights) {
					f += weights[c] * float64(k)
				}
			}
		}
		if found {
			st.Hits = append(st.Hits, Hit{p, f})
		}
	}
	return st
}

// BM25Stats scores documents from their Stats for phrases phrases: BM25,
// with the same arithmetic in the same order, so the scores agree to the
// last bit.
func BM25Stats(docs []DocStats, phrases int) []float64 {
	scores := make([]float64, len(docs))
	if len(docs) == 0 || phrases == 0 {
		return scores
	}
	total := 0.0
	holding := make([]float64, phrases)
	for _, d := range docs {
		total += d.Len
		for _, h := range d.Hits {
			holding[h.Phrase]++
		}
	}
	avgdl := total / float64(len(docs))
	n := float64(len(docs))
	idf := make([]float64, phrases)
	for p := range idf {
		idf[p] = math.Log((n - holding[p] + 0.5) / (holding[p] + 0.5))
		if idf[p] <= 0 {
			idf[p] = 1e-6
		}
	}
	for i, d := range docs {
		for _, h := range d.Hits {
			f := h.Freq
			if f == 0 {
				continue
			}
			// Evaluated in the order FTS5 evaluates it, so the scores
			// agree to the last bit and ties stay ties.
			scores[i] += idf[h.Phrase] * ((f * (BM25K1 + 1.0)) / (f + BM25K1*(1-BM25B+BM25B*d.Len/avgdl)))
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
