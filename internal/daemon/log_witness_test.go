package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// standInWitness serves checkpoints it was handed, as a witness's
// /v1/witness/checkpoints does: kurad's own judgement is what is tested
// here (the real witness has its tests in internal/witness and the attack
// suite).
type standInWitness struct {
	mu  sync.Mutex
	cps map[string]string // origin -> checkpoint text
}

func (w *standInWitness) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	type entry struct {
		Origin     string `json:"origin"`
		Size       int64  `json:"size"`
		Checkpoint string `json:"checkpoint"`
	}
	out := struct {
		Witness     string  `json:"witness"`
		Checkpoints []entry `json:"checkpoints"`
	}{Witness: "stand-in"}
	for o, c := range w.cps {
		var size int64
		fmt.Sscan(strings.Split(c, "\n")[1], &size)
		out.Checkpoints = append(out.Checkpoints, entry{o, size, c})
	}
	json.NewEncoder(rw).Encode(out)
}

func (w *standInWitness) hold(cp string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cps[strings.SplitN(cp, "\n", 2)[0]] = cp
}

// runAt starts kurad on dir with the key outside it.
func runAt(t *testing.T, dir, key string, witnesses ...string) (*daemon.Main, string) {
	t.Helper()
	cfg := daemon.DefaultConfig()
	cfg.DataDir, cfg.KeyFile = dir, key
	cfg.HTTPAddr, cfg.NATSAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Witnesses = witnesses
	cfg.WitnessPoll = time.Hour // the start-up check is what these tests look at
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m := daemon.NewMain(cfg, "test", io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return m, "http://" + m.HTTPAddr()
}

func stop(t *testing.T, m *daemon.Main) {
	t.Helper()
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func call(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" || method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func writeRecords(t *testing.T, base, tag string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if code, b := call(t, "POST", base+"/v1/records", fmt.Sprintf(`{"type":"agent.thought","content":"%s %d","author_id":"agent:bmo"}`, tag, i)); code != 201 {
			t.Fatalf("write: %d %s", code, b)
		}
	}
}

func logState(t *testing.T, base string) (string, string) {
	t.Helper()
	_, b := call(t, "GET", base+"/v1/info", "")
	var info struct {
		Origin string `json:"log_origin"`
		Log    struct {
			State string `json:"state"`
		} `json:"log"`
	}
	json.Unmarshal([]byte(b), &info)
	return info.Log.State, info.Origin
}

func TestLog_RollbackAndForkCaughtAtStart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	key := filepath.Join(root, "kurad.key")
	live, old, forked := filepath.Join(root, "live"), filepath.Join(root, "old"), filepath.Join(root, "forked")
	w := &standInWitness{cps: map[string]string{}}
	ws := httptest.NewServer(w)
	defer ws.Close()

	m, base := runAt(t, live, key)
	writeRecords(t, base, "first", 3)
	stop(t, m)
	kuradtest.CopyDataDir(t, live, old)
	kuradtest.CopyDataDir(t, live, forked)

	m, base = runAt(t, live, key)
	writeRecords(t, base, "second", 4)
	_, cp := call(t, "GET", base+"/v1/log/checkpoint", "")
	stop(t, m)
	w.hold(cp) // the witness cosigned the tree of 7

	// The newest copy agrees with the witness.
	m, base = runAt(t, live, key, ws.URL)
	if st, _ := logState(t, base); st != "ok" {
		t.Errorf("live copy: log state %q, want ok", st)
	}
	if code, b := call(t, "GET", base+"/readyz", ""); code != 200 {
		t.Errorf("live copy: readyz %d %s", code, b)
	}
	stop(t, m)

	// A copy from before: the witness holds a larger tree.
	m, base = runAt(t, old, key, ws.URL)
	if st, _ := logState(t, base); st != "rollback_detected" {
		t.Errorf("old copy: log state %q, want rollback_detected", st)
	}
	code, b := call(t, "GET", base+"/readyz", "")
	if code != 503 || !strings.Contains(b, `"log":"rollback_detected"`) {
		t.Errorf("old copy: readyz %d %s", code, b)
	}
	code, b = call(t, "POST", base+"/v1/records", `{"type":"agent.thought","content":"after rollback","author_id":"agent:bmo"}`)
	if code != 503 || !strings.Contains(b, `"unavailable"`) || !strings.Contains(b, "rollback_detected") {
		t.Errorf("old copy: a write got %d %s, want 503 unavailable naming the rollback", code, b)
	}
	if code, _ := call(t, "POST", base+"/v1/admin/log/acknowledge", `{}`); code != 400 {
		t.Errorf("acknowledge without a reason: %d", code)
	}
	_, originBefore := logState(t, base)
	code, b = call(t, "POST", base+"/v1/admin/log/acknowledge", `{"reason":"the disk died; this is the newest backup we have"}`)
	if code != 200 || !strings.Contains(b, `"acknowledged":[{`) {
		t.Fatalf("acknowledge: %d %s", code, b)
	}
	st, originAfter := logState(t, base)
	if st == "rollback_detected" || originAfter == originBefore || !strings.HasPrefix(originAfter, originBefore) {
		t.Errorf("after acknowledgement: state %q, origin %q (was %q)", st, originAfter, originBefore)
	}
	writeRecords(t, base, "after acknowledgement", 1)
	if code, _ := call(t, "GET", base+"/readyz", ""); code != 200 {
		t.Errorf("after acknowledgement: readyz %d", code)
	}
	_, b = call(t, "GET", base+"/v1/events?type=log.acknowledged", "")
	if !strings.Contains(b, `"log.acknowledged"`) {
		t.Errorf("the acknowledgement is not an event: %s", b)
	}
	stop(t, m)
	// Restarted, the acknowledged checkpoint no longer counts.
	m, base = runAt(t, old, key, ws.URL)
	if st, _ := logState(t, base); st == "rollback_detected" || st == "fork_detected" {
		t.Errorf("restart after acknowledgement: %q", st)
	}
	stop(t, m)

	// A copy from before that went on with other writes past the witnessed
	// size: a fork.
	m, base = runAt(t, forked, key)
	writeRecords(t, base, "other", 6)
	stop(t, m)
	m, base = runAt(t, forked, key, ws.URL)
	if st, _ := logState(t, base); st != "fork_detected" {
		t.Errorf("forked copy: log state %q, want fork_detected", st)
	}
	if code, b := call(t, "GET", base+"/readyz", ""); code != 503 || !strings.Contains(b, "fork_detected") {
		t.Errorf("forked copy: readyz %d %s", code, b)
	}
	stop(t, m)
}

