package dirlock

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestAcquire_ReleasedWhileAChildHoldsACopy: a process forked by another
// goroutine holds a copy of every descriptor until it executes its
// program; a hold this process released meanwhile is still taken in the
// kernel's eyes. Acquire waits that moment out instead of reporting this
// very process as the holder. The child "executes" (its copy is closed)
// at Acquire's first pause, so the test needs no timing. Not parallel: it
// replaces pause.
func TestAcquire_ReleasedWhileAChildHoldsACopy(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir, "kurad")
	if err != nil {
		t.Fatal(err)
	}
	copyFD, err := syscall.Dup(int(l.f.Fd())) // the child's copy
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	pauses := 0
	pause = func(time.Duration) {
		if pauses++; pauses == 1 {
			syscall.Close(copyFD)
		}
	}
	t.Cleanup(func() { pause = time.Sleep })
	l2, err := Acquire(dir, "kurad")
	if err != nil {
		t.Fatalf("got %v, want the lock once the copy is closed", err)
	}
	defer l2.Release()
	if pauses != 1 {
		t.Errorf("Acquire paused %d times, want 1 (the lock free after the copy closed)", pauses)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, File)); string(b) != strconv.Itoa(os.Getpid())+" kurad\n" {
		t.Errorf("got lock file %q, want this process as holder", b)
	}
}
