package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// memState is everything a memory write could change: the daemon's counts
// and last event seq (every memory write appends an event) and the nodes
// and relations of the scopes the tests use, current versions included.
func (c *apiClient) memState(scopes ...string) string {
	c.tb.Helper()
	var b strings.Builder
	b.WriteString(c.state())
	for _, s := range scopes {
		b.Write(c.mustGet("/v1/scopes/" + s + "/memory/nodes?limit=1000"))
		b.Write(c.mustGet("/v1/scopes/" + s + "/memory/relations?limit=1000"))
	}
	return b.String()
}

// send posts body with an Idempotency-Key (none when key is empty) and
// returns the answer as it came, headers included.
func (c *apiClient) send(path, key, body string) (int, http.Header, []byte) {
	c.tb.Helper()
	req, err := http.NewRequest("POST", c.base+path, strings.NewReader(body))
	if err != nil {
		c.tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.tb.Fatal(err)
	}
	return resp.StatusCode, resp.Header, raw
}

const acmeMem = "/v1/scopes/acme/memory"

func TestMemory_StatusCodes(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	n := decode[kura.Node](t, c.mustPost(acmeMem+"/nodes", `{"kind":"belief","id":"pay.retry-v2","title":"Payments retry","summary":"retry thrice","confidence":0.6,"target_files":["pay/retry.go"],"owner":"agent:bmo","metadata":{"team":"payments"}}`, 201))
	if n.Ref != "belief:pay.retry-v2" || n.Scope != "acme" || n.Version != 1 || n.Lifecycle != "candidate" || n.Authority != "unknown" || n.SourceType != "direct_experience" {
		t.Fatalf("new node: got %+v, want version 1 with the contract's defaults", n)
	}

	// Writing the node again is a new version, 200, and what the body
	// leaves out keeps its value.
	v2 := decode[kura.Node](t, c.mustPost(acmeMem+"/nodes", `{"kind":"belief","id":"pay.retry-v2","confidence":0.9,"reason":"seen in prod"}`, 200))
	if v2.Version != 2 || v2.Confidence != 0.9 || v2.Title != n.Title || v2.Summary != n.Summary || strVal(v2.Owner) != "agent:bmo" ||
		!slices.Equal(v2.TargetFiles, n.TargetFiles) || string(v2.Metadata) != `{"team":"payments"}` || v2.CreatedAt != n.CreatedAt {
		t.Fatalf("new version: got %+v, want version 2 keeping the omitted fields of %+v", v2, n)
	}

	batch := decode[kura.NodeBatch](t, c.mustPost(acmeMem+"/nodes/batch", `{"nodes":[
		{"kind":"fact","id":"f1","summary":"the gateway times out after 30s"},
		{"kind":"decision","id":"d1","summary":"retry with backoff","derived_from":["fact:f1","belief:pay.retry-v2"]}]}`, 201))
	if len(batch.Nodes) != 2 || batch.Nodes[1].Ref != "decision:d1" || !slices.Equal(batch.Nodes[1].DerivedFrom, []string{"fact:f1", "belief:pay.retry-v2"}) {
		t.Fatalf("batch: got %+v, want f1 then d1 derived from f1 and the belief", batch.Nodes)
	}
	// A batch rewriting existing nodes is still 201: the batch answer is
	// one created list.
	c.mustPost(acmeMem+"/nodes/batch", `{"nodes":[{"kind":"fact","id":"f1","confidence":0.8}]}`, 201)

	tr := decode[kura.Node](t, c.mustPost(acmeMem+"/nodes/belief:pay.retry-v2/transition", `{"lifecycle":"active","authority":"trusted","reason":"reviewed"}`, 200))
	if tr.Lifecycle != "active" || tr.Authority != "trusted" || tr.Version != 3 {
		t.Fatalf("transition: got %+v, want active, trusted, version 3", tr)
	}
	rev := decode[kura.Revision](t, c.mustPost(acmeMem+"/nodes/belief:pay.retry-v2/revise", `{"id":"pay.retry-v3","summary":"retry twice, then fail over"}`, 201))
	if rev.Node == nil || rev.Node.Ref != "belief:pay.retry-v3" || rev.Node.SourceType != "revision" || !slices.Equal(rev.Node.DerivedFrom, []string{"belief:pay.retry-v2"}) ||
		rev.Node.Title != "Payments retry" || rev.Node.Confidence != 0.9 {
		t.Fatalf("revise node: got %+v, want a revision derived from the old node, carrying its title and confidence", rev.Node)
	}
	if rev.Superseded == nil || rev.Superseded.Lifecycle != "retired" || rev.Superseded.Version != 4 {
		t.Fatalf("revise superseded: got %+v, want the old node retired as version 4", rev.Superseded)
	}
	if r := rev.Relation; r == nil || r.Kind != "supersedes" || r.From != "belief:pay.retry-v3" || r.To != "belief:pay.retry-v2" || r.Confidence != 1 {
		t.Fatalf("revise relation: got %+v, want v3 supersedes v2 with confidence 1", r)
	}

	rel := decode[kura.Relation](t, c.mustPost(acmeMem+"/relations", `{"id":"r.1","kind":"supports","from":"fact:f1","to":"decision:d1","reasons":["timeouts seen"]}`, 201))
	if rel.ID != "r.1" || rel.Confidence != 0.7 || rel.Scope != "acme" || !slices.Equal(rel.Reasons, []string{"timeouts seen"}) {
		t.Fatalf("relation: got %+v, want r.1 with the default confidence 0.7", rel)
	}
	fb := decode[kura.Feedback](t, c.mustPost(acmeMem+"/feedback", `{"ref":"decision:d1","outcome":"positive","note":"worked","author_id":"agent:bmo"}`, 201))
	if fb.ID == "" || fb.Ref != "decision:d1" || fb.Outcome != "positive" || fb.Scope != "acme" {
		t.Fatalf("feedback: got %+v", fb)
	}

	for _, path := range []string{
		acmeMem + "/nodes", acmeMem + "/nodes/belief:pay.retry-v3", acmeMem + "/nodes/belief:pay.retry-v2/history",
		acmeMem + "/relations", acmeMem + "/relations?ref=decision:d1", acmeMem + "/search?q=retry",
	} {
		c.mustGet(path)
	}
	rels := decode[struct{ Relations []kura.Relation }](t, c.mustGet(acmeMem+"/relations?ref=belief:pay.retry-v2"))
	if len(rels.Relations) != 1 || rels.Relations[0].Kind != "supersedes" {
		t.Fatalf("relations of the old node: got %+v, want the supersedes one", rels.Relations)
	}
}

