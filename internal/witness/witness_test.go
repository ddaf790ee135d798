package witness_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	tlogfmt "github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/kura-memory/kura/internal/witness"
)

// syncBuffer collects a witness's log lines from its goroutines.
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

func openWitness(t testing.TB, cfg witness.Config) (*witness.Witness, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w, err := witness.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, logs
}

func get(t testing.TB, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// checkCosigned verifies a served checkpoint with x/mod's note alone: one
// of the log's keys and the witness's cosignature key must both have signed
// it. It returns the checkpoint.
func checkCosigned(t testing.TB, text string, logVKeys []string, witnessVKey string) tlogfmt.Checkpoint {
	t.Helper()
	var vs []note.Verifier
	for _, k := range logVKeys {
		v, err := note.NewVerifier(k)
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	cv, err := fnote.NewVerifierForCosignatureV1(witnessVKey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open([]byte(text), note.VerifierList(append(vs, cv)...))
	if err != nil {
		t.Fatalf("served checkpoint does not verify: %v\n%s", err, text)
	}
	var logSigned, cosigned bool
	for _, s := range n.Sigs {
		switch {
		case s.Name == cv.Name() && s.Hash == cv.KeyHash():
			cosigned = true
		default:
			logSigned = true
		}
	}
	if !logSigned || !cosigned {
		t.Fatalf("served checkpoint: log signed %v, witness cosigned %v\n%s", logSigned, cosigned, text)
	}
	var cp tlogfmt.Checkpoint
	if _, err := cp.Unmarshal([]byte(n.Text)); err != nil {
		t.Fatal(err)
	}
	return cp
}

// metric returns the line of /metrics that starts with prefix, "" if none.
func metric(t testing.TB, base, prefix string) string {
	t.Helper()
	_, body := get(t, base+"/metrics")
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

func TestWitness_Follow(t *testing.T) {
	t.Parallel()
	const origin = "kura.test/log"
	type step struct {
		name   string
		change func(fl *fakeLog, k *keys)
		action string
		reason string
		size   int // size served after the step, -1 for none
	}
	grow := func(prefix string, n int) func(*fakeLog, *keys) {
		return func(fl *fakeLog, _ *keys) { fl.grow(prefix, n) }
	}
	tests := []struct {
		name     string
		pin      bool // pin the log's first key with --log URL=VKEY
		pinOther bool // pin a key the log does not sign with
		token    string
		wantLog  string // a line the witness must have logged
		steps    []step
	}{
		{name: "first contact", steps: []step{
			{"grow", grow("a", 3), witness.ActionCosigned, "", 3},
		}},
		{name: "first contact of an empty log", steps: []step{
			{"empty", func(*fakeLog, *keys) {}, witness.ActionCosigned, "", 0},
			{"grow", grow("a", 4), witness.ActionCosigned, "", 4},
		}},
		{name: "growth with a valid proof", steps: []step{
			{"grow", grow("a", 3), witness.ActionCosigned, "", 3},
			{"grow more", grow("a", 5), witness.ActionCosigned, "", 8},
			{"grow one", grow("a", 1), witness.ActionCosigned, "", 9},
		}},
		{name: "same checkpoint", steps: []step{
			{"grow", grow("a", 3), witness.ActionCosigned, "", 3},
			{"nothing new", func(*fakeLog, *keys) {}, witness.ActionUnchanged, "", 3},
		}},
		{name: "smaller tree refused", steps: []step{
			{"grow", grow("a", 5), witness.ActionCosigned, "", 5},
			{"show 3", func(fl *fakeLog, _ *keys) { fl.set(func(fl *fakeLog) { fl.showSize = 3 }) }, witness.ActionRefused, "smaller", 5},
			{"still refused", func(*fakeLog, *keys) {}, witness.ActionRefused, "smaller", 5},
			{"back to the truth", func(fl *fakeLog, _ *keys) { fl.set(func(fl *fakeLog) { fl.showSize = 0 }) }, witness.ActionUnchanged, "", 5},
		}},
		{name: "same size other root refused", steps: []step{
			{"grow", grow("a", 5), witness.ActionCosigned, "", 5},
			{"fork", func(fl *fakeLog, _ *keys) { fl.reset(); fl.grow("b", 5) }, witness.ActionRefused, "inconsistent", 5},
		}},
		{name: "rollback then regrowth refused", steps: []step{
			{"grow", grow("a", 5), witness.ActionCosigned, "", 5},
			{"roll back and grow past", func(fl *fakeLog, _ *keys) { fl.reset(); fl.grow("a", 3); fl.grow("b", 6) }, witness.ActionRefused, "inconsistent", 5},
		}},
		{name: "tampered proof refused", steps: []step{
			{"grow", grow("a", 3), witness.ActionCosigned, "", 3},
			{"grow", func(fl *fakeLog, _ *keys) {
				fl.grow("a", 3)
				fl.set(func(fl *fakeLog) { fl.proofMode = proofTampered })
			}, witness.ActionRefused, "inconsistent", 3},
			{"honest again", func(fl *fakeLog, _ *keys) { fl.set(func(fl *fakeLog) { fl.proofMode = proofGood }) }, witness.ActionCosigned, "", 6},
		}},
		{name: "malformed proof refused", steps: []step{
			{"grow", grow("a", 3), witness.ActionCosigned, "", 3},
			{"grow", func(fl *fakeLog, _ *keys) {
				fl.grow("a", 3)
				fl.set(func(fl *fakeLog) { fl.proofMode = proofMalformed })
			}, witness.ActionRefused, "bad_proof", 3},
		}},
		{name: "bad signature refused", steps: []step{
			{"grow", grow("a", 3), witness.ActionCosigned, "", 3},
			{"other key", func(fl *fakeLog, k *keys) {
				fl.grow("a", 2)
				fl.set(func(fl *fakeLog) { fl.signers = []note.Signer{k.other.signer} })
			}, witness.ActionRefused, "bad_signature", 3},
		}},
		{name: "new key alone refused even when info names it", steps: []step{
			{"grow", grow("a", 3), witness.ActionCosigned, "", 3},
			{"swap key", func(fl *fakeLog, k *keys) {
				fl.grow("a", 2)
				fl.set(func(fl *fakeLog) { fl.signers, fl.vkey = []note.Signer{k.other.signer}, k.other.vkey })
			}, witness.ActionRefused, "bad_signature", 3},
		}},
		{name: "key rotation", steps: []step{
			{"grow", grow("a", 3), witness.ActionCosigned, "", 3},
			{"old and new sign", func(fl *fakeLog, k *keys) {
				fl.grow("a", 2)
				fl.set(func(fl *fakeLog) { fl.signers, fl.vkey = []note.Signer{k.first.signer, k.other.signer}, k.other.vkey })
			}, witness.ActionCosigned, "", 5},
			{"new alone", func(fl *fakeLog, k *keys) {
				fl.grow("a", 2)
				fl.set(func(fl *fakeLog) { fl.signers = []note.Signer{k.other.signer} })
			}, witness.ActionCosigned, "", 7},
		}},
		{name: "unreachable log", wantLog: "log reachable again", steps: []step{
			{"grow", grow("a", 3), witness.ActionCosigned, "", 3},
			{"down", func(fl *fakeLog, _ *keys) { fl.grow("a", 1); fl.set(func(fl *fakeLog) { fl.down = true }) }, witness.ActionError, "", 3},
			{"up", func(fl *fakeLog, _ *keys) { fl.set(func(fl *fakeLog) { fl.down = false }) }, witness.ActionCosigned, "", 4},
		}},
		{name: "pinned key", pin: true, steps: []step{
			{"grow", grow("a", 3), witness.ActionCosigned, "", 3},
		}},
		{name: "pinned key the log does not sign with", pinOther: true, steps: []step{
			{"grow", grow("a", 3), witness.ActionRefused, "bad_signature", -1},
		}},
		{name: "bearer token", token: "reader-token", steps: []step{
			{"grow", grow("a", 2), witness.ActionCosigned, "", 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := &keys{first: newLogKey(t, origin), other: newLogKey(t, origin)}
			fl := newFakeLog(t, origin, k.first)
			fl.token = tt.token
			l := witness.Log{URL: fl.srv.URL}
			switch {
			case tt.pin:
				l.VKey = k.first.vkey
			case tt.pinOther:
				l.VKey = k.other.vkey
			}
			w, logs := openWitness(t, witness.Config{StateDir: t.TempDir(), Logs: []witness.Log{l}, Token: tt.token})
			api := httptest.NewServer(w.Handler())
			t.Cleanup(api.Close)
			refusals := 0
			for _, s := range tt.steps {
				s.change(fl, k)
				out := w.Poll(context.Background())
				if len(out) != 1 || out[0].Action != s.action || out[0].Reason != s.reason {
					t.Fatalf("step %s: got %+v, want %s %s", s.name, out, s.action, s.reason)
				}
				code, body := get(t, api.URL+"/v1/witness/checkpoint?origin="+url.QueryEscape(origin))
				if s.size < 0 {
					if code != http.StatusNotFound || !strings.Contains(body, `"not_found"`) {
						t.Fatalf("step %s: served %d %s, want 404 not_found", s.name, code, body)
					}
				} else {
					if code != http.StatusOK {
						t.Fatalf("step %s: served %d %s", s.name, code, body)
					}
					cp := checkCosigned(t, body, []string{k.first.vkey, k.other.vkey}, w.VKey())
					if cp.Size != uint64(s.size) || cp.Origin != origin {
						t.Fatalf("step %s: served size %d origin %s, want %d", s.name, cp.Size, cp.Origin, s.size)
					}
					if want := fl.treeHash(int64(s.size)); !bytes.Equal(cp.Hash, want[:]) && s.action == witness.ActionCosigned {
						t.Fatalf("step %s: served root %x, want %x", s.name, cp.Hash, want)
					}
				}
				if s.action == witness.ActionRefused {
					refusals++
					label := origin
					if s.size < 0 {
						label = "unknown"
					}
					if !strings.Contains(logs.String(), "level=ERROR") {
						t.Fatalf("step %s: refusal not logged at ERROR:\n%s", s.name, logs.String())
					}
					if m := metric(t, api.URL, `kura_witness_refused_total{origin="`+label+`",reason="`+s.reason+`"}`); m == "" {
						t.Fatalf("step %s: no refusal metric", s.name)
					}
				}
				if s.action == witness.ActionError {
					if m := metric(t, api.URL, `kura_witness_poll_errors_total{log="`+fl.srv.URL+`"} 1`); m == "" {
						t.Fatalf("step %s: poll error not counted", s.name)
					}
				}
				if s.size >= 0 {
					if m := metric(t, api.URL, `kura_witness_checkpoint_size{origin="`+origin+`"}`); !strings.HasSuffix(m, " "+strconv.Itoa(s.size)) {
						t.Fatalf("step %s: size metric %q, want %d", s.name, m, s.size)
					}
				}
			}
			if !strings.Contains(logs.String(), tt.wantLog) {
				t.Fatalf("witness did not log %q:\n%s", tt.wantLog, logs.String())
			}
			if refusals == 0 && strings.Contains(logs.String(), "level=ERROR") {
				t.Fatalf("ERROR logged with no refusal:\n%s", logs.String())
			}
		})
	}
}

type keys struct{ first, other logKey }

func TestWitness_RestartKeepsState(t *testing.T) {
	t.Parallel()
	const origin = "kura.test/restart"
	k := newLogKey(t, origin)
	fl := newFakeLog(t, origin, k)
	dir := t.TempDir()
	cfg := witness.Config{StateDir: dir, Logs: []witness.Log{{URL: fl.srv.URL}}}

	w1, _ := openWitness(t, cfg)
	var fi os.FileInfo
	fl.grow("a", 5)
	if out := w1.Poll(context.Background()); out[0].Action != witness.ActionCosigned {
		t.Fatalf("first poll: %+v", out)
	}
	// A second witness on the same state directory is refused while the
	// first runs: each would overwrite the other's newer state.
	twin, err := witness.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := twin.Open(context.Background()); err == nil || !strings.Contains(err.Error(), "in use") {
		twin.Close()
		t.Fatalf("second witness on one state dir: %v", err)
	}
	api1 := httptest.NewServer(w1.Handler())
	_, before := get(t, api1.URL+"/v1/witness/checkpoint?origin="+url.QueryEscape(origin))
	api1.Close()
	w1.Close()

	fi, err = os.Stat(filepath.Join(dir, "witness.key"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("witness.key mode %v, want 0600", fi.Mode().Perm())
	}

	w2, _ := openWitness(t, cfg)
	if w2.VKey() != w1.VKey() || w2.Name() != w1.Name() {
		t.Fatalf("restart changed the key: %s vs %s", w2.VKey(), w1.VKey())
	}
	api2 := httptest.NewServer(w2.Handler())
	t.Cleanup(api2.Close)
	// Served before any poll: what was cosigned survived the restart.
	code, after := get(t, api2.URL+"/v1/witness/checkpoint?origin="+url.QueryEscape(origin))
	if code != http.StatusOK || after != before {
		t.Fatalf("after restart served %d:\n%s\nwant:\n%s", code, after, before)
	}
	// And it still judges against it: a smaller tree is refused.
	fl.set(func(fl *fakeLog) { fl.showSize = 2 })
	if out := w2.Poll(context.Background()); out[0].Reason != "smaller" {
		t.Fatalf("smaller tree after restart: %+v", out)
	}
	fl.set(func(fl *fakeLog) { fl.showSize = 0 })
	fl.grow("a", 2)
	if out := w2.Poll(context.Background()); out[0].Action != witness.ActionCosigned {
		t.Fatalf("growth after restart: %+v", out)
	}
	_, body := get(t, api2.URL+"/v1/witness/checkpoints")
	if !strings.Contains(body, `"size":7`) || !strings.Contains(body, w1.VKey()) {
		t.Fatalf("checkpoints: %s", body)
	}

	// The URL moves to a new origin: noticed although the witness
	// restarted since it last saw the old one.
	w2.Close()
	w3, _ := openWitness(t, cfg)
	api3 := httptest.NewServer(w3.Handler())
	t.Cleanup(api3.Close)
	k2 := newLogKey(t, origin+"-2")
	fl.set(func(fl *fakeLog) { fl.origin, fl.signers, fl.vkey = origin+"-2", []note.Signer{k2.signer}, k2.vkey })
	if out := w3.Poll(context.Background()); out[0].Action != witness.ActionCosigned || out[0].Origin != origin+"-2" {
		t.Fatalf("new origin: %+v", out)
	}
	if m := metric(t, api3.URL, `kura_witness_origin_changes_total{log="`+fl.srv.URL+`"} 1`); m == "" {
		t.Fatal("move to a new origin after a restart not counted")
	}
	if got := servedSize(api3.URL, origin); got != 7 {
		t.Fatalf("old origin served at %d, want 7 kept", got)
	}
}

func TestWitness_CorruptStateRefusesToStart(t *testing.T) {
	t.Parallel()
	const origin = "kura.test/corrupt"
	fl := newFakeLog(t, origin, newLogKey(t, origin))
	fl.grow("a", 2)
	dir := t.TempDir()
	cfg := witness.Config{StateDir: dir, Listen: "127.0.0.1:0", Logs: []witness.Log{{URL: fl.srv.URL}}}
	w1, _ := openWitness(t, cfg)
	w1.Poll(context.Background())
	w1.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "log-*.json"))
	if len(files) != 1 {
		t.Fatalf("state files %v", files)
	}
	if err := os.WriteFile(files[0], []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	w2, err := witness.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if err := w2.Open(context.Background()); err == nil {
		t.Fatal("opened on a corrupt state file: it would forget what it cosigned")
	}
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// servedSize is the size the witness at base serves for origin, 0 if none.
func servedSize(base, origin string) uint64 {
	resp, err := http.Get(base + "/v1/witness/checkpoint?origin=" + url.QueryEscape(origin))
	if err != nil {
		return 0
	}
	body := readAll(resp)
	if resp.StatusCode != http.StatusOK {
		return 0
	}
	var cp tlogfmt.Checkpoint
	if _, err := cp.Unmarshal([]byte(body)); err != nil {
		return 0
	}
	return cp.Size
}

// checkLogSigned verifies a checkpoint with the log's key alone.
func checkLogSigned(t testing.TB, text, vkey string) tlogfmt.Checkpoint {
	t.Helper()
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open([]byte(text), note.VerifierList(v))
	if err != nil {
		t.Fatalf("checkpoint does not verify with %s: %v\n%s", vkey, err, text)
	}
	var cp tlogfmt.Checkpoint
	if _, err := cp.Unmarshal([]byte(n.Text)); err != nil {
		t.Fatal(err)
	}
	return cp
}
