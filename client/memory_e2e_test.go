package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
)

func TestE2E_Memory(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t)
	rec := mustPut(t, c, ctx, "agent.thought", "agent:bmo", `{"saw":"timeouts"}`)

	// Ids may hold '.', '-' and '_'; refs join kind and id with ':', and
	// both must survive the trip through the URL path.
	n, created, err := c.PutNode(ctx, "acme", client.NodeInput{Kind: "belief", ID: "pay.retry_v2-a", Title: new("Payments retry"),
		Summary: new("retry failed charges"), Confidence: new(0.6), TargetFiles: []string{"pay/retry.go"}, Owner: new("agent:bmo"),
		DerivedFrom: []string{"record:" + rec.ID}, Metadata: json.RawMessage(`{"team":"payments"}`)})
	if err != nil || !created {
		t.Fatalf("put: got %+v, created %v, %v, want a new node", n, created, err)
	}
	const ref = "belief:pay.retry_v2-a"
	if n.Ref != ref || n.Version != 1 || n.Lifecycle != "candidate" || n.Authority != "unknown" || n.SourceType != "direct_experience" {
		t.Fatalf("put: got %+v, want version 1 with the contract's defaults", n)
	}

	v2, created, err := c.PutNode(ctx, "acme", client.NodeInput{Kind: "belief", ID: "pay.retry_v2-a", Confidence: new(0.9), Reason: "seen in prod"})
	if err != nil || created {
		t.Fatalf("new version: got created %v, %v, want an update", created, err)
	}
	// Fields left nil are left out of the body, so they keep their value
	// (a null metadata would be refused).
	if v2.Version != 2 || v2.Confidence != 0.9 || v2.Title != "Payments retry" || string(v2.Metadata) != `{"team":"payments"}` ||
		!slices.Equal(v2.TargetFiles, []string{"pay/retry.go"}) || !slices.Equal(v2.DerivedFrom, []string{"record:" + rec.ID}) {
		t.Fatalf("new version: got %+v, want version 2 keeping the omitted fields", v2)
	}

	t.Run("PutNodes", func(t *testing.T) {
		nodes, err := c.PutNodes(ctx, "acme", []client.NodeInput{
			{Kind: "fact", ID: "f.1", Summary: new("the gateway times out after 30s")},
			{Kind: "decision", ID: "d.1", Title: new("Backoff"), Summary: new("retry with backoff"), DerivedFrom: []string{"fact:f.1", ref}},
		})
		if err != nil || len(nodes) != 2 || nodes[0].Ref != "fact:f.1" || nodes[1].Ref != "decision:d.1" {
			t.Fatalf("got %+v, %v, want f.1 then d.1", nodes, err)
		}
		_, err = c.PutNodes(ctx, "acme", nil)
		if e := wantCode(t, err, client.EInvalid); e.Details["field"] != "nodes" {
			t.Errorf("empty batch: got details %v, want field nodes", e.Details)
		}
	})

	t.Run("GetAndAsOf", func(t *testing.T) {
		got, err := c.GetNode(ctx, "acme", ref, "")
		if err != nil || got.Version != 2 {
			t.Fatalf("current: got %+v, %v, want version 2", got, err)
		}
		old, err := c.GetNode(ctx, "acme", ref, n.UpdatedAt)
		if err != nil || old.Version != 1 || old.Confidence != 0.6 {
			t.Fatalf("as of version 1: got %+v, %v", old, err)
		}
		_, err = c.GetNode(ctx, "acme", ref, "2000-01-01T00:00:00Z")
		wantCode(t, err, client.ENotFound)
		_, err = c.GetNode(ctx, "acme", ref, "yesterday")
		if e := wantCode(t, err, client.EInvalid); e.Details["field"] != "as_of" {
			t.Errorf("bad as_of: got details %v", e.Details)
		}
		_, err = c.GetNode(ctx, "other", ref, "")
		wantCode(t, err, client.ENotFound)
	})

	t.Run("ListNodes", func(t *testing.T) {
		p, err := c.ListNodes(ctx, "acme", client.NodeListOptions{})
		if err != nil || len(p.Nodes) != 3 || p.NextCursor != "" {
			t.Fatalf("all: got %+v, %v, want 3 nodes on one page", p, err)
		}
		var seen []string
		opts := client.NodeListOptions{Limit: 2}
		for {
			p, err := c.ListNodes(ctx, "acme", opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range p.Nodes {
				seen = append(seen, n.Ref)
			}
			if p.NextCursor == "" {
				break
			}
			opts.Cursor = p.NextCursor
		}
		if want := []string{ref, "fact:f.1", "decision:d.1"}; !slices.Equal(seen, want) {
			t.Errorf("paged: got %v, want %v", seen, want)
		}
		for _, tc := range []struct {
			name string
			opts client.NodeListOptions
			want []string
		}{
			{"kind", client.NodeListOptions{Kind: "fact"}, []string{"fact:f.1"}},
			{"owner", client.NodeListOptions{Owner: "agent:bmo"}, []string{ref}},
			{"min confidence", client.NodeListOptions{MinConfidence: new(0.8)}, []string{ref}},
			{"lifecycle and authority", client.NodeListOptions{Lifecycle: "candidate", Authority: "unknown", Kind: "decision"}, []string{"decision:d.1"}},
			{"updated since", client.NodeListOptions{UpdatedSince: "9999-01-01T00:00:00Z"}, nil},
		} {
			p, err := c.ListNodes(ctx, "acme", tc.opts)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			var got []string
			for _, n := range p.Nodes {
				got = append(got, n.Ref)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			}
		}
	})

	t.Run("TransitionAndHistory", func(t *testing.T) {
		tr, err := c.TransitionNode(ctx, "acme", "fact:f.1", client.Transition{Lifecycle: "active", Authority: new("trusted"), Reason: "checked"})
		if err != nil || tr.Lifecycle != "active" || tr.Authority != "trusted" || tr.Version != 2 {
			t.Fatalf("transition: got %+v, %v", tr, err)
		}
		_, err = c.TransitionNode(ctx, "acme", "fact:f.1", client.Transition{Lifecycle: "active"})
		if e := wantCode(t, err, client.EInvalid); e.Details["field"] != "reason" {
			t.Errorf("no reason: got details %v, want field reason", e.Details)
		}
		h, err := c.NodeHistory(ctx, "acme", ref)
		if err != nil {
			t.Fatal(err)
		}
		if h.Ref != ref || len(h.Versions) != 2 || h.Versions[0].Version != 1 || h.Versions[1].Confidence != 0.9 {
			t.Fatalf("history: got %+v, want versions 1 and 2 decoded", h)
		}
		ch := h.ConfidenceHistory
		if len(ch) != 2 || ch[0].Old != nil || ch[1].Old == nil || *ch[1].Old != 0.6 || ch[1].New != 0.9 || ch[1].Reason != "seen in prod" {
			t.Errorf("confidence history: got %+v", ch)
		}
	})

	t.Run("RelationsAndFeedback", func(t *testing.T) {
		rel, err := c.CreateRelation(ctx, "acme", client.RelationInput{ID: "r.1", Kind: "supports", From: "fact:f.1", To: "decision:d.1", Reasons: []string{"timeouts"}})
		if err != nil || rel.ID != "r.1" || rel.Confidence != 0.7 || rel.Scope != "acme" {
			t.Fatalf("relation: got %+v, %v, want r.1 with the default confidence", rel, err)
		}
		if _, err := c.CreateRelation(ctx, "acme", client.RelationInput{Kind: "contradicts", From: ref, To: ref, Confidence: new(0.0)}); err != nil {
			t.Fatalf("self-relation with confidence 0: %v", err)
		}
		p, err := c.ListRelations(ctx, "acme", client.RelationListOptions{Ref: "decision:d.1"})
		if err != nil || len(p.Relations) != 1 || p.Relations[0].ID != "r.1" {
			t.Errorf("by ref: got %+v, %v", p, err)
		}
		p, err = c.ListRelations(ctx, "acme", client.RelationListOptions{Kind: "contradicts"})
		if err != nil || len(p.Relations) != 1 || p.Relations[0].Confidence != 0 {
			t.Errorf("by kind: got %+v, %v, want the self-relation with confidence 0 kept", p, err)
		}
		p, err = c.ListRelations(ctx, "acme", client.RelationListOptions{Limit: 1})
		if err != nil || len(p.Relations) != 1 || p.NextCursor == "" {
			t.Fatalf("page 1: got %+v, %v", p, err)
		}
		p, err = c.ListRelations(ctx, "acme", client.RelationListOptions{Limit: 1, Cursor: p.NextCursor})
		if err != nil || len(p.Relations) != 1 || p.Relations[0].Kind != "contradicts" || p.NextCursor != "" {
			t.Errorf("page 2: got %+v, %v", p, err)
		}
		_, err = c.CreateRelation(ctx, "acme", client.RelationInput{Kind: "supports", From: "fact:f.1", To: "fact:ghost"})
		if e := wantCode(t, err, client.EInvalid); e.Details["field"] != "to" {
			t.Errorf("missing end: got details %v, want field to", e.Details)
		}

		fb, err := c.CreateFeedback(ctx, "acme", client.FeedbackInput{Ref: "decision:d.1", Outcome: "positive", AuthorID: "agent:bmo"})
		if err != nil || fb.ID == "" || fb.Outcome != "positive" || fb.Note != "" {
			t.Fatalf("feedback: got %+v, %v", fb, err)
		}
		_, err = c.CreateFeedback(ctx, "acme", client.FeedbackInput{Ref: "decision:ghost", Outcome: "positive", AuthorID: "agent:bmo"})
		wantCode(t, err, client.ENotFound)
	})

	t.Run("Search", func(t *testing.T) {
		res, err := c.Search(ctx, "acme", client.SearchQuery{Q: "payments retry"})
		if err != nil || len(res) == 0 || res[0].Ref != ref || res[0].Node == nil || res[0].Node.Ref != ref {
			t.Fatalf("got %+v, %v, want the belief first", res, err)
		}
		if r := res[0].Reasons; len(r) == 0 || r[0].Code != "title_match" || r[0].Detail != "payments, retry" {
			t.Errorf("reasons: got %+v, want a title match first", r)
		}
		res, err = c.Search(ctx, "acme", client.SearchQuery{Q: "retry", Kind: "decision", Lifecycle: "candidate", Authority: "unknown", MinConfidence: new(0.5), Limit: 5})
		if err != nil || len(res) != 1 || res[0].Ref != "decision:d.1" {
			t.Fatalf("filtered: got %+v, %v, want d.1", res, err)
		}
		var codes []string
		for _, r := range res[0].Reasons {
			codes = append(codes, r.Code)
		}
		if want := []string{"summary_match", "kind_filter", "lifecycle_filter", "authority_filter", "min_confidence_filter"}; !slices.Equal(codes, want) {
			t.Errorf("filtered reasons: got %v, want %v", codes, want)
		}
		res, err = c.Search(ctx, "acme", client.SearchQuery{TargetFile: "pay/retry.go", Owner: "agent:bmo"})
		if err != nil || len(res) != 1 || res[0].Ref != ref {
			t.Errorf("filters only: got %+v, %v", res, err)
		}
		res, err = c.Search(ctx, "elsewhere", client.SearchQuery{Q: "payments"})
		if err != nil || len(res) != 0 {
			t.Errorf("another scope: got %+v, %v, want nothing", res, err)
		}
		// SearchMemory carries the warnings: this kurad has no embedder.
		ans, err := c.SearchMemory(ctx, "acme", client.SearchQuery{Q: "payments retry", Mode: "hybrid"})
		if err != nil || len(ans.Results) == 0 || ans.Results[0].Ref != ref || len(ans.Warnings) != 1 {
			t.Errorf("hybrid without an embedder: got %+v, %v; want the words answer and a warning", ans, err)
		}
	})

	t.Run("Revise", func(t *testing.T) {
		rev, err := c.ReviseNode(ctx, "acme", "decision:d.1", client.NodeInput{ID: "d.2", Summary: new("retry twice, then fail over")})
		if err != nil {
			t.Fatal(err)
		}
		if rev.Node.Ref != "decision:d.2" || rev.Node.Title != "Backoff" || rev.Node.SourceType != "revision" || !slices.Equal(rev.Node.DerivedFrom, []string{"decision:d.1"}) {
			t.Errorf("new node: got %+v", rev.Node)
		}
		if rev.Superseded.Ref != "decision:d.1" || rev.Superseded.Lifecycle != "retired" {
			t.Errorf("superseded: got %+v, want d.1 retired", rev.Superseded)
		}
		if rev.Relation.Kind != "supersedes" || rev.Relation.From != "decision:d.2" || rev.Relation.To != "decision:d.1" {
			t.Errorf("relation: got %+v", rev.Relation)
		}
		_, err = c.ReviseNode(ctx, "acme", "decision:d.1", client.NodeInput{Summary: new("again")})
		wantCode(t, err, client.EConflict)
	})

	t.Run("Errors", func(t *testing.T) {
		// Out of range is refused, not clamped, and the field is named.
		_, _, err := c.PutNode(ctx, "acme", client.NodeInput{Kind: "belief", Summary: new("x"), Confidence: new(1.5)})
		if e := wantCode(t, err, client.EInvalid); e.Details["field"] != "confidence" || e.Message == "" {
			t.Errorf("confidence 1.5: got %+v, want field confidence", e)
		}
		_, _, err = c.PutNode(ctx, "acme", client.NodeInput{Kind: "belief", Summary: new("x"), DerivedFrom: []string{"belief:ghost"}})
		e := wantCode(t, err, client.EInvalid)
		if missing, _ := e.Details["missing"].([]any); len(missing) != 1 || missing[0] != "belief:ghost" {
			t.Errorf("missing parent: got details %v, want missing [belief:ghost]", e.Details)
		}
		_, _, err = c.PutNode(ctx, "Acme", client.NodeInput{Kind: "belief", Summary: new("x")})
		if e := wantCode(t, err, client.EInvalid); e.Details["field"] != "scope" {
			t.Errorf("bad scope: got details %v", e.Details)
		}
		_, err = c.GetNode(ctx, "acme", "belief:ghost", "")
		wantCode(t, err, client.ENotFound)
		// A '/' in a ref is escaped: the ref stays one path segment and
		// kurad names it bad, rather than routing elsewhere (404).
		for _, bad := range []string{"belief:a/b", "belief:a?b", "belief:../x", "nokind"} {
			_, err = c.GetNode(ctx, "acme", bad, "")
			if e := wantCode(t, err, client.EInvalid); e.Details["field"] != "ref" {
				t.Errorf("%q: got details %v, want field ref", bad, e.Details)
			}
		}
	})
}

