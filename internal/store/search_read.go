package store

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps the prepared statements of a family of reads by SQL
// text. A search's or a knowledge-base query's text depends only on its
// shape (how many words, which filters or keys, which ranking path), so a
// few dozen statements serve every query, and parsing one costs about a
// tenth of a search. Shapes beyond max run unprepared.
type stmtCache struct {
	mu  sync.Mutex
	m   map[string]*sql.Stmt
	max int
}

// The bounds of the two caches.
const (
	maxSearchStmts = 128
	maxKBStmts     = 256
)

func (c *stmtCache) get(q string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[q]
}

// keep prepares q on rdb and keeps it, unless it is kept already or the
// cache is full. A statement that fails to prepare runs unprepared, as it
// did the first time.
func (c *stmtCache) keep(rdb *sql.DB, q string) {
	c.mu.Lock()
	_, have := c.m[q]
	full := len(c.m) >= c.max
	c.mu.Unlock()
	if have || full {
		return
	}
	s, err := rdb.PrepareContext(context.Background(), q)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	if _, have := c.m[q]; have || len(c.m) >= c.max {
		s.Close()
		return
	}
	c.m[q] = s
}

// snapshot is one read-only transaction of a search, a compile's ranking
// or a knowledge-base query, running cache's statements where it has them.
type snapshot struct {
	db    *DB
	cache *stmtCache
	tx    *sql.Tx
	miss  []string
}

func (db *DB) readSnapshot(ctx context.Context, cache *stmtCache) (*snapshot, error) {
	tx, err := db.beginRead(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return &snapshot{db: db, cache: cache, tx: tx}, nil
}

func (r *snapshot) stmt(q string) *sql.Stmt {
	s := r.cache.get(q)
	if s == nil {
		r.miss = append(r.miss, q)
	}
	return s
}

func (r *snapshot) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if s := r.stmt(q); s != nil {
		return r.tx.StmtContext(ctx, s).QueryContext(ctx, args...)
	}
	return r.tx.QueryContext(ctx, q, args...)
}

func (r *snapshot) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if s := r.stmt(q); s != nil {
		return r.tx.StmtContext(ctx, s).QueryRowContext(ctx, args...)
	}
	return r.tx.QueryRowContext(ctx, q, args...)
}

// end closes the snapshot, then prepares the statements it missed, once
// its own connection is back in the pool (a reader holding one while
// waiting for another could wait forever once every reader did).
func (r *snapshot) end() {
	r.tx.Rollback()
	for _, q := range r.miss {
		r.cache.keep(r.db.rdb, q)
	}
}
