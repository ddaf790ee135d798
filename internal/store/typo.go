package store

import (
	"context"
	"database/sql"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
)

// The words a misspelt query word may have meant are the terms the search
// index holds (node_fts_vocab, stemmed as the index stems them). Reading
// them from the index costs in proportion to the postings read, not the
// terms: on 100,000 nodes the terms of one first letter took ~15 ms, too
// slow for a fallback that runs on every query word the scope lacks. So
// the first lookup reads the whole vocabulary once (~0.3 s on 100,000
// nodes) into a compact copy, bucketed so a lookup compares a word with
// ~1,000 terms, not all of them. The copy is refreshed when the index has
// changed since: at once when the copy is small (a small store: a rule on
// its size, not on how long the last read took, so a busy machine does not
// make a small store's answers depend on timing), else in the background, at most once per ten times its last read took, so
// refreshing costs at most a tenth of a core. Until kurad is asked to
// correct a word, no copy exists (idle memory stays small).

// vocabTerm is one term of the copy and the number of nodes holding it.
type vocabTerm struct {
	term string
	docs int32
}

// vocabKey buckets terms by a rune at one end and their length in runes:
// a word within two edits of a term has the term's first or last rune
// unless both ends were mistyped.
type vocabKey struct {
	r    rune
	last bool
	n    int
}

type vocabSnap struct {
	seq     int64 // the last event seq the index had when read
	took    time.Duration
	at      time.Time
	terms   []vocabTerm
	buckets map[vocabKey][]int32
}

type vocabCache struct {
	mu      sync.Mutex
	snap    *vocabSnap
	loading bool
	wg      sync.WaitGroup
}

// syncVocabTerms: a copy of fewer terms than this (read in a few
// milliseconds) is redone at once when the index changed; a larger one is
// redone in the background.
const syncVocabTerms = 20000

// vocabulary returns the copy of the index's terms, reading or refreshing
// it as the rules above say. It never fails a search: a copy that cannot be
// read leaves the fallback without suggestions (and the log says why).
func (db *DB) vocabulary(ctx context.Context) *vocabSnap {
	c := &db.vocab
	seq := db.lastSeq.Load()
	c.mu.Lock()
	s := c.snap
	stale := s == nil || s.seq < seq
	if !stale {
		c.mu.Unlock()
		return s
	}
	if s != nil && (len(s.terms) >= syncVocabTerms || c.loading) {
		if !c.loading && time.Since(s.at) >= 10*s.took {
			db.mu.RLock()
			closed := db.closed
			if !closed {
				c.loading = true
				c.wg.Add(1)
			}
			db.mu.RUnlock()
			if !closed {
				go func() {
					defer c.wg.Done()
					ctx, cancel := context.WithTimeout(db.bg, time.Minute)
					defer cancel()
					db.loadVocabulary(ctx)
				}()
			}
		}
		c.mu.Unlock()
		return s
	}
	c.loading = true
	c.mu.Unlock()
	return db.loadVocabulary(ctx)
}

// loadVocabulary reads the index's terms into a new copy and keeps it.
func (db *DB) loadVocabulary(ctx context.Context) *vocabSnap {
	c := &db.vocab
	defer func() {
		c.mu.Lock()
		c.loading = false
		c.mu.Unlock()
	}()
	start := time.Now()
	// The seq is read before the terms: a write committed in between makes
	// the copy look older than it is, never newer.
	seq := db.lastSeq.Load()
	s, err := readVocabulary(ctx, db.rdb, db.pg != nil, db.nodeKinds())
	if err != nil {
		db.log.Warn("reading the search vocabulary for misspelt words", "err", err)
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.snap
	}
	s.seq, s.at, s.took = seq, time.Now(), time.Since(start)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == nil || c.snap.seq <= s.seq {
		c.snap = s
	}
	return c.snap
}

