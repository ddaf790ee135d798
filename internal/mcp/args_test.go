package mcp

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

func specNamed(tb testing.TB, name string) *spec {
	tb.Helper()
	for i := range tools {
		if tools[i].name == name {
			return &tools[i]
		}
	}
	tb.Fatalf("no tool %s", name)
	return nil
}

func TestDecodeArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tool, args string
		method, target   string
		body             string // compared as JSON; "" for none
		idem             string
		field            string // set: an invalid_argument naming it
	}{
		{"Body", "record_put", `{"type":"agent.thought","content":{"a":"<b>"},"author_id":"agent:bmo"}`,
			"POST", "/v1/records", `{"type":"agent.thought","content":{"a":"<b>"},"author_id":"agent:bmo"}`, "", ""},
		{"BodyKeepsUnknownForTheAPI", "record_put", `{"colour":1}`, "POST", "/v1/records", `{"colour":1}`, "", ""},
		{"EmptyBody", "context_compile", `{"scope":"hashi"}`, "POST", "/v1/scopes/hashi/context/compile", `{}`, "", ""},
		{"NullArgs", "record_get", `null`, "", "", "", "", "id"},
		{"NoArgs", "record_get", ``, "", "", "", "", "id"},
		{"PathEscaped", "record_get", `{"id":"a/b?c"}`, "GET", "/v1/records/a%2Fb%3Fc", "", "", ""},
		{"RefKeepsColon", "memory_trace", `{"scope":"hashi","ref":"belief:b1","depth":2,"direction":"backward"}`,
			"GET", "/v1/scopes/hashi/provenance/belief:b1?depth=2&direction=backward", "", "", ""},
		{"NumberSpelling", "memory_search", `{"scope":"s","min_confidence":5e-1,"limit":10}`,
			"GET", "/v1/scopes/s/memory/search?limit=10&min_confidence=5e-1", "", "", ""},
		{"BoolQuery", "kb_lookup", `{"kb":"docs","q":true}`, "GET", "/v1/kb/docs/lookup?q=true", "", "", ""},
		{"NullQueryOmitted", "session_log", `{"session_id":"s1","cursor":null}`, "GET", "/v1/sessions/s1/log", "", "", ""},
		{"Idempotency", "kb_put", `{"kb":"docs","identifier":"a","keys":[],"value":"v","idempotency_key":"k1"}`,
			"PUT", "/v1/kb/docs/entries", `{"identifier":"a","keys":[],"value":"v"}`, "k1", ""},
		{"Alias", "context_compile", `{"scope":"s","budget":10}`, "POST", "/v1/scopes/s/context/compile", `{"budget_bytes":10}`, "", ""},
		{"AliasAndName", "context_compile", `{"scope":"s","budget":10,"budget_bytes":5}`, "", "", "", "", "budget"},
		{"MissingPath", "memory_put", `{"kind":"fact"}`, "", "", "", "", "scope"},
		{"EmptyPath", "memory_put", `{"scope":"","kind":"fact"}`, "", "", "", "", "scope"},
		{"PathNotString", "turn_close", `{"turn_id":42}`, "", "", "", "", "turn_id"},
		{"QueryObject", "memory_trace", `{"scope":"s","ref":"r","depth":{}}`, "", "", "", "", "depth"},
		{"StrayOnGet", "ledger_verify", `{"id":"l","zz":1,"aa":2}`, "", "", "", "", "aa"},
		{"IdempotencyOnGetIsStray", "record_get", `{"id":"r","idempotency_key":"k"}`, "", "", "", "", "idempotency_key"},
		{"IdempotencyNotString", "record_put", `{"idempotency_key":1}`, "", "", "", "", "idempotency_key"},
		{"NotObject", "record_put", `[1]`, "", "", "", "", ""},
		{"Malformed", "record_put", `{"a":`, "", "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := decodeArgs(specNamed(t, tt.tool), json.RawMessage(tt.args))
			if tt.method == "" {
				var ke *kura.Error
				if !errors.As(err, &ke) || ke.Code != kura.EInvalid {
					t.Fatalf("got %v, %v; want invalid_argument", c, err)
				}
				if f, _ := ke.Details["field"].(string); f != tt.field {
					t.Errorf("got field %q, want %q (%v)", f, tt.field, ke)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.method != tt.method || c.target != tt.target {
				t.Errorf("got %s %s, want %s %s", c.method, c.target, tt.method, tt.target)
			}
			if got := c.header.Get("Idempotency-Key"); got != tt.idem {
				t.Errorf("got Idempotency-Key %q, want %q", got, tt.idem)
			}
			if tt.body == "" {
				if c.body != nil {
					t.Errorf("got body %s, want none", c.body)
				}
				return
			}
			var got, want any
			if err := json.Unmarshal(c.body, &got); err != nil {
				t.Fatalf("body %s: %v", c.body, err)
			}
			json.Unmarshal([]byte(tt.body), &want)
			if g, _ := json.Marshal(got); string(g) != mustCompact(tt.body) {
				t.Errorf("got body %s, want %s", c.body, tt.body)
			}
			if c.header.Get("Content-Type") != "application/json" {
				t.Errorf("got Content-Type %q", c.header.Get("Content-Type"))
			}
		})
	}
}

