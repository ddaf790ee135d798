package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Bounds of the kurad lifecycle. Generous, because a cold start on a busy
// 2-core box can be slow, but finite, so a broken kurad ends the run.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 20 * time.Second
)

// moduleRoot finds the directory of go.mod, so the bench runs the same from
// the repository root (make bench) or from bench/.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the kura module: run from the repository")
	}
	return filepath.Dir(mod), nil
}

// prepareKurad returns the binary to run: -kurad as given, or a fresh build
// of ./cmd/kurad (built once, so no phase pays for compilation).
func (b *bench) prepareKurad(ctx context.Context) (string, error) {
	if b.cfg.kuradBin != "" {
		p, err := filepath.Abs(b.cfg.kuradBin)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("kurad binary: %w", err)
		}
		return p, nil
	}
	bin := filepath.Join(b.tmp, "kurad")
	fmt.Fprintln(os.Stderr, "== building ./cmd/kurad")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kurad")
	cmd.Dir = b.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kurad: %w\n%s", err, out)
	}
	return bin, nil
}

// kuradProc is one running kurad on its own data directory.
type kuradProc struct {
	cmd     *exec.Cmd
	dataDir string
	logPath string
	base    string // http://host:port
	nats    string
	// pg is the postmaster of the PostgreSQL server kurad stores in (0:
	// SQLite); its meter counts that server's CPU too.
	pg int
	// cpu is the cgroup holding it to a CPU budget (nil: none).
	cpu     *cpuGroup
	exited  chan struct{}
	waitErr error
}

// startKurad starts kurad on a fresh data dir named after the phase, waits
// for <data-dir>/kurad.addr and then for /readyz. extra flags are appended
// (e.g. --max-body-bytes).
func (b *bench) startKurad(ctx context.Context, name string, extra ...string) (*kuradProc, error) {
	dataDir := filepath.Join(b.tmp, "data-"+name)
	if err := os.RemoveAll(dataDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	return b.startKuradDir(ctx, dataDir, dataDir+".log", append(extra, b.kuradArgs...)...)
}

// startKuradDir starts kurad on dataDir as it is: the memory phases fill a
// data dir through the store first (see memdata.go), then measure kurad on
// it. The log goes to logPath.
func (b *bench) startKuradDir(ctx context.Context, dataDir, logPath string, extra ...string) (*kuradProc, error) {
	return b.startKuradEnv(ctx, dataDir, logPath, nil, extra...)
}

// embedderEnv are the variables that give kurad an embeddings endpoint.
// kurad's environment never carries them from the bench's own (kuradEnv):
// a shell that happens to set KURA_EMBEDDER_URL would otherwise have every
// phase's kurad embedding in the background, and the ingest and latency
// figures would measure that too. Only the phases that measure embeddings
// set them, pointing at an endpoint the bench runs (embedder.go).
var embedderEnv = []string{"KURA_EMBEDDER_URL", "KURA_EMBEDDER_MODEL", "KURA_EMBEDDER_TOKEN"}

// storeEnv choose where kurad keeps its data and with which key; they are
// not inherited either, or a shell with KURA_DATABASE_URL set would run
// every SQLite phase on PostgreSQL. The PostgreSQL phases set them (pg.go).
var storeEnv = []string{"KURA_DATABASE_URL", "KURA_KEY_FILE", "KURA_NATS_ROUTES", "KURA_NATS_CLUSTER_ADDR"}

// kuradEnv is the bench's environment without embedderEnv and storeEnv,
// plus env.
func kuradEnv(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(embedderEnv, name) && !slices.Contains(storeEnv, name) {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

// startKuradEnv is startKuradDir with env (NAME=value) added to kurad's
// environment.
func (b *bench) startKuradEnv(ctx context.Context, dataDir, logPath string, env []string, extra ...string) (*kuradProc, error) {
	// The log sits beside the data dir, not in it, so kurad finds exactly
	// the directory a first start (or the store build) left.
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--data-dir", dataDir, "--http-addr", "127.0.0.1:0", "--nats-addr", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(b.kurad, args...)
	cmd.Env = kuradEnv(env)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C on the terminal reaches the bench,
	// which then stops kurad with SIGTERM like any other end of a phase.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start kurad: %w", err)
	}
	k := &kuradProc{cmd: cmd, dataDir: dataDir, logPath: logPath, exited: make(chan struct{})}
	go func() {
		k.waitErr = cmd.Wait()
		logf.Close()
		close(k.exited)
	}()
	if err := k.waitReady(ctx, b.client); err != nil {
		_ = k.stop()
		return nil, fmt.Errorf("%w\nkurad %s\nlog tail (%s):\n%s", err, strings.Join(args, " "), logPath, tail(logPath, 2048))
	}
	b.logf("kurad pid %d on %s (data %s)", cmd.Process.Pid, k.base, dataDir)
	if b.info == nil {
		var info map[string]any
		if st, body, err := b.do(ctx, http.MethodGet, k.base+"/v1/info", nil); err == nil && st == http.StatusOK {
			if json.Unmarshal(body, &info) == nil {
				b.info = info
			}
		}
	}
	return k, nil
}

func (k *kuradProc) pid() int { return k.cmd.Process.Pid }

// meter starts measuring the CPU of the bench, kurad and its PostgreSQL.
func (k *kuradProc) meter() *cpuMeter { return startCPUOf(k.pg, k.pid()) }

// waitReady polls for kurad.addr, then for GET /readyz = 200.
func (k *kuradProc) waitReady(ctx context.Context, c *http.Client) error {
	deadline := time.Now().Add(startTimeout)
	addrFile := filepath.Join(k.dataDir, "kurad.addr")
	for {
		b, err := os.ReadFile(addrFile)
		if err == nil {
			var a struct{ HTTP, NATS string }
			// A half-written file fails to parse; the next poll reads it whole.
			if json.Unmarshal(b, &a) == nil && a.HTTP != "" {
				if err := loopbackOnly(a.HTTP); err != nil {
					return fmt.Errorf("kurad.addr: %w", err)
				}
				k.base, k.nats = "http://"+a.HTTP, a.NATS
				break
			}
		}
		if err := k.pause(ctx, deadline, "kurad.addr"); err != nil {
			return err
		}
	}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, k.base+"/readyz", nil)
		resp, err := c.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err := k.pause(ctx, deadline, "GET /readyz 200"); err != nil {
			return err
		}
	}
}