func strVal(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestMemory_BadInputWritesNothing(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	c.mustPost(acmeMem+"/nodes/batch", `{"nodes":[
		{"kind":"belief","id":"b1","summary":"root"},
		{"kind":"fact","id":"f1","summary":"child","derived_from":["belief:b1"]},
		{"kind":"note","id":"old","summary":"to be revised"}]}`, 201)
	c.mustPost(acmeMem+"/nodes/note:old/revise", `{"id":"new","summary":"revised"}`, 201)
	c.mustPost(acmeMem+"/relations", `{"id":"r1","kind":"supports","from":"fact:f1","to":"belief:b1"}`, 201)
	c.mustPost("/v1/scopes/other/memory/nodes", `{"kind":"belief","id":"elsewhere","summary":"another scope"}`, 201)

	const js = "application/json"
	long := strings.Repeat("w", 1025)
	cases := []struct {
		name, method, path, ct, body string
		status                       int
		code, field                  string
	}{
		// POST .../nodes
		{"put malformed JSON", "POST", acmeMem + "/nodes", js, `{"kind":`, 400, "invalid_argument", ""},
		{"put two values", "POST", acmeMem + "/nodes", js, `{"kind":"belief","summary":"x"} {}`, 400, "invalid_argument", ""},
		{"put unknown field", "POST", acmeMem + "/nodes", js, `{"kind":"belief","summary":"x","colour":"red"}`, 400, "invalid_argument", "colour"},
		{"put not JSON", "POST", acmeMem + "/nodes", "text/plain", `{"kind":"belief","summary":"x"}`, 415, "unsupported_media_type", ""},
		{"put unknown kind", "POST", acmeMem + "/nodes", js, `{"kind":"dream","summary":"x"}`, 400, "invalid_argument", "kind"},
		{"put unknown lifecycle", "POST", acmeMem + "/nodes", js, `{"kind":"belief","summary":"x","lifecycle":"zombie"}`, 400, "invalid_argument", "lifecycle"},
		{"put unknown authority", "POST", acmeMem + "/nodes", js, `{"kind":"belief","summary":"x","authority":"god"}`, 400, "invalid_argument", "authority"},
		{"put unknown source type", "POST", acmeMem + "/nodes", js, `{"kind":"belief","summary":"x","source_type":"dream"}`, 400, "invalid_argument", "source_type"},
		{"put confidence above 1", "POST", acmeMem + "/nodes", js, `{"kind":"belief","summary":"x","confidence":1.5}`, 400, "invalid_argument", "confidence"},
		{"put confidence below 0", "POST", acmeMem + "/nodes", js, `{"kind":"belief","summary":"x","confidence":-0.1}`, 400, "invalid_argument", "confidence"},
		{"put existing node confidence above 1", "POST", acmeMem + "/nodes", js, `{"kind":"belief","id":"b1","confidence":1.5}`, 400, "invalid_argument", "confidence"},
		{"put bad id", "POST", acmeMem + "/nodes", js, `{"kind":"belief","id":"-b","summary":"x"}`, 400, "invalid_argument", "id"},
		{"put id with colon", "POST", acmeMem + "/nodes", js, `{"kind":"belief","id":"a:b","summary":"x"}`, 400, "invalid_argument", "id"},
		{"put new node without summary", "POST", acmeMem + "/nodes", js, `{"kind":"belief","id":"nosum"}`, 400, "invalid_argument", "summary"},
		{"put bad owner", "POST", acmeMem + "/nodes", js, `{"kind":"belief","summary":"x","owner":"bmo"}`, 400, "invalid_argument", "owner"},
		{"put metadata not an object", "POST", acmeMem + "/nodes", js, `{"kind":"belief","summary":"x","metadata":[1]}`, 400, "invalid_argument", "metadata"},
		{"put derived_from not a ref", "POST", acmeMem + "/nodes", js, `{"kind":"belief","summary":"x","derived_from":["b1"]}`, 400, "invalid_argument", "derived_from"},
		{"put derived_from missing", "POST", acmeMem + "/nodes", js, `{"kind":"belief","summary":"x","derived_from":["belief:b1","belief:ghost","record:0193a000-0000-7000-8000-000000000000"]}`, 400, "invalid_argument", "derived_from"},
		{"put derived_from another scope", "POST", acmeMem + "/nodes", js, `{"kind":"belief","summary":"x","derived_from":["belief:elsewhere"]}`, 400, "invalid_argument", "derived_from"},
		{"put derived from itself", "POST", acmeMem + "/nodes", js, `{"kind":"belief","id":"b1","derived_from":["belief:b1"]}`, 400, "invalid_argument", "derived_from"},
		{"put closing a cycle", "POST", acmeMem + "/nodes", js, `{"kind":"belief","id":"b1","derived_from":["fact:f1"]}`, 400, "invalid_argument", "derived_from"},
		{"put bad scope", "POST", "/v1/scopes/Acme/memory/nodes", js, `{"kind":"belief","summary":"x"}`, 400, "invalid_argument", "scope"},
		// POST .../nodes/batch
		{"batch empty", "POST", acmeMem + "/nodes/batch", js, `{"nodes":[]}`, 400, "invalid_argument", "nodes"},
		{"batch unknown field", "POST", acmeMem + "/nodes/batch", js, `{"nodes":[],"extra":1}`, 400, "invalid_argument", "extra"},
		{"batch one bad node", "POST", acmeMem + "/nodes/batch", js, `{"nodes":[{"kind":"belief","id":"ok1","summary":"x"},{"kind":"belief","summary":"x","confidence":1.5}]}`, 400, "invalid_argument", "nodes[1].confidence"},
		{"batch missing parent", "POST", acmeMem + "/nodes/batch", js, `{"nodes":[{"kind":"belief","id":"ok2","summary":"x"},{"kind":"belief","summary":"x","derived_from":["belief:ghost"]}]}`, 400, "invalid_argument", "nodes[1].derived_from"},
		{"batch bad scope", "POST", "/v1/scopes/a%20b/memory/nodes/batch", js, `{"nodes":[{"kind":"belief","summary":"x"}]}`, 400, "invalid_argument", "scope"},
		// GET .../nodes
		{"list unknown kind", "GET", acmeMem + "/nodes?kind=dream", "", ``, 400, "invalid_argument", "kind"},
		{"list unknown lifecycle", "GET", acmeMem + "/nodes?lifecycle=zombie", "", ``, 400, "invalid_argument", "lifecycle"},
		{"list unknown authority", "GET", acmeMem + "/nodes?authority=god", "", ``, 400, "invalid_argument", "authority"},
		{"list bad owner", "GET", acmeMem + "/nodes?owner=bmo", "", ``, 400, "invalid_argument", "owner"},
		{"list min_confidence above 1", "GET", acmeMem + "/nodes?min_confidence=1.5", "", ``, 400, "invalid_argument", "min_confidence"},
		{"list min_confidence not a number", "GET", acmeMem + "/nodes?min_confidence=high", "", ``, 400, "invalid_argument", "min_confidence"},
		{"list bad updated_since", "GET", acmeMem + "/nodes?updated_since=yesterday", "", ``, 400, "invalid_argument", "updated_since"},
		{"list bad limit", "GET", acmeMem + "/nodes?limit=5000", "", ``, 400, "invalid_argument", "limit"},
		{"list bad cursor", "GET", acmeMem + "/nodes?cursor=bm9wZQ", "", ``, 400, "invalid_argument", "cursor"},
		{"list bad scope", "GET", "/v1/scopes/-x/memory/nodes", "", ``, 400, "invalid_argument", "scope"},
		// GET .../nodes/{ref}
		{"get ref without kind", "GET", acmeMem + "/nodes/b1", "", ``, 400, "invalid_argument", "ref"},
		{"get ref of unknown kind", "GET", acmeMem + "/nodes/dream:b1", "", ``, 400, "invalid_argument", "ref"},
		{"get record ref", "GET", acmeMem + "/nodes/record:0193a000-0000-7000-8000-000000000000", "", ``, 400, "invalid_argument", "ref"},
		{"get unknown node", "GET", acmeMem + "/nodes/belief:ghost", "", ``, 404, "not_found", ""},
		{"get node of another scope", "GET", acmeMem + "/nodes/belief:elsewhere", "", ``, 404, "not_found", ""},
		{"get in a scope never written", "GET", "/v1/scopes/empty/memory/nodes/belief:b1", "", ``, 404, "not_found", ""},
		{"get bad as_of", "GET", acmeMem + "/nodes/belief:b1?as_of=yesterday", "", ``, 400, "invalid_argument", "as_of"},
		{"get as_of before the node", "GET", acmeMem + "/nodes/belief:b1?as_of=2000-01-01T00:00:00Z", "", ``, 404, "not_found", ""},
		{"get bad scope", "GET", "/v1/scopes/ACME/memory/nodes/belief:b1", "", ``, 400, "invalid_argument", "scope"},
		// GET .../history
		{"history bad ref", "GET", acmeMem + "/nodes/belief/history", "", ``, 400, "invalid_argument", "ref"},
		{"history unknown node", "GET", acmeMem + "/nodes/belief:ghost/history", "", ``, 404, "not_found", ""},
		// POST .../transition
		{"transition malformed JSON", "POST", acmeMem + "/nodes/belief:b1/transition", js, `{"lifecycle"`, 400, "invalid_argument", ""},
		{"transition unknown field", "POST", acmeMem + "/nodes/belief:b1/transition", js, `{"lifecycle":"active","reason":"r","why":"x"}`, 400, "invalid_argument", "why"},
		{"transition unknown lifecycle", "POST", acmeMem + "/nodes/belief:b1/transition", js, `{"lifecycle":"deleted","reason":"r"}`, 400, "invalid_argument", "lifecycle"},
		{"transition unknown authority", "POST", acmeMem + "/nodes/belief:b1/transition", js, `{"lifecycle":"active","authority":"god","reason":"r"}`, 400, "invalid_argument", "authority"},
		{"transition without reason", "POST", acmeMem + "/nodes/belief:b1/transition", js, `{"lifecycle":"active"}`, 400, "invalid_argument", "reason"},
		{"transition bad ref", "POST", acmeMem + "/nodes/b1/transition", js, `{"lifecycle":"active","reason":"r"}`, 400, "invalid_argument", "ref"},
		{"transition unknown node", "POST", acmeMem + "/nodes/belief:ghost/transition", js, `{"lifecycle":"active","reason":"r"}`, 404, "not_found", ""},
		{"transition bad scope", "POST", "/v1/scopes/A/memory/nodes/belief:b1/transition", js, `{"lifecycle":"active","reason":"r"}`, 400, "invalid_argument", "scope"},
		// POST .../revise
		{"revise malformed JSON", "POST", acmeMem + "/nodes/belief:b1/revise", js, `[`, 400, "invalid_argument", ""},
		{"revise unknown field", "POST", acmeMem + "/nodes/belief:b1/revise", js, `{"summary":"x","supersedes":"y"}`, 400, "invalid_argument", "supersedes"},
		{"revise confidence above 1", "POST", acmeMem + "/nodes/belief:b1/revise", js, `{"confidence":1.5}`, 400, "invalid_argument", "confidence"},
		{"revise other source type", "POST", acmeMem + "/nodes/belief:b1/revise", js, `{"source_type":"inference"}`, 400, "invalid_argument", "source_type"},
		{"revise unknown lifecycle", "POST", acmeMem + "/nodes/belief:b1/revise", js, `{"lifecycle":"zombie"}`, 400, "invalid_argument", "lifecycle"},
		{"revise bad ref", "POST", acmeMem + "/nodes/belief:/revise", js, `{"summary":"x"}`, 400, "invalid_argument", "ref"},
		{"revise unknown node", "POST", acmeMem + "/nodes/belief:ghost/revise", js, `{"summary":"x"}`, 404, "not_found", ""},
		{"revise into an existing node", "POST", acmeMem + "/nodes/belief:b1/revise", js, `{"kind":"fact","id":"f1"}`, 409, "conflict", "id"},
		{"revise a retired node", "POST", acmeMem + "/nodes/note:old/revise", js, `{"summary":"again"}`, 409, "conflict", ""},
		{"revise with a missing parent", "POST", acmeMem + "/nodes/belief:b1/revise", js, `{"derived_from":["fact:ghost"]}`, 400, "invalid_argument", "derived_from"},
		// POST .../relations
		{"relate malformed JSON", "POST", acmeMem + "/relations", js, `{`, 400, "invalid_argument", ""},
		{"relate unknown field", "POST", acmeMem + "/relations", js, `{"kind":"supports","from":"fact:f1","to":"belief:b1","weight":1}`, 400, "invalid_argument", "weight"},
		{"relate unknown kind", "POST", acmeMem + "/relations", js, `{"kind":"loves","from":"fact:f1","to":"belief:b1"}`, 400, "invalid_argument", "kind"},
		{"relate from not a ref", "POST", acmeMem + "/relations", js, `{"kind":"supports","from":"f1","to":"belief:b1"}`, 400, "invalid_argument", "from"},
		{"relate to a record", "POST", acmeMem + "/relations", js, `{"kind":"supports","from":"fact:f1","to":"record:0193a000-0000-7000-8000-000000000000"}`, 400, "invalid_argument", "to"},
		{"relate to a missing node", "POST", acmeMem + "/relations", js, `{"kind":"supports","from":"fact:f1","to":"belief:ghost"}`, 400, "invalid_argument", "to"},
		{"relate across scopes", "POST", acmeMem + "/relations", js, `{"kind":"supports","from":"belief:elsewhere","to":"belief:b1"}`, 400, "invalid_argument", "from"},
		{"relate confidence above 1", "POST", acmeMem + "/relations", js, `{"kind":"supports","from":"fact:f1","to":"belief:b1","confidence":1.5}`, 400, "invalid_argument", "confidence"},
		{"relate empty reason", "POST", acmeMem + "/relations", js, `{"kind":"supports","from":"fact:f1","to":"belief:b1","reasons":[""]}`, 400, "invalid_argument", "reasons"},
		{"relate existing id", "POST", acmeMem + "/relations", js, `{"id":"r1","kind":"supports","from":"fact:f1","to":"belief:b1"}`, 409, "conflict", "id"},
		{"relate bad scope", "POST", "/v1/scopes/x.y/memory/relations", js, `{"kind":"supports","from":"fact:f1","to":"belief:b1"}`, 400, "invalid_argument", "scope"},
		// GET .../relations
		{"relations unknown kind", "GET", acmeMem + "/relations?kind=loves", "", ``, 400, "invalid_argument", "kind"},
		{"relations bad ref", "GET", acmeMem + "/relations?ref=b1", "", ``, 400, "invalid_argument", "ref"},
		{"relations bad cursor", "GET", acmeMem + "/relations?cursor=bm9wZQ", "", ``, 400, "invalid_argument", "cursor"},
		{"relations bad limit", "GET", acmeMem + "/relations?limit=0", "", ``, 400, "invalid_argument", "limit"},
		// POST .../feedback
		{"feedback malformed JSON", "POST", acmeMem + "/feedback", js, `{"ref":`, 400, "invalid_argument", ""},
		{"feedback unknown field", "POST", acmeMem + "/feedback", js, `{"ref":"belief:b1","outcome":"positive","author_id":"agent:bmo","score":1}`, 400, "invalid_argument", "score"},
		{"feedback unknown outcome", "POST", acmeMem + "/feedback", js, `{"ref":"belief:b1","outcome":"great","author_id":"agent:bmo"}`, 400, "invalid_argument", "outcome"},
		{"feedback bad author", "POST", acmeMem + "/feedback", js, `{"ref":"belief:b1","outcome":"positive","author_id":"bmo"}`, 400, "invalid_argument", "author_id"},
		{"feedback bad ref", "POST", acmeMem + "/feedback", js, `{"ref":"b1","outcome":"positive","author_id":"agent:bmo"}`, 400, "invalid_argument", "ref"},
		{"feedback unknown node", "POST", acmeMem + "/feedback", js, `{"ref":"belief:ghost","outcome":"positive","author_id":"agent:bmo"}`, 404, "not_found", ""},
		{"feedback on another scope's node", "POST", acmeMem + "/feedback", js, `{"ref":"belief:elsewhere","outcome":"positive","author_id":"agent:bmo"}`, 404, "not_found", ""},
		// GET .../search
		{"search unknown kind", "GET", acmeMem + "/search?q=x&kind=dream", "", ``, 400, "invalid_argument", "kind"},
		{"search unknown lifecycle", "GET", acmeMem + "/search?lifecycle=zombie", "", ``, 400, "invalid_argument", "lifecycle"},
		{"search unknown authority", "GET", acmeMem + "/search?authority=god", "", ``, 400, "invalid_argument", "authority"},
		{"search bad owner", "GET", acmeMem + "/search?owner=bmo", "", ``, 400, "invalid_argument", "owner"},
		{"search min_confidence above 1", "GET", acmeMem + "/search?q=x&min_confidence=1.5", "", ``, 400, "invalid_argument", "min_confidence"},
		{"search query too long", "GET", acmeMem + "/search?q=" + long, "", ``, 400, "invalid_argument", "q"},
		{"search bad limit", "GET", acmeMem + "/search?q=x&limit=1001", "", ``, 400, "invalid_argument", "limit"},
		{"search bad scope", "GET", "/v1/scopes/%C3%A9/memory/search?q=x", "", ``, 400, "invalid_argument", "scope"},
		// Routes and methods.
		{"wrong method on a node", "DELETE", acmeMem + "/nodes/belief:b1", "", ``, 405, "method_not_allowed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := c.memState("acme", "other")
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
			if after := c.memState("acme", "other"); after != before {
				t.Errorf("state changed:\n%s\n->\n%s", before, after)
			}
		})
	}

	// The missing refs are named, each once, so a caller can fix them all
	// in one go; the existing one is not among them.
	st, m, raw := c.post(acmeMem+"/nodes", `{"kind":"belief","summary":"x","derived_from":["belief:b1","belief:ghost","record:0193a000-0000-7000-8000-000000000000"]}`)
	d, _ := m["error"].(map[string]any)["details"].(map[string]any)
	missing, _ := d["missing"].([]any)
	if st != 400 || len(missing) != 2 || missing[0] != "belief:ghost" || missing[1] != "record:0193a000-0000-7000-8000-000000000000" {
		t.Errorf("derived_from missing: got %d, details.missing %v, want the ghost and the record (%s)", st, d["missing"], raw)
	}
}

