package store

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
)

// Ranked knowledge-base search: a question in a model's own words, over
// kb_fts (identifier, keys and value, stemmed, case and accents folded).
//
// SQLite's bm25() costs about a microsecond for every entry that holds one
// of the question's words, and before its first row it reads the whole
// posting of every word to learn how common it is: a word every entry holds
// (the "runbook" of a boilerplate footer) costs milliseconds by itself. So
// the words are split by how many entries of the scope hold them, counted
// no further than a bound or estimated on a sample: the rare words, whose
// entries add up to at most kbRankBudget, find the entries (bm25() picks
// the best of them when they are more than the page needs); the common
// ones only re-rank what the rare ones found, and find entries by
// themselves only when the rare ones found too few, through unranked FTS5
// queries that stop at the first matches (all the common words in the
// identifier first, then anywhere, then fewer of them). A question's cost
// is bounded, whatever its words.
//
// The entries found are scored here, by kb.Occur and kb.TermScore: BM25
// over every word of the question with the scope's own counts. bm25()'s
// figures count every scope of every knowledge base and fall to nothing for
// a word half the entries hold, so they only choose which entries to score.

const (
	// kbRankBudget bounds how many entries bm25() scores for one question.
	kbRankBudget = 2000
	// kbSample is how many of a scope's first entries estimate how many
	// entries hold a word too common to count.
	kbSample = 1000
	// kbMaxTerms bounds the words of a question that are searched.
	kbMaxTerms = 32
	// kbLookupFloor: lookup leaves out ranked entries scoring below this
	// share of the best entry's score (a strict match's included). A model
	// reads every entry it gets, and an entry holding only a word that
	// most entries hold is no answer when others hold the rare ones.
	kbLookupFloor = 0.3
	// kbRankSlack is how many entries beyond the page bm25() hands over,
	// so that the common words' re-ranking has entries to move up.
	kbRankSlack = 20
)

// qKBRank ranks the entries of a rowid range that match an expression,
// best first (bm25() is lower for a better match).
var qKBRank = "SELECT rowid FROM kb_fts WHERE kb_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY bm25(kb_fts, " + weightsSQL() + ") LIMIT ?"

