package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// TestKurad_FullCheckHoldsWrites: with the default --startup-check=quick,
// kurad serves as soon as the quick check passed, while the full check
// runs in the background (held here by the store's hook, as a large
// database would hold it): /readyz answers 200 "degraded" naming the
// check, /v1/info says it is running, reads answer 200 and every write 503
// with the error body; once it passes, writes commit and kurad is ready.
func TestKurad_FullCheckHoldsWrites(t *testing.T) {
	t.Parallel()
	reached, release := make(chan struct{}), make(chan struct{})
	d := kuradtest.StartMain(t, kuradtest.Options{Store: kuradtest.StoreSQLite, Configure: func(c *daemon.Config) {
		c.StoreHooks.FullCheck = func(ctx context.Context) {
			close(reached)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	}})
	base := d.BaseURL()
	<-reached
	get := func(path string, out any) int {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("GET %s: %v: %s", path, err, b)
			}
		}
		return resp.StatusCode
	}
	write := func() (int, string) {
		t.Helper()
		resp, err := http.Post(base+"/v1/records", "application/json",
			strings.NewReader(`{"type":"agent.thought","content":"while checking","author_id":"agent:bmo"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	type readiness struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	type info struct {
		IntegrityCheck *struct {
			Mode, State string
			StartedAt   string `json:"started_at"`
			FinishedAt  string `json:"finished_at"`
		} `json:"integrity_check"`
		Counts map[string]int64 `json:"counts"`
	}

	var r readiness
	if code := get("/readyz", &r); code != 200 || r.Status != "degraded" || !strings.Contains(r.Checks["integrity"], "full integrity check running") {
		t.Errorf("/readyz while the full check runs: got %d %+v, want 200 degraded with checks.integrity saying it runs", code, r)
	}
	var i info
	if code := get("/v1/info", &i); code != 200 || i.IntegrityCheck == nil || i.IntegrityCheck.Mode != "quick" ||
		i.IntegrityCheck.State != "running" || i.IntegrityCheck.StartedAt == "" || i.IntegrityCheck.FinishedAt != "" {
		t.Errorf("/v1/info while the full check runs: got %d %+v, want mode quick, state running, started_at set", code, i.IntegrityCheck)
	}
	if code := get("/v1/records?limit=10", nil); code != 200 {
		t.Errorf("a read while the full check runs: got %d, want 200", code)
	}
	code, body := write()
	if code != 503 || !strings.Contains(body, `"code":"unavailable"`) || !strings.Contains(body, `"integrity_check":"running"`) {
		t.Errorf("a write while the full check runs: got %d %s, want 503 unavailable naming the check", code, body)
	}
	if get("/v1/info", &i); i.Counts["records"] != 0 {
		t.Errorf("got %d records after a refused write, want 0", i.Counts["records"])
	}

	close(release)
	testwait.For(t, testwait.Default, "the full check to pass", func() bool {
		get("/v1/info", &i)
		return i.IntegrityCheck != nil && i.IntegrityCheck.State == "passed"
	})
	if i.IntegrityCheck.FinishedAt == "" {
		t.Errorf("got %+v after the check, want finished_at", i.IntegrityCheck)
	}
	if code, body := write(); code != 201 {
		t.Errorf("a write after the full check passed: got %d %s, want 201", code, body)
	}
	if code := get("/readyz", &r); code != 200 || r.Status != "ready" || r.Checks["integrity"] != "ok" {
		t.Errorf("/readyz after the check: got %d %+v, want 200 ready, integrity ok", code, r)
	}
}
