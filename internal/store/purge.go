package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// What a redaction answers about the content it dropped (RedactResult.Purge).
const (
	// PurgeComplete: the WAL has been checkpointed into the database file
	// and truncated since the redaction committed; neither file holds the
	// content any more.
	PurgeComplete = "complete"
	// PurgePending: a reader kept the WAL from being truncated within the
	// bound; kurad retries in the background until it is done.
	PurgePending = "pending"
)

// Timings of the purge after a redaction.
const (
	// defaultRedactPurgeWait is how long a redaction retries before it
	// answers pending (Config.RedactPurgeWait).
	defaultRedactPurgeWait = 3 * time.Second
	// purgeAttemptWait bounds one TRUNCATE checkpoint's wait for readers
	// and the writer. While it waits, commits wait too (the checkpoint
	// holds the WAL's write lock), so it is short, and retried.
	purgeAttemptWait = 100 * time.Millisecond
	// purgeBackoffMax caps the pause between attempts in the background.
	purgeBackoffMax = 5 * time.Second
)

// purgeState counts redactions and how many of them a TRUNCATE checkpoint
// has purged from the files: pending while done < wanted.
type purgeState struct {
	wanted  atomic.Int64
	done    atomic.Int64
	running atomic.Bool // the background retry runs
}

// PurgePending reports whether a redacted record's old content may still be
// in kura.db or kura.db-wal: a redaction committed and no TRUNCATE
// checkpoint has finished since.
func (db *DB) PurgePending() bool { return db.purge.done.Load() < db.purge.wanted.Load() }

// PurgeState is PurgeComplete or PurgePending, for /v1/info.
func (db *DB) PurgeState() string {
	if db.PurgePending() {
		return PurgePending
	}
	return PurgeComplete
}

// purgeRedacted removes redacted content from the files: it checkpoints
// the whole WAL into the database file and truncates the WAL, retrying with
// backoff for up to Config.RedactPurgeWait. With secure_delete on the write
// connection the freed bytes were zeroed in the pages the redaction wrote;
// the checkpoint puts those pages over the old ones in the database file,
// and the truncation drops the old frames. When a reader keeps the WAL from
// being truncated that long, it answers PurgePending and goes on in the
// background until it is done.
func (db *DB) purgeRedacted(ctx context.Context) string {
	want := db.purge.wanted.Load()
	if db.purge.done.Load() >= want {
		return PurgeComplete
	}
	deadline := time.Now().Add(db.cfg.RedactPurgeWait)
	backoff := 10 * time.Millisecond
	for {
		if db.truncateForPurge(ctx, want) {
			return PurgeComplete
		}
		if time.Now().Add(backoff).After(deadline) || !db.pause(ctx, backoff) {
			break
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
	db.purgeInBackground()
	return PurgePending
}

// truncateForPurge makes one attempt; true when every redaction up to want
// is purged (by this attempt or another).
func (db *DB) truncateForPurge(ctx context.Context, want int64) bool {
	if db.purge.done.Load() >= want {
		return true
	}
	ok, err := db.checkpointTruncate(ctx, purgeAttemptWait)
	if err != nil {
		db.log.Debug("checkpoint for a redaction", "err", err)
	}
	if !ok {
		return false
	}
	db.markPurged(want)
	return true
}

// markPurged records that every redaction up to want is purged.
func (db *DB) markPurged(want int64) {
	for {
		d := db.purge.done.Load()
		if d >= want || db.purge.done.CompareAndSwap(d, want) {
			return
		}
	}
}

// pause waits d unless ctx ends or the store closes first.
func (db *DB) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-db.quit:
		return false
	}
}

// purgeInBackground starts the retry loop unless it runs: attempts with a
// backoff growing to purgeBackoffMax, until nothing is pending or the
// store closes (Close's own final checkpoint then finishes the job).
func (db *DB) purgeInBackground() {
	// Under db.mu, so that Close (which sets closed under it, then waits)
	// never races an Add.
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed || !db.purge.running.CompareAndSwap(false, true) {
		return
	}
	db.purgeWG.Add(1)
	go func() {
		defer db.purgeWG.Done()
		defer db.purge.running.Store(false)
		start := time.Now()
		db.log.Warn("redacted content may stay in the WAL while a reader holds an old snapshot; retrying the checkpoint in the background")
		backoff := 100 * time.Millisecond
		for db.PurgePending() {
			if !db.pause(db.bg, backoff) {
				return
			}
			if db.truncateForPurge(db.bg, db.purge.wanted.Load()) {
				db.log.Info("redacted content purged from the database files", "after", time.Since(start).Round(time.Millisecond))
				return
			}
			backoff = min(2*backoff, purgeBackoffMax)
		}
	}()
}

// checkpointTruncate copies the whole WAL into the database file and
// truncates the WAL to zero bytes, waiting at most wait for readers on
// older snapshots and for the writer. It reports whether it finished.
func (db *DB) checkpointTruncate(ctx context.Context, wait time.Duration) (bool, error) {
	db.ckptMu.Lock()
	defer db.ckptMu.Unlock()
	if db.pg != nil {
		return db.pgVacuumRecords(ctx, wait)
	}
	conn, err := db.cdb.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", max(1, wait.Milliseconds()))); err != nil {
		return false, err
	}
	defer conn.ExecContext(context.Background(), "PRAGMA busy_timeout = 10000")
	var busy, logFrames, done int
	err = conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	if busy != 0 {
		return false, nil
	}
	db.walFrames.Store(0)
	db.walLog.Store(0)
	return true, nil
}