func TestMemory_Events(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	c.mustPost(acmeMem+"/nodes", `{"kind":"belief","id":"b1","summary":"one"}`, 201)
	c.mustPost(acmeMem+"/nodes", `{"kind":"belief","id":"b1","confidence":0.8}`, 200)
	c.mustPost("/v1/scopes/other/memory/nodes/batch", `{"nodes":[{"kind":"fact","id":"f1","summary":"x"},{"kind":"fact","id":"f2","summary":"y"}]}`, 201)
	c.mustPost(acmeMem+"/nodes/belief:b1/transition", `{"lifecycle":"active","reason":"checked"}`, 200)
	rel := decode[kura.Relation](t, c.mustPost(acmeMem+"/relations", `{"kind":"supports","from":"belief:b1","to":"belief:b1"}`, 201))
	fb := decode[kura.Feedback](t, c.mustPost(acmeMem+"/feedback", `{"ref":"belief:b1","outcome":"negative","author_id":"user:oles"}`, 201))
	rev := decode[kura.Revision](t, c.mustPost(acmeMem+"/nodes/belief:b1/revise", `{"id":"b2","summary":"two"}`, 201))

	type ev struct{ typ, project, key, value string }
	var got []ev
	_, _, raw := c.get("/v1/events?limit=1000")
	var page struct{ Events []map[string]any }
	if err := json.Unmarshal(raw, &page); err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Events {
		k := "ref"
		if e["type"] == "memory.relation" {
			k = "relation_id"
		}
		v, _ := e[k].(string)
		got = append(got, ev{e["type"].(string), e["project"].(string), k, v})
	}
	want := []ev{
		{"memory.node", "acme", "ref", "belief:b1"},
		{"memory.node", "acme", "ref", "belief:b1"},
		{"memory.node", "other", "ref", "fact:f1"},
		{"memory.node", "other", "ref", "fact:f2"},
		{"memory.lifecycle", "acme", "ref", "belief:b1"},
		{"memory.relation", "acme", "relation_id", rel.ID},
		{"memory.feedback", "acme", "ref", "belief:b1"},
		// A revise is one transaction with three events: the new node,
		// the supersedes relation and the old node's retirement.
		{"memory.node", "acme", "ref", "belief:b2"},
		{"memory.relation", "acme", "relation_id", rev.Relation.ID},
		{"memory.lifecycle", "acme", "ref", "belief:b1"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events:\ngot  %v\nwant %v", got, want)
	}
	for _, e := range page.Events {
		if e["type"] == "memory.feedback" && e["feedback_id"] != fb.ID {
			t.Errorf("feedback event %v, want feedback_id %s", e, fb.ID)
		}
	}

	// The feed filters by type and by project = scope.
	for _, tc := range []struct {
		query string
		n     int
	}{
		{"type=memory.node", 5}, {"type=memory.relation", 2}, {"type=memory.lifecycle", 2}, {"type=memory.feedback", 1},
		{"type=memory.node&project=other", 2}, {"project=acme", 8},
	} {
		if p := c.events(tc.query); len(p.Events) != tc.n {
			t.Errorf("events?%s: got %d, want %d", tc.query, len(p.Events), tc.n)
		}
	}
}

func TestMemory_AsOf(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	v1 := decode[kura.Node](t, c.mustPost(acmeMem+"/nodes", `{"kind":"belief","id":"b.1","title":"first","summary":"s","confidence":0.5}`, 201))
	v2 := decode[kura.Node](t, c.mustPost(acmeMem+"/nodes", `{"kind":"belief","id":"b.1","title":"second","confidence":0.9,"reason":"evidence"}`, 200))
	v3 := decode[kura.Node](t, c.mustPost(acmeMem+"/nodes/belief:b.1/transition", `{"lifecycle":"archived","reason":"stale"}`, 200))

	at := func(ts string) kura.Node {
		t.Helper()
		return decode[kura.Node](t, c.mustGet(acmeMem+"/nodes/belief:b.1?as_of="+url.QueryEscape(ts)))
	}
	// A time in another zone names the same instant.
	t2, err := kura.ParseTime(v2.UpdatedAt)
	if err != nil {
		t.Fatal(err)
	}
	plus2 := t2.In(time.FixedZone("", 2*3600)).Format(time.RFC3339Nano)
	for _, tc := range []struct {
		name, asOf string
		want       kura.Node
	}{
		{"at the first write", v1.UpdatedAt, v1},
		{"at the second write", v2.UpdatedAt, v2},
		{"same instant, +02:00", plus2, v2},
		{"just before the third", kura.FormatTime(parseNodeTime(t, v3.UpdatedAt).Add(-time.Nanosecond)), v2},
		{"far future", "9999-01-01T00:00:00Z", v3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := at(tc.asOf)
			if got.Version != tc.want.Version || got.Title != tc.want.Title || got.Lifecycle != tc.want.Lifecycle || got.Confidence != tc.want.Confidence {
				t.Errorf("as_of %s: got version %d (%s, %s, %v), want version %d", tc.asOf, got.Version, got.Title, got.Lifecycle, got.Confidence, tc.want.Version)
			}
		})
	}
	if cur := decode[kura.Node](t, c.mustGet(acmeMem+"/nodes/belief:b.1")); cur.Version != 3 || cur.Lifecycle != "archived" {
		t.Errorf("current: got %+v, want version 3 archived", cur)
	}
	before := kura.FormatTime(parseNodeTime(t, v1.CreatedAt).Add(-time.Nanosecond))
	if st, _, raw := c.get(acmeMem + "/nodes/belief:b.1?as_of=" + before); st != 404 {
		t.Errorf("as_of before the node: got %d %s, want 404", st, raw)
	}

	h := decode[struct {
		Ref               string
		Versions          []kura.Node
		ConfidenceHistory []kura.ConfidenceChange `json:"confidence_history"`
	}](t, c.mustGet(acmeMem+"/nodes/belief:b.1/history"))
	if h.Ref != "belief:b.1" || len(h.Versions) != 3 || h.Versions[0].Title != "first" || h.Versions[2].Lifecycle != "archived" {
		t.Fatalf("history: got %+v, want 3 versions oldest first", h)
	}
	ch := h.ConfidenceHistory
	if len(ch) != 2 || ch[0].Old != nil || ch[0].New != 0.5 || ch[0].Reason != "created" || ch[0].Version != 1 ||
		ch[1].Old == nil || *ch[1].Old != 0.5 || ch[1].New != 0.9 || ch[1].Reason != "evidence" || ch[1].Version != 2 || ch[1].At != v2.UpdatedAt {
		t.Errorf("confidence history: got %+v, want created 0.5 then 0.5 -> 0.9 for evidence (the transition changed none)", ch)
	}
}

func parseNodeTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := kura.ParseTime(s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

type searchAnswer struct {
	Results []struct {
		Ref     string
		Score   float64
		Reasons []kura.SearchReason
		Node    *kura.Node
	}
}

func TestMemory_Search(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	c.mustPost(acmeMem+"/nodes/batch", `{"nodes":[
		{"kind":"belief","id":"b1","title":"Payments retry","summary":"retry failed charges","confidence":0.9,"owner":"agent:bmo","target_files":["pay/retry.go"]},
		{"kind":"fact","id":"f1","title":"Gateway","summary":"payments time out after 30s","confidence":0.4},
		{"kind":"note","id":"n1","title":"Unrelated","summary":"lunch at noon","metadata":{"topic":"payments"}}]}`, 201)
	before := c.memState("acme")

	search := func(q string) searchAnswer {
		t.Helper()
		return decode[searchAnswer](t, c.mustGet(acmeMem+"/search?"+q))
	}
	refs := func(a searchAnswer) []string {
		var out []string
		for _, r := range a.Results {
			out = append(out, r.Ref)
		}
		return out
	}
	codes := func(rs []kura.SearchReason) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Code+"="+r.Detail)
		}
		return out
	}

	// A title hit outweighs a summary hit, which outweighs metadata.
	a := search("q=payments")
	if got := refs(a); !slices.Equal(got, []string{"belief:b1", "fact:f1", "note:n1"}) {
		t.Fatalf("q=payments: got %v, want title, summary, metadata hits in that order", got)
	}
	if a.Results[0].Score <= a.Results[1].Score || a.Results[1].Score <= a.Results[2].Score {
		t.Errorf("scores not strictly decreasing: %+v", a.Results)
	}
	if got := codes(a.Results[0].Reasons); !slices.Equal(got, []string{"title_match=payments"}) {
		t.Errorf("b1 reasons: got %v", got)
	}
	if got := codes(a.Results[2].Reasons); !slices.Equal(got, []string{"metadata_match=payments"}) {
		t.Errorf("n1 reasons: got %v", got)
	}
	if a.Results[0].Node == nil || a.Results[0].Node.Ref != "belief:b1" {
		t.Errorf("result carries no node: %+v", a.Results[0])
	}

	// Every filter used adds its reason.
	a = search("q=payments+retry&kind=belief&owner=agent:bmo&target_file=pay/retry.go&min_confidence=0.5&lifecycle=candidate&authority=unknown")
	if got := refs(a); !slices.Equal(got, []string{"belief:b1"}) {
		t.Fatalf("filtered: got %v, want b1 only", got)
	}
	wantReasons := []string{"title_match=payments, retry", "target_file_match=retry", "summary_match=retry", "kind_filter=belief", "lifecycle_filter=candidate",
		"authority_filter=unknown", "owner_filter=agent:bmo", "target_file_filter=pay/retry.go", "min_confidence_filter=0.9 >= 0.5"}
	if got := codes(a.Results[0].Reasons); !slices.Equal(got, wantReasons) {
		t.Errorf("filtered reasons:\ngot  %v\nwant %v", got, wantReasons)
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"q=payments&min_confidence=0.5", []string{"belief:b1", "note:n1"}}, // n1 has the default 0.5
		{"q=payments&limit=1", []string{"belief:b1"}},
		{"q=nothing+matches", nil},
		{"q=%21%21%21", nil}, // no words at all
		{"kind=fact", []string{"fact:f1"}},
	} {
		if got := refs(search(tc.query)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.query, got, tc.want)
		}
	}
	if after := c.memState("acme"); after != before {
		t.Errorf("search wrote something:\n%s\n->\n%s", before, after)
	}
}

