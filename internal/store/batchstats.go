package store

import "time"

// BatchStats describes one group transaction the writer finished.
type BatchStats struct {
	Jobs int // write requests in the batch, failed ones included
	// Committed is true when the transaction committed; false when it
	// failed as a whole (Failed) or every job in it failed and it was
	// rolled back.
	Committed bool
	Failed    bool          // begin, savepoint or commit error: every caller got it
	Duration  time.Duration // BEGIN until COMMIT returned (or the failure)
	// Commit is the COMMIT alone: writing the WAL frames and, with
	// synchronous=FULL, the fsync. On PostgreSQL it includes the writes
	// sent with the COMMIT (pgPipe). Zero unless Committed.
	Commit time.Duration
	// LockWait and LockHeld are, on PostgreSQL, how long the batch waited
	// for the write lock the instances share (PostgreSQL's own measure)
	// and how long it held it, until COMMIT returned: while one instance
	// holds it no other commits, so the instances' LockHeld added up over
	// a second is how busy the lock is. Zero on SQLite.
	LockWait, LockHeld time.Duration
}

// BatchObserver receives the stats of every group transaction. The writer
// calls it before answering the batch's callers, so it must be quick and
// must never block: every write waits for it.
type BatchObserver func(BatchStats)

// OnBatch registers an observer of the writer's group transactions (the
// metrics layer's histograms).
func (db *DB) OnBatch(o BatchObserver) {
	db.hookMu.Lock()
	defer db.hookMu.Unlock()
	var obs []BatchObserver
	if p := db.batchObs.Load(); p != nil {
		obs = append(obs, *p...)
	}
	obs = append(obs, o)
	db.batchObs.Store(&obs)
}

// observe hands bs to the batch observers; one atomic load when there are
// none.
func (db *DB) observe(bs BatchStats) {
	if p := db.batchObs.Load(); p != nil {
		for _, o := range *p {
			o(bs)
		}
	}
}
