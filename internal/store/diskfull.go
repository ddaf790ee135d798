package store

import (
	"errors"
	"fmt"

	"github.com/kura-memory/kura/internal/kura"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// isFull reports whether err is the storage having no room: SQLITE_FULL,
// or an I/O error while the disk is nearly full (lowOnSpace: ENOSPC met in
// ftruncate or the shared memory comes back as SQLITE_IOERR).
func (db *DB) isFull(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL:
		return true
	case sqlite3.SQLITE_IOERR:
		return db.lowOnSpace()
	}
	return false
}

// startFull is the rest of Open on a full disk: kurad serves reads, and
// writes answer 507 as they would had the disk filled while it ran
// (/readyz degraded, StorageHealth naming it) until one commits once space
// is freed. The WAL could not be truncated at start, so a redaction's purge
// left pending by the last run may still be due: it is retried in the
// background until the WAL is truncated.
func (db *DB) startFull() {
	msg := kura.ErrorMessage(errStorageFull())
	db.storageTrouble.Store(&msg)
	db.log.Warn("the disk is full: kurad starts read-only (reads are served, writes answer 507 until space is freed)", "path", db.cfg.Path)
	db.purge.wanted.Add(1)
	db.purgeInBackground()
}

// errNoRoomToRead is why kurad cannot start at all on a full disk: after a
// clean stop SQLite removed the WAL and its index (kura.db-shm), and it
// must create the index again, 32 KiB, before it can read a database in
// WAL mode. A disk filled while kurad ran keeps both, and kurad starts
// read-only instead (startFull).
func errNoRoomToRead(err error) error {
	return fmt.Errorf("open store: the disk is full: SQLite cannot make the WAL index (kura.db-shm, 32 KiB) it needs to read the database; free some space and start kurad again: %w", err)
}
