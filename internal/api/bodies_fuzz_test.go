package api_test

import (
	"encoding/json"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// fuzzRoutes sends body to each route of a real kurad and fails on a 5xx,
// on any other status outside 2xx/4xx, or on a 4xx without the documented
// error body.
func fuzzRoutes(t *testing.T, c *apiClient, routes [][2]string, body []byte) {
	t.Helper()
	c.tb = t
	for _, rt := range routes {
		st, _, raw := c.raw(rt[0], rt[1], string(body), nil)
		switch {
		case st >= 200 && st < 300:
			if !json.Valid(raw) {
				t.Fatalf("%s %s: %d with a body that is not JSON: %q", rt[0], rt[1], st, raw)
			}
		case st >= 400 && st < 500:
			var m struct {
				Error kura.Error `json:"error"`
			}
			if json.Unmarshal(raw, &m) != nil || m.Error.Code == "" || m.Error.Message == "" {
				t.Fatalf("%s %s: %d with a malformed error body: %s", rt[0], rt[1], st, raw)
			}
			if st == 400 && m.Error.Code != kura.EInvalid {
				t.Fatalf("%s %s: 400 with code %q", rt[0], rt[1], m.Error.Code)
			}
		default:
			t.Fatalf("%s %s: status %d for %q: %s", rt[0], rt[1], st, body, raw)
		}
	}
}

// FuzzMemoryBodies throws arbitrary bodies at every memory write route.
func FuzzMemoryBodies(f *testing.F) {
	for _, s := range []string{
		`{"kind":"belief","id":"b1","title":"t","summary":"s","confidence":0.5,"derived_from":["fact:f1"]}`,
		`{"nodes":[{"kind":"fact","id":"f1","title":"f"},{"kind":"belief","id":"b1"}]}`,
		`{"to":"deprecated","reason":"r"}`, `{"kind":"supports","from":"fact:f1","to":"belief:b1","confidence":1}`,
		`{"ref":"belief:b1","outcome":"negative","author_id":"agent:a","note":"n"}`, `{"confidence":2}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	c := &apiClient{tb: f, base: kuradtest.Start(f)}
	const m = "/v1/scopes/fuzz/memory"
	c.raw("POST", m+"/nodes", `{"kind":"belief","id":"b1","title":"seed"}`, nil)
	routes := [][2]string{{"POST", m + "/nodes"}, {"POST", m + "/nodes/batch"}, {"POST", m + "/nodes/belief:b1/transition"},
		{"POST", m + "/nodes/belief:b1/revise"}, {"POST", m + "/relations"}, {"POST", m + "/feedback"}}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzRoutes(t, c, routes, body) })
}

// FuzzContextBodies throws arbitrary bodies at context preview and compile.
func FuzzContextBodies(f *testing.F) {
	for _, s := range []string{`{"task":"fix the build","budget_tokens":500}`, `{"task":"","budget_tokens":-1}`,
		`{"task":"t","include_kinds":["belief"]}`, `{"task":1}`, `{}`, `[]`} {
		f.Add([]byte(s))
	}
	c := &apiClient{tb: f, base: kuradtest.Start(f)}
	c.raw("POST", "/v1/scopes/fuzz/memory/nodes", `{"kind":"belief","id":"b1","title":"seed","summary":"the build"}`, nil)
	routes := [][2]string{{"POST", "/v1/scopes/fuzz/context/preview"}, {"POST", "/v1/scopes/fuzz/context/compile"}}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzRoutes(t, c, routes, body) })
}

// FuzzKBBodies throws arbitrary bodies at the knowledge-base batch and
// patch routes (the single upsert has FuzzKBPut).
func FuzzKBBodies(f *testing.F) {
	for _, s := range []string{`{"entries":[{"identifier":"a","keys":["k"],"value":"v"},{"identifier":"b"}]}`,
		`{"identifier":"a","add_keys":["k2"],"remove_keys":["k"]}`, `{"identifier":"a","value":null}`,
		`{"entries":[{"identifier":"\ud800"}]}`, `{"entries":null}`, `[]`} {
		f.Add([]byte(s))
	}
	c := &apiClient{tb: f, base: kuradtest.Start(f)}
	c.raw("PUT", kbPath+"/entries", `{"identifier":"a","keys":["k"],"value":"v"}`, nil)
	routes := [][2]string{{"PUT", kbPath + "/entries/batch"}, {"PATCH", kbPath + "/entries"}}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzRoutes(t, c, routes, body) })
}

// FuzzImportBody throws arbitrary exports at the import route.
func FuzzImportBody(f *testing.F) {
	for _, s := range []string{`{"records":[],"ledgers":[],"sessions":[]}`,
		`{"records":[{"id":"01a1fdca-0000-7000-8000-000000000000","type":"agent.thought","content":1,"author_id":"agent:a","created_at":"2026-01-01T00:00:00Z"}]}`,
		`{"ledgers":[{"id":"x"}]}`, `{"sessions":[{}]}`, `[]`} {
		f.Add([]byte(s))
	}
	c := &apiClient{tb: f, base: kuradtest.Start(f)}
	routes := [][2]string{{"POST", "/v1/admin/import"}}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzRoutes(t, c, routes, body) })
}
