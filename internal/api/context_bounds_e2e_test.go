package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

// ctxBatch writes nodes into scope in one batch.
func (c *apiClient) ctxBatch(scope string, nodes []string) {
	c.tb.Helper()
	c.mustPost("/v1/scopes/"+scope+"/memory/nodes/batch", `{"nodes":[`+strings.Join(nodes, ",")+`]}`, 201)
}

// TestContext_AnswerBounds: every part of an answer is bounded, by the
// request or by a documented default, and says what it left out. A
// request that names no bound keeps at most 1 MiB of items (it kept
// every summary: 70 nodes of 16 KiB answered 1.2 MB, 4,000 answered 65
// MB) and 1,000 items a bucket; max_trace lists a prefix of the order and
// counts the rest in trace_omitted; out-of-range bounds are 400 naming
// the field and write nothing. The stored bundle is the answer, byte for
// byte, and its digest checks (ctxDecode recomputes it).
func TestContext_AnswerBounds(t *testing.T) {
	t.Parallel()
	c, d := newDaemon(t)

	var big []string
	for i := range 70 {
		summary := strings.Repeat(fmt.Sprintf("payments %02d retry <budget> & \"quota\"\n", i), 16<<10/30)[:16<<10]
		big = append(big, fmt.Sprintf(`{"kind":"fact","id":"big-%02d","title":"payments %d","summary":%q,"lifecycle":"active","authority":"trusted"}`, i, i, summary))
	}
	c.ctxBatch("large", big)
	var small []string
	for i := range 1000 {
		small = append(small, fmt.Sprintf(`{"kind":"note","id":"n%04d","summary":"note %d about payments","lifecycle":"active","authority":"verified"}`, i, i))
	}
	c.ctxBatch("many", small)
	c.ctxNodes("many", `{"kind":"note","id":"n1000","summary":"the last note","lifecycle":"active","authority":"verified"}`)

	t.Run("DefaultBudget", func(t *testing.T) {
		a := c.ctxCall(t, "large", "preview", `{}`)
		kept := len(a.Raw["use_now"])
		if a.Bytes > 1<<20 || kept == 0 || kept+a.Omitted["use_now"] != 70 || len(a.Body) > 1<<20+64<<10 {
			t.Fatalf("got %d items (%d bytes, answer %d bytes), %d omitted; want at most 1 MiB of items, the rest omitted", kept, a.Bytes, len(a.Body), a.Omitted["use_now"])
		}
		if !slices.Contains(a.Warnings, "budget: 1048576 bytes reached; see omitted") || len(a.Trace) != 70 || a.TraceOmit != 0 {
			t.Fatalf("warnings %q, trace %d (%d omitted); want the budget's warning and every node traced", a.Warnings, len(a.Trace), a.TraceOmit)
		}
		// The largest budget keeps them all.
		if a := c.ctxCall(t, "large", "preview", `{"budget_bytes":16777216}`); len(a.Raw["use_now"]) != 70 {
			t.Fatalf("budget_bytes 16777216: %d items kept, want 70", len(a.Raw["use_now"]))
		}
	})

	t.Run("DefaultMaxPerBucket", func(t *testing.T) {
		a := c.ctxCall(t, "many", "preview", `{}`)
		if len(a.Raw["use_now"]) != 1000 || a.Omitted["use_now"] != 1 || len(a.Trace) != 1001 {
			t.Fatalf("got %d kept, %d omitted, %d traced; want 1000, 1 and 1001", len(a.Raw["use_now"]), a.Omitted["use_now"], len(a.Trace))
		}
	})

	t.Run("MaxTrace", func(t *testing.T) {
		all := c.ctxCall(t, "many", "preview", `{"query":"payments"}`)
		for _, n := range []int{0, 3, 1001} {
			a := c.ctxCall(t, "many", "preview", fmt.Sprintf(`{"query":"payments","max_trace":%d}`, n))
			if len(a.Trace) != n || a.TraceOmit != 1001-n {
				t.Fatalf("max_trace %d: %d listed, trace_omitted %d", n, len(a.Trace), a.TraceOmit)
			}
			for i := range a.Trace {
				if a.Trace[i].Ref != all.Trace[i].Ref {
					t.Fatalf("max_trace %d: entry %d is %s, want %s (a prefix of the order)", n, i, a.Trace[i].Ref, all.Trace[i].Ref)
				}
			}
			warned := slices.ContainsFunc(a.Warnings, func(w string) bool { return strings.HasPrefix(w, fmt.Sprintf("trace: %d nodes not listed", 1001-n)) })
			if warned != (n < 1001) || a.Digest != all.Digest {
				t.Fatalf("max_trace %d: warnings %q, digest %s (want %s: the buckets do not change)", n, a.Warnings, a.Digest, all.Digest)
			}
		}
		st, _, compiled := c.ctxSend(ctxPath("many", "compile"), "", `{"max_trace":2}`)
		a := ctxDecode(t, compiled)
		if st != 200 || len(a.Trace) != 2 || a.TraceOmit != 999 {
			t.Fatalf("compile max_trace 2: %d, %d listed, %d omitted", st, len(a.Trace), a.TraceOmit)
		}
		if stored := c.mustGet("/v1/scopes/many/context/bundles/" + a.BundleID); !bytes.Equal(stored, compiled) {
			t.Fatalf("stored bundle (%d bytes) is not the answer (%d bytes)", len(stored), len(compiled))
		}
	})

	t.Run("TurnMemory", func(t *testing.T) {
		s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"x","name":"bounded","scope":"many"}`, 201))
		tr := decode[kura.Turn](t, c.mustPost("/v1/sessions/"+s.ID+"/turns",
			`{"instruction":{"content":"go","author_id":"user:oles"},"memory":{"max_trace":1,"max_per_bucket":2}}`, 201))
		b := ctxDecode(t, c.mustGet("/v1/scopes/many/context/bundles/"+*tr.ContextBundleID))
		if len(b.Trace) != 1 || b.TraceOmit != 1000 || len(b.Raw["use_now"]) != 2 {
			t.Fatalf("turn's bundle: %d listed, %d omitted, %d use_now; want 1, 1000 and 2", len(b.Trace), b.TraceOmit, len(b.Raw["use_now"]))
		}
	})

	t.Run("OutOfRange", func(t *testing.T) {
		rows := ctxRows(t, d)
		before := rows()
		for _, tc := range []struct{ path, body, field string }{
			{ctxPath("many", "compile"), `{"max_trace":-1}`, "max_trace"},
			{ctxPath("many", "compile"), `{"max_trace":100001}`, "max_trace"},
			{ctxPath("many", "preview"), `{"max_trace":100001}`, "max_trace"},
			{ctxPath("many", "compile"), `{"budget_bytes":16777217}`, "budget_bytes"},
			{ctxPath("many", "compile"), `{"max_per_bucket":100001}`, "max_per_bucket"},
		} {
			st, m, raw := c.post(tc.path, tc.body)
			e, _ := m["error"].(map[string]any)
			details, _ := e["details"].(map[string]any)
			if st != http.StatusBadRequest || e["code"] != "invalid_argument" || details["field"] != tc.field {
				t.Errorf("%s %s: %d %s, want 400 invalid_argument naming %s", tc.path, tc.body, st, raw, tc.field)
			}
		}
		s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"x","name":"refused","scope":"many"}`, 201))
		before = rows()
		st, m, raw := c.post("/v1/sessions/"+s.ID+"/turns", `{"instruction":{"content":"go","author_id":"user:oles"},"memory":{"max_trace":100001}}`)
		e, _ := m["error"].(map[string]any)
		details, _ := e["details"].(map[string]any)
		if st != http.StatusBadRequest || details["field"] != "memory.max_trace" {
			t.Errorf("turn memory max_trace 100001: %d %s, want 400 naming memory.max_trace", st, raw)
		}
		if after := rows(); after != before {
			t.Errorf("a refused request wrote:\n%s\n->\n%s", before, after)
		}
	})
}