func TestE2E_MemoryIdempotentRetry(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t)
	in := client.NodeInput{Kind: "note", Summary: new("no id: the server picks one")}
	kctx := client.WithIdempotencyKey(ctx, "note-1")
	var raw1, raw2 json.RawMessage
	n1, created1, err := c.PutNode(client.WithRawResponse(kctx, &raw1), "acme", in)
	if err != nil || !created1 {
		t.Fatalf("first: %v", err)
	}
	// A retry after a lost answer: the same node, not a second one.
	n2, created2, err := c.PutNode(client.WithRawResponse(kctx, &raw2), "acme", in)
	if err != nil || !created2 || n2.Ref != n1.Ref || string(raw1) != string(raw2) {
		t.Fatalf("retry: got %s (created %v), %v, want the first answer %s", raw2, created2, err, raw1)
	}
	p, err := c.ListNodes(ctx, "acme", client.NodeListOptions{})
	if err != nil || len(p.Nodes) != 1 {
		t.Fatalf("nodes: got %+v, %v, want 1", p, err)
	}
	// The same key for another write is refused.
	_, _, err = c.PutNode(kctx, "acme", client.NodeInput{Kind: "note", Summary: new("other")})
	wantCode(t, err, client.EConflict)

	// Revise, retried: one revision, one supersedes relation.
	rctx := client.WithIdempotencyKey(ctx, "revise-1")
	r1, err := c.ReviseNode(rctx, "acme", n1.Ref, client.NodeInput{Summary: new("revised")})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.ReviseNode(rctx, "acme", n1.Ref, client.NodeInput{Summary: new("revised")})
	if err != nil || r2.Node.Ref != r1.Node.Ref || r2.Relation.ID != r1.Relation.ID {
		t.Fatalf("revise retry: got %+v, %v, want the first revision", r2, err)
	}
	rels, err := c.ListRelations(ctx, "acme", client.RelationListOptions{Kind: "supersedes"})
	if err != nil || len(rels.Relations) != 1 {
		t.Errorf("supersedes relations: got %+v, %v, want 1", rels, err)
	}
}

