package api_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

// provPath is the trace route of ref in scope, with an optional suffix
// (evidence, raw-sources, derived) or query.
func provPath(scope, ref, rest string) string {
	return "/v1/scopes/" + scope + "/provenance/" + ref + rest
}

// provSeed writes the acceptance example through the API: three records,
// an episode promoted from each, and a belief consolidated from the three.
// Titles start with the scope, so a test can tell whose node it sees.
func (c *apiClient) provSeed(scope string) []kura.Record {
	c.tb.Helper()
	recs := decode[struct{ Records []kura.Record }](c.tb, c.mustPost("/v1/records/batch", `{"records":[
		{"type":"agent.thought","content":"Finished implementing user endpoints today","author_id":"agent:bmo"},
		{"type":"agent.thought","content":"Rewrote payments module to be RESTful","author_id":"agent:bmo"},
		{"type":"agent.thought","content":{"text":"All services now REST"},"author_id":"agent:bmo"}]}`, 201)).Records
	for i, r := range recs {
		c.mustPost("/v1/scopes/"+scope+"/memory/nodes", fmt.Sprintf(
			`{"kind":"episode","id":"ep%d","title":"%s: episode %d","summary":"s","source_type":"promote","derived_from":["record:%s"]}`, i+1, scope, i+1, r.ID), 201)
	}
	c.mustPost("/v1/scopes/"+scope+"/memory/nodes", `{"kind":"belief","id":"rest","title":"`+scope+`: API endpoints should be RESTful",
		"summary":"s","source_type":"consolidation","derived_from":["episode:ep1","episode:ep2","episode:ep3"]}`, 201)
	return recs
}

// treeRefs lists the refs of a decoded tree depth first, "*" marking shared.
func treeRefs(items []any) []string {
	var out []string
	for _, x := range items {
		m := x.(map[string]any)
		s := m["ref"].(string)
		if m["shared"] == true {
			s += "*"
		}
		out = append(out, s)
		for _, k := range []string{"sources", "derived"} {
			if kids, ok := m[k].([]any); ok {
				out = append(out, treeRefs(kids)...)
			}
		}
	}
	return out
}

