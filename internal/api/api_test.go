package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/kurahash"
)

type apiClient struct {
	tb   testing.TB
	base string
	tok  string // a bearer token to send, for a kurad with tokens
}

// do sends a request and returns the status and decoded JSON body.
func (c *apiClient) do(method, path, contentType string, body []byte) (int, map[string]any, []byte) {
	c.tb.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.tb.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.tok != "" {
		req.Header.Set("Authorization", "Bearer "+c.tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		c.tb.Fatalf("%s %s: answer is not a JSON object: %q", method, path, raw)
	}
	return resp.StatusCode, m, raw
}

func (c *apiClient) post(path, body string) (int, map[string]any, []byte) {
	return c.do("POST", path, "application/json", []byte(body))
}

func (c *apiClient) get(path string) (int, map[string]any, []byte) {
	return c.do("GET", path, "", nil)
}

func (c *apiClient) state() string {
	_, m, _ := c.get("/v1/info")
	b, _ := json.Marshal([]any{m["counts"], m["last_event_seq"]})
	return string(b)
}

func newClient(t testing.TB) *apiClient {
	return &apiClient{tb: t, base: kuradtest.Start(t)}
}

func TestAPI_BadInputWritesNothing(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	st, m, _ := c.post("/v1/records", `{"type":"agent.thought","content":{"x":1},"author_id":"agent:bmo"}`)
	if st != 201 {
		t.Fatalf("setup: %d %v", st, m)
	}
	goodID := m["id"].(string)
	huge := `{"type":"agent.thought","content":"` + strings.Repeat("a", 5<<20) + `","author_id":"agent:bmo"}`
	cases := []struct {
		name, method, path, ct, body string
		status                       int
		code, field                  string
	}{
		{"malformed JSON", "POST", "/v1/records", "application/json", `{"type":`, 400, "invalid_argument", ""},
		{"not an object", "POST", "/v1/records", "application/json", `[1,2]`, 400, "invalid_argument", ""},
		{"empty body", "POST", "/v1/records", "application/json", ``, 400, "invalid_argument", ""},
		{"two values", "POST", "/v1/records", "application/json", `{"type":"agent.thought","content":1,"author_id":"agent:x"} {}`, 400, "invalid_argument", ""},
		{"wrong type", "POST", "/v1/records", "application/json", `{"type":7,"content":1,"author_id":"agent:x"}`, 400, "invalid_argument", "type"},
		{"metadata not strings", "POST", "/v1/records", "application/json", `{"type":"agent.thought","content":1,"author_id":"agent:x","metadata":{"a":1}}`, 400, "invalid_argument", "metadata"},
		{"unknown field", "POST", "/v1/records", "application/json", `{"type":"agent.thought","content":1,"author_id":"agent:x","colour":"red"}`, 400, "invalid_argument", "colour"},
		{"unknown type", "POST", "/v1/records", "application/json", `{"type":"agent.dream","content":1,"author_id":"agent:x"}`, 400, "invalid_argument", "type"},
		{"bad author", "POST", "/v1/records", "application/json", `{"type":"agent.thought","content":1,"author_id":"robot:x"}`, 400, "invalid_argument", "author_id"},
		{"missing content", "POST", "/v1/records", "application/json", `{"type":"agent.thought","author_id":"agent:x"}`, 400, "invalid_argument", "content"},
		{"duplicate keys in content", "POST", "/v1/records", "application/json", `{"type":"agent.thought","content":{"a":1,"a":2},"author_id":"agent:x"}`, 400, "invalid_argument", "content"},
		{"tool.call without tool_name", "POST", "/v1/records", "application/json", `{"type":"tool.call","content":{"arguments":{},"status":"pending"},"author_id":"agent:x"}`, 400, "invalid_argument", "content.tool_name"},
		{"tool.call bad status", "POST", "/v1/records", "application/json", `{"type":"tool.call","content":{"tool_name":"gh","arguments":{},"status":"maybe"},"author_id":"agent:x"}`, 400, "invalid_argument", "content.status"},
		{"tool.result without status", "POST", "/v1/records", "application/json", `{"type":"tool.result","content":{"result":1},"author_id":"agent:x"}`, 400, "invalid_argument", "content.status"},
		{"oversize body", "POST", "/v1/records", "application/json", huge, 413, "too_large", ""},
		{"not JSON media type", "POST", "/v1/records", "text/plain", `{}`, 415, "unsupported_media_type", ""},
		{"no media type", "POST", "/v1/records", "", `{}`, 415, "unsupported_media_type", ""},
		{"batch with one bad record", "POST", "/v1/records/batch", "application/json", `{"records":[{"type":"agent.thought","content":2,"author_id":"agent:x"},{"type":"nope","content":1,"author_id":"agent:x"}]}`, 400, "invalid_argument", "records[1].type"},
		{"empty batch", "POST", "/v1/records/batch", "application/json", `{"records":[]}`, 400, "invalid_argument", "records"},
		{"ledger with unknown record", "POST", "/v1/ledgers", "application/json", `{"label":"x","parent_ids":[],"record_ids":["` + goodID + `","01a1fdca-0000-7000-8000-000000000000"]}`, 400, "invalid_argument", ""},
		{"ledger with unknown parent", "POST", "/v1/ledgers", "application/json", `{"label":"x","parent_ids":["01a1fdca-0000-7000-8000-000000000000"],"record_ids":[]}`, 400, "invalid_argument", ""},
		{"ledger with invalid uuid", "POST", "/v1/ledgers", "application/json", `{"label":"x","parent_ids":[],"record_ids":["not-a-uuid"]}`, 400, "invalid_argument", "record_ids"},
		{"ledger with uppercase uuid", "POST", "/v1/ledgers", "application/json", `{"label":"x","record_ids":["` + strings.ToUpper(goodID) + `"]}`, 400, "invalid_argument", "record_ids"},
		{"get invalid uuid", "GET", "/v1/records/xyz", "", ``, 400, "invalid_argument", "id"},
		{"get unknown record", "GET", "/v1/records/01a1fdca-0000-7000-8000-000000000000", "", ``, 404, "not_found", ""},
		{"get unknown ledger", "GET", "/v1/ledgers/01a1fdca-0000-7000-8000-000000000000", "", ``, 404, "not_found", ""},
		{"verify unknown ledger", "GET", "/v1/ledgers/01a1fdca-0000-7000-8000-000000000000/verify", "", ``, 404, "not_found", ""},
		{"bad hash", "GET", "/v1/records/by-hash/abc", "", ``, 400, "invalid_argument", "hash"},
		{"bad limit", "GET", "/v1/records?limit=5000", "", ``, 400, "invalid_argument", "limit"},
		{"bad cursor", "GET", "/v1/records?cursor=bm9wZQ", "", ``, 400, "invalid_argument", "cursor"},
		{"bad since", "GET", "/v1/records?since=yesterday", "", ``, 400, "invalid_argument", "since"},
		{"unknown route", "GET", "/v1/nothing", "", ``, 404, "not_found", ""},
		{"wrong method", "DELETE", "/v1/records/" + goodID, "", ``, 405, "method_not_allowed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := c.state()
			st, m, raw := c.do(tc.method, tc.path, tc.ct, []byte(tc.body))
			if st != tc.status {
				t.Fatalf("status: got %d, want %d (%s)", st, tc.status, raw)
			}
			e, ok := m["error"].(map[string]any)
			if !ok {
				t.Fatalf("body has no error object: %s", raw)
			}
			if e["code"] != tc.code {
				t.Errorf("code: got %v, want %s", e["code"], tc.code)
			}
			if msg, _ := e["message"].(string); msg == "" {
				t.Errorf("error without message: %s", raw)
			}
			if tc.field != "" {
				d, _ := e["details"].(map[string]any)
				if d["field"] != tc.field {
					t.Errorf("details.field: got %v, want %s (%s)", d["field"], tc.field, raw)
				}
			}
			if after := c.state(); after != before {
				t.Errorf("state changed: %s -> %s", before, after)
			}
		})
	}
}

