package mcp_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolNames are the tools the issue names; they are part of the contract.
var toolNames = []string{
	"record_put", "record_get", "ledger_verify", "session_log", "turn_open", "turn_append", "turn_close",
	"memory_put", "memory_search", "memory_trace", "get_belief_evidence", "context_compile", "kb_lookup", "kb_put",
	"kb_search",
}

// httpAPI calls kurad's HTTP API directly, for the answers MCP results are
// compared with.
type httpAPI struct {
	tb   testing.TB
	base string
}

// do returns the status and the raw answer.
func (h httpAPI) do(method, path, body string) (int, []byte) {
	h.tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.base+path, rd)
	if err != nil {
		h.tb.Fatal(err)
	}
	if body != "" || method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.tb.Fatal(err)
	}
	return resp.StatusCode, b
}

// json answers the JSON of a 2xx call, decoded.
func (h httpAPI) json(method, path, body string) map[string]any {
	h.tb.Helper()
	st, b := h.do(method, path, body)
	if st/100 != 2 {
		h.tb.Fatalf("%s %s: %d %s", method, path, st, b)
	}
	return decode(h.tb, b)
}

func decode(tb testing.TB, b []byte) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatalf("not a JSON object: %q", b)
	}
	return m
}

// connect opens an SDK client session over Streamable HTTP to endpoint.
func connect(t *testing.T, endpoint string, hc *http.Client) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "kura-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// mcpTools is a client session and the output schemas of its tools.
type mcpTools struct {
	tb      testing.TB
	cs      *sdk.ClientSession
	schemas map[string]*jsonschema.Resolved
}

func listTools(t *testing.T, cs *sdk.ClientSession) *mcpTools {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &mcpTools{tb: t, cs: cs, schemas: map[string]*jsonschema.Resolved{}}
	var got []string
	for _, tl := range res.Tools {
		got = append(got, tl.Name)
		if tl.Description == "" {
			t.Errorf("tool %s has no description", tl.Name)
		}
		in := schemaOf(t, tl.InputSchema)
		if in.Type != "object" || len(in.Properties) == 0 {
			t.Errorf("tool %s: input schema %+v, want an object with properties", tl.Name, in)
		}
		for name, p := range in.Properties {
			if p.Description == "" {
				t.Errorf("tool %s: argument %s has no description", tl.Name, name)
			}
		}
		if tl.Name == "kb_lookup" {
			if tl.OutputSchema != nil {
				t.Errorf("kb_lookup answers text; got an output schema")
			}
			continue
		}
		if tl.OutputSchema == nil {
			t.Errorf("tool %s has no output schema", tl.Name)
			continue
		}
		r, err := schemaOf(t, tl.OutputSchema).Resolve(nil)
		if err != nil {
			t.Fatalf("tool %s: output schema: %v", tl.Name, err)
		}
		m.schemas[tl.Name] = r
	}
	slices.Sort(got)
	want := slices.Clone(toolNames)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got tools %v, want %v", got, want)
	}
	return m
}

func schemaOf(tb testing.TB, v any) *jsonschema.Schema {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		tb.Fatalf("schema %s: %v", b, err)
	}
	return &s
}

