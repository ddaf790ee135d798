package store

import (
	"context"
	"database/sql"
)

// heavyReads keeps room in the read pool for cheap reads. A read whose cost
// grows with the data it walks (a provenance walk) takes a slot here before
// it takes a connection, and there are half as many slots as connections
// (at least one): however many such requests arrive at once, the other half
// of the pool stays free for the reads that answer in microseconds
// (/v1/info, a record, a node), which would otherwise queue behind them for
// as long as they run. A heavy read waits for a slot as long as its
// request's context allows. (The API keeps a processor free the same way:
// api/heavy.go.)
type heavyReads chan struct{}

func newHeavyReads(readPool int) heavyReads {
	return make(heavyReads, max(1, readPool/2))
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