// readVocabulary reads the terms a word may be corrected to: of four runes
// or more (shorter words are never corrected), without digits (a number
// one digit off is another number), and not a node kind: every node holds
// its kind, so "nots" taken for "note" would match every note.
func readVocabulary(ctx context.Context, q *sql.DB, pg bool, kinds []string) (*vocabSnap, error) {
	skip := map[string]bool{}
	for _, k := range kinds {
		for _, t := range recall.Tokens(k) {
			skip[t] = true
		}
	}
	vocab := "SELECT term, doc FROM node_fts_vocab"
	if pg {
		vocab = pgVocabulary
	}
	rows, err := q.QueryContext(ctx, vocab)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	s := &vocabSnap{buckets: map[vocabKey][]int32{}}
	for rows.Next() {
		var t vocabTerm
		if err := rows.Scan(&t.term, &t.docs); err != nil {
			return nil, err
		}
		n := utf8.RuneCountInString(t.term)
		if n < 4 || n > 64 || hasDigit(t.term) || skip[t.term] {
			continue
		}
		i := int32(len(s.terms))
		s.terms = append(s.terms, t)
		first, _ := utf8.DecodeRuneInString(t.term)
		last, _ := utf8.DecodeLastRuneInString(t.term)
		s.buckets[vocabKey{first, false, n}] = append(s.buckets[vocabKey{first, false, n}], i)
		s.buckets[vocabKey{last, true, n}] = append(s.buckets[vocabKey{last, true, n}], i)
	}
	return s, rows.Err()
}