// call runs a tool that must succeed and returns its structured result,
// checked against the tool's output schema.
func (m *mcpTools) call(name string, args any) map[string]any {
	m.tb.Helper()
	res := m.result(name, args)
	if res.IsError {
		m.tb.Fatalf("%s: tool error %s", name, text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		m.tb.Fatal(err)
	}
	out := decode(m.tb, b)
	if err := m.schemas[name].Validate(out); err != nil {
		m.tb.Errorf("%s: the answer does not match the output schema: %v\n%s", name, err, b)
	}
	// The text content is the same JSON, for clients that read only text.
	if got := decode(m.tb, []byte(text(res))); !reflect.DeepEqual(got, out) {
		m.tb.Errorf("%s: text content %v differs from structured content %v", name, got, out)
	}
	return out
}

func (m *mcpTools) result(name string, args any) *sdk.CallToolResult {
	m.tb.Helper()
	res, err := m.cs.CallTool(m.tb.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		m.tb.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func same(tb testing.TB, what string, got, want any) {
	tb.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		tb.Errorf("%s: got %s, want %s", what, g, w)
	}
}

// TestMCP_ToolsMatchHTTP drives kurad's /mcp with the SDK's own client:
// it lists the tools, calls each one and checks every answer against what
// the HTTP API says about the same data.
func TestMCP_ToolsMatchHTTP(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	api := httpAPI{t, base}
	m := listTools(t, connect(t, base+"/mcp", nil))

	// Records.
	rec := m.call("record_put", map[string]any{"type": "agent.thought", "content": map[string]any{"text": "the build is green"},
		"author_id": "agent:bmo", "metadata": map[string]string{"project_id": "hashi"}})
	recID := rec["id"].(string)
	same(t, "record_put vs GET /v1/records/{id}", rec, api.json("GET", "/v1/records/"+recID, ""))
	same(t, "record_get vs GET /v1/records/{id}", m.call("record_get", map[string]any{"id": recID}), api.json("GET", "/v1/records/"+recID, ""))
	again := m.call("record_put", map[string]any{"type": "agent.thought", "content": map[string]any{"text": "the build is green"},
		"author_id": "agent:bmo", "metadata": map[string]string{"project_id": "hashi"}})
	if again["id"] != recID || again["deduplicated"] != true {
		t.Errorf("second record_put: got %v, want record %s deduplicated", again, recID)
	}

	// A session and one turn through its tools.
	sess := api.json("POST", "/v1/sessions", `{"project":"hashi","name":"mcp"}`)
	sid := sess["id"].(string)
	opened := m.call("turn_open", map[string]any{"session_id": sid,
		"instruction": map[string]any{"type": "task.instruction", "content": "summarise the build", "author_id": "user:oles"},
		"context":     []any{map[string]any{"record_id": recID}}})
	tid := opened["id"].(string)
	if opened["state"] != "open" || opened["session_id"] != sid {
		t.Fatalf("turn_open: got %v", opened)
	}
	turn := api.json("GET", "/v1/turns/"+tid, "")
	if turn["context_ledger_id"] != opened["context_ledger_id"] {
		t.Errorf("turn_open: context ledger %v, HTTP says %v", opened["context_ledger_id"], turn["context_ledger_id"])
	}
	appended := m.call("turn_append", map[string]any{"turn_id": tid, "records": []any{
		map[string]any{"type": "memory.fact", "content": "the build is green on main", "author_id": "agent:bmo"}}})
	same(t, "turn_append output ids vs GET /v1/turns/{id}", appended["output_record_ids"], api.json("GET", "/v1/turns/"+tid, "")["output_record_ids"])
	closed := m.call("turn_close", map[string]any{"turn_id": tid, "status": "complete"})
	same(t, "turn_close vs GET /v1/turns/{id}", closed["output_ledger_id"], api.json("GET", "/v1/turns/"+tid, "")["output_ledger_id"])
	if ex, _ := closed["extracted"].([]any); len(ex) != 1 {
		t.Errorf("turn_close: extracted %v, want the one memory.fact", closed["extracted"])
	}
	outLedger := closed["output_ledger_id"].(string)
	same(t, "session_log vs GET /v1/sessions/{id}/log", m.call("session_log", map[string]any{"session_id": sid}),
		api.json("GET", "/v1/sessions/"+sid+"/log", ""))
	same(t, "session_log limit 1 vs HTTP", m.call("session_log", map[string]any{"session_id": sid, "limit": 1}),
		api.json("GET", "/v1/sessions/"+sid+"/log?limit=1", ""))
	v := m.call("ledger_verify", map[string]any{"id": outLedger})
	if v["ok"] != true {
		t.Errorf("ledger_verify: got %v, want ok", v)
	}
	same(t, "ledger_verify vs GET /v1/ledgers/{id}/verify", v, api.json("GET", "/v1/ledgers/"+outLedger+"/verify", ""))

	// Memory with provenance: a belief resting on an episode resting on
	// the record.
	ep := m.call("memory_put", map[string]any{"scope": "hashi", "kind": "episode", "id": "e1", "title": "CI run 42",
		"summary": "the build passed on main", "derived_from": []string{"record:" + recID}})
	same(t, "memory_put vs GET node", ep, api.json("GET", "/v1/scopes/hashi/memory/nodes/episode:e1", ""))
	b1 := m.call("memory_put", map[string]any{"scope": "hashi", "kind": "belief", "id": "b1", "title": "main is green",
		"summary": "main builds", "lifecycle": "active", "authority": "trusted", "confidence": 0.9, "derived_from": []string{"episode:e1"}})
	if b1["ref"] != "belief:b1" || b1["version"] != float64(1) {
		t.Errorf("memory_put: got %v", b1)
	}
	// A retry with the same idempotency key is answered from the first
	// write: no second version.
	for range 2 {
		n := m.call("memory_put", map[string]any{"scope": "hashi", "kind": "note", "id": "n1", "summary": "retried",
			"idempotency_key": "note-n1-once"})
		if n["version"] != float64(1) {
			t.Errorf("memory_put with an idempotency key: got version %v, want 1 both times", n["version"])
		}
	}
	same(t, "memory_search vs HTTP", m.call("memory_search", map[string]any{"scope": "hashi", "q": "green", "min_confidence": 0.5}),
		api.json("GET", "/v1/scopes/hashi/memory/search?q=green&min_confidence=0.5", ""))
	same(t, "memory_trace vs HTTP", m.call("memory_trace", map[string]any{"scope": "hashi", "ref": "belief:b1", "direction": "backward", "depth": 2}),
		api.json("GET", "/v1/scopes/hashi/provenance/belief:b1?direction=backward&depth=2", ""))
	ev := m.call("get_belief_evidence", map[string]any{"scope": "hashi", "ref": "belief:b1"})
	same(t, "get_belief_evidence vs HTTP", ev, api.json("GET", "/v1/scopes/hashi/provenance/belief:b1/evidence", ""))
	if ev["total_evidence_count"] != float64(2) {
		t.Errorf("get_belief_evidence: got %v, want the episode and the record", ev)
	}

	// Context: compile stores the bundle; the stored one is what it said.
	bundle := m.call("context_compile", map[string]any{"scope": "hashi", "query": "build", "budget": 4000})
	same(t, "context_compile vs GET bundle", bundle, api.json("GET", "/v1/scopes/hashi/context/bundles/"+bundle["bundle_id"].(string), ""))
	if use, _ := bundle["buckets"].(map[string]any)["use_now"].([]any); len(use) != 1 {
		t.Errorf("context_compile: use_now %v, want belief:b1", bundle["buckets"])
	}

	// Knowledge base.
	entry := m.call("kb_put", map[string]any{"kb": "docs", "identifier": "install guide", "keys": []string{"setup"}, "value": "run make build"})
	list := api.json("GET", "/v1/kb/docs/entries?identifier="+url.QueryEscape("install guide"), "")
	got := list["entries"].([]any)[0].(map[string]any)
	for _, k := range []string{"identifier", "keys", "value", "updated_at"} {
		same(t, "kb_put "+k+" vs HTTP", entry[k], got[k])
	}
	lookup := m.result("kb_lookup", map[string]any{"kb": "docs", "q": "install"})
	_, want := api.do("GET", "/v1/kb/docs/lookup?q=install", "")
	if lookup.IsError || text(lookup) != string(want) || !strings.Contains(text(lookup), "run make build") {
		t.Errorf("kb_lookup: got %q, want the HTTP lookup %q", text(lookup), want)
	}
	if lookup.StructuredContent != nil {
		t.Errorf("kb_lookup: structured content %v, want text only", lookup.StructuredContent)
	}
	// A question in a model's words: the same ranked text as over HTTP,
	// and nothing in the strict mode.
	lookup = m.result("kb_lookup", map[string]any{"kb": "docs", "q": "how do I install it"})
	_, want = api.do("GET", "/v1/kb/docs/lookup?q="+url.QueryEscape("how do I install it"), "")
	if lookup.IsError || text(lookup) != string(want) || !strings.Contains(text(lookup), "run make build") {
		t.Errorf("kb_lookup ranked: got %q, want the HTTP lookup %q", text(lookup), want)
	}
	lookup = m.result("kb_lookup", map[string]any{"kb": "docs", "q": "how do I install it", "mode": "strict"})
	if lookup.IsError || text(lookup) != "No knowledge found for: how do I install it" {
		t.Errorf("kb_lookup strict: got %q", text(lookup))
	}
	found := m.call("kb_search", map[string]any{"kb": "docs", "q": "installing guides"})
	same(t, "kb_search vs HTTP", found, api.json("GET", "/v1/kb/docs/search?q=installing+guides", ""))
	if es, _ := found["entries"].([]any); len(es) != 1 || es[0].(map[string]any)["identifier"] != "install guide" {
		t.Errorf("kb_search: got %v, want the install guide", found)
	}

	t.Run("Resources", func(t *testing.T) {
		res, err := m.cs.ListResourceTemplates(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var tmpl []string
		for _, rt := range res.ResourceTemplates {
			tmpl = append(tmpl, rt.URITemplate)
		}
		slices.Sort(tmpl)
		same(t, "resource templates", tmpl, []string{"kura://ledgers/{id}", "kura://records/{id}", "kura://scopes/{scope}/nodes/{+ref}"})
		// A ref is written as it is (RFC 6570's {+ref} keeps the colon),
		// and its escaped form names the same node.
		for _, tc := range []struct{ uri, path string }{
			{"kura://records/" + recID, "/v1/records/" + recID},
			{"kura://ledgers/" + outLedger, "/v1/ledgers/" + outLedger},
			{"kura://scopes/hashi/nodes/belief:b1", "/v1/scopes/hashi/memory/nodes/belief:b1"},
			{"kura://scopes/hashi/nodes/belief%3Ab1", "/v1/scopes/hashi/memory/nodes/belief:b1"},
		} {
			rr, err := m.cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: tc.uri})
			if err != nil {
				t.Errorf("read %s: %v", tc.uri, err)
				continue
			}
			if len(rr.Contents) != 1 || rr.Contents[0].MIMEType != "application/json" {
				t.Errorf("read %s: got %+v", tc.uri, rr.Contents)
				continue
			}
			same(t, tc.uri, decode(t, []byte(rr.Contents[0].Text)), api.json("GET", tc.path, ""))
		}
		for _, uri := range []string{"kura://records/0193a1b2-0000-7000-8000-000000000000",
			"kura://scopes/hashi/nodes/belief:nope", "kura://scopes/hashi/nodes/belief:b1/more"} {
			_, err = m.cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: uri})
			if err == nil || !strings.Contains(err.Error(), "not found") {
				t.Errorf("read %s: got %v, want resource not found", uri, err)
			}
		}
	})
}

