package mcp_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// enumArgs are the arguments with a fixed value set, by the name they
// carry at any depth of any tool's input schema; each must list its values
// as an enum. type is the record type, status a turn's closing status.
var enumArgs = map[string]bool{
	"type": true, "kind": true, "kinds": true, "lifecycle": true, "authority": true,
	"source_type": true, "direction": true, "status": true, "outcome": true, "mode": true,
}

// schemaWant is what the input schemas must say: the required arguments
// of each tool (what the API refuses a call without), and the enums of
// some arguments, by their path in the schema. "vocab:record_types" and
// "vocab:node_kinds" stand for kurad's configured vocabularies as
// /v1/info reports them.
var schemaWant = map[string]struct {
	required []string
	enums    map[string]any
}{
	"record_put":    {[]string{"author_id", "content", "type"}, map[string]any{"type": "vocab:record_types"}},
	"record_get":    {[]string{"id"}, nil},
	"ledger_verify": {[]string{"id"}, nil},
	"session_log":   {[]string{"session_id"}, nil},
	"turn_open": {[]string{"instruction", "session_id"}, map[string]any{
		"instruction.type": "vocab:record_types", "context[].type": "vocab:record_types"}},
	"turn_append": {[]string{"records", "turn_id"}, map[string]any{"records[].type": "vocab:record_types"}},
	"turn_close":  {[]string{"turn_id"}, map[string]any{"status": []string{"complete", "failed"}}},
	// summary: the API refuses a new node without one, and a schema cannot
	// tell a new node from a new version, so the tool asks for it always
	// (an update resends it, the description says).
	"memory_put": {[]string{"kind", "scope", "summary"}, map[string]any{"kind": "vocab:node_kinds",
		"lifecycle": kura.Lifecycles, "authority": kura.Authorities, "source_type": kura.SourceTypes}},
	"memory_search": {[]string{"scope"}, map[string]any{"kind": "vocab:node_kinds",
		"lifecycle": kura.Lifecycles, "authority": kura.Authorities, "mode": kura.SearchModes}},
	"memory_trace":        {[]string{"ref", "scope"}, map[string]any{"direction": []string{"backward", "forward", "both"}}},
	"get_belief_evidence": {[]string{"ref", "scope"}, nil},
	"context_compile":     {[]string{"scope"}, map[string]any{"kinds[]": "vocab:node_kinds"}},
	"kb_lookup":           {[]string{"kb", "q"}, map[string]any{"mode": []string{"ranked", "strict"}}},
	"kb_search":           {[]string{"kb", "q"}, nil},
	"kb_put":              {[]string{"identifier", "kb", "value"}, nil},
}

// TestMCP_InputSchemas lists kurad's tools and checks every input schema
// the way a form-building client (the MCP Inspector) reads it: every type
// is one type (never a list, never "null": a list makes the Inspector send
// arrays, numbers and booleans as strings), every fixed value set is an
// enum (the node kinds and record types being kurad's configured ones),
// and required lists what the API requires.
func TestMCP_InputSchemas(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	info := httpAPI{t, base}.json("GET", "/v1/info", "")
	vocab := map[string]any{"vocab:record_types": info["record_types"], "vocab:node_kinds": info["node_kinds"]}
	if l, _ := info["node_kinds"].([]any); len(l) != len(kura.NodeKinds) {
		t.Fatalf("/v1/info node_kinds %v, want kurad's %d kinds", info["node_kinds"], len(kura.NodeKinds))
	}
	res, err := connect(t, base+"/mcp", nil).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tl := range res.Tools {
		seen[tl.Name] = true
		want, ok := schemaWant[tl.Name]
		if !ok {
			t.Errorf("tool %s is not in schemaWant", tl.Name)
			continue
		}
		b, err := json.Marshal(tl.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s map[string]any
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		checkPlain(t, tl.Name, "", s)
		var req []string
		for _, r := range asList(s["required"]) {
			req = append(req, r.(string))
		}
		slices.Sort(req)
		if !slices.Equal(req, want.required) {
			t.Errorf("%s: required %v, want %v", tl.Name, req, want.required)
		}
		for path, w := range want.enums {
			if v, ok := w.(string); ok {
				w = vocab[v]
			}
			wb, _ := json.Marshal(w)
			gb, _ := json.Marshal(at(s, path)["enum"])
			if string(gb) != string(wb) {
				t.Errorf("%s: %s has enum %s, want %s", tl.Name, path, gb, wb)
			}
		}
	}
	for name := range schemaWant {
		if !seen[name] {
			t.Errorf("tool %s is missing", name)
		}
	}
}

// checkPlain walks a schema: no type list, no null type, and an enum on
// every argument named in enumArgs.
func checkPlain(t *testing.T, tool, path string, s map[string]any) {
	t.Helper()
	switch ty := s["type"].(type) {
	case nil, string:
		if ty == "null" {
			t.Errorf("%s: %s has type null", tool, path)
		}
	default:
		t.Errorf("%s: %s has type %v, want one type", tool, path, ty)
	}
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		ps, _ := p.(map[string]any)
		checkPlain(t, tool, path+"."+name, ps)
		if enumArgs[name] {
			e := ps
			if ps["type"] == "array" {
				e, _ = ps["items"].(map[string]any)
			}
			if len(asList(e["enum"])) == 0 {
				t.Errorf("%s: %s.%s has no enum", tool, path, name)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if sub, ok := s[k].(map[string]any); ok {
			checkPlain(t, tool, path+"."+k, sub)
		}
	}
}

// at finds a property by a path such as "records[].type" or "kinds[]":
// a name is a property, [] the items of an array.
func at(s map[string]any, path string) map[string]any {
	for _, part := range strings.Split(path, ".") {
		name, arr := strings.CutSuffix(part, "[]")
		props, _ := s["properties"].(map[string]any)
		s, _ = props[name].(map[string]any)
		if arr {
			s, _ = s["items"].(map[string]any)
		}
	}
	return s
}

func asList(v any) []any { l, _ := v.([]any); return l }
