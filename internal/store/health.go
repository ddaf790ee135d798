package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Startup checks (Config.StartupCheck).
const (
	StartupCheckQuick = "quick" // PRAGMA quick_check: every page and b-tree, not index contents
	StartupCheckFull  = "full"  // PRAGMA integrity_check: quick_check plus index consistency
	StartupCheckOff   = "off"
)

// lowSpaceBytes is the free space under which an I/O error from SQLite is
// taken for a full disk: SQLite reports ENOSPC as SQLITE_FULL only from
// write(); when ftruncate, fallocate or the shared-memory file hits it, the
// code is SQLITE_IOERR.
const lowSpaceBytes = 1 << 20

// errStorageFull is what a write answers when the disk (or the configured
// page limit) has no room left. Reads keep working.
func errStorageFull() error {
	return &kura.Error{Code: kura.EStorageFull, Message: "the disk is full; writes are refused until space is freed", Cause: kura.ErrStorage}
}

// writeErr maps the error of a failed write and remembers storage trouble
// for /readyz until a later commit succeeds.
func (db *DB) writeErr(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_IOERR && db.lowOnSpace() {
		err = errStorageFull()
	} else {
		err = mapErr(err)
	}
	if isStorageErr(err) {
		msg := kura.ErrorMessage(err)
		db.storageTrouble.Store(&msg)
	}
	return err
}

// isStorageErr tells a failure of the storage itself (full or failing
// disk) from a failure of one request; after one the transaction may have
// been rolled back by SQLite, so the whole batch fails with it.
func isStorageErr(err error) bool {
	return errors.Is(err, kura.ErrStorage) || kura.IsCode(err, kura.EStorageFull)
}

// lowOnSpace reports whether the filesystem holding the database has less
// than lowSpaceBytes left for kurad.
func (db *DB) lowOnSpace() bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(db.cfg.Path), &st); err != nil {
		return false
	}
	return uint64(st.Bavail)*uint64(st.Bsize) < lowSpaceBytes
}

// StorageHealth is "" while writes commit, else why the last write failed
// at the storage (disk full, I/O error). It clears at the next commit, so
// /readyz reports trouble exactly while writes are being refused.
func (db *DB) StorageHealth() string {
	if p := db.storageTrouble.Load(); p != nil {
		return *p
	}
	return ""
}

// writerStallAfter is how long one group transaction may take before the
// writer counts as stalled: a batch commits in milliseconds, so this long
// means the database is not answering (a disk that hangs, a PostgreSQL
// primary whose commits wait for a synchronous standby that is gone).
const writerStallAfter = 10 * time.Second

// WriterHealth is "" unless the writer's current transaction has run
// longer than writerStallAfter; then it says for how long. Every write
// waits behind it, so /readyz reports kurad not ready.
func (db *DB) WriterHealth() string {
	t := db.txStart.Load()
	if t == 0 {
		return ""
	}
	after := writerStallAfter
	if db.stallAfter > 0 {
		after = db.stallAfter // a test's
	}
	if d := time.Since(time.Unix(0, t)); d > after {
		return fmt.Sprintf("a transaction has waited %s for the database", d.Round(time.Second))
	}
	return ""
}

// withSmallCache runs f, which reads the whole database through the
// writer's connection, with the connection's page cache cut to
// checkCacheKiB: through the writer's full cache such a read left kurad
// idling at twice its usual memory.
func (db *DB) withSmallCache(ctx context.Context, f func() error) error {
	if _, err := db.wdb.ExecContext(ctx, "PRAGMA cache_size(-"+strconv.Itoa(checkCacheKiB)+")"); err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	if err := f(); err != nil {
		return err
	}
	if _, err := db.wdb.ExecContext(ctx, "PRAGMA cache_size(-"+strconv.Itoa(writerCacheKiB)+")"); err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	return nil
}

// The page caches of the writer's connection, in KiB: while it reads the
// whole database at start, and after.
const (
	checkCacheKiB  = 512
	writerCacheKiB = 20000
)