// TestMCP_ErrorsMatchHTTP sends the same bad input to a tool and to its
// route: the tool error must carry exactly the HTTP error body, and
// nothing may be written.
func TestMCP_ErrorsMatchHTTP(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	api := httpAPI{t, base}
	m := listTools(t, connect(t, base+"/mcp", nil))
	sess := api.json("POST", "/v1/sessions", `{"project":"hashi","name":"errors"}`)
	sid := sess["id"].(string)
	missing := "0193a1b2-0000-7000-8000-000000000000"
	long := strings.Repeat("x", 65537)

	tests := []struct {
		name               string
		tool               string
		args               string
		method, path, body string
		code               string
	}{
		{"BadAuthor", "record_put", `{"type":"agent.thought","content":1,"author_id":"bmo"}`,
			"POST", "/v1/records", `{"type":"agent.thought","content":1,"author_id":"bmo"}`, "invalid_argument"},
		{"UnknownType", "record_put", `{"type":"agent.dream","content":1,"author_id":"agent:bmo"}`,
			"POST", "/v1/records", `{"type":"agent.dream","content":1,"author_id":"agent:bmo"}`, "invalid_argument"},
		{"UnknownField", "record_put", `{"type":"agent.thought","content":1,"author_id":"agent:bmo","colour":"red"}`,
			"POST", "/v1/records", `{"type":"agent.thought","content":1,"author_id":"agent:bmo","colour":"red"}`, "invalid_argument"},
		{"WrongJSONType", "record_put", `{"type":7,"content":1,"author_id":"agent:bmo"}`,
			"POST", "/v1/records", `{"type":7,"content":1,"author_id":"agent:bmo"}`, "invalid_argument"},
		{"BadRecordID", "record_get", `{"id":"nope"}`, "GET", "/v1/records/nope", "", "invalid_argument"},
		{"MissingRecord", "record_get", `{"id":"` + missing + `"}`, "GET", "/v1/records/" + missing, "", "not_found"},
		{"MissingLedger", "ledger_verify", `{"id":"` + missing + `"}`, "GET", "/v1/ledgers/" + missing + "/verify", "", "not_found"},
		{"BadLimit", "session_log", `{"session_id":"` + sid + `","limit":5000}`, "GET", "/v1/sessions/" + sid + "/log?limit=5000", "", "invalid_argument"},
		{"TurnNoInstruction", "turn_open", `{"session_id":"` + sid + `"}`, "POST", "/v1/sessions/" + sid + "/turns", `{}`, "invalid_argument"},
		{"AppendMissingTurn", "turn_append", `{"turn_id":"` + missing + `","records":[]}`, "POST", "/v1/turns/" + missing + "/records", `{"records":[]}`, ""},
		{"CloseBadStatus", "turn_close", `{"turn_id":"` + missing + `","status":"done"}`, "POST", "/v1/turns/" + missing + "/close", `{"status":"done"}`, ""},
		{"Confidence", "memory_put", `{"scope":"hashi","kind":"fact","summary":"x","confidence":1.5}`,
			"POST", "/v1/scopes/hashi/memory/nodes", `{"kind":"fact","summary":"x","confidence":1.5}`, "invalid_argument"},
		{"BadScope", "memory_put", `{"scope":"Not A Slug","kind":"fact","summary":"x"}`,
			"POST", "/v1/scopes/Not%20A%20Slug/memory/nodes", `{"kind":"fact","summary":"x"}`, "invalid_argument"},
		{"SearchKind", "memory_search", `{"scope":"hashi","kind":"dream"}`, "GET", "/v1/scopes/hashi/memory/search?kind=dream", "", "invalid_argument"},
		{"TraceDepth", "memory_trace", `{"scope":"hashi","ref":"belief:b1","depth":11}`, "GET", "/v1/scopes/hashi/provenance/belief:b1?depth=11", "", "invalid_argument"},
		{"TraceDepthText", "memory_trace", `{"scope":"hashi","ref":"belief:b1","depth":"deep"}`, "GET", "/v1/scopes/hashi/provenance/belief:b1?depth=deep", "", "invalid_argument"},
		{"EvidenceMissing", "get_belief_evidence", `{"scope":"hashi","ref":"belief:nope"}`, "GET", "/v1/scopes/hashi/provenance/belief:nope/evidence", "", "not_found"},
		{"CompileAsOf", "context_compile", `{"scope":"hashi","as_of":"yesterday"}`, "POST", "/v1/scopes/hashi/context/compile", `{"as_of":"yesterday"}`, "invalid_argument"},
		{"LookupNoQuestion", "kb_lookup", `{"kb":"docs","q":" "}`, "GET", "/v1/kb/docs/lookup?q=+", "", "invalid_argument"},
		{"KBValueTooLong", "kb_put", `{"kb":"docs","identifier":"a","keys":[],"value":"` + long + `"}`,
			"PUT", "/v1/kb/docs/entries", `{"identifier":"a","keys":[],"value":"` + long + `"}`, "invalid_argument"},
		{"KBLoneSurrogate", "kb_put", `{"kb":"docs","identifier":"\ud83d","keys":[],"value":"v"}`,
			"PUT", "/v1/kb/docs/entries", `{"identifier":"\ud83d","keys":[],"value":"v"}`, "invalid_argument"},
	}
	before := api.json("GET", "/v1/info", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := m.result(tt.tool, json.RawMessage(tt.args))
			if !res.IsError {
				t.Fatalf("got success %s, want a tool error", text(res))
			}
			st, want := api.do(tt.method, tt.path, tt.body)
			if st/100 == 2 {
				t.Fatalf("HTTP accepted the same input: %d %s", st, want)
			}
			got := decode(t, []byte(text(res)))
			same(t, "error body", got, decode(t, want))
			if code := got["error"].(map[string]any)["code"]; tt.code != "" && code != tt.code {
				t.Errorf("got code %v, want %s", code, tt.code)
			}
		})
	}
	after := api.json("GET", "/v1/info", "")
	same(t, "counts after bad calls", after["counts"], before["counts"])
	same(t, "last event after bad calls", after["last_event_seq"], before["last_event_seq"])

	// Arguments that cannot make a request at all are refused before any
	// request is sent, with the API's error shape.
	for _, tc := range []struct{ tool, args, field string }{
		{"record_get", `{}`, "id"},
		{"record_get", `{"id":7}`, "id"},
		{"record_get", `{"id":"x","extra":1}`, "extra"},
		{"memory_trace", `{"scope":"hashi","ref":"belief:b1","depth":[1]}`, "depth"},
		{"context_compile", `{"scope":"hashi","budget":1,"budget_bytes":2}`, "budget"},
	} {
		res := m.result(tc.tool, json.RawMessage(tc.args))
		e, _ := decode(t, []byte(text(res)))["error"].(map[string]any)
		if !res.IsError || e["code"] != "invalid_argument" || e["details"].(map[string]any)["field"] != tc.field {
			t.Errorf("%s %s: got %s, want invalid_argument on %s", tc.tool, tc.args, text(res), tc.field)
		}
	}
}

