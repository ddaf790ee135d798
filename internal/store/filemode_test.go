package store_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/kura-memory/kura/internal/store"
)

// withUmask runs the test under umask mask, restored at its end. The umask
// is the process's: tests using it do not run in parallel.
func withUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// wantModes fails for each of files whose permission bits are not want.
func wantModes(t *testing.T, want os.FileMode, files ...string) {
	t.Helper()
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Errorf("stat %s: %v", filepath.Base(f), err)
			continue
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: got mode %04o, want %04o", filepath.Base(f), got, want)
		}
	}
}

// syncBuffer is a log destination the store's goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStore_FileModes: under the common umask 022, in a data directory
// anyone may enter, the database and its -wal and -shm files are 0600 after
// real writes, as are a backup's files; files left readable by an older
// kurad are made private at start, and the change is logged.
func TestStore_FileModes(t *testing.T) {
	withUmask(t, 0o022)
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	t.Run("NewDatabase", func(t *testing.T) {
		path := filepath.Join(dir, "new", "kura.db")
		if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		db := mustOpenAt(t, path, key)
		mustRecords(t, db, 50)
		// The WAL and its index exist while the store is open.
		wantModes(t, 0o600, path, path+"-wal", path+"-shm")

		bdir := filepath.Join(dir, "new", "backups", "b1")
		if _, err := db.Backup(ctx, bdir); err != nil {
			t.Fatal(err)
		}
		wantModes(t, 0o700, bdir)
		wantModes(t, 0o600, filepath.Join(bdir, store.BackupDatabase), filepath.Join(bdir, store.BackupManifest))
		if err := db.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("LooseFilesTightened", func(t *testing.T) {
		path := filepath.Join(dir, "old", "kura.db")
		if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		db := mustOpenAt(t, path, key)
		mustRecords(t, db, 10)
		if err := db.Close(ctx); err != nil {
			t.Fatal(err)
		}
		// As an older kurad left them: the database 0644, and another
		// connection holding the WAL open, so -wal and -shm exist with the
		// database's mode.
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		raw := rawDB(t, path)
		var n int
		if err := raw.QueryRow("SELECT count(*) FROM records").Scan(&n); err != nil {
			t.Fatal(err)
		}
		wantModes(t, 0o644, path, path+"-wal", path+"-shm") // the test can fail

		var logs syncBuffer
		db = store.New(store.Config{Path: path, Signer: key, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err := db.Open(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close(ctx) })
		mustRecords(t, db, 10)
		wantModes(t, 0o600, path, path+"-wal", path+"-shm")
		for _, name := range []string{"kura.db ", "kura.db-wal", "kura.db-shm"} {
			if !strings.Contains(logs.String(), name) || !strings.Contains(logs.String(), "old_mode=0644") {
				t.Errorf("the log does not name %s tightened from 0644:\n%s", strings.TrimSpace(name), logs.String())
			}
		}
	})
}
