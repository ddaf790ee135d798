package store

import (
	"context"
	"database/sql"
	"runtime"
)

// heavyReads keeps room for cheap reads. A read whose cost grows with the
// data it walks (a provenance walk) takes a slot here before it takes a
// connection. There are at most half as many slots as connections, and
// fewer than the Go scheduler's processors: however many such requests
// arrive at once, part of the pool and one processor stay free for the
// reads that answer in microseconds (/v1/info, a record, a node), which
// would otherwise queue behind them, for a connection or for a processor,
// for as long as they run. A heavy read waits for a slot as long as its
// request's context allows. On the 2-core machine of make bench that is one
// slot: such reads run one at a time.
type heavyReads chan struct{}

func newHeavyReads(readPool int) heavyReads {
	return make(heavyReads, max(1, min(readPool/2, runtime.GOMAXPROCS(0)-1)))
}

// beginHeavyRead is beginRead for a heavy read: done ends the transaction
// and gives the slot back.
func (db *DB) beginHeavyRead(ctx context.Context) (tx *sql.Tx, done func(), err error) {
	select {
	case db.heavy <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	tx, err = db.beginRead(ctx)
	if err != nil {
		<-db.heavy
		return nil, nil, err
	}
	return tx, func() { tx.Rollback(); <-db.heavy }, nil
}