// TestClient_MemoryRequests checks what goes on the wire: paths with refs
// as they are, omitted fields absent rather than null, an empty target file
// list sent (it clears the list) and queries built from the options.
func TestClient_MemoryRequests(t *testing.T) {
	t.Parallel()
	type seen struct{ method, uri, key, body string }
	var got seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = seen{r.Method, r.URL.RequestURI(), r.Header.Get("Idempotency-Key"), strings.TrimSpace(string(b))}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c := client.New(srv.URL)
	ctx := client.WithIdempotencyKey(context.Background(), "k-1")

	tests := []struct {
		name string
		call func() error
		want seen
	}{
		{"PutNode", func() error {
			_, _, err := c.PutNode(ctx, "acme", client.NodeInput{Kind: "belief", ID: "b.1", Summary: new("s"), Confidence: new(0.0), TargetFiles: []string{}})
			return err
		}, seen{"POST", "/v1/scopes/acme/memory/nodes", "k-1", `{"kind":"belief","id":"b.1","summary":"s","confidence":0,"target_files":[]}`}},
		{"PutNodes", func() error {
			_, err := c.PutNodes(ctx, "acme", []client.NodeInput{{Kind: "fact", Summary: new("a"), DerivedFrom: []string{"belief:b.1"}, Metadata: json.RawMessage(`{"k":1}`)}})
			return err
		}, seen{"POST", "/v1/scopes/acme/memory/nodes/batch", "k-1", `{"nodes":[{"kind":"fact","summary":"a","derived_from":["belief:b.1"],"metadata":{"k":1}}]}`}},
		{"GetNode", func() error {
			_, err := c.GetNode(ctx, "acme", "belief:b.1", "2026-01-02T03:04:05Z")
			return err
		}, seen{"GET", "/v1/scopes/acme/memory/nodes/belief:b.1?as_of=2026-01-02T03%3A04%3A05Z", "", ""}},
		{"GetNodeSlash", func() error {
			_, err := c.GetNode(ctx, "acme", "belief:a/b", "")
			return err
		}, seen{"GET", "/v1/scopes/acme/memory/nodes/belief:a%2Fb", "", ""}},
		{"ListNodes", func() error {
			_, err := c.ListNodes(ctx, "acme", client.NodeListOptions{Kind: "fact", Lifecycle: "active", Authority: "trusted", Owner: "agent:a", MinConfidence: new(0.25), UpdatedSince: "2026-01-01T00:00:00Z", Limit: 5, Cursor: "c"})
			return err
		}, seen{"GET", "/v1/scopes/acme/memory/nodes?authority=trusted&cursor=c&kind=fact&lifecycle=active&limit=5&min_confidence=0.25&owner=agent%3Aa&updated_since=2026-01-01T00%3A00%3A00Z", "", ""}},
		{"NodeHistory", func() error {
			_, err := c.NodeHistory(ctx, "acme", "belief:b.1")
			return err
		}, seen{"GET", "/v1/scopes/acme/memory/nodes/belief:b.1/history", "", ""}},
		{"TransitionNode", func() error {
			_, err := c.TransitionNode(ctx, "acme", "belief:b.1", client.Transition{Lifecycle: "retired", Reason: "old"})
			return err
		}, seen{"POST", "/v1/scopes/acme/memory/nodes/belief:b.1/transition", "k-1", `{"lifecycle":"retired","reason":"old"}`}},
		{"ReviseNode", func() error {
			_, err := c.ReviseNode(ctx, "acme", "belief:b.1", client.NodeInput{Title: new("")})
			return err
		}, seen{"POST", "/v1/scopes/acme/memory/nodes/belief:b.1/revise", "k-1", `{"title":""}`}},
		{"CreateRelation", func() error {
			_, err := c.CreateRelation(ctx, "acme", client.RelationInput{Kind: "supports", From: "fact:f", To: "belief:b"})
			return err
		}, seen{"POST", "/v1/scopes/acme/memory/relations", "k-1", `{"kind":"supports","from":"fact:f","to":"belief:b"}`}},
		{"ListRelations", func() error {
			_, err := c.ListRelations(ctx, "acme", client.RelationListOptions{Ref: "belief:b", Kind: "supports", Limit: 2})
			return err
		}, seen{"GET", "/v1/scopes/acme/memory/relations?kind=supports&limit=2&ref=belief%3Ab", "", ""}},
		{"CreateFeedback", func() error {
			_, err := c.CreateFeedback(ctx, "acme", client.FeedbackInput{Ref: "belief:b", Outcome: "neutral", AuthorID: "agent:a"})
			return err
		}, seen{"POST", "/v1/scopes/acme/memory/feedback", "k-1", `{"ref":"belief:b","outcome":"neutral","author_id":"agent:a"}`}},
		{"Search", func() error {
			_, err := c.Search(ctx, "acme", client.SearchQuery{Q: "pay retry", TargetFile: "a.go", MinConfidence: new(1.0), Limit: 3})
			return err
		}, seen{"GET", "/v1/scopes/acme/memory/search?limit=3&min_confidence=1&q=pay+retry&target_file=a.go", "", ""}},
		{"SearchMode", func() error {
			_, err := c.SearchMemory(ctx, "acme", client.SearchQuery{Q: "pay", Mode: "semantic"})
			return err
		}, seen{"GET", "/v1/scopes/acme/memory/search?mode=semantic&q=pay", "", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = seen{}
			if err := tt.call(); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestClient_MemoryMissingArgs checks that an empty scope or ref fails
// before any request: it would address another route.
func TestClient_MemoryMissingArgs(t *testing.T) {
	t.Parallel()
	c := client.New("http://127.0.0.1:1") // nothing must be dialed
	ctx := context.Background()
	checks := map[string]error{}
	_, _, checks["PutNode"] = c.PutNode(ctx, "", client.NodeInput{})
	_, checks["PutNodes"] = c.PutNodes(ctx, " ", nil)
	_, checks["GetNode"] = c.GetNode(ctx, "acme", "", "")
	_, checks["GetNodeScope"] = c.GetNode(ctx, "", "belief:b", "")
	_, checks["ListNodes"] = c.ListNodes(ctx, "", client.NodeListOptions{})
	_, checks["NodeHistory"] = c.NodeHistory(ctx, "acme", " ")
	_, checks["TransitionNode"] = c.TransitionNode(ctx, "acme", "", client.Transition{})
	_, checks["ReviseNode"] = c.ReviseNode(ctx, "", "belief:b", client.NodeInput{})
	_, checks["CreateRelation"] = c.CreateRelation(ctx, "", client.RelationInput{})
	_, checks["ListRelations"] = c.ListRelations(ctx, "", client.RelationListOptions{})
	_, checks["CreateFeedback"] = c.CreateFeedback(ctx, "", client.FeedbackInput{})
	_, checks["Search"] = c.Search(ctx, "", client.SearchQuery{})
	for name, err := range checks {
		if !client.IsCode(err, client.EInvalid) {
			t.Errorf("%s: got %v, want invalid_argument", name, err)
		}
	}
}
