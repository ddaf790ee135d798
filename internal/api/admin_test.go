package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

func TestAPI_AdminBackup(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	c := &apiClient{tb: t, base: d.BaseURL()}
	backups, err := filepath.EvalSymlinks(filepath.Join(d.Config.DataDir, "backups"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if st, m, _ := c.post("/v1/records", fmt.Sprintf(`{"type":"agent.thought","content":%d,"author_id":"agent:bmo"}`, i)); st != 201 {
			t.Fatalf("setup: %d %v", st, m)
		}
	}
	full := filepath.Join(backups, "full")
	os.Mkdir(full, 0o700)
	os.WriteFile(filepath.Join(full, "old"), nil, 0o600)
	for _, tt := range []struct {
		name, ct, body string
		status         int
		code, field    string
	}{
		{"Outside", "application/json", `{"path":"/tmp/x"}`, 400, "invalid_argument", "path"},
		{"UnknownField", "application/json", `{"path":"x","dir":"y"}`, 400, "invalid_argument", "dir"},
		{"NotJSON", "text/plain", `path=/tmp/x`, 415, "unsupported_media_type", ""},
		{"NotEmpty", "application/json", fmt.Sprintf(`{"path":%q}`, full), 409, "conflict", "path"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := c.state()
			st, m, raw := c.do("POST", "/v1/admin/backup", tt.ct, []byte(tt.body))
			e, _ := m["error"].(map[string]any)
			if st != tt.status || e == nil || e["code"] != tt.code {
				t.Fatalf("got %d %s, want %d %s", st, raw, tt.status, tt.code)
			}
			if tt.field != "" {
				if d, _ := e["details"].(map[string]any); d == nil || d["field"] != tt.field {
					t.Errorf("got %s, want details.field %q", raw, tt.field)
				}
			}
			if c.state() != before {
				t.Error("a refused backup changed the store")
			}
		})
	}

	t.Run("OK", func(t *testing.T) {
		dir := filepath.Join(backups, "nightly")
		st, m, raw := c.post("/v1/admin/backup", fmt.Sprintf(`{"path":%q}`, dir))
		if st != 200 {
			t.Fatalf("got %d %s, want 200", st, raw)
		}
		_, info, _ := c.get("/v1/info")
		counts, _ := m["counts"].(map[string]any)
		files, _ := m["files"].([]any)
		format := "kura-backup-1"
		if kuradtest.Store() == kuradtest.StorePostgres {
			format = "kura-backup-pg-1"
		}
		if m["path"] != dir || m["format"] != format || m["public_key"] != info["public_key"] ||
			m["last_event_seq"] != info["last_event_seq"] || counts["records"] != float64(5) || len(files) != 1 || m["signature"] == "" {
			t.Errorf("got %s, want the manifest of a backup of 5 records, signed by %v", raw, info["public_key"])
		}
		b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		var onDisk map[string]any
		json.Unmarshal(b, &onDisk)
		if onDisk["signature"] != m["signature"] || onDisk["path"] != nil {
			t.Errorf("got manifest.json %s, want the answer's manifest without its path", b)
		}
	})
}

func TestAPI_AdminCompactEvents(t *testing.T) {
	c := newClient(t)
	var ledgerID string
	for i := 0; i < 6; i++ {
		st, m, _ := c.post("/v1/records", fmt.Sprintf(`{"type":"agent.thought","content":%d,"author_id":"agent:bmo"}`, i))
		if st != 201 {
			t.Fatalf("setup: %d %v", st, m)
		}
		st, l, _ := c.post("/v1/ledgers", fmt.Sprintf(`{"label":"l","record_ids":[%q]}`, m["id"]))
		if st != 201 {
			t.Fatalf("setup: %d %v", st, l)
		}
		ledgerID = l["id"].(string)
	}
	_, info, _ := c.get("/v1/info")
	last := int64(info["last_event_seq"].(float64))
	if info["compacted_through"] != float64(0) {
		t.Errorf("got compacted_through %v before any compaction, want 0", info["compacted_through"])
	}

	for _, tt := range []struct{ name, body string }{
		{"Missing", `{}`},
		{"Zero", `{"before_seq":0}`},
		{"NotANumber", `{"before_seq":"10"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, m, raw := c.post("/v1/admin/compact-events", tt.body)
			e, _ := m["error"].(map[string]any)
			d, _ := e["details"].(map[string]any)
			if st != 400 || d["field"] != "before_seq" {
				t.Errorf("got %d %s, want 400 naming before_seq", st, raw)
			}
		})
	}

	// The doorbell saves its cursor a moment after publishing; compaction
	// never passes it, so it is repeated (it is idempotent) until it has.
	var res map[string]any
	var raw []byte
	if !testwait.Until(10*time.Second, func() bool {
		st, m, b := c.post("/v1/admin/compact-events", fmt.Sprintf(`{"before_seq":%d}`, last+100))
		if st != 200 {
			t.Fatalf("got %d %s", st, b)
		}
		res, raw = m, b
		return res["compacted_through"] == float64(last-1)
	}) {
		t.Fatalf("got %s, want compacted through %d (all but the newest)", raw, last-1)
	}
	if res["first_seq"] != float64(last) || res["removed_total"] != float64(last-1) {
		t.Errorf("got %v, want only seq %d left", res, last)
	}

	st, page, raw := c.get("/v1/events?after=0")
	evs, _ := page["events"].([]any)
	if st != 200 || page["compacted_through"] != float64(last-1) || len(evs) != 1 {
		t.Errorf("got %d %s, want the newest event and compacted_through %d", st, raw, last-1)
	}
	if _, page, raw = c.get(fmt.Sprintf("/v1/events?after=%d", last-1)); page["compacted_through"] != nil {
		t.Errorf("got %s, want no compacted_through for a reader past the checkpoint", raw)
	}
	_, info, _ = c.get("/v1/info")
	if counts, _ := info["counts"].(map[string]any); info["compacted_through"] != float64(last-1) || counts["events"] != float64(1) {
		t.Errorf("got info %v, want compacted_through %d and one event", info, last-1)
	}
	if _, v, raw := c.get("/v1/ledgers/" + ledgerID + "/verify"); v["ok"] != true {
		t.Errorf("got %s, want the ledger to verify after compaction", raw)
	}

	// The stream cannot carry a field: a comment line says it instead.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/v1/events/stream?after=0", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "id: ") {
			break
		}
	}
	if want := fmt.Sprintf(": compacted_through %d", last-1); !strings.Contains(strings.Join(lines, "\n"), want) {
		t.Errorf("got stream %q, want a %q line before the first event", lines, want)
	}
}
