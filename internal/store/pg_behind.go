package store

import (
	"context"
	"database/sql"

	"github.com/kura-memory/kura/internal/kura"
	"golang.org/x/mod/sumdb/tlog"
)

// A PostgreSQL database can lose commits a kurad has acknowledged: a
// failover to an asynchronous replica that had not received them, or a
// restore of an older copy while the kurads run. A kurad that went on
// writing would number new events with seqs it already gave out
// (subscribers and cursors hold them) and sign a second tree of a size
// it signed before (a fork every witness refuses). So the writer and the
// poller compare what the database holds with what this instance saw, and
// on a shortfall every write is refused, /readyz fails (Ping) and the
// log says why, until the database holds again everything this instance
// saw and its tree extends the one this instance served (the old primary
// back, a newer copy restored); a restart accepts the loss.

// pgBehind is what this instance had seen when the database fell behind.
type pgBehind struct {
	seq  int64     // the newest event
	size int64     // the log's size, and its root (log on)
	root tlog.Hash //
	err  *kura.Error
	fork bool // the database grew again, but with another tree
}

// pgCheckBehind records a shortfall found with the write lock held or by
// the poller: dbSeq and dbSize are what the database holds (dbSize < 0
// when not read), knownSeq what this instance had seen before reading
// them. It returns the error writes now fail with, nil when nothing is
// missing.
func (db *DB) pgCheckBehind(dbSeq, dbSize, knownSeq int64) error {
	head := db.Log()
	logShort := !db.logs.off && dbSize >= 0 && dbSize < head.Size
	if dbSeq >= knownSeq && !logShort {
		return nil
	}
	b := &pgBehind{seq: knownSeq, size: head.Size, root: tlog.Hash(head.Root)}
	until := "until the database holds them again or kurad restarts"
	if db.logs.off {
		until = "until kurad restarts" // nothing shows a database that grew back is the same history
	}
	b.err = kura.Errorf(kura.EUnavailable,
		"the database lost commits this kurad acknowledged: it holds events up to seq %d, this kurad saw up to %d "+
			"(a failover to a replica that had not received them, or an older copy restored); writes are refused "+
			"so that no seq or log size is given out twice, %s (docs/scale-out.md, \"Failover\")", dbSeq, knownSeq, until)
	if db.pg.behind.CompareAndSwap(nil, b) {
		args := []any{"database_seq", dbSeq, "seen_seq", knownSeq}
		if !db.logs.off {
			args = append(args, "database_log_size", dbSize, "seen_log_size", head.Size)
		}
		db.log.Error("the database lost commits this kurad acknowledged; refusing writes", args...)
	}
	return db.pg.behind.Load().err
}

// pgBehindErr is the error writes fail with while the database is behind.
func (db *DB) pgBehindErr() error {
	if db.pg == nil {
		return nil
	}
	if b := db.pg.behind.Load(); b != nil {
		return b.err
	}
	return nil
}

// pgRecheckBehind lifts the refusal once the database holds every event
// this instance saw and its tree at the size this instance served has the
// root it served: the database extends what was shown, and writes may
// continue from it. With the log off nothing proves the events are the
// same ones, so only a restart lifts it.
func (db *DB) pgRecheckBehind(ctx context.Context, dbSeq int64) {
	b := db.pg.behind.Load()
	if b == nil || db.logs.off || dbSeq < b.seq {
		return
	}
	var size int64
	if err := db.rdb.QueryRowContext(ctx, "SELECT coalesce(max(leaf) + 1, 0) FROM log_hashes").Scan(&size); err != nil || size < b.size {
		return
	}
	root := tlog.Hash(emptyTreeHash)
	if b.size > 0 {
		var err error
		if root, err = tlog.TreeHash(b.size, hashReader{ctx: ctx, q: db.rdb}); err != nil {
			return
		}
	}
	if root != b.root {
		if !b.fork {
			f := *b
			f.fork = true
			f.err = kura.Errorf(kura.EUnavailable,
				"the database holds another history than this kurad served: its log's tree of %d leaves, which this "+
					"kurad signed, has another root (commits were lost and others written in their place); writes are "+
					"refused until the database holds what this kurad served again, or kurad restarts (docs/scale-out.md, \"Failover\")", b.size)
			if db.pg.behind.CompareAndSwap(b, &f) {
				db.log.Error("the database holds another history than this kurad served; refusing writes", "size", b.size)
			}
		}
		return
	}
	if db.pg.behind.CompareAndSwap(b, nil) {
		db.log.Info("the database holds again every commit this kurad saw; writes resume", "seq", dbSeq)
	}
}

// pgMaxSeq is the newest event's seq in the database.
func pgMaxSeq(ctx context.Context, q queryer) (int64, error) {
	var seq sql.NullInt64
	err := q.QueryRowContext(ctx, "SELECT max(seq) FROM events").Scan(&seq)
	return seq.Int64, err
}