// TestAPI_ClientRecomputesEverything checks that a client holding only the
// API's answers and DESIGN.md's definitions can verify records, ledgers and
// proofs.
func TestAPI_ClientRecomputesEverything(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	st, m, raw := c.post("/v1/records/batch", `{"records":[
		{"type":"task.instruction","content":"Summarise the morning session","author_id":"user:oles"},
		{"type":"agent.thought","content":{"text":"REST feels clean","n":1.50},"author_id":"agent:bmo","metadata":{"project_id":"hashi"}},
		{"type":"tool.call","content":{"tool_name":"github","arguments":{"repo":"kura"},"status":"pending"},"author_id":"agent:hashi"}]}`)
	if st != 201 {
		t.Fatalf("batch: %d %s", st, raw)
	}
	var batch struct{ Records []kura.Record }
	json.Unmarshal(raw, &batch)
	var seals []string
	var ids []string
	for _, r := range batch.Records {
		ch, _, err := kurahash.ContentHash(r.Content)
		if err != nil || ch != r.ContentHash {
			t.Errorf("content_hash of %s: got %s, recomputed %s (%v)", r.ID, r.ContentHash, ch, err)
		}
		if h := kurahash.RecordHash(r.Type, ch, r.AuthorID); h != r.Hash {
			t.Errorf("hash of %s: got %s, recomputed %s", r.ID, r.Hash, h)
		}
		if s := kurahash.Seal(r.Hash, kurahash.MetadataJSON(r.Metadata), r.CreatedAt); s != r.Seal {
			t.Errorf("seal of %s: got %s, recomputed %s", r.ID, r.Seal, s)
		}
		seals = append(seals, r.Seal)
		ids = append(ids, r.ID)
	}
	body, _ := json.Marshal(map[string]any{"label": "morning", "parent_ids": []string{}, "record_ids": ids})
	st, _, raw = c.post("/v1/ledgers", string(body))
	if st != 201 {
		t.Fatalf("ledger: %d %s", st, raw)
	}
	var l kura.Ledger
	json.Unmarshal(raw, &l)
	if root, _ := kurahash.MerkleRootHex(seals); root != l.RootHash {
		t.Errorf("root: got %s, recomputed %s", l.RootHash, root)
	}
	if h := kurahash.LedgerHash(l.RootHash, nil, l.Label, l.CreatedAt); h != l.Hash {
		t.Errorf("ledger hash: got %s, recomputed %s", l.Hash, h)
	}
	_, _, raw = c.get("/v1/ledgers/" + l.ID + "/proof/" + ids[1])
	var p kura.Proof
	json.Unmarshal(raw, &p)
	leaf, _ := kurahash.DecodeHash(seals[1])
	root, _ := kurahash.DecodeHash(l.RootHash)
	path := make([][32]byte, len(p.AuditPath))
	for i, h := range p.AuditPath {
		path[i], _ = kurahash.DecodeHash(h)
	}
	if !kurahash.VerifyInclusion(leaf, p.LeafIndex, p.TreeSize, path, root) {
		t.Errorf("proof %s does not verify", raw)
	}
	// Reads return exactly what the write answered.
	_, _, got := c.get("/v1/records/" + ids[1])
	var r kura.Record
	json.Unmarshal(got, &r)
	if r.Seal != batch.Records[1].Seal || string(r.Content) != string(batch.Records[1].Content) {
		t.Errorf("read back: got %s", got)
	}
	if st, m, _ = c.get("/v1/records/by-hash/" + r.Hash); st != 200 || m["id"] != r.ID {
		t.Errorf("by-hash: %d %v", st, m)
	}
}

