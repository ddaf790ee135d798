package dirlock_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/dirlock"
)

func TestAcquire(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := dirlock.Acquire(dir, "kurad")
	if err != nil {
		t.Fatalf("got %v, want the lock", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, dirlock.File)); string(b) != strconv.Itoa(os.Getpid())+" kurad\n" {
		t.Errorf("got lock file %q, want the pid and holder", b)
	}

	t.Run("HeldIsRefused", func(t *testing.T) {
		// flock locks belong to the open file, so a second Acquire in the
		// same process is refused just as another process's would be.
		_, err := dirlock.Acquire(dir, "kura restore")
		var held *dirlock.HeldError
		if !errors.As(err, &held) {
			t.Fatalf("got %v, want a *HeldError", err)
		}
		if held.PID != os.Getpid() || held.Holder != "kurad" || held.Dir != dir {
			t.Errorf("got %+v, want pid %d, holder kurad, dir %s", held, os.Getpid(), dir)
		}
		msg := err.Error()
		for _, want := range []string{dir, "kurad (pid " + strconv.Itoa(os.Getpid()) + ")"} {
			if !strings.Contains(msg, want) {
				t.Errorf("got message %q, want it to name %q", msg, want)
			}
		}
	})

	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Errorf("second release: got %v, want nil", err)
	}

	t.Run("ReleasedIsFree", func(t *testing.T) {
		l, err := dirlock.Acquire(dir, "kura restore")
		if err != nil {
			t.Fatalf("got %v, want the lock again after a release", err)
		}
		defer l.Release()
		if b, _ := os.ReadFile(filepath.Join(dir, dirlock.File)); !strings.HasSuffix(string(b), " kura restore\n") {
			t.Errorf("got lock file %q, want the new holder", b)
		}
	})
}

// TestAcquire_StaleFile: the file a dead holder left (a longer note than
// the new one, too) neither blocks nor survives into the new note.
func TestAcquire_StaleFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, dirlock.File)
	if err := os.WriteFile(path, []byte("2147483647 some long holder name\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := dirlock.Acquire(dir, "x")
	if err != nil {
		t.Fatalf("got %v, want a stale lock file taken over", err)
	}
	defer l.Release()
	if b, _ := os.ReadFile(path); string(b) != strconv.Itoa(os.Getpid())+" x\n" {
		t.Errorf("got %q, want only the new holder's note", b)
	}
}

func TestHeldError_Message(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  dirlock.HeldError
		want string
	}{
		{dirlock.HeldError{Dir: "/d", PID: 7, Holder: "kurad"}, "data directory /d is in use by kurad (pid 7)"},
		{dirlock.HeldError{Dir: "/d", PID: 7}, "data directory /d is in use by another process (pid 7)"},
		{dirlock.HeldError{Dir: "/d"}, "data directory /d is in use by another process;"},
	} {
		if got := tc.err.Error(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("got %q, want it to start with %q", got, tc.want)
		}
	}
}

// TestAcquire_RelativeDir: the message names the directory absolute, so
// that "data" says which one.
func TestAcquire_RelativeDir(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("data", 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := dirlock.Acquire("data", "kurad")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	_, err = dirlock.Acquire("data", "kurad")
	var held *dirlock.HeldError
	if !errors.As(err, &held) || held.Dir != filepath.Join(dir, "data") {
		t.Errorf("got %v, want a *HeldError naming %s", err, filepath.Join(dir, "data"))
	}
}

func TestAcquire_MissingDir(t *testing.T) {
	t.Parallel()
	if _, err := dirlock.Acquire(filepath.Join(t.TempDir(), "nope"), "kurad"); err == nil {
		t.Fatal("got nil, want an error for a directory that does not exist")
	}
}

// TestAcquireFile: a file is held whatever path reaches it (a symlink, a
// hard link), and the refusal names its real path, the holder's pid and
// the directory the holder holds.
func TestAcquireFile(t *testing.T) {
	t.Parallel()
	dirA, dirB, dirC := t.TempDir(), t.TempDir(), t.TempDir()
	db := filepath.Join(dirA, "kura.db")
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(db, filepath.Join(dirB, "kura.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(db, filepath.Join(dirC, "kura.db")); err != nil {
		t.Fatal(err)
	}
	dl, err := dirlock.Acquire(dirA, "kurad")
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Release()
	fl, err := dirlock.AcquireFile(db, "kurad")
	if err != nil {
		t.Fatalf("got %v, want the file", err)
	}
	for _, other := range []string{db, filepath.Join(dirB, "kura.db"), filepath.Join(dirC, "kura.db")} {
		_, err := dirlock.AcquireFile(other, "kurad")
		var held *dirlock.HeldError
		if !errors.As(err, &held) {
			t.Fatalf("%s: got %v, want a *HeldError", other, err)
		}
		if held.PID != os.Getpid() || held.Dir != dirA || held.Holder != "kurad" {
			t.Errorf("%s: got %+v, want pid %d, dir %s, holder kurad", other, held, os.Getpid(), dirA)
		}
		if other != filepath.Join(dirC, "kura.db") && held.File != db {
			t.Errorf("%s: got file %s, want the real path %s", other, held.File, db)
		}
		if msg := err.Error(); !strings.Contains(msg, "kurad (pid "+strconv.Itoa(os.Getpid())+") with data directory "+dirA) {
			t.Errorf("got message %q, want the holder and its directory", msg)
		}
	}
	if err := fl.Release(); err != nil {
		t.Fatal(err)
	}
	l, err := dirlock.AcquireFile(filepath.Join(dirB, "kura.db"), "kurad")
	if err != nil {
		t.Fatalf("got %v, want the file again after a release", err)
	}
	l.Release()
}
