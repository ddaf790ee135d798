package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kura-memory/kura/internal/recall"
)

// The ranking (lexical.search) and what bounds its cost (RankBounds).
//
// bm25() scores every node that holds any query word before anything can
// be sorted, about a microsecond each, and for each word it first counts
// the nodes of the whole index holding it (its IDF), about 0.03 µs a node.
// A question holding a common word ("one", "time") matched tens of
// thousands of a 100,000-node scope and took 50 ms. So the words are
// counted first, in the scope, up to CommonWord (0.1 µs a node, no
// scoring), and then:
//   - a query whose words are all rarer and match at most Budget nodes
//     is ranked whole, exactly (rankAll);
//   - otherwise (rankPruned) the nodes holding one of the rarer words (at
//     most Budget) are ranked exactly, against every word of the
//     query; a node holding only common words is left out unless those
//     nodes are fewer than the limit, and then the newest RecentCommon
//     nodes holding any word are ranked too. A common word weighs little
//     (its IDF is low), so such a node rarely deserves a place above one
//     holding a rarer word.

// RankBounds bound the cost of memory search's ranking, as the comment
// above says. A zero field takes its default; tests make them small to
// reach every path with a few nodes.
type RankBounds struct {
	CommonWord   int // a word in this many of a scope's nodes is common (default 1500)
	Budget       int // nodes ranked exhaustively at most (default 3000)
	RecentCommon int // nodes holding only common words ranked at most (default 1000)
}

// withDefaults fills the zero bounds with the defaults.
func (b RankBounds) withDefaults() RankBounds {
	if b.CommonWord <= 0 {
		b.CommonWord = 1500
	}
	if b.Budget <= 0 {
		b.Budget = 3000
	}
	if b.RecentCommon <= 0 {
		b.RecentCommon = 1000
	}
	return b
}

// lexical is how a store ranks by words: its engine (pg: PostgreSQL's
// index, search_pg.go) and its bounds.
type lexical struct {
	pg bool
	RankBounds
}

func (db *DB) lexical() lexical { return lexical{pg: db.pg != nil, RankBounds: db.cfg.RankBounds} }

// ftsColumn is a column of node_fts: the weight bm25() gives a word found
// there and the reason code it reports.
type ftsColumn struct {
	name   string
	code   string
	weight float64
}

// ftsColumns are node_fts's columns (and node_text's) in order, in the
// order reasons are listed. A title names the thing, so a word there
// counts three times one in the summary; the id and the target files are
// names too.
var ftsColumns = []ftsColumn{
	{"title", "title_match", 3},
	{"ident", "id_match", 2},
	{"files", "target_file_match", 2},
	{"summary", "summary_match", 1},
	{"payload", "payload_match", 1},
	{"meta", "metadata_match", 0.5},
}

// matchWords is the match expression of query words: any of them.
func matchWords(words []string) string { return recall.MatchExpr(words) }

// textCols selects node_text's columns, in ftsColumns order, from t.
var textCols = func() string {
	cols := make([]string, len(ftsColumns))
	for i, c := range ftsColumns {
		cols[i] = "t." + c.name
	}
	return strings.Join(cols, ", ")
}()

// ftsWeights are the column weights, in column order.
var ftsWeights = func() []float64 {
	w := make([]float64, len(ftsColumns))
	for i, c := range ftsColumns {
		w[i] = c.weight
	}
	return w
}()

// bm25Expr is the ranking expression: bm25() is negative, better is lower.
var bm25Expr = func() string {
	var b strings.Builder
	b.WriteString("bm25(node_fts")
	for _, c := range ftsColumns {
		b.WriteString(", " + strconv.FormatFloat(c.weight, 'f', -1, 64))
	}
	return b.String() + ")"
}()

// nidBits: a node's index rowid is sid<<nidBits | nid, so a scope is one
// rowid range (migration 0012).
const nidBits = 40

// scopeRows is the rowid range of scope sid's nodes in node_fts.
func scopeRows(sid int64) (lo, hi int64) {
	return sid << nidBits, sid<<nidBits | (1<<nidBits - 1)
}

// hit is a ranked node: its key and its score (-bm25: higher is better).
type hit struct {
	nid   int64
	score float64
}

// nodeFilter is SQL on the node row n that a hit must pass, with its
// arguments.
type nodeFilter struct {
	where string // " AND n.kind = ?..."
	args  []any
}