func TestMemory_ScopeIsolation(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	rec := decode[kura.Record](t, c.mustPost("/v1/records", `{"type":"agent.thought","content":"seen","author_id":"agent:bmo"}`, 201))
	// The same ref in two scopes: two nodes. Records are global and may be
	// cited from both.
	for _, s := range []string{"alpha", "beta"} {
		c.mustPost("/v1/scopes/"+s+"/memory/nodes", `{"kind":"belief","id":"shared","title":"`+s+` payments","summary":"x","derived_from":["record:`+rec.ID+`"]}`, 201)
	}
	c.mustPost("/v1/scopes/alpha/memory/nodes", `{"kind":"fact","id":"only-alpha","summary":"payments"}`, 201)
	c.mustPost("/v1/scopes/alpha/memory/nodes", `{"kind":"belief","id":"shared","confidence":0.9}`, 200)

	if n := decode[kura.Node](t, c.mustGet("/v1/scopes/beta/memory/nodes/belief:shared")); n.Scope != "beta" || n.Title != "beta payments" || n.Version != 1 {
		t.Errorf("beta's node: got %+v, want beta's version 1", n)
	}
	if st, _, _ := c.get("/v1/scopes/beta/memory/nodes/fact:only-alpha"); st != 404 {
		t.Errorf("alpha's node read in beta: got %d, want 404", st)
	}
	if st, _, _ := c.get("/v1/scopes/beta/memory/nodes/fact:only-alpha/history"); st != 404 {
		t.Errorf("alpha's node history in beta: got %d, want 404", st)
	}
	list := decode[kura.NodeBatch](t, c.mustGet("/v1/scopes/beta/memory/nodes"))
	if len(list.Nodes) != 1 || list.Nodes[0].Ref != "belief:shared" {
		t.Errorf("beta's list: got %+v, want its one node", list.Nodes)
	}
	a := decode[searchAnswer](t, c.mustGet("/v1/scopes/beta/memory/search?q=payments"))
	if len(a.Results) != 1 || a.Results[0].Node.Scope != "beta" {
		t.Errorf("beta's search: got %+v, want beta's node only", a.Results)
	}
	if st, _, raw := c.post("/v1/scopes/beta/memory/relations", `{"kind":"supports","from":"belief:shared","to":"fact:only-alpha"}`); st != 400 {
		t.Errorf("relation to another scope's node: got %d %s, want 400", st, raw)
	}
	if st, _, raw := c.post("/v1/scopes/beta/memory/nodes/fact:only-alpha/revise", `{"summary":"y"}`); st != 404 {
		t.Errorf("revise of another scope's node: got %d %s, want 404", st, raw)
	}
	if st, _, raw := c.post("/v1/scopes/beta/memory/nodes/fact:only-alpha/transition", `{"lifecycle":"active","reason":"r"}`); st != 404 {
		t.Errorf("transition of another scope's node: got %d %s, want 404", st, raw)
	}
	c.mustPost("/v1/scopes/alpha/memory/relations", `{"id":"r1","kind":"supports","from":"fact:only-alpha","to":"belief:shared"}`, 201)
	// Relation ids are per scope too.
	c.mustPost("/v1/scopes/beta/memory/relations", `{"id":"r1","kind":"supports","from":"belief:shared","to":"belief:shared"}`, 201)
	rels := decode[struct{ Relations []kura.Relation }](t, c.mustGet("/v1/scopes/beta/memory/relations"))
	if len(rels.Relations) != 1 || rels.Relations[0].From != "belief:shared" || rels.Relations[0].Scope != "beta" {
		t.Errorf("beta's relations: got %+v, want its self-relation only", rels.Relations)
	}
	if empty := decode[searchAnswer](t, c.mustGet("/v1/scopes/never/memory/search?q=payments")); len(empty.Results) != 0 {
		t.Errorf("scope never written: got %+v, want nothing", empty.Results)
	}
}