func hasDigit(s string) bool {
	for _, r := range s {
		if unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// near returns up to max terms within recall.MaxEdits of token (a stemmed
// token, as the index holds its terms), other than token itself: the
// closest first, then the more common, then in byte order.
func (s *vocabSnap) near(token string, max int) []vocabTerm {
	n := utf8.RuneCountInString(token)
	k := recall.MaxEdits(n)
	if k == 0 || s == nil {
		return nil
	}
	first, _ := utf8.DecodeRuneInString(token)
	last, _ := utf8.DecodeLastRuneInString(token)
	type cand struct {
		vocabTerm
		d int
	}
	var cands []cand
	seen := map[int32]bool{}
	for l := n - k; l <= n+k; l++ {
		for _, key := range []vocabKey{{first, false, l}, {last, true, l}} {
			for _, i := range s.buckets[key] {
				if seen[i] {
					continue
				}
				seen[i] = true
				t := s.terms[i]
				if t.term == token {
					continue
				}
				if recall.WithinEdits(token, t.term, k) {
					cands = append(cands, cand{t, recall.EditDistance(token, t.term)})
				}
			}
		}
	}
	sort.Slice(cands, func(a, b int) bool {
		x, y := cands[a], cands[b]
		if x.d != y.d {
			return x.d < y.d
		}
		if x.docs != y.docs {
			return x.docs > y.docs
		}
		return x.term < y.term
	})
	out := make([]vocabTerm, 0, min(max, len(cands)))
	for _, c := range cands[:min(max, len(cands))] {
		out = append(out, c.vocabTerm)
	}
	return slices.Clip(out)
}

// docsOf is how many nodes hold term, as the copy saw it (0: none).
func (s *vocabSnap) docsOf(term string) int32 {
	i := sort.Search(len(s.terms), func(i int) bool { return s.terms[i].term >= term })
	if i < len(s.terms) && s.terms[i].term == term {
		return s.terms[i].docs
	}
	return 0
}

// typo is a query word taken for another: near, a term of the index.
type typo struct{ word, near string }

// Bounds of the fallback: how many query words it looks up, how many
// terms it offers for each, and how many candidates it checks for each.
const (
	typoMaxWords = 8
	typoPerWord  = 3
	typoChecks   = 10
)

// rankWithTypos ranks words for a search, correcting misspelt ones. A
// word the scope's index does not hold at all is replaced, before the
// ranking, by the nearest terms it does hold (within recall.MaxEdits, the
// commoner first): "uniswop router" ranks as "uniswap router". When even
// then fewer than limit nodes are found, the words the scope does hold get
// the same lookup (only terms commoner than the word itself, so a rare
// misspelling held by one node leads to the word meant) and the nodes
// found only through those terms follow the others. counts are
// wordCounts of words. While every word is held and the limit is reached,
// it costs nothing more than the ranking.
func (db *DB) rankWithTypos(ctx context.Context, q queryer, sid int64, words []string, counts []int, f nodeFilter, limit int) ([]hit, []typo, error) {
	var held []string
	var heldCounts []int
	var absent []string
	for i, w := range words {
		if counts[i] > 0 {
			held, heldCounts = append(held, w), append(heldCounts, counts[i])
		} else {
			absent = append(absent, w)
		}
	}
	var v *vocabSnap
	var typos []typo
	looked := 0
	// correct returns the terms of the scope near w, and their counts.
	correct := func(w string, commonerThan int32) ([]string, []int, error) {
		p := recall.Phrase(w)
		if len(p) != 1 || recall.MaxEdits(utf8.RuneCountInString(p[0])) == 0 || looked >= typoMaxWords {
			return nil, nil, nil
		}
		looked++
		if v == nil {
			if v = db.vocabulary(ctx); v == nil {
				return nil, nil, nil
			}
		}
		// The copy is of the whole index: a term must be one the engine
		// reads back as itself (a query word is stemmed again), and held in
		// this scope (counted there, all candidates in one statement).
		var cands []string
		for _, c := range v.near(p[0], typoChecks) {
			if c.docs <= commonerThan {
				continue
			}
			if tp := recall.Phrase(c.term); len(tp) == 1 && tp[0] == c.term {
				cands = append(cands, c.term)
			}
		}
		cc, err := db.lexical().wordCounts(ctx, q, sid, cands)
		if err != nil {
			return nil, nil, err
		}
		var near []string
		var nearCounts []int
		for i, c := range cands {
			if cc[i] > 0 && len(near) < typoPerWord {
				near, nearCounts = append(near, c), append(nearCounts, cc[i])
				typos = append(typos, typo{w, c})
			}
		}
		return near, nearCounts, nil
	}
	ranked, rankedCounts := held, heldCounts
	if len(absent) > 0 {
		ranked, rankedCounts = slices.Clone(held), slices.Clone(heldCounts)
		for _, w := range absent {
			near, nc, err := correct(w, -1)
			if err != nil {
				return nil, nil, err
			}
			ranked, rankedCounts = append(ranked, near...), append(rankedCounts, nc...)
		}
	}
	hits, err := db.lexical().search(ctx, q, sid, ranked, rankedCounts, f, limit)
	if err != nil || len(hits) >= limit || len(held) == 0 {
		return hits, typos, err
	}
	var extra []string
	var extraCounts []int
	for _, w := range held {
		if v == nil {
			if v = db.vocabulary(ctx); v == nil {
				break
			}
		}
		near, nc, err := correct(w, v.docsOf(recall.Phrase(w)[0]))
		if err != nil {
			return nil, nil, err
		}
		extra, extraCounts = append(extra, near...), append(extraCounts, nc...)
	}
	if len(extra) == 0 {
		return hits, typos, nil
	}
	more, err := db.lexical().search(ctx, q, sid, extra, extraCounts, f, limit)
	if err != nil {
		return nil, nil, err
	}
	in := make(map[int64]bool, len(hits))
	for _, h := range hits {
		in[h.nid] = true
	}
	for _, h := range more {
		if len(hits) == limit {
			break
		}
		if !in[h.nid] {
			hits = append(hits, h)
		}
	}
	return hits, typos, nil
}

// typoReasons says which corrections a result was found through: those
// whose term its field reasons name.
func typoReasons(typos []typo, reasons []kura.SearchReason) []kura.SearchReason {
	var out []kura.SearchReason
	for _, t := range typos {
		for _, r := range reasons {
			if slices.Contains(strings.Split(r.Detail, ", "), t.near) {
				out = append(out, kura.SearchReason{Code: "typo_match", Detail: t.word + " ~ " + t.near})
				break
			}
		}
	}
	return out
}