func TestAPI_HydrateAndListPages(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	var ids []string
	for b := 0; b < 3; b++ {
		var recs []string
		for i := 0; i < 10; i++ {
			recs = append(recs, fmt.Sprintf(`{"type":"agent.thought","content":{"b":%d,"i":%d},"author_id":"agent:bmo"}`, b, i))
		}
		st, _, raw := c.post("/v1/records/batch", `{"records":[`+strings.Join(recs, ",")+`]}`)
		if st != 201 {
			t.Fatalf("batch: %d %s", st, raw)
		}
		var out struct{ Records []kura.Record }
		json.Unmarshal(raw, &out)
		for _, r := range out.Records {
			ids = append(ids, r.ID)
		}
	}
	body, _ := json.Marshal(map[string]any{"label": "thirty", "record_ids": ids})
	_, m, _ := c.post("/v1/ledgers", string(body))
	lid := m["id"].(string)
	collect := func(first string) []string {
		var got []string
		path := first
		for page := 0; page < 20; page++ {
			st, _, raw := c.get(path)
			if st != 200 {
				t.Fatalf("%s: %d %s", path, st, raw)
			}
			var out struct {
				Records    []kura.Record
				NextCursor string `json:"next_cursor"`
			}
			json.Unmarshal(raw, &out)
			for _, r := range out.Records {
				got = append(got, r.ID)
			}
			if out.NextCursor == "" {
				return got
			}
			sep := "?"
			if strings.Contains(first, "?") {
				sep = "&"
			}
			path = first + sep + "cursor=" + out.NextCursor
		}
		t.Fatal("pagination did not end")
		return nil
	}
	if got := collect("/v1/ledgers/" + lid + "/records?limit=7"); strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Errorf("hydrate pages: got %d ids, want %d in ledger order", len(got), len(ids))
	}
	if got := collect("/v1/records?limit=4&type=agent.thought"); strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Errorf("list pages: got %d ids, want %d in id order", len(got), len(ids))
	}
}