func TestProvenance_Routes(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	recs := c.provSeed("hashi")
	rec := func(i int) string { return "record:" + recs[i].ID }

	t.Run("TraceBackward", func(t *testing.T) {
		m := decode[map[string]any](t, c.mustGet(provPath("hashi", "belief:rest", "?direction=backward&depth=3")))
		if _, ok := m["forward"]; ok {
			t.Errorf("direction=backward answered forward: %v", m)
		}
		if mem := m["memory"].(map[string]any); mem["ref"] != "belief:rest" || mem["scope"] != "hashi" || mem["version"] != 1.0 {
			t.Errorf("memory: got %v, want the node", mem)
		}
		b := m["backward"].(map[string]any)
		if b["source_type"] != "consolidation" || b["created_at"] == "" || m["truncated"] != false {
			t.Errorf("backward header: got %v, truncated %v", b, m["truncated"])
		}
		want := []string{"episode:ep1", rec(0), "episode:ep2", rec(1), "episode:ep3", rec(2)}
		if got := treeRefs(b["sources"].([]any)); !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
		r := b["sources"].([]any)[0].(map[string]any)["sources"].([]any)[0].(map[string]any)
		for k, want := range map[string]any{"kind": "record", "text": "Finished implementing user endpoints today",
			"type": "agent.thought", "author_id": "agent:bmo", "source_type": "direct_experience", "depth": 2.0} {
			if r[k] != want {
				t.Errorf("record item %s: got %v, want %v", k, r[k], want)
			}
		}
		if r := b["sources"].([]any)[2].(map[string]any)["sources"].([]any)[0].(map[string]any); r["text"] != `{"text":"All services now REST"}` {
			t.Errorf("object content: got text %v", r["text"])
		}
	})

	t.Run("DefaultsAndEscapedColon", func(t *testing.T) {
		for _, path := range []string{provPath("hashi", "episode:ep1", ""), provPath("hashi", "episode%3Aep1", "")} {
			m := decode[map[string]any](t, c.mustGet(path))
			if m["direction"] != "both" || m["depth"] != 3.0 || m["backward"] == nil || m["forward"] == nil {
				t.Fatalf("%s: got %v, want both directions at depth 3", path, m)
			}
			if got := treeRefs(m["forward"].(map[string]any)["derived"].([]any)); !slices.Equal(got, []string{"belief:rest"}) {
				t.Errorf("%s forward: got %v", path, got)
			}
		}
	})

	t.Run("RecordForward", func(t *testing.T) {
		m := decode[map[string]any](t, c.mustGet(provPath("hashi", rec(1), "?direction=forward")))
		if _, ok := m["backward"]; ok {
			t.Errorf("direction=forward answered backward: %v", m)
		}
		if mem := m["memory"].(map[string]any); mem["ref"] != rec(1) || mem["kind"] != "record" {
			t.Errorf("memory: got %v, want the record item", mem)
		}
		if got := treeRefs(m["forward"].(map[string]any)["derived"].([]any)); !slices.Equal(got, []string{"episode:ep2", "belief:rest"}) {
			t.Errorf("got %v", got)
		}
	})

	t.Run("Evidence", func(t *testing.T) {
		e := decode[kura.Evidence](t, c.mustGet(provPath("hashi", "belief:rest", "/evidence")))
		if len(e.Evidence.Episodes) != 3 || len(e.Evidence.RawEntries) != 3 || len(e.Evidence.Notes) != 0 ||
			e.TotalEvidenceCount != 6 || e.DirectEpisodes != 3 || e.SourceRawEntries != 3 || e.Ref != "belief:rest" {
			t.Errorf("got %+v", e)
		}
		raw := string(c.mustGet(provPath("hashi", "belief:rest", "/evidence")))
		if !strings.Contains(raw, `"notes":[]`) {
			t.Errorf("empty notes should be [], got %s", raw)
		}
	})

	t.Run("RawSources", func(t *testing.T) {
		rs := decode[kura.RawSources](t, c.mustGet(provPath("hashi", "belief:rest", "/raw-sources")))
		var got []string
		for _, r := range rs.RawSources {
			got = append(got, r.ID)
		}
		if want := []string{recs[0].ID, recs[1].ID, recs[2].ID}; !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})

	t.Run("Derived", func(t *testing.T) {
		d := decode[kura.Derived](t, c.mustGet(provPath("hashi", rec(2), "/derived")))
		var got []string
		for _, x := range d.Derived {
			got = append(got, fmt.Sprintf("%s@%d", x.Ref, x.Depth))
		}
		if want := []string{"episode:ep3@1", "belief:rest@2"}; !slices.Equal(got, want) || d.Count != 2 {
			t.Errorf("got %v, want %v", got, want)
		}
	})

	t.Run("Diamond", func(t *testing.T) {
		c.mustPost("/v1/scopes/dia/memory/nodes", `{"kind":"note","id":"x","summary":"s","derived_from":["`+rec(0)+`"]}`, 201)
		c.mustPost("/v1/scopes/dia/memory/nodes", `{"kind":"episode","id":"a","summary":"s","derived_from":["note:x"]}`, 201)
		c.mustPost("/v1/scopes/dia/memory/nodes", `{"kind":"episode","id":"b","summary":"s","derived_from":["note:x"]}`, 201)
		c.mustPost("/v1/scopes/dia/memory/nodes", `{"kind":"belief","id":"top","summary":"s","derived_from":["episode:a","episode:b"]}`, 201)
		m := decode[map[string]any](t, c.mustGet(provPath("dia", "belief:top", "?direction=backward&depth=10")))
		got := treeRefs(m["backward"].(map[string]any)["sources"].([]any))
		if want := []string{"episode:a", "note:x", rec(0), "episode:b", "note:x*"}; !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})

	t.Run("CycleIsRefusedAndWritesNothing", func(t *testing.T) {
		before := c.memState("hashi")
		st, m, raw := c.post("/v1/scopes/hashi/memory/nodes", `{"kind":"episode","id":"ep1","derived_from":["belief:rest"]}`)
		if st != 400 {
			t.Fatalf("got %d %s, want 400", st, raw)
		}
		if e := m["error"].(map[string]any); e["code"] != "invalid_argument" || e["details"].(map[string]any)["field"] != "derived_from" || !strings.Contains(e["message"].(string), "cycle") {
			t.Errorf("got %v, want a cycle error on derived_from", e)
		}
		if after := c.memState("hashi"); after != before {
			t.Errorf("a refused cycle changed state:\nbefore %s\nafter  %s", before, after)
		}
	})

	t.Run("DeepChain", func(t *testing.T) {
		nodes := make([]string, 300)
		for i := range nodes {
			from := rec(0)
			if i > 0 {
				from = fmt.Sprintf("note:n%d", i-1)
			}
			nodes[i] = fmt.Sprintf(`{"kind":"note","id":"n%d","summary":"step %d","derived_from":[%q]}`, i, i, from)
		}
		c.mustPost("/v1/scopes/deep/memory/nodes/batch", `{"nodes":[`+strings.Join(nodes, ",")+`]}`, 201)
		m := decode[map[string]any](t, c.mustGet(provPath("deep", "note:n299", "?direction=backward&depth=10")))
		got := treeRefs(m["backward"].(map[string]any)["sources"].([]any))
		if len(got) != 10 || got[9] != "note:n289" || m["truncated"] != true {
			t.Errorf("got %d levels ending %v, truncated %v; want 10 ending note:n289, truncated", len(got), got[len(got)-1], m["truncated"])
		}
		d := decode[kura.Derived](t, c.mustGet(provPath("deep", rec(0), "/derived")))
		if d.Count != 300 || d.Derived[299].Ref != "note:n299" || d.Derived[299].Depth != 300 {
			t.Errorf("derived: got %d, last %+v", d.Count, d.Derived[len(d.Derived)-1])
		}
	})

	t.Run("ScopesNeverMeet", func(t *testing.T) {
		// Same ids as hashi, citing the same records.
		c.provSeed("other")
		for _, scope := range []string{"hashi", "other"} {
			raw := c.mustGet(provPath(scope, rec(0), "?direction=forward&depth=10"))
			m := decode[map[string]any](t, raw)
			if got := treeRefs(m["forward"].(map[string]any)["derived"].([]any)); !slices.Equal(got, []string{"episode:ep1", "belief:rest"}) {
				t.Errorf("%s: got %v, want this scope's two nodes only", scope, got)
			}
			var tr kura.Trace
			if err := json.Unmarshal(raw, &tr); err != nil {
				t.Fatal(err)
			}
			for _, it := range append(tr.Forward.Derived, tr.Forward.Derived[0].Derived...) {
				if !strings.HasPrefix(*it.Title, scope+":") {
					t.Errorf("trace in %s shows %s titled %q", scope, it.Ref, *it.Title)
				}
			}
		}
		if _, m, _ := c.get(provPath("other", "note:x", "")); m["error"].(map[string]any)["code"] != "not_found" {
			t.Errorf("a node of scope dia traced in other: got %v, want not_found", m)
		}
	})
}