// queryWords are the words of a query search matches: recall.QueryTerms
// (stop words dropped unless there is nothing else), without the words the
// engine reads as nothing (no token) and without a word whose tokens an
// earlier one already has ("addresses" after "address": one word, counted
// once).
func queryWords(q string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(w string) {
		p := strings.Join(recall.Phrase(w), " ")
		if p == "" || seen[p] {
			return
		}
		seen[p] = true
		out = append(out, w)
	}
	terms := recall.QueryTerms(q)
	for _, w := range terms {
		add(w)
	}
	for _, w := range terms {
		for _, v := range recall.Variants(w) {
			add(v)
		}
	}
	return out
}

// wordCounts counts, for each word, the nodes of scope sid that hold it,
// stopping at CommonWord: a count below it is exact, CommonWord means
// "common". A count costs a tenth of a microsecond a node, no scoring.
func (l lexical) wordCounts(ctx context.Context, q queryer, sid int64, words []string) ([]int, error) {
	if len(words) == 0 {
		return nil, nil
	}
	lo, hi := scopeRows(sid)
	var b strings.Builder
	args := make([]any, 0, 3*len(words))
	b.WriteString("SELECT ")
	for i, w := range words {
		if i > 0 {
			b.WriteString(", ")
		}
		if l.pg {
			b.WriteString(pgCountWordSQL(l.CommonWord))
		} else {
			b.WriteString("(SELECT count(*) FROM (SELECT 1 FROM node_fts WHERE node_fts MATCH ? AND rowid BETWEEN ? AND ? LIMIT " +
				strconv.Itoa(l.CommonWord) + "))")
		}
		args = append(args, ftsMatch(l.pg, matchWords([]string{w})), lo, hi)
	}
	counts := make([]int, len(words))
	dst := make([]any, len(words))
	for i := range counts {
		dst[i] = &counts[i]
	}
	if err := q.QueryRowContext(ctx, b.String(), args...).Scan(dst...); err != nil {
		return nil, fmt.Errorf("search: count words: %w", err)
	}
	return counts, nil
}

// search ranks the nodes of scope sid that hold any of words (as the
// engine matches them: stemmed, folded) and pass f, best first, ties to
// the older node (lower nid), at most limit of them. counts are
// wordCounts of words. Its cost is bounded as the comment above says. It is
// the lexical ranking every search path shares.
func (l lexical) search(ctx context.Context, q queryer, sid int64, words []string, counts []int, f nodeFilter, limit int) ([]hit, error) {
	total, common := 0, false
	for _, c := range counts {
		total += c
		common = common || c >= l.CommonWord // the count stopped: there are more
	}
	if len(words) == 0 || total == 0 {
		return nil, nil
	}
	var idf map[string]float64
	if l.pg {
		var err error
		if idf, err = l.pgIDF(ctx, q, sid, words, counts); err != nil {
			return nil, err
		}
	}
	if !common && total <= l.Budget {
		return rankAll(ctx, q, l.pg, sid, words, idf, f, limit)
	}
	return l.rankPruned(ctx, q, sid, words, counts, idf, f, limit)
}

// rankAll scores every node of scope sid holding any of words: the exact
// ranking, at most limit nodes (all of them for limit < 0). idf weighs the
// words on PostgreSQL (pgIDF).
func rankAll(ctx context.Context, q queryer, pg bool, sid int64, words []string, idf map[string]float64, f nodeFilter, limit int) ([]hit, error) {
	lo, hi := scopeRows(sid)
	var sqlq string
	if pg {
		args := append(pgScoreArgs(words, idf), pgMatch(matchWords(words)), lo, hi)
		args = append(args, f.args...)
		return scanHits(ctx, q, pgRankSQL(f.where, len(words))+" ORDER BY r, f.rowid LIMIT ?", append(args, pgLimit(limit))...)
	}
	if f.where == "" {
		sqlq = "SELECT rowid, " + bm25Expr + " AS r FROM node_fts WHERE node_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY r, rowid LIMIT ?"
	} else {
		// CROSS JOIN keeps the index outermost: the planner must not start
		// from a scan of the scope's nodes.
		sqlq = "SELECT f.rowid, " + bm25Expr + " AS r FROM node_fts f CROSS JOIN nodes n ON n.nid = f.rowid & " + nidMask +
			" WHERE node_fts MATCH ? AND f.rowid BETWEEN ? AND ?" + f.where + " ORDER BY r, f.rowid LIMIT ?"
	}
	args := append([]any{matchWords(words), lo, hi}, f.args...)
	return scanHits(ctx, q, sqlq, append(args, limit)...)
}