func mustCompact(s string) string {
	var v any
	json.Unmarshal([]byte(s), &v)
	b, _ := json.Marshal(v)
	return string(b)
}

// TestTools_SpecsMatchSchemas keeps the routing and the documented
// arguments together: every path and query argument is in the input
// schema and required when it fills the path; a tool without a body has no
// other argument.
func TestTools_SpecsMatchSchemas(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := range tools {
		sp := &tools[i]
		if seen[sp.name] {
			t.Errorf("tool %s twice", sp.name)
		}
		seen[sp.name] = true
		tl := sp.tool(enumValues(Options{RecordTypes: kura.DefaultRecordTypes, NodeKinds: kura.NodeKinds}))
		b, _ := json.Marshal(tl.InputSchema)
		var in struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		json.Unmarshal(b, &in)
		routed := append(sp.pathArgs(), sp.query...)
		for _, a := range sp.pathArgs() {
			if !slices.Contains(in.Required, a) {
				t.Errorf("%s: path argument %s is not required by the schema", sp.name, a)
			}
		}
		for _, a := range routed {
			if _, ok := in.Properties[a]; !ok {
				t.Errorf("%s: argument %s is routed but not in the schema", sp.name, a)
			}
		}
		for a := range in.Properties {
			if !sp.body && !slices.Contains(routed, a) {
				t.Errorf("%s: argument %s is documented but has nowhere to go", sp.name, a)
			}
			if a == idempotencyArg && sp.method == "GET" {
				t.Errorf("%s: a read documents %s", sp.name, a)
			}
		}
		if sp.method != "GET" && sp.body {
			if _, ok := in.Properties[idempotencyArg]; !ok {
				t.Errorf("%s: a write without %s", sp.name, idempotencyArg)
			}
		}
		if (sp.out == nil) != sp.text || (tl.OutputSchema == nil) != sp.text {
			t.Errorf("%s: an answer is either JSON with an output schema or text", sp.name)
		}
	}
}

// FuzzDecodeArgs checks that any arguments either make a request whose
// path holds each path argument as exactly one segment and whose body is
// a JSON object without the routed arguments, or are refused with an
// invalid_argument; never a panic.
func FuzzDecodeArgs(f *testing.F) {
	f.Add(uint8(0), []byte(`{"type":"agent.thought","content":1,"author_id":"agent:bmo"}`))
	f.Add(uint8(9), []byte(`{"scope":"hashi","ref":"belief:b1","depth":3}`))
	f.Add(uint8(13), []byte(`{"kb":"docs","identifier":"a b","keys":["k"],"value":"v","idempotency_key":"x"}`))
	f.Fuzz(func(t *testing.T, n uint8, raw []byte) {
		sp := &tools[int(n)%len(tools)]
		c, err := decodeArgs(sp, raw)
		if err != nil {
			var ke *kura.Error
			if !errors.As(err, &ke) || ke.Code != kura.EInvalid {
				t.Fatalf("got %v, want an invalid_argument", err)
			}
			return
		}
		u, err := url.Parse(c.target)
		if err != nil {
			t.Fatalf("target %q: %v", c.target, err)
		}
		want := strings.Count(sp.path, "/")
		if got := strings.Count(u.EscapedPath(), "/"); got != want {
			t.Fatalf("target %q has %d segments, the route %d", c.target, got, want)
		}
		var args map[string]json.RawMessage
		json.Unmarshal(raw, &args)
		for _, a := range sp.pathArgs() {
			var v string
			json.Unmarshal(args[a], &v)
			if !strings.Contains(u.EscapedPath(), "/"+url.PathEscape(v)) {
				t.Fatalf("target %q lacks path argument %s=%q", c.target, a, v)
			}
		}
		if !sp.body {
			if c.body != nil {
				t.Fatalf("a route without a body got %s", c.body)
			}
			return
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(c.body, &body); err != nil {
			t.Fatalf("body %q is not a JSON object: %v", c.body, err)
		}
		for _, a := range append(sp.pathArgs(), sp.query...) {
			if _, ok := body[a]; ok {
				t.Fatalf("routed argument %s also in the body %s", a, c.body)
			}
		}
	})
}