// pause waits one poll interval, failing when kurad died, the deadline
// passed or the run was interrupted.
func (k *kuradProc) pause(ctx context.Context, deadline time.Time, what string) error {
	if time.Now().After(deadline) {
		return fmt.Errorf("kurad: no %s within %s", what, startTimeout)
	}
	select {
	case <-k.exited:
		return fmt.Errorf("kurad exited before %s: %v", what, k.waitErr)
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(25 * time.Millisecond):
		return nil
	}
}

// stop sends SIGTERM and waits; SIGKILL if kurad does not exit in time. An
// error means kurad did not shut down cleanly, which is worth reporting.
func (k *kuradProc) stop() error {
	select {
	case <-k.exited:
		return fmt.Errorf("kurad had already exited: %v", k.waitErr)
	default:
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.exited:
		if k.waitErr != nil {
			return fmt.Errorf("kurad exit on SIGTERM: %v", k.waitErr)
		}
		return nil
	case <-time.After(stopTimeout):
	}
	_ = k.cmd.Process.Kill()
	select {
	case <-k.exited:
	case <-time.After(5 * time.Second):
	}
	return fmt.Errorf("kurad did not exit within %s of SIGTERM; killed", stopTimeout)
}

// alive reports whether kurad is still running; a phase checks it before
// blaming kurad's answers.
func (k *kuradProc) alive() error {
	select {
	case <-k.exited:
		return fmt.Errorf("kurad exited: %v (log %s)", k.waitErr, k.logPath)
	default:
		return nil
	}
}

func loopbackOnly(hostport string) error {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return err
	}
	ip := net.ParseIP(h)
	if h == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("%s is not a loopback address; the bench only talks to 127.0.0.1", hostport)
}

func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	off := max(st.Size()-n, 0)
	b := make([]byte, st.Size()-off)
	_, _ = f.ReadAt(b, off)
	return string(b)
}

// do sends one request and returns the status and whole body.
func (b *bench) do(ctx context.Context, method, url string, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return 0, nil, err
	}
	// A write says JSON even without a body: kurad refuses any other.
	if body != nil || method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	return resp.StatusCode, rb, err
}

// httpError describes a non-2xx answer, keeping the body short.
func httpError(what string, status int, body []byte) error {
	s := string(body)
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return fmt.Errorf("%s: HTTP %d: %s", what, status, s)
}

// serverCounters scrapes kurad's /metrics for its writer and store
// counters (series named kura_writer_* or kura_store_*), so a run can report
// how kurad's group commit behaved (e.g. jobs per transaction) without the
// bench knowing every metric by name. A kurad without such series, or
// without /metrics, yields an empty map.
func (b *bench) serverCounters(ctx context.Context, k *kuradProc) map[string]float64 {
	st, body, err := b.do(ctx, http.MethodGet, k.base+"/metrics", nil)
	out := map[string]float64{}
	if err != nil || st != http.StatusOK {
		return out
	}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "kura_writer_") && !strings.HasPrefix(line, "kura_store_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}

// counterDelta is after − before for every series in after.
func counterDelta(before, after map[string]float64) map[string]float64 {
	if len(after) == 0 {
		return nil
	}
	d := make(map[string]float64, len(after))
	for k, v := range after {
		d[k] = round(v - before[k])
	}
	return d
}
