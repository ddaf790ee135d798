package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
)

// KBQueryPlans returns SQLite's query plan (EXPLAIN QUERY PLAN details)
// of the statements that answer q, so tests can check that a query
// searches its indexes rather than scanning every entry.
func (db *DB) KBQueryPlans(name string, q kura.KBQuery) ([]string, error) {
	ctx := context.Background()
	rtx, err := db.readSnapshot(ctx, &db.kbStmts)
	if err != nil {
		return nil, err
	}
	defer rtx.end()
	st, _, done, err := prepareKB(ctx, rtx, name, &q, 100)
	if err != nil || done {
		return nil, err
	}
	var out []string
	for _, s := range []struct {
		q    string
		args []any
	}{{st.count, st.countArgs(0)}, {st.page, st.pageArgs}} {
		if s.q == "" {
			continue
		}
		rows, err := rtx.QueryContext(ctx, "EXPLAIN QUERY PLAN "+s.q, s.args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, detail)
		}
		rows.Close()
	}
	return out, nil
}

// KBIndexDrift recomputes the strict index (kb_terms), the ranking
// index's rows (kb_fts), every document frequency and space size from
// the entries themselves and returns each difference from what is stored:
// empty when the indexes are exactly what the entries imply.
func (db *DB) KBIndexDrift() ([]string, error) {
	ctx := context.Background()
	var drift []string
	type entry struct {
		rowid                int64
		identifier, keysText string
		value                string
	}
	var entries []entry
	postings := map[string][]int64{} // kb_terms token -> rowids, in order
	df := map[string]int{}
	sizes := map[int64]int{}
	rows, err := db.rdb.QueryContext(ctx, "SELECT eid, sp, identifier, keys, value FROM kb_entries ORDER BY sp, eid")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var eid, sp int64
		var ident, keys, value string
		if err := rows.Scan(&eid, &sp, &ident, &keys, &value); err != nil {
			rows.Close()
			return nil, err
		}
		var ks []string
		if err := json.Unmarshal([]byte(keys), &ks); err != nil {
			rows.Close()
			return nil, err
		}
		sizes[sp]++
		rowid := kbRowid(sp, eid)
		entries = append(entries, entry{rowid, ident, keysText(ks), value})
		for kind, terms := range [][]string{kb.Words(ident), kb.FoldKeys(ks)} {
			for _, t := range terms {
				tok := kbToken(kind, t)
				postings[tok] = append(postings[tok], rowid)
				df[fmt.Sprintf("%v %d %q", sp, kind, t)]++
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}

	// Every token the index knows, and every token the entries imply,
	// finds exactly the entries that hold it.
	tokens := map[string]bool{}
	for t := range postings {
		tokens[t] = true
	}
	// The vocabulary of kb_terms, read through a connection of its own:
	// the read pool may not create even a temporary table.
	raw, err := sql.Open("sqlite", "file:"+db.cfg.Path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	if _, err := raw.ExecContext(ctx, "CREATE VIRTUAL TABLE temp.kb_terms_vocab USING fts5vocab(main, kb_terms, 'row')"); err != nil {
		return nil, err
	}
	vocab, err := raw.QueryContext(ctx, "SELECT term FROM temp.kb_terms_vocab")
	if err != nil {
		return nil, err
	}
	for vocab.Next() {
		var t string
		if err := vocab.Scan(&t); err != nil {
			vocab.Close()
			return nil, err
		}
		tokens[t] = true
	}
	vocab.Close()
	for t := range tokens {
		got, err := rowids(ctx, db.rdb, "SELECT rowid FROM kb_terms WHERE kb_terms MATCH ? ORDER BY rowid", `"`+t+`"`)
		if err != nil {
			return nil, err
		}
		if want := postings[t]; !slices.Equal(got, want) {
			drift = append(drift, fmt.Sprintf("kb_terms %s: holds %v, implied %v", t, got, want))
		}
	}

	// kb_fts holds a row for every entry and no other, and each row holds
	// its entry's words in their columns.
	got, err := rowids(ctx, db.rdb, "SELECT rowid FROM kb_fts ORDER BY rowid")
	if err != nil {
		return nil, err
	}
	var want []int64
	for _, e := range entries {
		want = append(want, e.rowid)
	}
	if !slices.Equal(got, want) {
		drift = append(drift, fmt.Sprintf("kb_fts rows %v, implied %v", got, want))
	}
	for _, e := range entries {
		for _, c := range []struct{ col, text string }{{"identifier", e.identifier}, {"keys", e.keysText}, {"value", e.value}} {
			var words []string
			for _, w := range recall.Words(c.text) {
				if isASCIIWord(w) {
					words = append(words, `"`+w+`"`)
				}
			}
			if len(words) == 0 {
				continue
			}
			var n int
			expr := "{" + c.col + "} : (" + strings.Join(words, " AND ") + ")"
			if err := db.rdb.QueryRowContext(ctx, "SELECT count(*) FROM kb_fts WHERE kb_fts MATCH ? AND rowid = ?", expr, e.rowid).Scan(&n); err != nil {
				return nil, err
			}
			if n != 1 {
				drift = append(drift, fmt.Sprintf("kb_fts row %d: %s does not match %s", e.rowid, c.col, expr))
			}
		}
	}

	rows, err = db.rdb.QueryContext(ctx, "SELECT sp, kind, term, n FROM kb_df")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var sp int64
		var kind, n int
		var term string
		if err := rows.Scan(&sp, &kind, &term, &n); err != nil {
			rows.Close()
			return nil, err
		}
		k := fmt.Sprintf("%v %d %q", sp, kind, term)
		if df[k] != n {
			drift = append(drift, fmt.Sprintf("df %s: stored %d, implied %d", k, n, df[k]))
		}
		delete(df, k)
	}
	rows.Close()
	for k, n := range df {
		drift = append(drift, fmt.Sprintf("df %s: implied %d, not stored", k, n))
	}
	rows, err = db.rdb.QueryContext(ctx, "SELECT sp, entries FROM kb_spaces")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var sp int64
		var n int
		if err := rows.Scan(&sp, &n); err != nil {
			return nil, err
		}
		if sizes[sp] != n {
			drift = append(drift, fmt.Sprintf("space %d: entries %d, implied %d", sp, n, sizes[sp]))
		}
	}
	return drift, rows.Err()
}

// isASCIIWord reports whether a word is ASCII letters and digits only, so
// FTS5's tokenizer takes it as one token exactly as Go cuts it.
func isASCIIWord(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// SetKBCacheMin sets the smallest posting the cached plan takes and keeps.
// Missing postings are then read inline, so which plan answers is
// deterministic.
func (db *DB) SetKBCacheMin(n int) { db.kbPostings.min, db.kbPostings.syncLoad = n, true }

// WaitKBLoads waits for the postings being read in the background.
func (db *DB) WaitKBLoads() { db.kbLoads.Wait() }

// KBCacheHits counts the postings served from memory.
func (db *DB) KBCacheHits() int64 { return db.kbPostings.hits.Load() }

// SetKBRankBounds lowers the ranking's budget (entries bm25() may score
// for a question) and sample (entries a common word's frequency is
// estimated on), so small knowledge bases take every path of the ranking.
func (db *DB) SetKBRankBounds(budget, sample int) { db.kbRankBounds = [2]int{budget, sample} }
