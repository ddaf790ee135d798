package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kura"
)

// KBQueryPlans returns SQLite's query plan (EXPLAIN QUERY PLAN details)
// of the statements that answer q, so tests can check that a query
// searches its indexes rather than scanning every entry.
func (db *DB) KBQueryPlans(name string, q kura.KBQuery) ([]string, error) {
	ctx := context.Background()
	rtx, err := db.kbRead(ctx)
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
	}{{st.count, append(st.countArgs, 0)}, {st.page, st.pageArgs}} {
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

// KBIndexDrift recomputes every knowledge-base index row, signature,
// document frequency and space size from the entries themselves and
// returns each difference from what is stored: empty when the indexes
// are exactly what the entries imply.
func (db *DB) KBIndexDrift() ([]string, error) {
	ctx := context.Background()
	var drift []string
	want := map[string]bool{}
	df := map[string]int{}
	sizes := map[int64]int{}
	rows, err := db.rdb.QueryContext(ctx, "SELECT e.eid, e.sp, e.identifier, e.keys, coalesce(w.words, '<missing>') FROM kb_entries e LEFT JOIN kb_entry_words w ON w.eid = e.eid")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var eid, sp int64
		var ident, keys, words string
		if err := rows.Scan(&eid, &sp, &ident, &keys, &words); err != nil {
			rows.Close()
			return nil, err
		}
		if w := wordsColumn(kb.Words(ident)); words != w {
			drift = append(drift, fmt.Sprintf("entry %d: words %q, implied %q", eid, words, w))
		}
		var ks []string
		if err := json.Unmarshal([]byte(keys), &ks); err != nil {
			rows.Close()
			return nil, err
		}
		sizes[sp]++
		for i, args := range [][]any{termRows(nil, sp, eid, kb.Words(ident)), termRows(nil, sp, eid, kb.FoldKeys(ks))} {
			for j := 0; j < len(args); j += 5 {
				want[fmt.Sprintf("%d %v %q %v %v %v", i, args[j], args[j+1], args[j+2], args[j+3], args[j+4])] = true
				df[fmt.Sprintf("%v %d %q", args[j], i, args[j+1])]++
			}
		}
	}
	rows.Close()
	var fwd, live int
	if err := db.rdb.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM kb_entry_words), (SELECT count(*) FROM kb_entries)").Scan(&fwd, &live); err != nil {
		return nil, err
	}
	if fwd != live {
		drift = append(drift, fmt.Sprintf("%d word rows for %d entries", fwd, live))
	}
	for i, table := range []string{"SELECT sp, word, eid, sig, sig2 FROM kb_words", "SELECT sp, key, eid, sig, sig2 FROM kb_keys"} {
		rows, err := db.rdb.QueryContext(ctx, table)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var sp, eid, sig, sig2 int64
			var term string
			if err := rows.Scan(&sp, &term, &eid, &sig, &sig2); err != nil {
				rows.Close()
				return nil, err
			}
			k := fmt.Sprintf("%d %v %q %v %v %v", i, sp, term, eid, sig, sig2)
			if !want[k] {
				drift = append(drift, "stored, not implied: "+k)
			}
			delete(want, k)
		}
		rows.Close()
	}
	for k := range want {
		drift = append(drift, "implied, not stored: "+k)
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

// SetKBCacheMin sets the smallest posting the cached plan takes and keeps.
// Missing postings are then read inline, so which plan answers is
// deterministic.
func (db *DB) SetKBCacheMin(n int) { db.kbPostings.min, db.kbPostings.syncLoad = n, true }

// WaitKBLoads waits for the postings being read in the background.
func (db *DB) WaitKBLoads() { db.kbLoads.Wait() }

// KBCacheHits counts the postings served from memory.
func (db *DB) KBCacheHits() int64 { return db.kbPostings.hits.Load() }
