package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// PoolsClosed reports whether every connection pool refuses work because
// it is closed (a busy pool answers a ping late, not with an error).
func (db *DB) PoolsClosed() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	for _, p := range []*sql.DB{db.wdb, db.rdb, db.cdb} {
		if err := p.PingContext(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
			return false
		}
	}
	return true
}
