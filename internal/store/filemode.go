package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// dbFileMode is the mode of the database and its -wal and -shm files: they
// hold every record's content, so only kurad's user may read them.
const dbFileMode fs.FileMode = 0o600

// dbFiles are the files SQLite keeps for a database in WAL mode.
func dbFiles(path string) []string {
	return []string{path, path + "-wal", path + "-shm"}
}

// securePermissions makes the database files private before SQLite opens
// them. A missing database file is created 0600 here, whatever the umask
// and the directory's mode: SQLite creates the -wal and -shm files with
// the mode of the database file, so creating it first is what keeps all
// three private. Files already there that group or others may use (an
// older kurad created them 0644 under umask 022, a restore by hand, a
// copy) are tightened to 0600 and the change is logged. A file kurad may
// not tighten (not its owner) stops the start: serving from a database
// others can read would leak everything it holds.
func securePermissions(path string, log *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, dbFileMode)
	switch {
	case err == nil:
		// The umask only removes bits, but set the mode exactly anyway.
		err = f.Chmod(dbFileMode)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("create database file: %w", err)
		}
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("create database file: %w", err)
	}
	for _, name := range dbFiles(path) {
		st, err := os.Stat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("check the mode of %s: %w", name, err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", name)
		}
		old := st.Mode().Perm()
		if old&0o077 == 0 {
			continue
		}
		if err := os.Chmod(name, dbFileMode); err != nil {
			return fmt.Errorf("%s has mode %04o, readable beyond kurad's user, and cannot be made private: %w; chmod 600 it", name, old, err)
		}
		log.Warn("database file was readable beyond kurad's user; made it private", "file", name, "old_mode", fmt.Sprintf("%04o", old), "new_mode", fmt.Sprintf("%04o", dbFileMode))
	}
	return nil
}
