package reliability_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

var kuradBin string

// TestMain builds the real kurad once per test binary (the Go build cache
// makes a rebuild of an unchanged tree cheap); every test runs it as a
// separate process so that SIGKILL, a full disk and a damaged file hit the
// shipped program.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kura-reliability")
	if err != nil {
		panic(err)
	}
	kuradBin = filepath.Join(dir, "kurad")
	cmd := exec.Command("go", "build", "-o", kuradBin, "github.com/kura-memory/kura/cmd/kurad")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build kurad:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is one running kurad.
type proc struct {
	cmd  *exec.Cmd
	base string
	nats string
	log  *syncBuffer
	done chan struct{}
	err  error
}

// launch starts kurad on dataDir without waiting for it.
func launch(t testing.TB, dataDir string, extra ...string) *proc {
	t.Helper()
	os.Remove(filepath.Join(dataDir, "kurad.addr"))
	args := append([]string{"--data-dir", dataDir, "--http-addr", "127.0.0.1:0", "--nats-addr", "127.0.0.1:0", "--log-level", "warn"}, extra...)
	cmd := exec.Command(kuradBin, args...)
	p := &proc{cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	return p
}

// start runs kurad on dataDir and waits until /readyz answers 200.
func start(t testing.TB, dataDir string, extra ...string) *proc {
	t.Helper()
	p := launch(t, dataDir, extra...)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dataDir, "kurad.addr")); err == nil {
			var a struct{ HTTP, NATS string }
			if json.Unmarshal(b, &a) == nil && a.HTTP != "" {
				p.base, p.nats = "http://"+a.HTTP, a.NATS
				if resp, err := http.Get(p.base + "/readyz"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						return p
					}
				}
			}
		}
		select {
		case <-p.done:
			t.Fatalf("kurad exited during start: %v\n%s", p.err, p.log)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("kurad not ready within 30s\n%s", p.log)
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill(t testing.TB) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.waitExit(t, 10*time.Second)
}

// stop asks for a graceful shutdown and waits for it.
func (p *proc) stop(t testing.TB) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.waitExit(t, 30*time.Second); code != 0 {
		t.Fatalf("kurad exited %d on SIGTERM\n%s", code, p.log)
	}
}

func (p *proc) waitExit(t testing.TB, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("kurad did not exit within %s\n%s", d, p.log)
		return -1
	}
}

// syncBuffer collects the child's output, written from exec's goroutine.
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

// client is a correct API client: short timeouts, keep-alive.
var client = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// call sends a JSON request and decodes a JSON answer into out (when not
// nil). It returns the status, 0 when no answer came.
func call(ctx context.Context, method, url string, body any, out any) (int, []byte, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, raw, fmt.Errorf("decode %s %s: %w: %s", method, url, err, raw)
		}
	}
	return resp.StatusCode, raw, nil
}

// mustCall is call for steps that must succeed with want.
func mustCall(t testing.TB, method, url string, body any, want int, out any) []byte {
	t.Helper()
	code, raw, err := call(context.Background(), method, url, body, out)
	if err != nil || code != want {
		t.Fatalf("%s %s: %d %v (want %d): %s", method, url, code, err, want, raw)
	}
	return raw
}

// openRO opens the database file read-only, as an operator's sqlite3
// would, to see what is on disk.
func openRO(t testing.TB, dataDir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "kura.db")+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// integrityCheck runs PRAGMA integrity_check (the full one, indexes too).
func integrityCheck(t testing.TB, db *sql.DB) {
	t.Helper()
	rows, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	if len(out) != 1 || out[0] != "ok" {
		t.Fatalf("integrity_check: %v", out)
	}
}

// metric reads one unlabelled series from /metrics.
func metric(base, name string) (float64, error) {
	_, raw, err := call(context.Background(), "GET", base+"/metrics", nil, nil)
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 2 && string(f[0]) == name {
			return strconv.ParseFloat(string(f[1]), 64)
		}
	}
	return 0, fmt.Errorf("metric %s not found", name)
}

// percentile is the nearest-rank percentile of ds (sorted in place).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(float64(len(ds))*p+0.999999) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// envInt reads a positive integer override from the environment.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
