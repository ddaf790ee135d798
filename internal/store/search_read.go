package store

import (
	"context"
	"database/sql"
	"sync"
)

// searchStmts keeps the prepared statements of search reads by SQL text.
// A search's statements depend only on its shape (how many words, which
// filters, which ranking path), so a few dozen serve every search, and
// parsing one cost about a tenth of a search.
type searchStmts struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// maxSearchStmts bounds the cache: shapes beyond it run unprepared.
const maxSearchStmts = 128

// searchRead is one read snapshot of a search or a compile's ranking.
type searchRead struct {
	db   *DB
	tx   *sql.Tx
	miss []string
}

func (db *DB) searchRead(ctx context.Context) (*searchRead, error) {
	tx, err := db.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, mapErr(err)
	}
	return &searchRead{db: db, tx: tx}, nil
}

func (r *searchRead) stmt(q string) *sql.Stmt {
	c := &r.db.searchStmts
	c.mu.Lock()
	s := c.m[q]
	c.mu.Unlock()
	if s == nil {
		r.miss = append(r.miss, q)
	}
	return s
}

func (r *searchRead) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if s := r.stmt(q); s != nil {
		return r.tx.StmtContext(ctx, s).QueryContext(ctx, args...)
	}
	return r.tx.QueryContext(ctx, q, args...)
}

func (r *searchRead) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if s := r.stmt(q); s != nil {
		return r.tx.StmtContext(ctx, s).QueryRowContext(ctx, args...)
	}
	return r.tx.QueryRowContext(ctx, q, args...)
}

// end closes the snapshot, then prepares the statements it missed, once
// its own connection is back in the pool (a reader holding one while
// waiting for another could wait forever once every reader did).
func (r *searchRead) end() {
	r.tx.Rollback()
	c := &r.db.searchStmts
	for _, q := range r.miss {
		c.mu.Lock()
		_, have := c.m[q]
		full := len(c.m) >= maxSearchStmts
		c.mu.Unlock()
		if have || full {
			continue
		}
		s, err := r.db.rdb.PrepareContext(context.Background(), q)
		if err != nil {
			continue // it runs unprepared, as it did now
		}
		c.mu.Lock()
		if c.m == nil {
			c.m = map[string]*sql.Stmt{}
		}
		if _, have := c.m[q]; have || len(c.m) >= maxSearchStmts {
			s.Close()
		} else {
			c.m[q] = s
		}
		c.mu.Unlock()
	}
}
