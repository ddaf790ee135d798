package kuradtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/testwait"
)

// BuildKurad builds the real kurad binary, for a TestMain that runs it as
// a separate process (so that SIGKILL, SIGTERM, a full disk and a damaged
// file hit the shipped program). See Build: the binary is shared.
func BuildKurad() (string, error) { return Build("github.com/kura-memory/kura/cmd/kurad") }

// Build builds the command pkg (an import path) with `go build` into one
// directory that every test binary of this user and tree shares, and returns its
// path. go build links again only when the program is out of date, so the
// packages that run kurad or kura as processes link each once per change,
// not once per package and test (three seconds of two cores each). The
// directory is this source tree's (another checkout builds its own); a
// lock file serialises the packages go test runs at the same time; go
// build replaces an out-of-date file by a new one, so a process still
// running the old one is not disturbed.
func Build(pkg string) (string, error) {
	dir, err := sharedBinDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close() // closing drops the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// sharedBinDir is the directory Build writes to: one per source tree
// (named after where this file was compiled from) in the user's cache
// directory, beside Go's build cache, where no other user can put a
// program of theirs. A tree built with -trimpath, or a user without a
// cache directory, gets a temporary directory per test binary instead.
func sharedBinDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	cache, err := os.UserCacheDir()
	if !ok || !filepath.IsAbs(file) || err != nil {
		return os.MkdirTemp("", "kura-test-bin")
	}
	sum := sha256.Sum256([]byte(filepath.Dir(file)))
	dir := filepath.Join(cache, "kura-test-bin", fmt.Sprintf("%x", sum[:6]))
	return dir, os.MkdirAll(dir, 0o700)
}

// Proc is one running kurad process.
type Proc struct {
	Cmd  *exec.Cmd
	Base string // http://host:port, once ready
	NATS string // host:port of its NATS server, once ready
	Log  *SyncBuffer

	done chan struct{} // closed when the process has exited
	err  error
}

// Launch starts bin on dataDir, with ports picked by the OS and env added
// to this process's environment, without waiting for it. The process is
// killed when the test ends.
func Launch(tb testing.TB, bin, dataDir string, env []string, extra ...string) *Proc {
	tb.Helper()
	os.Remove(filepath.Join(dataDir, "kurad.addr"))
	args := append([]string{"--data-dir", dataDir, "--http-addr", "127.0.0.1:0", "--nats-addr", "127.0.0.1:0", "--log-level", "warn"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	p := &Proc{Cmd: cmd, Log: &SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.Log, p.Log
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	tb.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	return p
}

// StartBinary launches bin and waits until its /readyz answers 200.
func StartBinary(tb testing.TB, bin, dataDir string, env []string, extra ...string) *Proc {
	tb.Helper()
	p := Launch(tb, bin, dataDir, env, extra...)
	p.WaitReady(tb, dataDir, 30*time.Second)
	return p
}

// WaitReady waits for kurad.addr in dataDir and a 200 from /readyz, and
// fails the test if the process exits first or d passes.
func (p *Proc) WaitReady(tb testing.TB, dataDir string, d time.Duration) {
	tb.Helper()
	ready := testwait.Until(d, func() bool {
		select {
		case <-p.done:
			tb.Fatalf("kurad exited during start: %v\n%s", p.err, p.Log)
		default:
		}
		b, err := os.ReadFile(filepath.Join(dataDir, "kurad.addr"))
		if err != nil {
			return false
		}
		var a struct{ HTTP, NATS string }
		if json.Unmarshal(b, &a) != nil || a.HTTP == "" {
			return false
		}
		p.Base, p.NATS = "http://"+a.HTTP, a.NATS
		resp, err := http.Get(p.Base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if ready {
		return
	}
	tb.Fatalf("kurad not ready within %s\n%s", d, p.Log)
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is what waiting for the process returned, once Done is closed.
func (p *Proc) Err() error { return p.err }

// Wait waits up to d for the process to exit and returns its exit code.
func (p *Proc) Wait(tb testing.TB, d time.Duration) int {
	tb.Helper()
	select {
	case <-p.done:
		return p.Cmd.ProcessState.ExitCode()
	case <-time.After(d):
		tb.Fatalf("kurad did not exit within %s\n%s", d, p.Log)
		return -1
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill(tb testing.TB) {
	tb.Helper()
	p.Cmd.Process.Signal(syscall.SIGKILL)
	p.Wait(tb, 10*time.Second)
}

// Stop asks for a graceful shutdown and fails the test unless it exits 0.
func (p *Proc) Stop(tb testing.TB) {
	tb.Helper()
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if code := p.Wait(tb, 30*time.Second); code != 0 {
		tb.Fatalf("kurad exited %d on SIGTERM\n%s", code, p.Log)
	}
}

// SyncBuffer collects a child's output: the exec package writes to it from
// its own goroutine while a test may print it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