func TestAPI_OpsEndpoints(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	for _, p := range []string{"/healthz", "/readyz", "/v1/info"} {
		if st, m, _ := c.get(p); st != 200 {
			t.Errorf("%s: %d %v", p, st, m)
		}
	}
	_, m, _ := c.get("/v1/info")
	if pk, _ := m["public_key"].(string); !strings.HasPrefix(pk, "ed25519:") || len(pk) != len("ed25519:")+64 {
		t.Errorf("public_key: %v", m["public_key"])
	}
	resp, err := http.Get(c.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(b, []byte(`kura_http_requests_total{method="GET",route="/v1/info",status="200"}`)) {
		t.Errorf("metrics do not count requests by route pattern:\n%.2000s", b)
	}
}

// FuzzRecordCreate throws arbitrary bodies at POST /v1/records on a real
// kurad: the answer is always a documented status with the documented
// body, never a 500.
func FuzzRecordCreate(f *testing.F) {
	for _, s := range []string{
		`{"type":"agent.thought","content":{"t":1},"author_id":"agent:bmo"}`,
		`{"type":"tool.call","content":{"tool_name":"x","arguments":{},"status":"pending"},"author_id":"tool:x"}`,
		`{"type":"tool.result","content":{"status":"ok","result":[1,2]},"author_id":"tool:x","metadata":{"k":"v"}}`,
		`{"type":"agent.thought","content":1e400,"author_id":"agent:bmo"}`,
		`{"type":"agent.thought","content":"\ud800","author_id":"agent:bmo"}`,
		`{"records":[]}`, `[]`, `null`, `{"type":null}`,
	} {
		f.Add([]byte(s))
	}
	c := &apiClient{tb: f, base: kuradtest.Start(f)}
	f.Fuzz(func(t *testing.T, body []byte) {
		c.tb = t
		for _, path := range []string{"/v1/records", "/v1/records/batch", "/v1/ledgers"} {
			st, m, raw := c.do("POST", path, "application/json", body)
			switch st {
			case 200, 201:
			case 400, 413:
				if e, ok := m["error"].(map[string]any); !ok || e["code"] == nil || e["message"] == nil {
					t.Fatalf("%s: error body malformed: %s", path, raw)
				}
			default:
				t.Fatalf("%s: status %d for %q: %s", path, st, body, raw)
			}
		}
	})
}