// TestContext_PreviewStreams: a preview's answer is written as it is made
// (no Content-Length: chunked), and it is what compile answers, less the
// bundle id.
func TestContext_PreviewStreams(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	var nodes []string
	for i := range 400 {
		nodes = append(nodes, fmt.Sprintf(`{"kind":"note","id":"s%03d","summary":%q}`, i, strings.Repeat("stream ", 100)))
	}
	c.ctxBatch("streamed", nodes)
	resp, err := http.Post(c.base+ctxPath("streamed", "preview"), "application/json", strings.NewReader(`{"query":"stream"}`))
	if err != nil {
		t.Fatal(err)
	}
	var prev bytes.Buffer
	prev.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != -1 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("preview: %d, Content-Length %d, Content-Type %q; want 200, streamed JSON", resp.StatusCode, resp.ContentLength, resp.Header.Get("Content-Type"))
	}
	p := ctxDecode(t, prev.Bytes())
	compiled := c.ctxCall(t, "streamed", "compile", `{"query":"stream"}`)
	var a, b map[string]json.RawMessage
	json.Unmarshal(prev.Bytes(), &a)
	json.Unmarshal(compiled.Body, &b)
	delete(b, "bundle_id")
	delete(a, "as_of")
	delete(b, "as_of")
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	if !bytes.Equal(x, y) || len(p.Trace) != 400 {
		t.Fatalf("preview (%d bytes, %d traced) differs from compile (%d bytes)", prev.Len(), len(p.Trace), len(compiled.Body))
	}
}
