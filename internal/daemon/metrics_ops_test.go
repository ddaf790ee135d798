package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestMetrics_OpenMetrics: /metrics answers OpenMetrics to a scraper that
// asks for it, as Prometheus does, and the Prometheus text format to one
// that does not.
func TestMetrics_OpenMetrics(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	get := func(accept string) (string, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/metrics", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics (Accept %q): HTTP %d, %v", accept, resp.StatusCode, err)
		}
		return resp.Header.Get("Content-Type"), string(b)
	}

	ct, body := get("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	if !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Errorf("got Content-Type %q, want application/openmetrics-text", ct)
	}
	if !strings.HasSuffix(body, "\n# EOF\n") {
		t.Errorf("got an OpenMetrics body ending %q, want it to end with # EOF", body[max(0, len(body)-40):])
	}
	if !strings.Contains(body, "\nkura_writer_transactions_total ") || !strings.Contains(body, "# TYPE kura_writer_transactions counter") {
		t.Errorf("got an OpenMetrics body without kura_writer_transactions_total as a counter")
	}

	ct, body = get("")
	if !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("without Accept: got Content-Type %q, want the Prometheus text format", ct)
	}
	if strings.Contains(body, "# EOF") {
		t.Errorf("without Accept: got # EOF, want the Prometheus text format")
	}
}

// TestMetrics_DiskSpace: the room left on the database's file system and
// its size, as statfs reports them, for the disk-full alert.
func TestMetrics_DiskSpace(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	m := scrapeMetrics(t, d.BaseURL())
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.Config.DataDir, &st); err != nil {
		t.Fatal(err)
	}
	size, free := m.sum("kura_store_disk_size_bytes"), m.sum("kura_store_disk_free_bytes")
	if want := float64(st.Blocks) * float64(st.Bsize); size != want {
		t.Errorf("kura_store_disk_size_bytes: got %v, want %v", size, want)
	}
	// Other processes write to the same file system meanwhile.
	if want := float64(st.Bavail) * float64(st.Bsize); free <= 0 || free > size || free < want/2 || free > want*2 {
		t.Errorf("kura_store_disk_free_bytes: got %v, want about %v (and at most the size %v)", free, want, size)
	}
}

// TestMetrics_Readiness: kura_readiness_check mirrors /readyz, check by
// check: all 1 when ready; storage 0 while writes fail for want of room
// (/readyz 200 degraded, which no probe would catch); nats 0 once the NATS
// server is down (/readyz 503).
func TestMetrics_Readiness(t *testing.T) {
	t.Parallel()
	if kuradtest.Store() == kuradtest.StorePostgres {
		t.Skip("fills the storage with SQLite's max_page_count")
	}
	d := kuradtest.StartMain(t, kuradtest.Options{})
	base := d.BaseURL()
	ctx := context.Background()
	checks := func() map[string]float64 {
		t.Helper()
		out := map[string]float64{}
		for k, v := range scrapeMetrics(t, base) {
			if rest, ok := strings.CutPrefix(k, `kura_readiness_check{check="`); ok {
				out[strings.TrimSuffix(rest, `"}`)] = v
			}
		}
		return out
	}
	want := func(got map[string]float64, failing ...string) {
		t.Helper()
		for _, c := range []string{"database", "writer", "nats", "storage", "doorbell"} {
			w := 1.0
			for _, f := range failing {
				if c == f {
					w = 0
				}
			}
			if v, ok := got[c]; !ok || v != w {
				t.Errorf("kura_readiness_check{check=%q}: got %v (present %v), want %v", c, v, ok, w)
			}
		}
	}
	want(checks())

	pages, err := d.Store().PageCount(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Store().SetMaxPages(ctx, pages); err != nil {
		t.Fatal(err)
	}
	c := client.New(base)
	full := false
	for i := 0; i < 200 && !full; i++ {
		_, err := c.PutRecord(ctx, client.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo",
			Content: json.RawMessage(fmt.Sprintf(`{"filler":%q,"i":%d}`, strings.Repeat("x", 2000), i))})
		full = err != nil
	}
	if !full {
		t.Fatal("got every write through under the page limit, want the storage full")
	}
	want(checks(), "storage")
	if _, err := d.Store().SetMaxPages(ctx, 1<<30); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutRecord(ctx, client.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(`"room again"`)}); err != nil {
		t.Fatal(err)
	}
	want(checks())

	if err := d.Bus().Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := checks()
	if got["nats"] != 0 {
		t.Errorf("kura_readiness_check{check=\"nats\"}: got %v with NATS down, want 0", got["nats"])
	}
	if got["database"] != 1 {
		t.Errorf("kura_readiness_check{check=\"database\"}: got %v, want 1", got["database"])
	}
}