func weightsSQL() string {
	w := make([]string, kb.NumFields)
	for i, x := range kb.Weights {
		w[i] = strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strings.Join(w, ", ")
}

const (
	qKBCountUpTo = "SELECT count(*) FROM (SELECT 1 FROM kb_fts WHERE kb_fts MATCH ? AND rowid BETWEEN ? AND ? LIMIT ?)"
	qKBMatchSome = "SELECT rowid FROM kb_fts WHERE kb_fts MATCH ? AND rowid BETWEEN ? AND ? LIMIT ?"
	qKBSampleEnd = "SELECT eid FROM kb_entries WHERE sp = ? ORDER BY eid LIMIT 1 OFFSET ?"
	qKBVocab     = "SELECT term, n FROM kb_df WHERE sp = ? AND kind = 0 AND n > 0 AND term >= ? AND term < ? AND length(term) BETWEEN ? AND ?"
)

// rankTerm is a question's word as the ranking sees it.
type rankTerm struct {
	kb.Term
	n      int // entries holding it: exact up to the budget, else estimated
	common bool
}

func (t *rankTerm) phrase() string { return recall.MatchExpr([]string{t.Used}) }

// rankHit is an entry found for a question.
type rankHit struct {
	eid   int64
	score float64
	entry *kura.KBEntry
	occ   kb.Occurrences
}

// kbRanker ranks the entries of one space in one read snapshot.
type kbRanker struct {
	rtx            *snapshot
	sp             int64
	lo, hi         int64
	total          int     // entries in the space
	budget, sample int     // kbRankBudget and kbSample, smaller in tests
	sampleHi       int64   // the rowid of the space's sample-th entry, once read
	avgLength      float64 // the words of an entry, on average (see score)
}

func newKBRanker(rtx *snapshot, sp int64, total int) *kbRanker {
	lo, hi := kbRange(sp)
	r := &kbRanker{rtx: rtx, sp: sp, lo: lo, hi: hi, total: total, budget: kbRankBudget, sample: kbSample}
	if b := rtx.db.kbRankBounds; b[0] > 0 {
		r.budget, r.sample = b[0], b[1]
	}
	return r
}

// countUpTo counts the entries matching expr, stopping at max.
func (r *kbRanker) countUpTo(ctx context.Context, expr string, hi int64, max int) (int, error) {
	var n int
	query, expr := r.match(qKBCountUpTo, expr)
	err := r.rtx.QueryRowContext(ctx, query, expr, r.lo, hi, max).Scan(&n)
	return n, err
}

// terms turns a question into the terms to search, each with how many
// entries hold it, and a word no entry holds replaced by the identifier
// word it most likely misspells.
func (r *kbRanker) terms(ctx context.Context, q string) ([]*rankTerm, error) {
	words := recall.QueryTerms(q)
	if len(words) > kbMaxTerms {
		words = words[:kbMaxTerms]
	}
	// How many identifiers hold each word exactly (kb_df) is free to read
	// and never more than the entries holding its stem anywhere.
	inIdent, err := dfCounts(ctx, r.rtx, r.sp, dfWord, words)
	if err != nil {
		return nil, err
	}
	var out []*rankTerm
	seen := map[string]bool{}
	for _, w := range words {
		t := &rankTerm{Term: kb.NewTerm(w, w)}
		if t.Form() == "" || seen[t.Form()] {
			continue
		}
		// Every word is letters and digits in a quoted phrase, so FTS5
		// takes it (one its tokenizer finds nothing in matches nothing):
		// an error here is the database's.
		n, err := r.count(ctx, t, inIdent[w])
		if err != nil {
			return nil, err
		}
		if n == 0 {
			fix, err := r.correct(ctx, w)
			if err != nil {
				return nil, err
			}
			if fix == "" {
				continue
			}
			t = &rankTerm{Term: kb.NewTerm(w, fix)}
			if seen[t.Form()] {
				continue
			}
			if n, err = r.count(ctx, t, 0); err != nil {
				return nil, err
			}
			if n == 0 {
				continue
			}
		}
		seen[t.Form()] = true
		t.n = n
		t.IDF = kb.IDF(min(n, r.total), r.total)
		out = append(out, t)
	}
	return out, nil
}

// count says how many entries of the space hold t: exactly when they are
// at most the budget, else an estimate above it. A word that atLeast
// identifiers hold (more than the budget), or that the scope's first
// sample entries hold often enough to put it over the budget, is
// estimated from that sample; only the others are counted in full, and a
// count stops past the budget. So a common word costs at most a sample's
// worth of index rows, never its whole posting.
func (r *kbRanker) count(ctx context.Context, t *rankTerm, atLeast int) (int, error) {
	if r.total <= r.sample {
		return r.countUpTo(ctx, t.phrase(), r.hi, r.sample)
	}
	if r.sampleHi == 0 {
		var eid int64
		if err := r.rtx.QueryRowContext(ctx, qKBSampleEnd, r.sp, r.sample-1).Scan(&eid); err != nil {
			return 0, err
		}
		r.sampleHi = kbRowid(r.sp, eid)
	}
	m, err := r.countUpTo(ctx, t.phrase(), r.sampleHi, r.sample)
	if err != nil {
		return 0, err
	}
	est := m * r.total / r.sample
	if atLeast <= r.budget && est <= r.budget {
		n, err := r.countUpTo(ctx, t.phrase(), r.hi, r.budget+1)
		if err != nil || n <= r.budget {
			return n, err
		}
	}
	return max(atLeast, est, r.budget+1), nil
}

// correct finds the word a misspelt one most likely meant among the
// identifier words of the space (kb_df): the closest within
// recall.MaxEdits, the most common of equally close ones. Candidates share
// the misspelt word's first or second letter (a typo seldom changes both),
// so only a slice of the vocabulary is read. Words holding digits (years,
// versions, numbers) are never corrected: 2024 is not a typo of 2023.
func (r *kbRanker) correct(ctx context.Context, w string) (string, error) {
	runes := []rune(w)
	maxEdits := recall.MaxEdits(len(runes))
	if maxEdits == 0 {
		return "", nil
	}
	for _, c := range runes {
		if !unicode.IsLetter(c) {
			return "", nil
		}
	}
	best, bestD, bestN := "", maxEdits+1, 0
	starts := []rune{runes[0]}
	if runes[1] != runes[0] {
		starts = append(starts, runes[1])
	}
	for _, s := range starts {
		from := kb.Fold(string(s))
		r0, _ := utf8.DecodeRuneInString(from)
		rows, err := r.rtx.QueryContext(ctx, qKBVocab, r.sp, from, string(r0+1), len(runes)-maxEdits, len(runes)+maxEdits)
		if err != nil {
			return "", err
		}
		for rows.Next() {
			var term string
			var n int
			if err := rows.Scan(&term, &n); err != nil {
				rows.Close()
				return "", err
			}
			if term == w {
				continue
			}
			d := recall.EditDistance(w, term)
			if d < bestD || d == bestD && (n > bestN || n == bestN && term < best) {
				best, bestD, bestN = term, d, n
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", err
		}
	}
	return best, nil
}

// rank returns the want best entries for q that are not in exclude, best
// first. With floor > 0, entries scoring below floor times the best score
// of all, the excluded entries' included, are left out.
func (r *kbRanker) rank(ctx context.Context, q string, want int, exclude map[int64]bool, floor float64) ([]kura.KBHit, error) {
	if want <= 0 {
		return nil, nil
	}
	terms, err := r.terms(ctx, q)
	if err != nil || len(terms) == 0 {
		return nil, err
	}
	// The rarest words, while their entries fit the budget, find the
	// entries; the rest are common.
	order := slices.Clone(terms)
	slices.SortStableFunc(order, func(a, b *rankTerm) int { return a.n - b.n })
	var rare, common []*rankTerm
	sum := 0
	for _, t := range order {
		if sum+t.n <= r.budget {
			sum += t.n
			rare = append(rare, t)
		} else {
			t.common = true
			common = append(common, t)
		}
	}
	all := make([]kb.Term, len(terms))
	for i, t := range terms {
		all[i] = t.Term
	}
	window := min(want+len(exclude)+kbRankSlack, r.budget)
	found := map[int64]bool{}
	var hits []*rankHit
	best := 0.0 // the best score, for the floor
	if floor > 0 && len(exclude) > 0 {
		var ex []*rankHit
		for eid := range exclude {
			ex = append(ex, &rankHit{eid: eid})
		}
		if err := r.score(ctx, ex, all); err != nil {
			return nil, err
		}
		for _, h := range ex {
			best = max(best, h.score)
		}
	}
	if len(rare) > 0 {
		// All the rare words' entries when they fit the window, else the
		// window's worth that bm25() ranks best.
		query := qKBMatchSome
		if sum > window {
			query = qKBRank
		}
		query, expr := r.match(query, phrases(rare, " OR "))
		ids, err := rowids(ctx, r.rtx, query, expr, r.lo, r.hi, window)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if eid := id - r.lo; !exclude[eid] {
				hits = append(hits, &rankHit{eid: eid})
				found[eid] = true
			}
		}
		if err := r.score(ctx, hits, all); err != nil {
			return nil, err
		}
		for _, h := range hits {
			best = max(best, h.score)
		}
	}
	// Common words find entries by themselves when the rare ones found
	// too few; for a lookup (floor > 0) only when they found none: the
	// entries holding a rare word are what a model asked about, and
	// padding its answer with entries holding only common words buys
	// nothing the floor would keep.
	if len(common) > 0 && len(hits) < want && !(floor > 0 && len(hits) > 0) && !commonCannotReach(best, common, floor) {
		more, err := r.gather(ctx, rare, common, window-len(hits), exclude, found)
		if err != nil {
			return nil, err
		}
		if err := r.score(ctx, more, all); err != nil {
			return nil, err
		}
		hits = append(hits, more...)
	}
	if len(hits) == 0 {
		return nil, nil
	}
	slices.SortStableFunc(hits, func(a, b *rankHit) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return cmp.Compare(a.eid, b.eid)
	})
	if floor > 0 {
		cut := floor * max(best, hits[0].score)
		hits = slices.DeleteFunc(hits, func(h *rankHit) bool { return h.score < cut })
	}
	hits = hits[:min(want, len(hits))]
	out := make([]kura.KBHit, len(hits))
	for i, h := range hits {
		out[i] = kura.KBHit{KBEntry: *h.entry, Score: kb.RoundScore(h.score), Reasons: kb.Explain(all, &h.occ)}
	}
	return out, nil
}