// Key rotation: with the old key as previous-key-file, every checkpoint is
// signed by both keys, so whoever pinned the old one is shown the new one
// vouched for; a witness's checkpoint signed by the old key still counts.
func TestLog_KeyRotationCoSignsCheckpoints(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	oldKey, newKey := filepath.Join(root, "old.key"), filepath.Join(root, "new.key")
	dir := filepath.Join(root, "data")
	w := &standInWitness{cps: map[string]string{}}
	ws := httptest.NewServer(w)
	defer ws.Close()

	m, base := runAt(t, dir, oldKey)
	writeRecords(t, base, "before rotation", 3)
	_, cp := call(t, "GET", base+"/v1/log/checkpoint", "")
	_, b := call(t, "GET", base+"/v1/info", "")
	var info struct {
		VKey string `json:"log_vkey"`
	}
	json.Unmarshal([]byte(b), &info)
	oldVKey := info.VKey
	stop(t, m)
	w.hold(cp)

	cfg := daemon.DefaultConfig()
	cfg.DataDir, cfg.KeyFile, cfg.PreviousKeyFile = dir, newKey, oldKey
	cfg.HTTPAddr, cfg.NATSAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Witnesses, cfg.WitnessPoll = []string{ws.URL}, time.Hour
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// The new key is created on this first start.
	m = daemon.NewMain(cfg, "test", io.Discard)
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	base = "http://" + m.HTTPAddr()
	if st, _ := logState(t, base); st != "ok" {
		t.Errorf("a witness's checkpoint signed by the previous key: state %q, want ok", st)
	}
	writeRecords(t, base, "after rotation", 1)
	_, b = call(t, "GET", base+"/v1/info", "")
	json.Unmarshal([]byte(b), &info)
	if info.VKey == oldVKey {
		t.Fatal("log_vkey did not change with the key")
	}
	_, cp = call(t, "GET", base+"/v1/log/checkpoint", "")
	for name, vkey := range map[string]string{"old": oldVKey, "new": info.VKey} {
		v, err := note.NewVerifier(vkey)
		if err != nil {
			t.Fatal(err)
		}
		n, err := note.Open([]byte(cp), note.VerifierList(v))
		if err != nil || len(n.Sigs) != 1 {
			t.Errorf("the %s key does not verify the checkpoint: %v\n%s", name, err, cp)
		}
	}
}

// With tokens on, a key inside the data directory is named at start: a
// copy of the directory could re-sign its history. Outside it, no warning.
func TestLog_WarnsOfAKeyInsideTheDataDirectory(t *testing.T) {
	t.Parallel()
	for _, inside := range []bool{true, false} {
		root := t.TempDir()
		tokens := filepath.Join(root, "tokens")
		if err := os.WriteFile(tokens, []byte(auth.HashToken("t0ken")+" user:root admin * *\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := daemon.DefaultConfig()
		cfg.DataDir = filepath.Join(root, "data")
		cfg.KeyFile = filepath.Join(root, "kurad.key")
		if inside {
			cfg.KeyFile = filepath.Join(cfg.DataDir, "kurad.key")
		}
		cfg.HTTPAddr, cfg.NATSAddr, cfg.TokensFile = "127.0.0.1:0", "127.0.0.1:0", tokens
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		out := &kuradtest.SyncBuffer{}
		m := daemon.NewMain(cfg, "test", out)
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		stop(t, m)
		warned := strings.Contains(out.String(), "signing key lies inside the data directory")
		if warned != inside {
			t.Errorf("key inside %v: warned %v\n%s", inside, warned, out.String())
		}
	}
}
