package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// A query of several common words or keys ("contract addresses arbitrum
// one" in a base of 100,000 sentences) matches a few hundred entries out of
// postings of thousands: FTS5 intersects the postings twice (page, then
// count), and that walk is what the slowest queries spend. Postings change only when an entry is
// added or deleted, a key set changes or a space is cleared, so kurad
// keeps copies of the large ones in memory and answers such queries by
// intersecting sorted lists: exact (an entry holds every query word iff it
// is in every word's posting), and it reads from SQLite only the page's
// entries.
//
// A copy is valid for one generation of its space (kb_spaces.gen, migration 0008, bumped
// in the transaction that changes the postings); a reader uses copies of
// the generation its own snapshot sees, so it never mixes states.

const (
	// kbCacheMin is the smallest rarest-posting size worth the cached plan,
	// and the smallest posting kept: below it the SQL plan is fast.
	kbCacheMin = 256
	// kbCacheMaxIDs bounds the memory the copies take (8 bytes an id).
	kbCacheMaxIDs = 1 << 20
)

type postingKey struct {
	sp   int64
	kind int
	term string
}

type postingCache struct {
	mu    sync.Mutex
	min   int             // kbCacheMin; tests lower it
	gens  map[int64]int64 // the generation each space's copies belong to
	lists map[postingKey][]int64
	ids   int
	hits  atomic.Int64

	loading  map[postingKey]bool // being read in the background
	syncLoad bool                // tests: read missing postings inline
}

// lookup returns the copy of one posting for a reader at generation gen.
func (c *postingCache) lookup(k postingKey, gen int64) ([]int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g, ok := c.gens[k.sp]; !ok || g != gen {
		return nil, false
	}
	l, ok := c.lists[k]
	if ok {
		c.hits.Add(1)
	}
	return l, ok
}

// store keeps a posting read at generation gen. Copies of an older
// generation of the space are dropped; a reader behind the newest
// generation keeps nothing (its copy is already stale).
func (c *postingCache) store(k postingKey, gen int64, l []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gens == nil {
		c.gens, c.lists = map[int64]int64{}, map[postingKey][]int64{}
	}
	switch g, ok := c.gens[k.sp]; {
	case ok && g > gen:
		return
	case ok && g < gen:
		for key, old := range c.lists {
			if key.sp == k.sp {
				c.ids -= len(old)
				delete(c.lists, key)
			}
		}
	}
	c.gens[k.sp] = gen
	if len(l) > kbCacheMaxIDs/4 {
		return
	}
	for key, old := range c.lists {
		if c.ids+len(l) <= kbCacheMaxIDs {
			break
		}
		c.ids -= len(old)
		delete(c.lists, key)
	}
	if _, have := c.lists[k]; !have {
		c.lists[k] = l
		c.ids += len(l)
	}
}

func (c *postingCache) minSize() int {
	if c.min > 0 {
		return c.min
	}
	return kbCacheMin
}

// readPosting reads the eids of one word or key of space sp from a
// snapshot, in order. group_concat does the walk inside SQLite: a row
// through database/sql costs twice as much as a number parsed here.
func readPosting(ctx context.Context, q queryer, pg bool, k postingKey) ([]int64, error) {
	lo, hi := kbRange(k.sp)
	query := "SELECT group_concat(rowid - ?) FROM kb_terms WHERE kb_terms MATCH ? AND rowid BETWEEN ? AND ?"
	if pg {
		query = qPGKBPosting
	}
	var s sql.NullString
	if err := q.QueryRowContext(ctx, query, lo, kbTermsMatch(pg, `"`+kbToken(k.kind, k.term)+`"`), lo, hi).Scan(&s); err != nil {
		return nil, err
	}
	if s.String == "" {
		return []int64{}, nil
	}
	l := make([]int64, 0, strings.Count(s.String, ",")+1)
	for f := range strings.SplitSeq(s.String, ",") {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("posting %v: %w", k, err)
		}
		l = append(l, id)
	}
	if !slices.IsSorted(l) { // FTS5 reads in rowid order, but group_concat does not promise to keep it
		slices.Sort(l)
	}
	return l, nil
}

