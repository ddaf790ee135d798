package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// checkSchemaVersion reads PRAGMA user_version through a read-only
// connection, so that a newer database is refused before anything writes.
func checkSchemaVersion(ctx context.Context, path string) error {
	c, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	defer c.Close()
	var v int
	if err := c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		// A missing file cannot be opened read-only: it is a new database.
		var se *sqlite.Error
		if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CANTOPEN {
			return nil
		}
		return fmt.Errorf("check schema: %w", err)
	}
	if v > SchemaVersion {
		return fmt.Errorf("open store: database schema version %d is newer than this kurad supports (%d); refusing to open it", v, SchemaVersion)
	}
	return nil
}

func (db *DB) migrate(ctx context.Context) error {
	var v int
	if err := db.wdb.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if v > SchemaVersion {
		return fmt.Errorf("migrate: database schema version %d is newer than this kurad supports (%d)", v, SchemaVersion)
	}
	return db.applyMigrations(ctx, migrationFS, "migrations/*.sql", v, func(tx *sql.Tx, ver int) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO meta(key, value) VALUES('schema_version', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", strconv.Itoa(ver)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(ver))
		return err
	}, "file", filepath.Base(db.cfg.Path))
}

// Migrate creates the SQLite database at path, or brings it up to
// SchemaVersion, and closes it: the migrations Open runs first, and nothing
// else (no log origin, no key, no writer). The tests' helpers migrate one
// file this way and copy it for every store they open: under the race
// detector the migrations are about half the cost of opening a new store.
func Migrate(ctx context.Context, path string) error {
	db := New(Config{Path: path})
	if err := securePermissions(path, db.log); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := checkSchemaVersion(ctx, path); err != nil {
		return err
	}
	wdb, err := sql.Open("sqlite", dsn(path, roleWrite, "FULL"))
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer wdb.Close()
	wdb.SetMaxOpenConns(1)
	db.wdb = wdb
	if err := db.migrate(ctx); err != nil {
		return err
	}
	if _, err := wdb.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("migrate: checkpoint: %w", err)
	}
	return wdb.Close()
}

// applyMigrations runs the embedded migrations (glob, in name order) past
// version from, each in a transaction of its own with stamp, which records
// its version number there; logged with the attrs naming the database.
func (db *DB) applyMigrations(ctx context.Context, fsys embed.FS, glob string, from int, stamp func(tx *sql.Tx, ver int) error, attrs ...any) error {
	names, err := fs.Glob(fsys, glob)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	sort.Strings(names)
	for i, name := range names {
		ver := i + 1
		if ver <= from {
			continue
		}
		body, err := fsys.ReadFile(name)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		tx, err := db.wdb.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		if err := stamp(tx, ver); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		db.log.Info("migrated database", append(attrs, "schema_version", ver)...)
	}
	return nil
}