func TestProvenance_BadInput(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	recs := c.provSeed("hashi")
	cases := []struct {
		name, path  string
		status      int
		code, field string
	}{
		{"DepthZero", provPath("hashi", "belief:rest", "?depth=0"), 400, "invalid_argument", "depth"},
		{"DepthEleven", provPath("hashi", "belief:rest", "?depth=11"), 400, "invalid_argument", "depth"},
		{"DepthNotANumber", provPath("hashi", "belief:rest", "?depth=three"), 400, "invalid_argument", "depth"},
		{"Direction", provPath("hashi", "belief:rest", "?direction=sideways"), 400, "invalid_argument", "direction"},
		{"RefWithoutColon", provPath("hashi", "belief", ""), 400, "invalid_argument", "ref"},
		{"UnknownKind", provPath("hashi", "dream:rest", "/evidence"), 400, "invalid_argument", "ref"},
		{"RecordNotUUID", provPath("hashi", "record:xyz", "/raw-sources"), 400, "invalid_argument", "ref"},
		{"BadScope", provPath("Hashi", "belief:rest", "/derived"), 400, "invalid_argument", "scope"},
		{"UnknownNode", provPath("hashi", "belief:nope", ""), 404, "not_found", ""},
		{"UnknownScope", provPath("nowhere", "belief:rest", "/evidence"), 404, "not_found", ""},
		{"UnknownRecord", provPath("hashi", "record:01a1fdca-0000-7000-8000-000000000000", "/derived"), 404, "not_found", ""},
		{"NoWrites", "/v1/scopes/hashi/provenance/belief:rest", 405, "method_not_allowed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := "GET"
			if tc.status == 405 {
				method = "POST"
			}
			st, m, raw := c.do(method, tc.path, "application/json", nil)
			if st != tc.status {
				t.Fatalf("status: got %d, want %d (%s)", st, tc.status, raw)
			}
			e := m["error"].(map[string]any)
			if e["code"] != tc.code {
				t.Errorf("code: got %v, want %s", e["code"], tc.code)
			}
			if tc.field != "" {
				if d, _ := e["details"].(map[string]any); d["field"] != tc.field {
					t.Errorf("field: got %v, want %s (%s)", e["details"], tc.field, raw)
				}
			}
		})
	}
	// A record cited nowhere in a scope still answers, with no lineage.
	m := decode[map[string]any](t, c.mustGet(provPath("elsewhere", "record:"+recs[0].ID, "")))
	if len(m["backward"].(map[string]any)["sources"].([]any)) != 0 || len(m["forward"].(map[string]any)["derived"].([]any)) != 0 {
		t.Errorf("got %v, want empty lineage", m)
	}
}
