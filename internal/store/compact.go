package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"

	"github.com/kura-memory/kura/internal/kura"
)

// The compaction checkpoint, in meta: every event with seq <= through is
// gone, count rows were removed in all, the last time at at.
const (
	metaCompactedThrough = "events_compacted_through"
	metaCompactedCount   = "events_compacted_count"
	metaCompactedAt      = "events_compacted_at"
)

// compactChunk is how many seqs one compaction transaction deletes: the
// writer is shared, so a large compaction goes in many short transactions
// rather than one that holds every other write up. A test makes one
// DB's smaller (DB.compactChunk), never the package's: tests run in
// parallel.
const compactChunk int64 = 5000

const (
	qMetaValue    = "SELECT value FROM meta WHERE key = ?"
	qMaxEventSeq  = "SELECT coalesce(max(seq), 0) FROM events"
	qDeleteEvents = "DELETE FROM events WHERE seq <= ?"
	qSetMeta      = "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
)

// metaInt reads an integer from meta; a missing key is 0.
func metaInt(ctx context.Context, q queryer, key string) (int64, error) {
	return parseMetaInt(key, q.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", key))
}

func parseMetaInt(key string, row *sql.Row) (int64, error) {
	var v string
	if err := row.Scan(&v); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return 0, nil
		}
		return 0, mapErr(err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, kura.Errorf(kura.EInternal, "meta %s is not a number: %q", key, v)
	}
	return n, nil
}

// CompactEvents deletes old rows of the event log: those with seq <
// beforeSeq that the doorbell has already published (seq <= its saved
// cursor), never the newest row. seq is the table's rowid without
// AUTOINCREMENT, so the newest row is what keeps the next seq from reusing
// one a client may hold as its cursor.
//
// Nothing else depends on these rows: records, ledgers, head moves and
// memory carry their own hashes, signatures and versions, so every session
// and ledger verifies as before. What is lost is the audit trail and the
// catch-up feed before the checkpoint; the feed says so (compacted_through)
// to a reader that asks for it.
//
// The checkpoint in meta moves forward in the same transaction as each
// chunk's delete, so it is exact after every commit, also when ctx ends a
// large compaction half way.
func (db *DB) CompactEvents(ctx context.Context, beforeSeq int64) (*kura.EventCompaction, error) {
	if beforeSeq <= 0 {
		return nil, kura.Invalid("before_seq", "before_seq must be a positive event seq")
	}
	// An admin's deletes, not bookkeeping: held like any write until the
	// database's integrity is established (startcheck.go).
	if err := db.integrityGate(ctx); err != nil {
		return nil, err
	}
	res := &kura.EventCompaction{RequestedBeforeSeq: beforeSeq}
	for {
		// A job may run twice (the writer retries a failed batch with
		// savepoints), so it sets its results rather than adding to them.
		var removed int64
		var done bool
		err := db.Update(ctx, func(tx *Tx) error {
			removed, done = 0, false
			through, err := parseMetaInt(metaCompactedThrough, tx.QueryRow(qMetaValue, metaCompactedThrough))
			if err != nil {
				return err
			}
			published, err := parseMetaInt(publishedKey, tx.QueryRow(qMetaValue, publishedKey))
			if err != nil {
				return err
			}
			var last int64
			if err := tx.QueryRow(qMaxEventSeq).Scan(&last); err != nil {
				return err
			}
			res.CompactedThrough, res.PublishedSeq = through, published
			target := min(beforeSeq-1, published, last-1)
			if target <= through {
				done = true
				return nil
			}
			chunk := compactChunk
			if n := db.compactChunk.Load(); n > 0 {
				chunk = n
			}
			upto := min(target, through+chunk)
			r, err := tx.Exec(qDeleteEvents, upto)
			if err != nil {
				return err
			}
			if removed, err = r.RowsAffected(); err != nil {
				return err
			}
			total, err := parseMetaInt(metaCompactedCount, tx.QueryRow(qMetaValue, metaCompactedCount))
			if err != nil {
				return err
			}
			for k, v := range map[string]string{
				metaCompactedThrough: strconv.FormatInt(upto, 10),
				metaCompactedCount:   strconv.FormatInt(total+removed, 10),
				metaCompactedAt:      tx.NowString(),
			} {
				if _, err := tx.Exec(qSetMeta, k, v); err != nil {
					return err
				}
			}
			res.CompactedThrough = upto
			done = upto == target
			return nil
		})
		if err != nil {
			return nil, err
		}
		if removed > 0 {
			db.counts.events.Add(-removed)
			res.Removed += removed
		}
		if done {
			break
		}
	}
	total, err := metaInt(ctx, db.rdb, metaCompactedCount)
	if err != nil {
		return nil, err
	}
	res.RemovedTotal = total
	var first sql.NullInt64
	if err := db.rdb.QueryRowContext(ctx, "SELECT min(seq), coalesce(max(seq), 0) FROM events").Scan(&first, &res.LastSeq); err != nil {
		return nil, mapErr(err)
	}
	res.FirstSeq = first.Int64
	if res.Removed > 0 {
		db.log.Info("compacted the event log", "through", res.CompactedThrough, "removed", res.Removed, "requested_before_seq", beforeSeq)
	}
	return res, nil
}

// EventsCompactedThrough is the compaction checkpoint: every event with
// seq <= it was removed by CompactEvents (0: none ever was).
func (db *DB) EventsCompactedThrough(ctx context.Context) (int64, error) {
	return metaInt(ctx, db.rdb, metaCompactedThrough)
}
