package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/kura-memory/kura/kurahash"
)

// These tests hold kurad to the "Context compile (admission)" section of
// API.md over HTTP. Answers are decoded into the test's own types, not
// the admission package's, so that a change there cannot hide a change of
// the wire contract.

// ctxBuckets is the order the contract spends a budget in.
var ctxBuckets = []string{"use_now", "inspect_before_use", "rehydrate", "do_not_use"}

type ctxItem struct {
	Ref        string  `json:"ref"`
	Title      string  `json:"title"`
	Summary    string  `json:"summary"`
	Confidence float64 `json:"confidence"`
	Lifecycle  string  `json:"lifecycle"`
	Authority  string  `json:"authority"`
	PayloadRef *string `json:"payload_ref"`
}

type ctxTrace struct {
	Ref        string              `json:"ref"`
	Bucket     string              `json:"bucket"`
	Reason     string              `json:"reason"`
	RelationID string              `json:"relation_id"`
	Detail     string              `json:"detail"`
	Score      *float64            `json:"score"`
	Why        []kura.SearchReason `json:"why"`
}

// ctxAnswer is a preview or compile answer; Raw keeps each item as sent,
// for byte counts and digests.
type ctxAnswer struct {
	BundleID   string                       `json:"bundle_id"`
	Digest     string                       `json:"digest"`
	Scope      string                       `json:"scope"`
	AsOf       string                       `json:"as_of"`
	Raw        map[string][]json.RawMessage `json:"buckets"`
	Trace      []ctxTrace                   `json:"trace"`
	Omitted    map[string]int               `json:"omitted"`
	TraceOmit  int                          `json:"trace_omitted"`
	Bytes      int                          `json:"bytes"`
	Redactions int                          `json:"redactions"`
	Warnings   []string                     `json:"warnings"`
	Buckets    map[string][]ctxItem         `json:"-"`
	Body       []byte                       `json:"-"`
}

// refs lists a bucket's item refs.
func (a *ctxAnswer) refs(bucket string) []string {
	out := []string{}
	for _, it := range a.Buckets[bucket] {
		out = append(out, it.Ref)
	}
	return out
}

// trace returns the trace entry of ref.
func (a *ctxAnswer) trace(t *testing.T, ref string) ctxTrace {
	t.Helper()
	for _, te := range a.Trace {
		if te.Ref == ref {
			return te
		}
	}
	t.Fatalf("no trace entry for %s in %s", ref, a.Body)
	return ctxTrace{}
}

// item returns ref's item, wherever it is.
func (a *ctxAnswer) item(t *testing.T, ref string) ctxItem {
	t.Helper()
	for _, items := range a.Buckets {
		for _, it := range items {
			if it.Ref == ref {
				return it
			}
		}
	}
	t.Fatalf("no item %s in %s", ref, a.Body)
	return ctxItem{}
}