// startupCheck runs SQLite's own consistency check on c, so a database
// damaged while kurad was down (a bad SD card, a torn copy) is reported at
// start instead of answering with wrong data later (startcheck.go). It
// reads every page: about a second per few hundred MB on a Pi's SD card;
// "off" skips it for huge databases.
func startupCheck(ctx context.Context, c *sql.DB, mode, op string) error {
	var q string
	switch mode {
	case StartupCheckOff:
		return nil
	case StartupCheckFull:
		q = "PRAGMA integrity_check(20)"
	case StartupCheckQuick, "":
		mode = StartupCheckQuick
		q = "PRAGMA quick_check(20)"
	default:
		return fmt.Errorf("%s: startup check must be quick, full or off, not %q", op, mode)
	}
	rows, err := c.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("%s: the database failed its %s check: %w; restore it from a backup (docs/durability.md)", op, mode, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return fmt.Errorf("%s: %s check: %w", op, mode, err)
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: the database failed its %s check: %w; restore it from a backup (docs/durability.md)", op, mode, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: the database is damaged (%s check): %s; kurad will not serve it: restore it from a backup, or start with --startup-check=off to read out what is left (docs/durability.md)",
			op, mode, strings.Join(problems, "; "))
	}
	return nil
}

// SetMaxPages caps the database at n pages (PRAGMA max_page_count on the
// write connection) and returns the cap in force: SQLite then refuses to
// grow the file with SQLITE_FULL, exactly as on a full disk. A cap below the
// current size is raised to it by SQLite. Tests use it to fill the storage
// without filling the machine's disk.
func (db *DB) SetMaxPages(ctx context.Context, n int64) (int64, error) {
	var got int64
	err := db.Update(ctx, func(tx *Tx) error {
		return tx.tx.QueryRowContext(tx.ctx, fmt.Sprintf("PRAGMA max_page_count = %d", n)).Scan(&got)
	})
	return got, err
}

// PageCount is the database's size in pages, as the writer sees it.
func (db *DB) PageCount(ctx context.Context) (int64, error) {
	var n int64
	err := db.rdb.QueryRowContext(ctx, "PRAGMA page_count").Scan(&n)
	return n, mapErr(err)
}

// walTruncateFrames is the WAL length (frames, 4 KiB each by default) past
// which the writer restarts it. The checkpointer's PASSIVE checkpoints
// copy frames back but cannot restart the log while commits keep coming:
// a new frame always lands before the last one is copied, so under
// sustained writes the WAL would grow without end (a soak run showed 1 GB
// in 35 s).
const walTruncateFrames = 2 * walKickPages

// truncateWAL runs between two batches, when the writer holds no
// transaction: a RESTART checkpoint then only copies the few frames the
// checkpointer has not and waits briefly for readers to leave the WAL, so
// that the next commit writes from the start of the file again; the file
// is cut back to the bound (journal_size_limit), not to zero, since
// commits that overwrite allocated space sync faster than commits that
// grow the file. Writes wait for it (milliseconds); a
// long reader (a backup, a large verify) makes it give up after
// walTruncateWait and try again a second (WALTruncateRetry) later, rather
// than stall writes.
func (db *DB) truncateWAL() {
	if db.walLog.Load() < int64(db.cfg.WALTruncateFrames) || time.Now().Before(db.walRetryAt) {
		return
	}
	// The checkpointer's PASSIVE run would make SQLite refuse this one at
	// once; try again after the next batch.
	if !db.ckptMu.TryLock() {
		return
	}
	defer db.ckptMu.Unlock()
	ctx := context.Background()
	if _, err := db.wdb.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", walTruncateWait.Milliseconds())); err != nil {
		db.walRetryAt = time.Now().Add(db.cfg.WALTruncateRetry)
		return
	}
	var busy, logFrames, done int
	err := db.wdb.QueryRowContext(ctx, "PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &logFrames, &done)
	db.wdb.ExecContext(ctx, "PRAGMA busy_timeout = 10000")
	if err != nil || busy != 0 {
		db.walRetryAt = time.Now().Add(db.cfg.WALTruncateRetry)
		db.log.Debug("WAL truncation postponed", "busy", busy, "err", err)
		return
	}
	db.walLog.Store(0)
	db.walFrames.Store(0)
}

// walTruncateWait bounds how long writes wait for readers to leave the WAL.
const walTruncateWait = 200 * time.Millisecond
