package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAPI_RedactRecord: an admin redacts a record held by a ledger and a
// turn and written with an Idempotency-Key; bad requests change nothing;
// every read serves it redacted, ledgers still verify, the event holds ids
// only, a second redaction is idempotent, and the content is gone from
// kura.db and kura.db-wal. kurad runs with a tokens file; the admin's
// token redacts, a writer's is refused and changes nothing.
func TestAPI_RedactRecord(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	d := e.d
	c := &apiClient{tb: t, base: d.BaseURL(), tok: tRoot}
	marker := fmt.Sprintf("MARKER-%d-redact-me", os.Getpid())

	// Written with an Idempotency-Key: kurad keeps that answer, content
	// included, to replay it.
	req, _ := http.NewRequest("POST", c.base+"/v1/records", strings.NewReader(`{"type":"agent.thought","content":{"text":"`+marker+`"},"author_id":"agent:bmo"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "write-secret")
	req.Header.Set("Authorization", "Bearer "+tRoot)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("write: %d", resp.StatusCode)
	}
	_, m, _ := c.get("/v1/records?limit=1")
	rec := m["records"].([]any)[0].(map[string]any)
	id, hash := rec["id"].(string), rec["hash"].(string)
	st, m, raw := c.post("/v1/ledgers", `{"label":"l","record_ids":["`+id+`"]}`)
	if st != 201 {
		t.Fatalf("ledger: %d %s", st, raw)
	}
	ledgerID := m["id"].(string)
	st, m, raw = c.post("/v1/sessions", `{"project":"hashi","name":"redact"}`)
	if st != 201 {
		t.Fatalf("session: %d %s", st, raw)
	}
	sessionID := m["id"].(string)
	st, m, raw = c.post("/v1/sessions/"+sessionID+"/turns", `{"instruction":{"type":"task.instruction","content":"go","author_id":"user:oles"},"context":[{"record_id":"`+id+`"}]}`)
	if st != 201 {
		t.Fatalf("turn: %d %s", st, raw)
	}
	turnID := m["id"].(string)
	if st, _, raw = c.post("/v1/turns/"+turnID+"/close", `{"status":"complete"}`); st != 200 {
		t.Fatalf("close: %d %s", st, raw)
	}

	t.Run("Refused", func(t *testing.T) {
		before := c.state()
		for _, tc := range []struct {
			name, path, body string
			status           int
		}{
			{"NoReason", "/v1/records/" + id + "/redact", `{}`, 400},
			{"BlankReason", "/v1/records/" + id + "/redact", `{"reason":"  "}`, 400},
			{"LongReason", "/v1/records/" + id + "/redact", `{"reason":"` + strings.Repeat("x", 1025) + `"}`, 400},
			{"UnknownField", "/v1/records/" + id + "/redact", `{"reason":"x","content":"y"}`, 400},
			{"Malformed", "/v1/records/" + id + "/redact", `{"reason":`, 400},
			{"WrongType", "/v1/records/" + id + "/redact", `{"reason":7}`, 400},
			{"Oversized", "/v1/records/" + id + "/redact", `{"reason":"` + strings.Repeat("x", 5<<20) + `"}`, 413},
			{"BadID", "/v1/records/nope/redact", `{"reason":"x"}`, 400},
			{"UnknownID", "/v1/records/01a1fdca-0000-7000-8000-0000000000ff/redact", `{"reason":"x"}`, 404},
		} {
			st, m, raw := c.post(tc.path, tc.body)
			if st != tc.status || m["error"] == nil {
				t.Errorf("%s: got %d %s, want %d with an error body", tc.name, st, raw, tc.status)
			}
		}
		if after := c.state(); after != before {
			t.Errorf("refused redactions changed the store: %s -> %s", before, after)
		}
	})

	wantRedactRefused(t, e, tWA, id, d.Config.DataDir, marker)
	st, m, raw = c.post("/v1/records/"+id+"/redact", `{"reason":"leaked a customer's address"}`)
	if st != 200 {
		t.Fatalf("redact: %d %s", st, raw)
	}
	rd := m["redaction"].(map[string]any)
	if rd["by"] != "user:root" || rd["reason"] != "leaked a customer's address" || m["already_redacted"] != false {
		t.Errorf("got %s, want the admin user:root, the reason, already_redacted false", raw)
	}
	if bytes.Contains(raw, []byte(marker)) {
		t.Errorf("the redact answer holds the content: %s", raw)
	}

	t.Run("ReadsRedacted", func(t *testing.T) {
		for _, p := range []string{"/v1/records/" + id, "/v1/records/by-hash/" + hash, "/v1/ledgers/" + ledgerID + "/records", "/v1/records?limit=10"} {
			_, _, raw := c.get(p)
			if bytes.Contains(raw, []byte(marker)) || !bytes.Contains(raw, []byte(`"content":null`)) || !bytes.Contains(raw, []byte(`"redacted":true`)) {
				t.Errorf("%s: got %s, want content null and redacted true", p, raw)
			}
		}
		// The retry of the first write no longer finds its stored answer
		// (it held the content): it is applied again, and finds the
		// redacted record by its hash.
		req, _ := http.NewRequest("POST", c.base+"/v1/records", strings.NewReader(`{"type":"agent.thought","content":{"text":"`+marker+`"},"author_id":"agent:bmo"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "write-secret")
		req.Header.Set("Authorization", "Bearer "+tRoot)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || bytes.Contains(b, []byte(marker)) || !bytes.Contains(b, []byte(`"redacted":true`)) {
			t.Errorf("retried write: got %d %s, want 200 with the redacted record", resp.StatusCode, b)
		}
	})
	t.Run("VerifyStillPasses", func(t *testing.T) {
		st, m, raw := c.get("/v1/ledgers/" + ledgerID + "/verify")
		if st != 200 || m["ok"] != true || !strings.Contains(string(raw), `"redacted":["`+id+`"]`) {
			t.Errorf("ledger verify: got %d %s, want ok listing the record as redacted", st, raw)
		}
		st, m, raw = c.get("/v1/sessions/" + sessionID + "/verify")
		if st != 200 || m["ok"] != true || !strings.Contains(string(raw), `"redacted":["`+id+`"]`) {
			t.Errorf("session verify: got %d %s, want ok listing the record as redacted", st, raw)
		}
	})
	t.Run("Event", func(t *testing.T) {
		_, _, raw := c.get("/v1/events?type=record.redacted")
		if !strings.Contains(string(raw), `"record_id":"`+id+`"`) || strings.Contains(string(raw), "customer") {
			t.Errorf("got %s, want one record.redacted event with ids only", raw)
		}
	})
	t.Run("AgainIsIdempotent", func(t *testing.T) {
		before := c.state()
		st, m, raw := c.post("/v1/records/"+id+"/redact", `{"reason":"again"}`)
		if st != 200 || m["already_redacted"] != true || m["redaction"].(map[string]any)["reason"] != "leaked a customer's address" {
			t.Errorf("got %d %s, want 200 with the first redaction", st, raw)
		}
		if after := c.state(); after != before {
			t.Errorf("a repeated redaction wrote: %s -> %s", before, after)
		}
	})
	t.Run("FileBytes", func(t *testing.T) {
		path := filepath.Join(d.Config.DataDir, "kura.db")
		for _, f := range []string{path, path + "-wal"} {
			b, err := os.ReadFile(f)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(marker)) {
				t.Errorf("%s still holds the content", filepath.Base(f))
			}
		}
	})
}