// ctxDecode decodes an answer and checks what every answer must hold: the
// four buckets, a digest that a client recomputes from the buckets as sent
// (SHA-256 of their RFC 8785 form) and a trace entry for every item.
func ctxDecode(t *testing.T, raw []byte) *ctxAnswer {
	t.Helper()
	a := &ctxAnswer{Body: raw, Buckets: map[string][]ctxItem{}}
	if err := json.Unmarshal(raw, a); err != nil {
		t.Fatalf("answer %s: %v", raw, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	canon, err := kurahash.Canonical(top["buckets"])
	if err != nil {
		t.Fatalf("buckets are not canonicalizable: %v", err)
	}
	sum := sha256.Sum256(canon)
	if want := "sha256:" + hex.EncodeToString(sum[:]); a.Digest != want {
		t.Errorf("digest: got %s, recomputed %s from %s", a.Digest, want, top["buckets"])
	}
	if len(a.Raw) != len(ctxBuckets) {
		t.Errorf("buckets: got %d keys, want the four of the contract: %s", len(a.Raw), top["buckets"])
	}
	for _, b := range ctxBuckets {
		items, ok := a.Raw[b]
		if !ok || items == nil {
			t.Errorf("bucket %s missing or null in %s", b, top["buckets"])
		}
		for _, r := range items {
			var it ctxItem
			if err := json.Unmarshal(r, &it); err != nil {
				t.Fatal(err)
			}
			a.Buckets[b] = append(a.Buckets[b], it)
			if a.TraceOmit > 0 && !slices.ContainsFunc(a.Trace, func(te ctxTrace) bool { return te.Ref == it.Ref }) {
				continue // a trace cut short (max_trace) lists a prefix of the order
			}
			if te := a.trace(t, it.Ref); te.Bucket != b {
				t.Errorf("%s is in %s but its trace says %s", it.Ref, b, te.Bucket)
			}
		}
	}
	return a
}

// ctxSend posts body with an Idempotency-Key (none when key is empty).
func (c *apiClient) ctxSend(path, key, body string) (int, http.Header, []byte) {
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

func ctxPath(scope, op string) string { return "/v1/scopes/" + scope + "/context/" + op }

// ctxCall previews or compiles and decodes the 200 answer.
func (c *apiClient) ctxCall(t *testing.T, scope, op, body string) *ctxAnswer {
	t.Helper()
	st, _, raw := c.ctxSend(ctxPath(scope, op), "", body)
	if st != 200 {
		t.Fatalf("%s %s %s: status %d, want 200: %s", op, scope, body, st, raw)
	}
	return ctxDecode(t, raw)
}

// ctxNodes writes nodes into scope and returns them by ref.
func (c *apiClient) ctxNodes(scope string, nodes ...string) map[string]kura.Node {
	c.tb.Helper()
	out := map[string]kura.Node{}
	for _, n := range nodes {
		node := decode[kura.Node](c.tb, c.mustPost("/v1/scopes/"+scope+"/memory/nodes", n, 201))
		out[node.Ref] = node
	}
	return out
}

// ctxRelate writes a relation and returns its id.
func (c *apiClient) ctxRelate(scope, kind, from, to string, confidence float64) string {
	c.tb.Helper()
	body := fmt.Sprintf(`{"kind":%q,"from":%q,"to":%q,"confidence":%v}`, kind, from, to, confidence)
	return decode[kura.Relation](c.tb, c.mustPost("/v1/scopes/"+scope+"/memory/relations", body, 201)).ID
}

// ctxRows counts the rows of every table: the database itself, below what
// /v1/info reports, so that a stray bundle or idempotency row shows. meta is
// left out: the doorbell saves its published cursor there on its own
// schedule, after commits no request of the test is waiting for.
func ctxRows(t *testing.T, d *kuradtest.Daemon) func() string {
	db := d.RawDB(t)
	return func() string {
		t.Helper()
		var b strings.Builder
		for _, n := range d.Tables(t, db) {
			if n == "meta" {
				continue
			}
			var count int
			if err := db.QueryRow(`SELECT count(*) FROM "` + n + `"`).Scan(&count); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s=%d ", n, count)
		}
		return b.String()
	}
}

// ctxEvent is an event pointer with the ids context events carry.
type ctxEvent struct {
	Seq      int64  `json:"seq"`
	Type     string `json:"type"`
	Project  string `json:"project"`
	BundleID string `json:"bundle_id"`
}

func (c *apiClient) ctxEventsAfter(seq int64) []ctxEvent {
	c.tb.Helper()
	return decode[struct{ Events []ctxEvent }](c.tb, c.mustGet(fmt.Sprintf("/v1/events?after=%d", seq))).Events
}

func (c *apiClient) ctxLastSeq() int64 {
	c.tb.Helper()
	return decode[struct {
		LastEventSeq int64 `json:"last_event_seq"`
	}](c.tb, c.mustGet("/v1/info")).LastEventSeq
}

// ctxFourBuckets writes one node for each bucket into scope.
func (c *apiClient) ctxFourBuckets(scope string) {
	c.tb.Helper()
	c.ctxNodes(scope,
		`{"kind":"fact","id":"f1","title":"Retry policy","summary":"payments retry thrice","lifecycle":"active","authority":"trusted","confidence":0.9}`,
		`{"kind":"belief","id":"b1","title":"Queue is slow","summary":"the payments queue lags"}`,
		`{"kind":"note","id":"n1","title":"Old runbook","summary":"archived","lifecycle":"archived","payload_ref":"s3://runbooks/old"}`,
		`{"kind":"belief","id":"b2","title":"Queue is fast","summary":"keeps up","lifecycle":"active","authority":"verified"}`)
	c.ctxRelate(scope, "contradicts", "belief:b1", "belief:b2", 0.8)
}

// (a) Preview writes nothing, key or no key; compile writes one bundle and
// one context.compiled event; the stored bundle is the answer, byte for byte.
func TestContext_PreviewWritesNothingCompileOneEvent(t *testing.T) {
	t.Parallel()
	c, d := newDaemon(t)
	rows := ctxRows(t, d)
	c.ctxFourBuckets("acme")

	before, beforeRows := c.state(), rows()
	for _, tc := range []struct{ name, key, body string }{
		{"empty body", "", `{}`},
		{"with a request", "", `{"query":"payments","budget_bytes":500,"max_per_bucket":1}`},
		{"with Idempotency-Key", "preview-key-1", `{}`},
		{"same key again", "preview-key-1", `{"query":"other"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _, raw := c.ctxSend(ctxPath("acme", "preview"), tc.key, tc.body)
			if st != 200 {
				t.Fatalf("status %d: %s", st, raw)
			}
			if a := ctxDecode(t, raw); a.BundleID != "" || a.Scope != "acme" {
				t.Errorf("got bundle_id %q scope %q, want none and acme", a.BundleID, a.Scope)
			}
			if after, afterRows := c.state(), rows(); after != before || afterRows != beforeRows {
				t.Errorf("preview changed the database:\n%s %s\n->\n%s %s", before, beforeRows, after, afterRows)
			}
		})
	}
	// A key a preview carried was not remembered: compile can use it.
	seq := c.ctxLastSeq()
	st, _, compiled := c.ctxSend(ctxPath("acme", "compile"), "preview-key-1", `{}`)
	if st != 200 {
		t.Fatalf("compile: %d %s", st, compiled)
	}
	a := ctxDecode(t, compiled)
	if a.BundleID == "" || !kura.ValidID(a.BundleID) {
		t.Fatalf("compile: got bundle_id %q, want a UUIDv7", a.BundleID)
	}
	if strings.Join(a.refs("use_now"), ",") != "fact:f1" || strings.Join(a.refs("do_not_use"), ",") != "belief:b2" {
		t.Errorf("compile: got %s", compiled)
	}

	evs := c.ctxEventsAfter(seq)
	if len(evs) != 1 || evs[0].Type != "context.compiled" || evs[0].Project != "acme" || evs[0].BundleID != a.BundleID {
		t.Fatalf("events after compile: got %+v, want one context.compiled for acme naming %s", evs, a.BundleID)
	}
	got := c.mustGet("/v1/scopes/acme/context/bundles/" + evs[0].BundleID)
	if !bytes.Equal(got, compiled) {
		t.Errorf("GET bundle:\n%s\nwant the compile answer byte for byte:\n%s", got, compiled)
	}

	t.Run("IdempotentReplay", func(t *testing.T) {
		st, h, again := c.ctxSend(ctxPath("acme", "compile"), "preview-key-1", `{}`)
		if st != 200 || !bytes.Equal(again, compiled) || h.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay: got %d %s (replayed %q), want the first answer again", st, again, h.Get("Idempotent-Replayed"))
		}
		if evs := c.ctxEventsAfter(seq); len(evs) != 1 {
			t.Errorf("replay wrote: %d events after the compile, want 1", len(evs))
		}
		st, _, raw := c.ctxSend(ctxPath("acme", "compile"), "preview-key-1", `{"query":"different"}`)
		if st != 409 {
			t.Errorf("same key, other request: got %d %s, want 409", st, raw)
		}
	})
}

// (c) budget_bytes keeps a prefix of the ranked items, in bucket order,
// whose JSON fits; bytes is exactly their size and omitted counts the rest.
func TestContext_Budget(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	var nodes []string
	for i, spec := range []struct{ lifecycle, authority string }{
		{"active", "trusted"}, {"active", "verified"}, {"active", "trusted"},
		{"candidate", "unknown"}, {"active", "advisory"},
		{"archived", "trusted"},
		{"suppressed", "trusted"}, {"active", "rejected"},
	} {
		nodes = append(nodes, fmt.Sprintf(`{"kind":"fact","id":"n%d","title":"node %d","summary":%q,"lifecycle":%q,"authority":%q}`,
			i, i, strings.Repeat("word ", 3+i*7), spec.lifecycle, spec.authority))
	}
	c.ctxNodes("budget", nodes...)

	full := c.ctxCall(t, "budget", "preview", `{}`)
	// The ranked order the budget walks: use_now first, then the others.
	var order []string
	var sizes []int
	for _, b := range ctxBuckets {
		for i, r := range full.Raw[b] {
			order = append(order, full.Buckets[b][i].Ref)
			sizes = append(sizes, len(r))
		}
	}
	if len(order) != 8 || full.Omitted["use_now"]+full.Omitted["do_not_use"] != 0 {
		t.Fatalf("unbudgeted: got %d items, omitted %v", len(order), full.Omitted)
	}
	prefix := func(k int) int {
		s := 0
		for _, n := range sizes[:k] {
			s += n
		}
		return s
	}
	type budgetCase struct {
		budget, kept int
	}
	cases := []budgetCase{{1, 0}, {sizes[0] - 1, 0}, {1 << 20, 8}}
	// At the boundaries: the first k items fit exactly, and one byte short
	// of the next item still keeps k.
	for k := 1; k <= len(sizes); k++ {
		cases = append(cases, budgetCase{prefix(k), k})
		if k < len(sizes) {
			cases = append(cases, budgetCase{prefix(k+1) - 1, k})
		}
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.budget), func(t *testing.T) {
			a := c.ctxCall(t, "budget", "preview", fmt.Sprintf(`{"budget_bytes":%d}`, tc.budget))
			var kept []string
			sum, omitted := 0, 0
			for _, b := range ctxBuckets {
				for i, r := range a.Raw[b] {
					kept = append(kept, a.Buckets[b][i].Ref)
					sum += len(r)
				}
				omitted += a.Omitted[b]
			}
			if a.Bytes > tc.budget || a.Bytes != sum {
				t.Errorf("bytes: got %d, want ≤ %d and the items' JSON size %d", a.Bytes, tc.budget, sum)
			}
			if !slices.Equal(kept, order[:tc.kept]) {
				t.Errorf("kept %v, want the first %d of %v", kept, tc.kept, order)
			}
			if omitted != len(order)-tc.kept || len(a.Trace) != len(order) {
				t.Errorf("omitted %v (%d), trace %d; want %d omitted and every node traced", a.Omitted, omitted, len(a.Trace), len(order)-tc.kept)
			}
			for _, b := range ctxBuckets {
				if want := len(full.Raw[b]) - len(a.Raw[b]); a.Omitted[b] != want {
					t.Errorf("omitted[%s]: got %d, want %d", b, a.Omitted[b], want)
				}
			}
			if cut := tc.kept < len(order); cut != slices.ContainsFunc(a.Warnings, func(w string) bool { return strings.HasPrefix(w, "budget:") }) {
				t.Errorf("warnings %q: want a budget warning exactly when something was cut (%v)", a.Warnings, cut)
			}
		})
	}

	t.Run("MaxPerBucket", func(t *testing.T) {
		a := c.ctxCall(t, "budget", "preview", `{"max_per_bucket":1}`)
		for _, b := range ctxBuckets {
			want := min(1, len(full.Raw[b]))
			if len(a.Raw[b]) != want || a.Omitted[b] != len(full.Raw[b])-want {
				t.Errorf("%s: got %d kept, %d omitted; want %d and %d", b, len(a.Raw[b]), a.Omitted[b], want, len(full.Raw[b])-want)
			}
			if want == 1 && a.Buckets[b][0].Ref != full.Buckets[b][0].Ref {
				t.Errorf("%s: kept %s, want the first, %s", b, a.Buckets[b][0].Ref, full.Buckets[b][0].Ref)
			}
		}
		if len(a.Trace) != len(order) {
			t.Errorf("trace: got %d entries, want every node (%d)", len(a.Trace), len(order))
		}
	})
}

// (d) Secret-like strings never leave kurad in a title or summary unless
// the caller asks for them; prose that only mentions secrets is untouched.
func TestContext_Redaction(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	const pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7r1bY1xWw0KoAeYfZ\nq3Jr2sNVh0yT8aQ==\n-----END RSA PRIVATE KEY-----"
	tests := []struct {
		id, title, summary  string
		wantTitle, wantSumm string
		secrets             []string
		redactions          int
	}{
		{"api-key", "OpenAI key", "key sk-abcdefghijklmnopqrstuvwx0123 in env", "OpenAI key", "key [REDACTED] in env", []string{"sk-abcdefghijklmnopqrstuvwx0123"}, 1},
		{"bearer", "Calling the API", "send Authorization: Bearer abcDEF123456789xyz.q please", "Calling the API", "send Authorization: Bearer [REDACTED] please", []string{"abcDEF123456789xyz.q"}, 1},
		{"pem", "Deploy key", "key:\n" + pem + "\ndone", "Deploy key", "key:\n[REDACTED]\ndone", []string{"MIIEpAIBAAKCAQEA7r1bY1xWw0KoAeYfZ", "BEGIN RSA PRIVATE KEY"}, 1},
		{"password", "Staging db", "db password=hunter22 for staging", "Staging db", "db password=[REDACTED] for staging", []string{"hunter22"}, 1},
		{"conn-string", "Connect", "connect to postgres://u:p4ss@db.internal/app now", "Connect", "connect to [REDACTED] now", []string{"u:p4ss@", "postgres://"}, 1},
		{"title", "token=abc123def456", "the title holds it", "token=[REDACTED]", "the title holds it", []string{"abc123def456"}, 1},
		{"ordinary", "Token budget", "the token budget is 8000 and the password policy needs rotation; see https://example.com/docs?a=b",
			"Token budget", "the token budget is 8000 and the password policy needs rotation; see https://example.com/docs?a=b", nil, 0},
	}
	total := 0
	for _, tt := range tests {
		b, _ := json.Marshal(map[string]string{"kind": "note", "id": tt.id, "title": tt.title, "summary": tt.summary})
		c.ctxNodes("sec", string(b))
		total += tt.redactions
	}

	for _, op := range []string{"preview", "compile"} {
		for _, body := range []string{`{}`, `{"redact":true}`} {
			t.Run(op+" "+body, func(t *testing.T) {
				a := c.ctxCall(t, "sec", op, body)
				if a.Redactions != total {
					t.Errorf("redactions: got %d, want %d", a.Redactions, total)
				}
				for _, tt := range tests {
					it := a.item(t, "note:"+tt.id)
					if it.Title != tt.wantTitle || it.Summary != tt.wantSumm {
						t.Errorf("%s: got %q / %q, want %q / %q", tt.id, it.Title, it.Summary, tt.wantTitle, tt.wantSumm)
					}
					for _, s := range tt.secrets {
						if bytes.Contains(a.Body, []byte(s)) {
							t.Errorf("%s: %q is in the answer", tt.id, s)
						}
					}
				}
				if a.BundleID != "" {
					if stored := c.mustGet("/v1/scopes/sec/context/bundles/" + a.BundleID); !bytes.Equal(stored, a.Body) {
						t.Errorf("stored bundle differs from the redacted answer")
					}
				}
			})
		}
	}
	t.Run("redact false", func(t *testing.T) {
		a := c.ctxCall(t, "sec", "preview", `{"redact":false}`)
		if a.Redactions != 0 {
			t.Errorf("redactions: got %d, want 0", a.Redactions)
		}
		for _, tt := range tests {
			if it := a.item(t, "note:"+tt.id); it.Title != tt.title || it.Summary != tt.summary {
				t.Errorf("%s: got %q / %q, want it as written", tt.id, it.Title, it.Summary)
			}
		}
	})
}

// (e) What decides a bucket: only the scope's own incoming relations of the
// blocking kinds at or above the thresholds, then lifecycle and authority.
func TestContext_Decisions(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	trusted := func(kind, id string) string {
		return fmt.Sprintf(`{"kind":%q,"id":%q,"summary":"s","lifecycle":"active","authority":"trusted"}`, kind, id)
	}

	t.Run("ScopeIsolation", func(t *testing.T) {
		for _, s := range []string{"alpha", "beta"} {
			c.ctxNodes(s, trusted("belief", "x"), trusted("belief", "y"))
		}
		c.ctxRelate("alpha", "contradicts", "belief:y", "belief:x", 0.9)
		c.ctxRelate("alpha", "requires_payload", "belief:x", "belief:y", 0.9)
		a := c.ctxCall(t, "alpha", "compile", `{}`)
		if te := a.trace(t, "belief:x"); te.Bucket != "do_not_use" || te.Reason != "blocked_by_relation" {
			t.Fatalf("alpha x: got %+v, want blocked (the setup is wrong)", te)
		}
		b := c.ctxCall(t, "beta", "compile", `{}`)
		for _, ref := range []string{"belief:x", "belief:y"} {
			if te := b.trace(t, ref); te.Bucket != "use_now" || te.Reason != "active_authoritative_memory" || te.RelationID != "" {
				t.Errorf("beta %s: got %+v, want use_now untouched by alpha's relations", ref, te)
			}
		}
		if a.Scope != "alpha" || b.Scope != "beta" {
			t.Errorf("scopes: got %s and %s", a.Scope, b.Scope)
		}
	})

	t.Run("NonDeciding", func(t *testing.T) {
		// Confidence and kind of the node, supports and derived_from
		// relations at full confidence, and the lifecycle of a relation's
		// source: none of them moves a node.
		c.ctxNodes("nd",
			`{"kind":"fact","id":"zero","summary":"s","lifecycle":"active","authority":"trusted","confidence":0}`,
			`{"kind":"drive","id":"one","summary":"s","lifecycle":"active","authority":"verified","confidence":1}`,
			`{"kind":"trace_pointer","id":"tp","summary":"s","lifecycle":"active","authority":"trusted","confidence":0.01}`,
			`{"kind":"belief","id":"cand","summary":"s","lifecycle":"candidate","authority":"trusted","confidence":1}`,
			`{"kind":"belief","id":"retired-src","summary":"s","lifecycle":"retired","authority":"rejected"}`,
			trusted("fact", "target"),
		)
		for _, to := range []string{"fact:zero", "drive:one", "trace_pointer:tp", "belief:cand"} {
			c.ctxRelate("nd", "supports", "belief:retired-src", to, 1)
			c.ctxRelate("nd", "derived_from", "drive:one", to, 1)
		}
		c.ctxRelate("nd", "contradicts", "belief:retired-src", "fact:target", 0.9)
		// An outgoing blocking relation does not block its source.
		c.ctxRelate("nd", "invalidates", "fact:zero", "belief:retired-src", 1)
		a := c.ctxCall(t, "nd", "preview", `{}`)
		for ref, want := range map[string]string{
			"fact:zero": "use_now", "drive:one": "use_now", "trace_pointer:tp": "use_now",
			"belief:cand": "inspect_before_use", "fact:target": "do_not_use", "belief:retired-src": "do_not_use",
		} {
			if te := a.trace(t, ref); te.Bucket != want {
				t.Errorf("%s: got %s (%s: %s), want %s", ref, te.Bucket, te.Reason, te.Detail, want)
			}
		}
	})

	t.Run("Thresholds", func(t *testing.T) {
		c.ctxNodes("th", trusted("belief", "src"), trusted("belief", "src2"))
		type ctxRel struct {
			kind string
			conf float64
		}
		tests := []struct {
			name    string
			rels    []ctxRel
			bucket  string
			reason  string
			decider int // index of the deciding relation, -1 for none
		}{
			{"contradicts 0.65 blocks", []ctxRel{{"contradicts", 0.65}}, "do_not_use", "blocked_by_relation", 0},
			{"contradicts 0.64 does not", []ctxRel{{"contradicts", 0.64}}, "use_now", "active_authoritative_memory", -1},
			{"supersedes 0.65 blocks", []ctxRel{{"supersedes", 0.65}}, "do_not_use", "blocked_by_relation", 0},
			{"invalidates 0.65 blocks", []ctxRel{{"invalidates", 0.65}}, "do_not_use", "blocked_by_relation", 0},
			{"invalidates 0.64 does not", []ctxRel{{"invalidates", 0.64}}, "use_now", "active_authoritative_memory", -1},
			{"requires_payload 0.55 rehydrates", []ctxRel{{"requires_payload", 0.55}}, "rehydrate", "relation_requires_payload", 0},
			{"requires_payload 0.54 does not", []ctxRel{{"requires_payload", 0.54}}, "use_now", "active_authoritative_memory", -1},
			{"blocking beats payload", []ctxRel{{"requires_payload", 0.9}, {"contradicts", 0.65}}, "do_not_use", "blocked_by_relation", 1},
			{"first blocking relation names it", []ctxRel{{"contradicts", 0.5}, {"supersedes", 0.7}, {"contradicts", 0.99}}, "do_not_use", "blocked_by_relation", 1},
		}
		ids := make([][]string, len(tests))
		for i, tt := range tests {
			target := fmt.Sprintf("t%d", i)
			c.ctxNodes("th", trusted("fact", target))
			for j, r := range tt.rels {
				// Two sources, so that one pair of nodes may carry two
				// relations of the same kind.
				src := []string{"belief:src", "belief:src2"}[j%2]
				ids[i] = append(ids[i], c.ctxRelate("th", r.kind, src, "fact:"+target, r.conf))
			}
		}
		a := c.ctxCall(t, "th", "compile", `{}`)
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				te := a.trace(t, fmt.Sprintf("fact:t%d", i))
				wantRel := ""
				if tt.decider >= 0 {
					wantRel = ids[i][tt.decider]
				}
				if te.Bucket != tt.bucket || te.Reason != tt.reason || te.RelationID != wantRel {
					t.Errorf("got %s %s relation %q (%s), want %s %s relation %q", te.Bucket, te.Reason, te.RelationID, te.Detail, tt.bucket, tt.reason, wantRel)
				}
			})
		}
	})
}

// (f) Bad input is refused with the field named, and changes nothing.
func TestContext_BadInputWritesNothing(t *testing.T) {
	t.Parallel()
	c, d := newDaemon(t)
	rows := ctxRows(t, d)
	c.ctxFourBuckets("acme")
	bundle := ctxDecode(t, c.mustPost(ctxPath("acme", "compile"), `{}`, 200)).BundleID

	type badCase struct {
		name, method, path, ct, body string
		status                       int
		code, field                  string
	}
	var cases []badCase
	for _, op := range []string{"preview", "compile"} {
		p := ctxPath("acme", op)
		cases = append(cases,
			badCase{op + " malformed JSON", "POST", p, "application/json", `{"query":`, 400, "invalid_argument", ""},
			badCase{op + " empty body", "POST", p, "application/json", ``, 400, "invalid_argument", ""},
			badCase{op + " not an object", "POST", p, "application/json", `[]`, 400, "invalid_argument", ""},
			badCase{op + " unknown field", "POST", p, "application/json", `{"query":"x","colour":"red"}`, 400, "invalid_argument", "colour"},
			badCase{op + " unknown kind", "POST", p, "application/json", `{"kinds":["fact","dream"]}`, 400, "invalid_argument", "kinds"},
			badCase{op + " kinds not a list", "POST", p, "application/json", `{"kinds":"fact"}`, 400, "invalid_argument", "kinds"},
			badCase{op + " max_per_bucket -1", "POST", p, "application/json", `{"max_per_bucket":-1}`, 400, "invalid_argument", "max_per_bucket"},
			badCase{op + " max_per_bucket 1.5", "POST", p, "application/json", `{"max_per_bucket":1.5}`, 400, "invalid_argument", "max_per_bucket"},
			badCase{op + " budget_bytes -1", "POST", p, "application/json", `{"budget_bytes":-1}`, 400, "invalid_argument", "budget_bytes"},
			badCase{op + " as_of yesterday", "POST", p, "application/json", `{"as_of":"yesterday"}`, 400, "invalid_argument", "as_of"},
			badCase{op + " redact not a bool", "POST", p, "application/json", `{"redact":"no"}`, 400, "invalid_argument", "redact"},
			badCase{op + " not JSON media type", "POST", p, "text/plain", `{}`, 415, "unsupported_media_type", ""},
			badCase{op + " bad scope slug", "POST", ctxPath("Acme_Corp!", op), "application/json", `{}`, 400, "invalid_argument", "scope"},
			badCase{op + " wrong method", "GET", p, "", ``, 405, "method_not_allowed", ""},
		)
	}
	cases = append(cases,
		badCase{"unknown bundle id", "GET", "/v1/scopes/acme/context/bundles/0193a000-0000-7000-8000-000000000000", "", ``, 404, "not_found", ""},
		badCase{"bundle of another scope", "GET", "/v1/scopes/other/context/bundles/" + bundle, "", ``, 404, "not_found", ""},
		badCase{"bad bundle id", "GET", "/v1/scopes/acme/context/bundles/not-a-uuid", "", ``, 400, "invalid_argument", "id"},
		badCase{"uppercase bundle id", "GET", "/v1/scopes/acme/context/bundles/" + strings.ToUpper(bundle), "", ``, 400, "invalid_argument", "id"},
		badCase{"bundle under a bad scope", "GET", "/v1/scopes/ACME/context/bundles/" + bundle, "", ``, 400, "invalid_argument", "scope"},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, beforeRows := c.state(), rows()
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
				if d, _ := e["details"].(map[string]any); d["field"] != tc.field {
					t.Errorf("details.field: got %v, want %s (%s)", d["field"], tc.field, raw)
				}
			}
			if after, afterRows := c.state(), rows(); after != before || afterRows != beforeRows {
				t.Errorf("state changed:\n%s %s\n->\n%s %s", before, beforeRows, after, afterRows)
			}
		})
	}
}

// (g) A turn opened with memory packs the compiled use_now items into its
// context ledger, written by kurad, and names the bundle it came from.
func TestContext_TurnOpenWithMemory(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	c.ctxNodes("hashi",
		`{"kind":"fact","id":"retry","title":"Retry policy","summary":"payments retry thrice","lifecycle":"active","authority":"trusted"}`,
		`{"kind":"decision","id":"rest","title":"Use REST","summary":"REST for the public API; key sk-abcdefghijklmnopqrstuvwx0123","lifecycle":"active","authority":"verified"}`,
		`{"kind":"belief","id":"maybe","title":"Queue lags","summary":"unsure"}`,
		`{"kind":"fact","id":"old","title":"Old retry","summary":"retry twice","lifecycle":"suppressed","authority":"trusted"}`)
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"mem"}`, 201))
	seq := c.ctxLastSeq()
	turn := decode[kura.Turn](t, c.mustPost("/v1/sessions/"+s.ID+"/turns",
		`{"instruction":{"type":"task.instruction","content":"fix retries","author_id":"user:oles"},"memory":{"query":"retry","budget_bytes":8000}}`, 201))
	if turn.ContextBundleID == nil || !kura.ValidID(*turn.ContextBundleID) {
		t.Fatalf("turn open: got context_bundle_id %v, want a bundle id", turn.ContextBundleID)
	}
	bundle := ctxDecode(t, c.mustGet("/v1/scopes/hashi/context/bundles/"+*turn.ContextBundleID))
	if bundle.BundleID != *turn.ContextBundleID || len(bundle.Buckets["use_now"]) != 2 {
		t.Fatalf("bundle: got %s, want two use_now items", bundle.Body)
	}
	if bundle.Trace[0].Ref != "fact:retry" || bundle.Trace[0].Score == nil {
		t.Errorf("bundle trace starts %+v, want fact:retry scored for the query", bundle.Trace[0])
	}

	recs := decode[struct{ Records []kura.Record }](t, c.mustGet("/v1/ledgers/"+turn.ContextLedgerID+"/records")).Records
	var mem []kura.Record
	for _, r := range recs {
		if strings.HasPrefix(r.Type, "memory.") {
			mem = append(mem, r)
		}
	}
	if len(mem) != len(bundle.Raw["use_now"]) {
		t.Fatalf("context ledger: got %d memory records, want one per use_now item (%d)", len(mem), len(bundle.Raw["use_now"]))
	}
	for i, r := range mem {
		it := bundle.Buckets["use_now"][i]
		wantType := "memory.fact"
		if strings.HasPrefix(it.Ref, "decision:") {
			wantType = "memory.decision"
		}
		if r.Type != wantType || r.AuthorID != "sys:kurad" || r.Metadata["bundle_id"] != bundle.BundleID {
			t.Errorf("record %d: got %s by %s metadata %v, want %s by sys:kurad naming the bundle", i, r.Type, r.AuthorID, r.Metadata, wantType)
		}
		got, err := kurahash.Canonical(r.Content)
		if err != nil {
			t.Fatal(err)
		}
		want, err := kurahash.Canonical(bundle.Raw["use_now"][i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("record %d content:\n%s\nwant the use_now item:\n%s", i, got, want)
		}
		if bytes.Contains(r.Content, []byte("sk-abcdefghijklmnopqrstuvwx0123")) {
			t.Errorf("record %d carries the API key unredacted: %s", i, r.Content)
		}
	}
	var compiled []ctxEvent
	for _, e := range c.ctxEventsAfter(seq) {
		if e.Type == "context.compiled" {
			compiled = append(compiled, e)
		}
	}
	if len(compiled) != 1 || compiled[0].BundleID != bundle.BundleID || compiled[0].Project != "hashi" {
		t.Errorf("context.compiled events after the open: got %+v, want one naming %s in hashi", compiled, bundle.BundleID)
	}
}

// (h) as_of compiles memory as it was, and says how old it is.
func TestContext_AsOf(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	nodes := c.ctxNodes("hist",
		`{"kind":"fact","id":"a","summary":"first","lifecycle":"active","authority":"trusted"}`,
		`{"kind":"fact","id":"b","summary":"second","lifecycle":"active","authority":"trusted"}`)
	noted := nodes["fact:b"].UpdatedAt
	c.mustPost("/v1/scopes/hist/memory/nodes/fact:a/transition", `{"lifecycle":"suppressed","reason":"wrong"}`, 200)
	c.ctxNodes("hist", `{"kind":"fact","id":"c","summary":"later","lifecycle":"active","authority":"trusted"}`)
	c.ctxRelate("hist", "invalidates", "fact:c", "fact:b", 0.9)

	now := c.ctxCall(t, "hist", "compile", `{}`)
	if got := now.refs("do_not_use"); !slices.Equal(got, []string{"fact:b", "fact:a"}) && !slices.Equal(got, []string{"fact:a", "fact:b"}) {
		t.Fatalf("now: do_not_use %v, want fact:a (suppressed) and fact:b (invalidated)", got)
	}
	if len(now.Warnings) != 0 {
		t.Errorf("now: warnings %q, want none", now.Warnings)
	}

	// kurad calls memory stale once it is over a second old; wait for the
	// noted instant to get there rather than guess with a sleep.
	body := fmt.Sprintf(`{"as_of":%q}`, noted)
	if !testwait.Until(10*time.Second, func() bool { return len(c.ctxCall(t, "hist", "preview", body).Warnings) > 0 }) {
		t.Fatal("no stale warning 10s after the noted time")
	}
	old := c.ctxCall(t, "hist", "compile", body)
	if old.AsOf != noted {
		t.Errorf("as_of: got %s, want %s", old.AsOf, noted)
	}
	if got := old.refs("use_now"); len(got) != 2 || !slices.Contains(got, "fact:a") || !slices.Contains(got, "fact:b") {
		t.Errorf("as of %s: use_now %v, want fact:a and fact:b as they were (c did not exist)", noted, got)
	}
	if len(old.Trace) != 2 {
		t.Errorf("as of %s: trace %+v, want the two nodes that existed", noted, old.Trace)
	}
	if len(old.Warnings) != 1 || !strings.HasPrefix(old.Warnings[0], "stale:") || !strings.Contains(old.Warnings[0], noted) {
		t.Errorf("warnings: got %q, want one starting with stale: naming %s", old.Warnings, noted)
	}
	// The same instant in another zone is the same memory.
	tm, err := kura.ParseTime(noted)
	if err != nil {
		t.Fatal(err)
	}
	zoned := c.ctxCall(t, "hist", "preview", fmt.Sprintf(`{"as_of":%q}`, tm.In(time.FixedZone("", -5*3600)).Format(time.RFC3339Nano)))
	if zoned.AsOf != noted || zoned.Digest != old.Digest {
		t.Errorf("as_of in -05:00: got %s %s, want %s %s", zoned.AsOf, zoned.Digest, noted, old.Digest)
	}
	if st, _, raw := c.get("/v1/scopes/hist/context/bundles/" + url.PathEscape(old.BundleID)); st != 200 || !bytes.Equal(raw, old.Body) {
		t.Errorf("GET the as_of bundle: %d, want the compile answer", st)
	}
}