// TestMCP_ForwardsAuthorization checks that a tool call's API request
// carries the Authorization of the MCP request that made it (each call's
// own, the handler being stateless), and its remote address.
func TestMCP_ForwardsAuthorization(t *testing.T) {
	t.Parallel()
	type seen struct{ auth, remote, path string }
	got := make(chan seen, 10)
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get("Authorization"), r.RemoteAddr, r.URL.Path}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x"}`))
	})
	h := mcpHandler(api)
	srv := newLoopbackServer(t, h)
	token := &headerRT{}
	cs := connect(t, srv+"/mcp", &http.Client{Transport: token})
	for _, tok := range []string{"Bearer first", "Bearer second", ""} {
		token.set(tok)
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "record_get", Arguments: map[string]any{"id": "r1"}})
		if err != nil || res.IsError {
			t.Fatalf("record_get: %v %s", err, text(res))
		}
		s := <-got
		if s.auth != tok || s.path != "/v1/records/r1" {
			t.Errorf("inner request: got Authorization %q on %s, want %q on /v1/records/r1", s.auth, s.path, tok)
		}
		if !strings.HasPrefix(s.remote, "127.0.0.1:") {
			t.Errorf("inner request: got remote address %q, want the MCP client's", s.remote)
		}
	}
	token.set("Bearer third")
	if _, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "kura://scopes/hashi/nodes/belief%3Ab1"}); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s.auth != "Bearer third" || s.path != "/v1/scopes/hashi/memory/nodes/belief:b1" {
		t.Errorf("resource read: got Authorization %q on %s", s.auth, s.path)
	}
}

// headerRT sets the Authorization of every request it sends.
type headerRT struct{ tok atomic.Value }

func (h *headerRT) set(tok string) { h.tok.Store(tok) }

func (h *headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if tok, _ := h.tok.Load().(string); tok != "" {
		r.Header.Set("Authorization", tok)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func mcpHandler(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /mcp", mcp.NewHTTPHandler(mcp.Local(func() http.Handler { return api }), mcp.HTTPOptions{Options: mcp.Options{Version: "test"}}))
	return mux
}

// newLoopbackServer serves h on a real 127.0.0.1 listener and returns its
// base URL.
func newLoopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}
