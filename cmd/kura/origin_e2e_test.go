package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestE2E_VerifyRefusesAMovedOrigin: after an acknowledged rollback kurad's
// log goes on under a new origin, signed by the same key. A client that
// kept the old origin cannot tell that from an older copy with its origin
// renamed, so kura verify fails, saying the feed records the
// acknowledgement, until --accept-origin names the new origin; from then on
// the old origin is the stranger.
func TestE2E_VerifyRefusesAMovedOrigin(t *testing.T) {
	t.Parallel()
	if kuradtest.Store() == kuradtest.StorePostgres {
		t.Skip("rolls the store back by copying kura.db over it")
	}
	dataDir, keyDir, oldCopy := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "old")
	env := map[string]string{"KURA_STATE_DIR": t.TempDir()}
	var witnessed string // the checkpoint the stand-in witness holds
	ws := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin, _, _ := strings.Cut(witnessed, "\n")
		size, _ := strconv.ParseInt(strings.Split(witnessed, "\n")[1], 10, 64)
		json.NewEncoder(w).Encode(map[string]any{"witness": "stand-in", "checkpoints": []map[string]any{
			{"origin": origin, "size": size, "checkpoint": witnessed}}})
	}))
	defer ws.Close()
	start := func(witnesses ...string) *kuradtest.Daemon {
		return kuradtest.StartMain(t, kuradtest.Options{Configure: func(cfg *daemon.Config) {
			cfg.DataDir, cfg.KeyFile, cfg.Witnesses = dataDir, filepath.Join(keyDir, "kurad.key"), witnesses
		}})
	}
	stop := func(d *kuradtest.Daemon) {
		if err := d.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	verify := func(url string, args ...string) (string, int) {
		out, errOut, code := runKuraEnv(t, url, env, append([]string{"verify"}, args...)...)
		return out + errOut, code
	}

	d := start()
	l1 := writeLedger(t, d.BaseURL(), "before", 1)
	stop(d)
	kuradtest.CopyDataDir(t, dataDir, oldCopy)
	d = start()
	writeLedger(t, d.BaseURL(), "after", 2)
	if out, code := verify(d.BaseURL(), l1.ID); code != exitOK {
		t.Fatalf("verify before the loss: exit %d %q", code, out)
	}
	_, witnessed = httpGet(t, d.BaseURL()+"/v1/log/checkpoint", "")
	oldOrigin, _, _ := strings.Cut(witnessed, "\n")
	stop(d)

	// The newer data is lost: the old copy, a witness that saw more, and
	// an admin who acknowledges it.
	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	kuradtest.CopyDataDir(t, oldCopy, dataDir)
	d = start(ws.URL)
	if code, body := httpGet(t, d.BaseURL()+"/readyz", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, "rollback_detected") {
		t.Fatalf("readyz on the old copy: %d %s", code, body)
	}
	req, _ := http.NewRequest(http.MethodPost, d.BaseURL()+"/v1/admin/log/acknowledge", strings.NewReader(`{"reason":"test: the newer copy is lost"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("acknowledge: %v %v", resp, err)
	}
	var ack struct{ Origin string }
	json.NewDecoder(resp.Body).Decode(&ack)
	resp.Body.Close()
	if ack.Origin == oldOrigin || ack.Origin == "" {
		t.Fatalf("acknowledged: origin %q, want a new one", ack.Origin)
	}

	out, code := verify(d.BaseURL(), l1.ID)
	if code != exitFail || !strings.Contains(out, "FAILED log "+ack.Origin) || !strings.Contains(out, "last verified log "+oldOrigin) ||
		!strings.Contains(out, "records an acknowledgement moving log "+oldOrigin+" to "+ack.Origin) || !strings.Contains(out, "--accept-origin "+ack.Origin) {
		t.Fatalf("verify after the move: exit %d, %q; want FAILED naming both origins, the acknowledgement and --accept-origin", code, out)
	}
	if out, code := verify(d.BaseURL(), l1.ID, "--accept-origin", "kura/elsewhere"); code != exitFail {
		t.Fatalf("accepting another origin than the one shown: exit %d %q", code, out)
	}
	out, code = verify(d.BaseURL(), l1.ID, "--accept-origin", ack.Origin)
	if code != exitOK || !strings.Contains(out, ack.Origin+" accepted in place of "+oldOrigin) {
		t.Fatalf("verify --accept-origin: exit %d %q", code, out)
	}
	if out, code := verify(d.BaseURL(), l1.ID); code != exitOK {
		t.Fatalf("verify after accepting: exit %d %q", code, out)
	}
}