// score loads hits' entries and scores them by every term. The first
// entries a question scores stand in for the scope's average length, so
// every entry of one answer is measured against the same one.
func (r *kbRanker) score(ctx context.Context, hits []*rankHit, terms []kb.Term) error {
	if len(hits) == 0 {
		return nil
	}
	if err := r.load(ctx, hits); err != nil {
		return err
	}
	length := 0
	for _, h := range hits {
		h.occ = kb.Occur(h.entry, terms)
		length += h.occ.Length
	}
	if r.avgLength == 0 {
		r.avgLength = float64(length) / float64(len(hits))
	}
	for _, h := range hits {
		for i, t := range terms {
			h.score += h.occ.TermScore(i, t.IDF, r.avgLength)
		}
	}
	return nil
}

// commonCannotReach reports whether no entry found by the common words
// alone could score above the floor the best entry found so far sets: then
// they are not searched for.
func commonCannotReach(best float64, common []*rankTerm, floor float64) bool {
	if floor <= 0 || best == 0 {
		return false
	}
	reach := 0.0
	for _, t := range common {
		reach += kb.MaxTermScore(t.IDF)
	}
	return reach < floor*best
}

// gather finds up to n entries holding common words but none of the rare
// ones (those were ranked already), most promising first: every common
// word in the identifier, then anywhere, then all but the most common of
// them, and so on down to the rarest alone. Each query stops at the
// matches it needs, unranked; the caller scores what comes back.
func (r *kbRanker) gather(ctx context.Context, rare, common []*rankTerm, n int, exclude, found map[int64]bool) ([]*rankHit, error) {
	not := ""
	if len(rare) > 0 {
		not = " NOT (" + phrases(rare, " OR ") + ")"
	}
	var exprs []string
	all := phrases(common, " AND ")
	exprs = append(exprs, "{identifier} : ("+all+")"+not, "("+all+")"+not)
	for k := len(common) - 1; k >= 1; k-- {
		exprs = append(exprs, "("+phrases(common[:k], " AND ")+")"+not)
	}
	var out []*rankHit
	for _, expr := range exprs {
		if len(out) >= n {
			break
		}
		query, expr := r.match(qKBMatchSome, expr)
		ids, err := rowids(ctx, r.rtx, query, expr, r.lo, r.hi, n+len(exclude)+len(found))
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			eid := id - r.lo
			if !exclude[eid] && !found[eid] && len(out) < n {
				found[eid] = true
				out = append(out, &rankHit{eid: eid})
			}
		}
	}
	return out, nil
}

