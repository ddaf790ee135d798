package api_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

// TestContext_MaxPerBucketZeroKeepsNone: max_per_bucket 0 keeps no item
// (omitted counts every one, the trace still decides every node), while
// leaving it out (or null) is no limit; the same holds for the memory a
// turn packs into its context.
func TestContext_MaxPerBucketZeroKeepsNone(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	c.ctxFourBuckets("acme")
	full := c.ctxCall(t, "acme", "preview", `{}`)
	total := 0
	for _, b := range ctxBuckets {
		total += len(full.Raw[b])
	}
	if total != 4 {
		t.Fatalf("the four nodes: got %d items in %s", total, full.Body)
	}

	for _, op := range []string{"preview", "compile"} {
		t.Run(op+" 0", func(t *testing.T) {
			c := &apiClient{tb: t, base: c.base}
			a := c.ctxCall(t, "acme", op, `{"max_per_bucket":0}`)
			for _, b := range ctxBuckets {
				if len(a.Raw[b]) != 0 || a.Omitted[b] != len(full.Raw[b]) {
					t.Errorf("%s: got %d kept, %d omitted; want 0 and %d", b, len(a.Raw[b]), a.Omitted[b], len(full.Raw[b]))
				}
			}
			if len(a.Trace) != total || a.Bytes != 0 {
				t.Errorf("got %d trace entries and %d bytes, want %d and 0", len(a.Trace), a.Bytes, total)
			}
			if op == "compile" {
				if stored := c.mustGet("/v1/scopes/acme/context/bundles/" + a.BundleID); !bytes.Equal(bytes.TrimSpace(stored), bytes.TrimSpace(a.Body)) {
					t.Errorf("stored bundle %s, want the answer %s", stored, a.Body)
				}
			}
		})
	}
	for _, body := range []string{`{}`, `{"max_per_bucket":null}`, `{"max_per_bucket":100000}`} {
		t.Run("no limit "+body, func(t *testing.T) {
			a := c.ctxCall(t, "acme", "preview", body)
			for _, b := range ctxBuckets {
				if len(a.Raw[b]) != len(full.Raw[b]) || a.Omitted[b] != 0 {
					t.Errorf("%s: got %d kept, %d omitted; want %d and 0", b, len(a.Raw[b]), a.Omitted[b], len(full.Raw[b]))
				}
			}
		})
	}

	// Turn memory: use_now is what a turn packs (fact:f1 here).
	useNow := len(full.Raw["use_now"])
	if useNow != 1 {
		t.Fatalf("use_now: %d items, want fact:f1", useNow)
	}
	for i, tc := range []struct {
		memory string
		packed int
	}{
		{`{"query":"payments"}`, useNow},
		{`{"query":"payments","max_per_bucket":null}`, useNow},
		{`{"query":"payments","max_per_bucket":1}`, 1},
		{`{"query":"payments","max_per_bucket":0}`, 0},
	} {
		t.Run("turn memory "+tc.memory, func(t *testing.T) {
			c := &apiClient{tb: t, base: c.base}
			s := decode[kura.Session](t, c.mustPost("/v1/sessions", fmt.Sprintf(`{"project":"acme","name":"mpb-%d"}`, i), 201))
			tr := decode[kura.Turn](t, c.mustPost("/v1/sessions/"+s.ID+"/turns",
				`{"instruction":{"content":"go","author_id":"user:oles"},"memory":`+tc.memory+`}`, 201))
			recs := decode[struct{ Records []kura.Record }](t, c.mustGet("/v1/ledgers/"+tr.ContextLedgerID+"/records"))
			packed := 0
			for _, r := range recs.Records {
				if r.Type == "memory.fact" || r.Type == "memory.decision" {
					packed++
				}
			}
			if packed != tc.packed {
				t.Errorf("context ledger packs %d memory records, want %d", packed, tc.packed)
			}
			if tr.ContextBundleID == nil {
				t.Fatal("no context bundle")
			}
			b := ctxDecode(t, c.mustGet("/v1/scopes/acme/context/bundles/"+*tr.ContextBundleID))
			if len(b.Raw["use_now"]) != tc.packed || b.Omitted["use_now"] != useNow-tc.packed {
				t.Errorf("bundle use_now: %d kept, %d omitted; want %d and %d", len(b.Raw["use_now"]), b.Omitted["use_now"], tc.packed, useNow-tc.packed)
			}
		})
	}

	t.Run("turn memory -1", func(t *testing.T) {
		c := &apiClient{tb: t, base: c.base}
		s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"acme","name":"mpb-bad"}`, 201))
		before := c.state()
		st, m, raw := c.post("/v1/sessions/"+s.ID+"/turns", `{"instruction":{"content":"go","author_id":"user:oles"},"memory":{"max_per_bucket":-1}}`)
		e, _ := m["error"].(map[string]any)
		if st != 400 || e["code"] != "invalid_argument" || e["details"].(map[string]any)["field"] != "memory.max_per_bucket" {
			t.Errorf("got %d %s, want 400 invalid_argument on memory.max_per_bucket", st, raw)
		}
		if after := c.state(); after != before {
			t.Errorf("a refused open changed %s to %s", before, after)
		}
	})
}
