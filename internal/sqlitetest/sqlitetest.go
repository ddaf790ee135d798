// Package sqlitetest gives tests a SQLite database file with the schema
// already in place: store.Migrate runs once per test binary and every
// caller gets a copy. Under the race detector the migrations are about
// half the cost of opening a new store, and the tests open a few hundred;
// a store opening the copy finds nothing to migrate, as at any restart.
// Tests of the migrations themselves, and of a new file's creation and
// modes, open fresh paths instead.
package sqlitetest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kura-memory/kura/internal/store"
)

var migrated struct {
	once sync.Once
	b    []byte
	err  error
}

// CopyMigrated writes a migrated database to path (mode 0600, as kurad
// makes its own).
func CopyMigrated(tb testing.TB, path string) {
	tb.Helper()
	migrated.once.Do(func() {
		dir, err := os.MkdirTemp("", "kura-migrated-")
		if err != nil {
			migrated.err = err
			return
		}
		defer os.RemoveAll(dir)
		p := filepath.Join(dir, "kura.db")
		if migrated.err = store.Migrate(context.Background(), p); migrated.err == nil {
			migrated.b, migrated.err = os.ReadFile(p)
		}
	})
	if migrated.err != nil {
		tb.Fatalf("migrate a database to copy: %v", migrated.err)
	}
	if err := os.WriteFile(path, migrated.b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// File returns the path of a migrated copy in a new tb.TempDir.
func File(tb testing.TB) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "kura.db")
	CopyMigrated(tb, p)
	return p
}
