// Package dirlock gives one process at a time a data directory: kurad for
// as long as it runs, kura restore while it installs a backup. Two kurads
// on one directory would each run a writer on the same database and drift
// apart; a restore under a running kurad would swap the database from
// under it. AcquireFile gives one process at a time a file, whatever path
// reaches it: two data directories whose database is one file (a symlink,
// a hard link) are two directories, but must not be two kurads.
//
// The hold is flock(2) on a lock file in the directory (on the file itself
// for AcquireFile). The kernel drops it when the holder's file is closed,
// so a process that dies (SIGKILL, a crash, a power cut) never leaves a
// stale lock behind; the lock file stays, and only says who held it last.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// File is the lock file's name inside the directory. It is never removed:
// deleting it while another process waits to lock it would let two
// processes each hold a lock, on two different files.
const File = "kurad.lock"

// HeldError is returned when another process holds the directory, or the
// file (File set).
type HeldError struct {
	Dir    string // the directory, made absolute; for a file, the directory its holder holds ("" if unknown)
	PID    int    // the holder's process id; 0 if it has not written it yet (or, for a file, is unknown)
	Holder string // what the holder said it is ("kurad", "kura restore"); may be ""
	File   string // the file held, symlinks resolved; "" for a directory
}

func (e *HeldError) Error() string {
	who := e.Holder
	if who == "" {
		who = "another process"
	}
	if e.PID > 0 {
		who = fmt.Sprintf("%s (pid %d)", who, e.PID)
	}
	if e.File != "" {
		if e.Dir != "" {
			who += " with data directory " + e.Dir
		}
		return fmt.Sprintf("database file %s is in use by %s; a database file serves one kurad at a time", e.File, who)
	}
	return fmt.Sprintf("data directory %s is in use by %s; a data directory serves one kurad at a time", e.Dir, who)
}

// Lock is a held directory; Release (or the process's end) lets it go.
type Lock struct {
	f *os.File
}

// Acquire takes dir for this process without waiting, and writes this
// process's pid and holder into the lock file for whoever finds it taken.
// dir must exist. A *HeldError says who holds it.
func Acquire(dir, holder string) (*Lock, error) {
	path := filepath.Join(dir, File)
	// O_CLOEXEC is Go's default: a child process never inherits the hold.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	err = flock(f)
	if errors.Is(err, syscall.EWOULDBLOCK) && ownHold(path) {
		err = retryOwn(f)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			// Absolute, so that "data" in a message says which one.
			if abs, err := filepath.Abs(dir); err == nil {
				dir = abs
			}
			held := &HeldError{Dir: dir}
			held.PID, held.Holder = readHolder(path)
			return nil, held
		}
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	// The lock is ours; the note is only for the message of a process that
	// finds it taken, so a failure to write it is not worth refusing over,
	// but an old holder's pid must not be left to mislead.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+" "+holder+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// ownWait bounds how long Acquire waits for a hold this very process
// released (ownHold).
const ownWait = 500 * time.Millisecond

// pause is time.Sleep; a test acts at the retry's pause instead.
var pause = time.Sleep

// ownHold reports whether the lock file names this process as its last
// holder. The hold may then be one this process has just released whose
// file a child process still has open: a process forked by another
// goroutine holds a copy of every descriptor until it executes its
// program, which closes them. A kurad restarted in the same process
// (tests do it) met that moment as "in use by kurad (pid <its own>)".
func ownHold(path string) bool {
	pid, _ := readHolder(path)
	return pid == os.Getpid()
}

// retryOwn takes the lock once the copies of a released hold are gone,
// waiting at most ownWait; a hold this process still has (a second kurad on
// the same directory) stays an EWOULDBLOCK.
func retryOwn(f *os.File) error {
	deadline := time.Now().Add(ownWait)
	for {
		pause(5 * time.Millisecond)
		err := flock(f)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
	}
}

// flock takes an exclusive lock without blocking, retrying on EINTR (the
// Go runtime's own signals may interrupt the call).
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// readHolder parses "<pid> <holder>" from the lock file; zero values when
// the holder has not written it yet.
func readHolder(path string) (int, string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, ""
	}
	pid, holder, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return 0, ""
	}
	return n, strings.TrimSpace(holder)
}

// Release lets the directory go. Safe to call twice and on nil. The lock
// file stays, holding the last holder's note.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	// Closing the only descriptor releases the lock.
	if err := f.Close(); err != nil {
		return fmt.Errorf("unlock data directory: %w", err)
	}
	return nil
}