var nidMask = strconv.FormatInt(1<<nidBits-1, 10)

// rankPruned ranks a query holding common words or matching more than
// Budget nodes, as the comment above says.
func (l lexical) rankPruned(ctx context.Context, q queryer, sid int64, words []string, counts []int, idf map[string]float64, f nodeFilter, limit int) ([]hit, error) {
	pg := l.pg
	order := make([]int, len(words))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return counts[a] - counts[b] })
	var rare, common []string
	budget := 0
	for _, i := range order {
		if counts[i] < l.CommonWord && budget+counts[i] <= l.Budget {
			budget += counts[i]
			rare = append(rare, words[i])
		} else if counts[i] > 0 {
			common = append(common, words[i])
		}
	}
	lo, hi := scopeRows(sid)
	join, where := "", ""
	if f.where != "" {
		join, where = " CROSS JOIN nodes n ON n.nid = f.rowid & "+nidMask, f.where
	}
	scores := map[int64]float64{}
	if len(rare) > 0 {
		// bm25() adds up one term per phrase of the expression, each the
		// same whatever else the expression holds. Ranked on the rare words
		// alone, every node holding one gets their part, which is its whole
		// score if it holds no common word; matched on "rare AND common",
		// the nodes that also hold a common word get their whole score. (An
		// expression matching every node holding a rare word with every
		// word a phrase of it, "rare AND (common OR <a token every node
		// has>)", would need one pass, but the IDF of a token every node
		// has costs a count of the whole index: it was slower.)
		matches := []string{matchWords(rare)}
		scored := [][]string{rare} // the words each match scores
		if len(common) > 0 {
			matches = append(matches, "("+matchWords(rare)+") AND ("+matchWords(common)+")")
			scored = append(scored, append(slices.Clip(rare), common...))
		}
		for i, match := range matches {
			sqlq := "SELECT f.rowid, " + bm25Expr + " FROM node_fts f" + join + " WHERE node_fts MATCH ? AND f.rowid BETWEEN ? AND ?" + where
			var args []any
			if pg {
				sqlq = pgRankSQL(where, len(scored[i]))
				args = pgScoreArgs(scored[i], idf)
			}
			args = append(append(args, ftsMatch(pg, match), lo, hi), f.args...)
			hits, err := scanHits(ctx, q, sqlq, args...)
			if err != nil {
				return nil, err
			}
			for _, h := range hits {
				scores[h.nid] = h.score
			}
		}
	}
	if len(common) > 0 && (limit < 0 || len(scores) < limit) {
		// The newest nodes holding any word, the filters applied to them
		// (so the work stays bounded however few pass).
		sqlq := "SELECT f.rowid, f.r FROM (SELECT rowid, " + bm25Expr + " AS r FROM node_fts WHERE node_fts MATCH ? AND rowid BETWEEN ? AND ?" +
			" ORDER BY rowid DESC LIMIT " + strconv.Itoa(l.RecentCommon) + ") f" + join
		if where != "" {
			sqlq += " WHERE 1" + where
		}
		var args []any
		if pg {
			sqlq = pgRecentSQL(where, l.RecentCommon, len(words))
			args = pgScoreArgs(words, idf)
		}
		args = append(append(args, ftsMatch(pg, matchWords(words)), lo, hi), f.args...)
		recent, err := scanHits(ctx, q, sqlq, args...)
		if err != nil {
			return nil, err
		}
		for _, h := range recent {
			if _, ok := scores[h.nid]; !ok {
				scores[h.nid] = h.score
			}
		}
	}
	out := make([]hit, 0, len(scores))
	for nid, s := range scores {
		out = append(out, hit{nid, s})
	}
	slices.SortFunc(out, func(a, b hit) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.nid, b.nid)
	})
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// scanHits runs a ranking query whose rows are (rowid, bm25).
func scanHits(ctx context.Context, q queryer, sqlq string, args ...any) ([]hit, error) {
	rows, err := q.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	defer rows.Close()
	var out []hit
	for rows.Next() {
		var h hit
		if err := rows.Scan(&h.nid, &h.score); err != nil {
			return nil, err
		}
		h.nid &= 1<<nidBits - 1
		h.score = -h.score
		out = append(out, h)
	}
	return out, rows.Err()
}