// TestAPI_RedactNeedsAdmin runs a kurad with tokens: only an admin
// redacts, a refusal changes nothing, and who redacted is the caller.
func TestAPI_RedactNeedsAdmin(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	for _, tc := range []struct {
		name, tok, who string
		status         int
	}{{"reader", tRA, "agent:r", 403}, {"writer", tWA, "agent:a", 403}, {"admin", tRoot, "user:root", 200}} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			id := e.must(tRoot, "POST", "/v1/records", `{"type":"agent.thought","content":"`+tc.name+`","author_id":"user:root"}`)["id"].(string)
			before := e.state()
			st, raw := e.do(tc.tok, "POST", "/v1/records/"+id+"/redact", `{"reason":"pii"}`)
			if st != tc.status {
				t.Fatalf("got %d %s, want %d", st, raw, tc.status)
			}
			rec := e.must(tRoot, "GET", "/v1/records/"+id, "")
			if redacted := rec["redacted"] == true; redacted != (tc.status == 200) {
				t.Errorf("got redacted=%v, want %v", redacted, tc.status == 200)
			}
			if tc.status != 200 {
				if after := e.state(); after != before {
					t.Errorf("a refused redaction changed the database: %s -> %s", before, after)
				}
				return
			}
			var m map[string]any
			json.Unmarshal(raw, &m)
			if m["redaction"].(map[string]any)["by"] != tc.who {
				t.Errorf("got %s, want the caller's identity %s as who", raw, tc.who)
			}
		})
	}
}