// cachedPostings returns every posting q needs from the copies of the
// snapshot's generation. When one is missing it returns false, and the
// query takes the SQL plan while the missing ones are read in the
// background: a query is never slower for finding the copies cold.
func (db *DB) cachedPostings(st *kbStatements) ([][]int64, bool) {
	c := &db.kbPostings
	ls := make([][]int64, 0, len(st.postings))
	var missing []postingKey
	for _, p := range st.postings {
		parts := make([][]int64, 0, len(p.vals))
		for _, v := range p.vals {
			k := postingKey{st.sp, p.kind, v}
			if l, ok := c.lookup(k, st.gen); ok {
				parts = append(parts, l)
			} else {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 {
			ls = append(ls, union(parts))
		}
	}
	if len(missing) == 0 {
		return ls, true
	}
	if c.syncLoad {
		db.loadPostings(missing)
		return db.cachedPostings(st)
	}
	db.loadPostingsLater(missing)
	return nil, false
}

// loadPostingsLater reads postings in the background, each key once at a
// time; Close waits for the readers.
func (db *DB) loadPostingsLater(keys []postingKey) {
	c := &db.kbPostings
	c.mu.Lock()
	var todo []postingKey
	for _, k := range keys {
		if c.loading == nil {
			c.loading = map[postingKey]bool{}
		}
		if !c.loading[k] {
			c.loading[k] = true
			todo = append(todo, k)
		}
	}
	c.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	db.mu.Lock()
	closed := db.closed
	if !closed {
		db.kbLoads.Add(1)
	}
	db.mu.Unlock()
	if closed {
		return
	}
	go func() {
		defer db.kbLoads.Done()
		db.loadPostings(todo)
		c.mu.Lock()
		for _, k := range todo {
			delete(c.loading, k)
		}
		c.mu.Unlock()
	}()
}

// loadPostings reads postings in one snapshot, at the generation that
// snapshot sees, and keeps them. A failure only means no copy.
func (db *DB) loadPostings(keys []postingKey) {
	ctx, cancel := context.WithTimeout(db.bg, 30*time.Second)
	defer cancel()
	tx, err := db.beginRead(ctx)
	if err != nil {
		return
	}
	defer tx.Rollback()
	gens := map[int64]int64{}
	for _, k := range keys {
		gen, ok := gens[k.sp]
		if !ok {
			if err := tx.QueryRowContext(ctx, "SELECT gen FROM kb_spaces WHERE sp = ?", k.sp).Scan(&gen); err != nil {
				return
			}
			gens[k.sp] = gen
		}
		l, err := readPosting(ctx, tx, db.pg != nil, k)
		if err != nil {
			db.log.Warn("reading a knowledge-base posting into memory", "err", err)
			return
		}
		db.kbPostings.store(k, gen, l)
	}
}

// union merges sorted lists, each id once (an entry holding two of the
// any_keys counts once).
func union(ls [][]int64) []int64 {
	if len(ls) == 1 {
		return ls[0]
	}
	var out []int64
	for _, l := range ls {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// intersect returns the ids in every sorted list, walking the shortest and
// searching the others forward.
func intersect(ls [][]int64) []int64 {
	slices.SortFunc(ls, func(a, b []int64) int { return len(a) - len(b) })
	out := make([]int64, 0, len(ls[0]))
	pos := make([]int, len(ls))
next:
	for _, id := range ls[0] {
		for i := 1; i < len(ls); i++ {
			l := ls[i]
			j, found := slices.BinarySearch(l[pos[i]:], id)
			pos[i] += j
			if pos[i] >= len(l) {
				break next
			}
			if !found {
				continue next
			}
		}
		out = append(out, id)
	}
	return out
}

// cachedQueryKB answers a query of several conditions from the postings
// of the snapshot's generation: the matches are their intersection, so
// count and page come without confirming a candidate. ok is false when the
// copies are not all there yet.
func cachedQueryKB(ctx context.Context, rtx *snapshot, st *kbStatements, q *kura.KBQuery, limit int) (page *kura.KBPage, ok bool, err error) {
	ls, ok := rtx.db.cachedPostings(st)
	if !ok {
		return nil, false, nil
	}
	ids := intersect(ls)
	page = &kura.KBPage{Entries: []kura.KBEntry{}, Count: len(ids)}
	from, _ := slices.BinarySearch(ids, q.After+1)
	to := min(from+limit, len(ids))
	if to < len(ids) {
		page.NextCursor = strconv.FormatInt(ids[to-1], 10)
	}
	if from == to {
		return page, true, nil
	}
	list := make([]string, to-from)
	for i, id := range ids[from:to] {
		list[i] = strconv.FormatInt(id, 10)
	}
	rows, err := rtx.QueryContext(ctx, "SELECT "+kbEntryCols+" FROM kb_entries e WHERE e.eid IN (SELECT CAST(value AS BIGINT) FROM json_each(?)) ORDER BY e.eid",
		"["+strings.Join(list, ",")+"]")
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	for rows.Next() {
		e, _, err := scanKBEntry(rows, q.Scope)
		if err != nil {
			return nil, false, err
		}
		page.Entries = append(page.Entries, *e)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	if len(page.Entries) != to-from {
		// The postings and the entries come from one snapshot; a
		// difference is a broken index, not a race.
		return nil, false, kura.Errorf(kura.EInternal, "knowledge-base index out of step: %d of %d matching entries found", len(page.Entries), to-from)
	}
	return page, true, nil
}

// cached reports whether q takes the cached plan: it needs counting (more
// than one condition, or a union), and its rarest condition is large
// enough that walking it costs more than intersecting copies.
func (st *kbStatements) cached(q *kura.KBQuery, minSize int) bool {
	return q.ExactIdentifier == nil && st.known < 0 && len(st.postings) > 0 && st.postings[0].size >= minSize
}