func TestMemory_IdempotentReplays(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	c.mustPost(acmeMem+"/nodes", `{"kind":"belief","id":"b1","summary":"one"}`, 201)

	calls := []struct {
		name, path, body string
		status           int
	}{
		{"new node", acmeMem + "/nodes", `{"kind":"belief","id":"b2","summary":"two"}`, 201},
		{"new version", acmeMem + "/nodes", `{"kind":"belief","id":"b1","confidence":0.9}`, 200},
		{"server-chosen id", acmeMem + "/nodes", `{"kind":"note","summary":"no id"}`, 201},
		{"batch", acmeMem + "/nodes/batch", `{"nodes":[{"kind":"fact","summary":"a"},{"kind":"fact","summary":"b"}]}`, 201},
		{"transition", acmeMem + "/nodes/belief:b2/transition", `{"lifecycle":"active","reason":"ok"}`, 200},
		{"relation", acmeMem + "/relations", `{"kind":"supports","from":"belief:b1","to":"belief:b2"}`, 201},
		{"feedback", acmeMem + "/feedback", `{"ref":"belief:b1","outcome":"neutral","author_id":"agent:bmo"}`, 201},
		{"revise", acmeMem + "/nodes/belief:b1/revise", `{"summary":"one, revised"}`, 201},
	}
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			key := "mem-" + strings.ReplaceAll(call.name, " ", "-")
			st1, h1, b1 := c.send(call.path, key, call.body)
			if st1 != call.status {
				t.Fatalf("first: got %d %s, want %d", st1, b1, call.status)
			}
			if h1.Get("Idempotent-Replayed") != "" {
				t.Errorf("first answer marked as a replay")
			}
			before := c.memState("acme")
			st2, h2, b2 := c.send(call.path, key, call.body)
			if st2 != st1 || string(b2) != string(b1) || h2.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("retry: got %d %q (replayed %q), want %d %q replayed", st2, b2, h2.Get("Idempotent-Replayed"), st1, b1)
			}
			if after := c.memState("acme"); after != before {
				t.Errorf("retry wrote something:\n%s\n->\n%s", before, after)
			}
			if st3, _, b3 := c.send(call.path, key, strings.TrimSuffix(call.body, "}")+` }`); st3 != 409 {
				t.Errorf("key reused for another body: got %d %s, want 409", st3, b3)
			}
		})
	}
	// The replayed revise did not revise twice: one supersedes relation, and
	// without the key the node is retired, so a second revise is refused.
	rels := decode[struct{ Relations []kura.Relation }](t, c.mustGet(acmeMem+"/relations?kind=supersedes"))
	if len(rels.Relations) != 1 {
		t.Errorf("supersedes relations: got %d, want 1", len(rels.Relations))
	}
	if st, _, raw := c.post(acmeMem+"/nodes/belief:b1/revise", `{"summary":"one, revised"}`); st != 409 {
		t.Errorf("second revise without the key: got %d %s, want 409", st, raw)
	}
	if n := decode[kura.Node](t, c.mustGet(acmeMem+"/nodes/belief:b1")); n.Version != 3 || n.Lifecycle != "retired" {
		t.Errorf("b1: got version %d %s, want 3 retired (create, replayed version, revise)", n.Version, n.Lifecycle)
	}
}