// load reads the entries of hits.
func (r *kbRanker) load(ctx context.Context, hits []*rankHit) error {
	ids := make([]string, len(hits))
	byEID := make(map[int64]*rankHit, len(hits))
	for i, h := range hits {
		ids[i] = strconv.FormatInt(h.eid, 10)
		byEID[h.eid] = h
	}
	rows, err := r.rtx.QueryContext(ctx, "SELECT "+kbEntryCols+" FROM kb_entries e WHERE e.eid IN (SELECT CAST(value AS BIGINT) FROM json_each(?))", "["+strings.Join(ids, ",")+"]")
	if err != nil {
		return err
	}
	defer rows.Close()
	scope := ""
	n := 0
	for rows.Next() {
		e, eid, err := scanKBEntry(rows, scope)
		if err != nil {
			return err
		}
		byEID[eid].entry = e
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n != len(hits) {
		return kura.Errorf(kura.EInternal, "knowledge-base search index out of step: %d of %d entries found", n, len(hits))
	}
	return nil
}

func phrases(terms []*rankTerm, op string) string {
	p := make([]string, len(terms))
	for i, t := range terms {
		p[i] = t.phrase()
	}
	return strings.Join(p, op)
}

// SearchKB answers GET /v1/kb/{kb}/search: the entries of a scope that
// hold some of the question's words, best first, each with its score and
// what matched.
func (db *DB) SearchKB(ctx context.Context, name string, q kura.KBSearch) (*kura.KBSearchPage, error) {
	if err := validKBName(name); err != nil {
		return nil, err
	}
	if !kura.ValidKBScope(q.Scope) {
		return nil, kura.Invalid("scope", "scope must be empty (the default scope) or a slug")
	}
	limit := q.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	page := &kura.KBSearchPage{Entries: []kura.KBHit{}}
	rtx, err := db.readSnapshot(ctx, &db.kbStmts)
	if err != nil {
		return nil, err
	}
	defer rtx.end()
	sp, total, ok, err := readKBSpace(ctx, rtx, name, q.Scope)
	if err != nil || !ok {
		return page, mapErr(err)
	}
	hits, err := newKBRanker(rtx, sp, total).rank(ctx, q.Q, limit, nil, 0)
	if err != nil {
		return nil, mapErr(err)
	}
	for i := range hits {
		hits[i].Scope = q.Scope
	}
	if hits != nil {
		page.Entries = hits
	}
	return page, nil
}

// LookupKB answers GET /v1/kb/{kb}/lookup in one snapshot: the strict
// matches (kb.LookupQueries: the first that matches anything), then, in
// the ranked mode and while the page has room, the best-ranked others.
func (db *DB) LookupKB(ctx context.Context, name string, l kura.KBLookup) (*kura.KBLookupResult, error) {
	if err := validKBName(name); err != nil {
		return nil, err
	}
	if !kura.ValidKBScope(l.Scope) {
		return nil, kura.Invalid("scope", "scope must be empty (the default scope) or a slug")
	}
	if !kura.ValidKBLookupMode(l.Mode) {
		return nil, kura.Invalid("mode", "mode must be ranked or strict")
	}
	limit := l.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	rtx, err := db.readSnapshot(ctx, &db.kbStmts)
	if err != nil {
		return nil, err
	}
	defer rtx.end()
	res := &kura.KBLookupResult{Strict: []kura.KBEntry{}}
	for _, lq := range kb.LookupQueries(l.Scope, l.Q) {
		lq.Limit = limit
		page, err := queryKB(ctx, rtx, name, &lq)
		if err != nil {
			return nil, mapErr(err)
		}
		if page.Count > 0 {
			res.Strict, res.Count = page.Entries, page.Count
			break
		}
	}
	if l.Mode == kura.KBLookupStrict || len(res.Strict) >= limit {
		return res, nil
	}
	sp, total, ok, err := readKBSpace(ctx, rtx, name, l.Scope)
	if err != nil || !ok {
		return res, mapErr(err)
	}
	exclude := map[int64]bool{}
	if len(res.Strict) > 0 {
		// The strict matches are few (the page had room): find their
		// positions to leave them out of the ranking.
		ids := make([]string, len(res.Strict))
		for i := range res.Strict {
			ids[i] = res.Strict[i].ID
		}
		eids, err := rowids(ctx, rtx, "SELECT eid FROM kb_entries WHERE id IN (SELECT value FROM json_each(?))", jsonList(ids))
		if err != nil {
			return nil, mapErr(err)
		}
		for _, e := range eids {
			exclude[e] = true
		}
	}
	res.Ranked, err = newKBRanker(rtx, sp, total).rank(ctx, l.Q, limit-len(res.Strict), exclude, kbLookupFloor)
	if err != nil {
		return nil, mapErr(err)
	}
	for i := range res.Ranked {
		res.Ranked[i].Scope = l.Scope
	}
	return res, nil
}

// rowids reads a column of integers.
func rowids(ctx context.Context, q queryer, query string, args ...any) ([]int64, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
