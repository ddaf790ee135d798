package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/store"
)

// consolidated writes the acceptance example into scope: three records, an
// episode promoted from each, and a belief consolidated from the three
// episodes. It returns the records.
func consolidated(tb testing.TB, db *store.DB, scope string) []kura.Record {
	tb.Helper()
	recs, err := db.CreateRecords(context.Background(), []kura.RecordInput{
		{Type: "agent.thought", Content: json.RawMessage(`"Finished implementing user endpoints today. REST feels clean."`), AuthorID: "agent:bmo"},
		{Type: "agent.thought", Content: json.RawMessage(`{"text":"Rewrote payments module to be RESTful"}`), AuthorID: "agent:bmo"},
		{Type: "agent.thought", Content: json.RawMessage(`"All services now REST"`), AuthorID: "agent:bmo"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	promote := "promote"
	for i, title := range []string{"Implemented REST API for users", "Refactored payments to REST", "REST conversion complete"} {
		mustNode(tb, db, scope, kura.NodeInput{Kind: "episode", ID: fmt.Sprintf("ep%d", i+1), Title: ptr(title),
			Summary: ptr(title + ", in detail"), SourceType: &promote, DerivedFrom: []string{"record:" + recs[i].ID}})
	}
	mustNode(tb, db, scope, kura.NodeInput{Kind: "belief", ID: "rest", Title: ptr("API endpoints should be RESTful"),
		Summary: ptr("API endpoints should be RESTful"), SourceType: ptr("consolidation"),
		DerivedFrom: []string{"episode:ep1", "episode:ep2", "episode:ep3"}})
	return recs
}

// flatten lists every item of a tree, depth first, as "ref" with "*" when
// shared and "…" when cut by the depth.
func flatten(items []kura.Lineage) []string {
	var out []string
	for _, it := range items {
		s := it.Ref
		if it.Shared {
			s += "*"
		}
		if it.Truncated {
			s += "…"
		}
		out = append(out, s)
		out = append(out, flatten(it.Sources)...)
		out = append(out, flatten(it.Derived)...)
	}
	return out
}

func TestProvenance_ConsolidatedBelief(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	recs := consolidated(t, db, "hashi")
	r := func(i int) string { return "record:" + recs[i].ID }

	t.Run("TraceBackward", func(t *testing.T) {
		tr, err := db.Trace(ctx, "hashi", "belief:rest", "backward", 3)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Memory.Node == nil || tr.Memory.Node.Ref != "belief:rest" || tr.Forward != nil || tr.Truncated {
			t.Fatalf("got memory %+v, forward %v, truncated %v", tr.Memory, tr.Forward, tr.Truncated)
		}
		if tr.Backward.SourceType != "consolidation" || tr.Backward.CreatedAt != tr.Memory.Node.CreatedAt {
			t.Errorf("backward header: got %s %s", tr.Backward.SourceType, tr.Backward.CreatedAt)
		}
		want := []string{"episode:ep1", r(0), "episode:ep2", r(1), "episode:ep3", r(2)}
		if got := flatten(tr.Backward.Sources); !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		rec := tr.Backward.Sources[0].Sources[0]
		if rec.Kind != "record" || rec.Text == nil || *rec.Text != "Finished implementing user endpoints today. REST feels clean." ||
			rec.Type != "agent.thought" || rec.AuthorID != "agent:bmo" || rec.SourceType != "direct_experience" || rec.Depth != 2 {
			t.Errorf("record item: got %+v (text %v)", rec, rec.Text)
		}
		if obj := tr.Backward.Sources[1].Sources[0]; *obj.Text != `{"text":"Rewrote payments module to be RESTful"}` {
			t.Errorf("object content: got text %q, want its compact JSON", *obj.Text)
		}
		if ep := tr.Backward.Sources[0]; *ep.Title != "Implemented REST API for users" || ep.SourceType != "promote" || ep.Depth != 1 {
			t.Errorf("episode item: got %+v", ep)
		}
		b, _ := json.Marshal(tr)
		var m map[string]any
		json.Unmarshal(b, &m)
		if _, ok := m["forward"]; ok {
			t.Errorf("a backward trace has forward: %s", b)
		}
		if mem := m["memory"].(map[string]any); mem["ref"] != "belief:rest" || mem["version"] != 1.0 {
			t.Errorf("memory is not the node: %v", mem)
		}
	})

	t.Run("RecordsTraceForwardToTheBelief", func(t *testing.T) {
		for i := range recs {
			tr, err := db.Trace(ctx, "hashi", r(i), "forward", 3)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{fmt.Sprintf("episode:ep%d", i+1), "belief:rest"}
			if got := flatten(tr.Forward.Derived); !slices.Equal(got, want) || tr.Backward != nil {
				t.Errorf("%s forward: got %v (backward %v), want %v", r(i), got, tr.Backward, want)
			}
			if rec := tr.Memory.Record; rec == nil || rec.Ref != r(i) || rec.Kind != "record" || tr.Memory.Node != nil {
				t.Errorf("memory: got %+v, want the record item", tr.Memory)
			}
		}
	})

	t.Run("TraceBoth", func(t *testing.T) {
		tr, err := db.Trace(ctx, "hashi", "episode:ep2", "both", 3)
		if err != nil {
			t.Fatal(err)
		}
		if got := flatten(tr.Backward.Sources); !slices.Equal(got, []string{r(1)}) {
			t.Errorf("backward: got %v", got)
		}
		if got := flatten(tr.Forward.Derived); !slices.Equal(got, []string{"belief:rest"}) {
			t.Errorf("forward: got %v", got)
		}
	})

	t.Run("Evidence", func(t *testing.T) {
		e, err := db.Evidence(ctx, "hashi", "belief:rest")
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Evidence.Episodes) != 3 || len(e.Evidence.RawEntries) != 3 || len(e.Evidence.Notes) != 0 ||
			e.TotalEvidenceCount != 6 || e.DirectEpisodes != 3 || e.SourceRawEntries != 3 {
			t.Fatalf("got %+v", e)
		}
		for i, raw := range e.Evidence.RawEntries {
			if raw.ID != recs[i].ID || raw.Type != "agent.thought" || raw.AuthorID != "agent:bmo" || raw.CreatedAt != recs[i].CreatedAt || raw.Text == "" {
				t.Errorf("raw entry %d: got %+v", i, raw)
			}
		}
		if ep := e.Evidence.Episodes[0]; ep.Ref != "episode:ep1" || ep.Title != "Implemented REST API for users" || ep.Summary == "" {
			t.Errorf("episode: got %+v", ep)
		}
	})

	t.Run("RawSources", func(t *testing.T) {
		rs, err := db.RawSources(ctx, "hashi", "belief:rest")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, x := range rs.RawSources {
			got = append(got, x.ID)
		}
		if !slices.Equal(got, ids(recs)) || rs.Count != 3 {
			t.Errorf("got %v, want %v", got, ids(recs))
		}
	})

	t.Run("Derived", func(t *testing.T) {
		d, err := db.Derived(ctx, "hashi", r(0))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, x := range d.Derived {
			got = append(got, fmt.Sprintf("%s@%d", x.Ref, x.Depth))
		}
		if want := []string{"episode:ep1@1", "belief:rest@2"}; !slices.Equal(got, want) || d.Count != 2 {
			t.Errorf("got %v, want %v", got, want)
		}
		d, err = db.Derived(ctx, "hashi", "belief:rest")
		if err != nil || d.Count != 0 || d.Derived == nil {
			t.Errorf("nothing derives from the belief: got %+v %v", d, err)
		}
	})
}

func TestProvenance_DiamondIsSharedOnce(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	rec := mustRecords(t, db, 1)[0]
	mustNode(t, db, "hashi", kura.NodeInput{Kind: "note", ID: "x", Summary: ptr("the shared ancestor"), DerivedFrom: []string{"record:" + rec.ID}})
	mustNode(t, db, "hashi", kura.NodeInput{Kind: "episode", ID: "a", Summary: ptr("a"), DerivedFrom: []string{"note:x"}})
	mustNode(t, db, "hashi", kura.NodeInput{Kind: "episode", ID: "b", Summary: ptr("b"), DerivedFrom: []string{"note:x"}})
	mustNode(t, db, "hashi", kura.NodeInput{Kind: "belief", ID: "top", Summary: ptr("top"), DerivedFrom: []string{"episode:a", "episode:b"}})

	tr, err := db.Trace(ctx, "hashi", "belief:top", "backward", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"episode:a", "note:x", "record:" + rec.ID, "episode:b", "note:x*"}
	if got := flatten(tr.Backward.Sources); !slices.Equal(got, want) || tr.Truncated {
		t.Errorf("got %v (truncated %v), want %v", got, tr.Truncated, want)
	}
	if shared := tr.Backward.Sources[1].Sources[0]; shared.Sources != nil {
		t.Errorf("the shared item is expanded again: %+v", shared)
	}
	// Forward from the record the diamond closes on the belief.
	tr, err = db.Trace(ctx, "hashi", "record:"+rec.ID, "forward", 10)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"note:x", "episode:a", "belief:top", "episode:b", "belief:top*"}
	if got := flatten(tr.Forward.Derived); !slices.Equal(got, want) {
		t.Errorf("forward: got %v, want %v", got, want)
	}
	e, err := db.Evidence(ctx, "hashi", "belief:top")
	if err != nil || len(e.Evidence.Notes) != 1 || len(e.Evidence.RawEntries) != 1 || len(e.Evidence.Episodes) != 2 {
		t.Errorf("evidence lists each once: got %+v %v", e, err)
	}
}

// lineageState is what a refused write must leave untouched.
func lineageState(t *testing.T, db *store.DB, scope, ref, rootRecord string) string {
	t.Helper()
	ctx := context.Background()
	n, err := db.GetNode(ctx, scope, ref, "")
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.Derived(ctx, scope, rootRecord)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := db.Trace(ctx, scope, ref, "both", 2)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal([]any{n, d, tr, db.LastEventSeq()})
	return string(b)
}

func TestProvenance_LongChainAndCycles(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	rec := mustRecords(t, db, 1)[0]
	const n = 300
	ins := make([]kura.NodeInput, n)
	for i := range ins {
		from := "record:" + rec.ID
		if i > 0 {
			from = fmt.Sprintf("note:n%d", i-1)
		}
		ins[i] = kura.NodeInput{Kind: "note", ID: fmt.Sprintf("n%d", i), Summary: ptr(fmt.Sprintf("step %d", i)), DerivedFrom: []string{from}}
	}
	// An honest chain hundreds deep is accepted: no depth-based guess.
	if _, err := db.PutNodes(ctx, "deep", ins); err != nil {
		t.Fatal(err)
	}
	last := fmt.Sprintf("note:n%d", n-1)

	t.Run("TracedToTheAskedDepth", func(t *testing.T) {
		tr, err := db.Trace(ctx, "deep", last, "backward", 10)
		if err != nil {
			t.Fatal(err)
		}
		got := flatten(tr.Backward.Sources)
		if len(got) != 10 || got[0] != fmt.Sprintf("note:n%d", n-2) || got[9] != fmt.Sprintf("note:n%d…", n-11) || !tr.Truncated {
			t.Errorf("got %v (truncated %v), want 10 levels, the last cut", got, tr.Truncated)
		}
		tr, err = db.Trace(ctx, "deep", "record:"+rec.ID, "forward", 10)
		if err != nil || len(flatten(tr.Forward.Derived)) != 10 || !tr.Truncated {
			t.Errorf("forward from the record: got %v %v", tr, err)
		}
	})

	t.Run("ClosuresAreComplete", func(t *testing.T) {
		d, err := db.Derived(ctx, "deep", "record:"+rec.ID)
		if err != nil || d.Count != n || d.Derived[n-1].Ref != last || d.Derived[n-1].Depth != n {
			t.Fatalf("derived: got count %d, err %v", d.Count, err)
		}
		rs, err := db.RawSources(ctx, "deep", last)
		if err != nil || rs.Count != 1 || rs.RawSources[0].ID != rec.ID || rs.RawSources[0].Depth != n {
			t.Errorf("raw sources of the chain's end: got %+v %v", rs, err)
		}
		e, err := db.Evidence(ctx, "deep", last)
		if err != nil || len(e.Evidence.Notes) != n-1 || e.SourceRawEntries != 1 {
			t.Errorf("evidence: got %d notes, %d raw, %v", len(e.Evidence.Notes), e.SourceRawEntries, err)
		}
	})

	cycles := []struct {
		name, ref string
		from      []string
	}{
		{"ThroughTheWholeChain", "note:n0", []string{last}},
		{"OneStep", fmt.Sprintf("note:n%d", n-2), []string{last}},
		{"AmongHonestRefs", "note:n5", []string{"record:" + rec.ID, "note:n200"}},
	}
	for _, c := range cycles {
		t.Run("CycleRefused"+c.name, func(t *testing.T) {
			before := lineageState(t, db, "deep", c.ref, "record:"+rec.ID)
			kind, id, _ := strings.Cut(c.ref, ":")
			_, _, err := db.PutNode(ctx, "deep", &kura.NodeInput{Writer: root, Kind: kind, ID: id, DerivedFrom: c.from, Summary: ptr("changed")})
			wantCode(t, err, kura.EInvalid)
			var ke *kura.Error
			if errors.As(err, &ke); ke.Details["field"] != "derived_from" || !strings.Contains(ke.Message, "cycle") {
				t.Errorf("got %v (details %v), want a cycle error on derived_from", err, ke.Details)
			}
			if after := lineageState(t, db, "deep", c.ref, "record:"+rec.ID); after != before {
				t.Errorf("a refused write changed something:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func TestProvenance_ScopesNeverSeeEachOther(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	rec := mustRecords(t, db, 1)[0]
	for _, scope := range []string{"alpha", "beta"} {
		mustNode(t, db, scope, kura.NodeInput{Kind: "episode", ID: "e1", Title: ptr(scope), Summary: ptr(scope), DerivedFrom: []string{"record:" + rec.ID}})
		mustNode(t, db, scope, kura.NodeInput{Kind: "belief", ID: "b", Title: ptr(scope), Summary: ptr(scope), DerivedFrom: []string{"episode:e1"}})
	}
	mustNode(t, db, "beta", kura.NodeInput{Kind: "note", ID: "only-beta", Title: ptr("beta"), Summary: ptr("beta"), DerivedFrom: []string{"belief:b", "record:" + rec.ID}})

	var titles func(items []kura.Lineage) []string
	titles = func(items []kura.Lineage) []string {
		var out []string
		for _, it := range items {
			if it.Title != nil {
				out = append(out, *it.Title)
			}
			out = append(out, titles(it.Sources)...)
			out = append(out, titles(it.Derived)...)
		}
		return out
	}
	for _, scope := range []string{"alpha", "beta"} {
		for _, ref := range []string{"belief:b", "episode:e1", "record:" + rec.ID} {
			tr, err := db.Trace(ctx, scope, ref, "both", 10)
			if err != nil {
				t.Fatal(err)
			}
			got := append(titles(tr.Backward.Sources), titles(tr.Forward.Derived)...)
			for _, title := range got {
				if title != scope {
					t.Errorf("trace of %s in %s shows a node of %s", ref, scope, title)
				}
			}
			if len(got) == 0 {
				t.Errorf("trace of %s in %s shows nothing", ref, scope)
			}
		}
		d, err := db.Derived(ctx, scope, "record:"+rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int{"alpha": 2, "beta": 3}[scope]; d.Count != want {
			t.Errorf("derived from the record in %s: got %d items %v, want %d", scope, d.Count, d.Derived, want)
		}
		for _, it := range d.Derived {
			if *it.Title != scope {
				t.Errorf("derived in %s lists %s of %s", scope, it.Ref, *it.Title)
			}
		}
	}
	_, err := db.Trace(ctx, "alpha", "note:only-beta", "both", 3)
	wantCode(t, err, kura.ENotFound)
	_, _, err = db.PutNode(ctx, "alpha", &kura.NodeInput{Writer: root, Kind: "belief", ID: "c", Summary: ptr("x"), DerivedFrom: []string{"note:only-beta"}})
	wantCode(t, err, kura.EInvalid)
	// A record no node of the scope cites still answers, with no lineage.
	tr, err := db.Trace(ctx, "gamma", "record:"+rec.ID, "both", 3)
	if err != nil || len(tr.Backward.Sources) != 0 || len(tr.Forward.Derived) != 0 || tr.Memory.Record == nil {
		t.Errorf("record in a scope that never cites it: got %+v %v", tr, err)
	}
}

func TestProvenance_BadInput(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	recs := consolidated(t, db, "hashi")
	const missingRecord = "record:01a1fdca-0000-7000-8000-000000000000"
	tests := []struct {
		name, scope, ref, direction string
		depth                       int
		code, field                 string
	}{
		{"DepthZero", "hashi", "belief:rest", "both", 0, kura.EInvalid, "depth"},
		{"DepthEleven", "hashi", "belief:rest", "both", 11, kura.EInvalid, "depth"},
		{"Direction", "hashi", "belief:rest", "x", 3, kura.EInvalid, "direction"},
		{"RefWithoutColon", "hashi", "belief", "both", 3, kura.EInvalid, "ref"},
		{"UnknownKind", "hashi", "dream:rest", "both", 3, kura.EInvalid, "ref"},
		{"RecordNotUUID", "hashi", "record:abc", "both", 3, kura.EInvalid, "ref"},
		{"BadScope", "Hashi!", "belief:rest", "both", 3, kura.EInvalid, "scope"},
		{"UnknownNode", "hashi", "belief:nope", "both", 3, kura.ENotFound, ""},
		{"UnknownScope", "nowhere", "belief:rest", "both", 3, kura.ENotFound, ""},
		{"UnknownRecord", "hashi", missingRecord, "both", 3, kura.ENotFound, ""},
		{"Fine", "hashi", "record:" + recs[0].ID, "backward", 1, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := map[string]func() error{
				"trace": func() error { _, err := db.Trace(ctx, tt.scope, tt.ref, tt.direction, tt.depth); return err },
			}
			// The closures take no direction or depth: they share only the
			// ref and scope checks.
			if tt.field != "depth" && tt.field != "direction" {
				calls["evidence"] = func() error { _, err := db.Evidence(ctx, tt.scope, tt.ref); return err }
				calls["raw-sources"] = func() error { _, err := db.RawSources(ctx, tt.scope, tt.ref); return err }
				calls["derived"] = func() error { _, err := db.Derived(ctx, tt.scope, tt.ref); return err }
			}
			for name, call := range calls {
				err := call()
				if tt.code == "" {
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
					continue
				}
				var ke *kura.Error
				if !errors.As(err, &ke) || ke.Code != tt.code {
					t.Errorf("%s: got %v, want %s", name, err, tt.code)
					continue
				}
				if tt.field != "" && ke.Details["field"] != tt.field {
					t.Errorf("%s: got field %v, want %s", name, ke.Details["field"], tt.field)
				}
			}
		})
	}
}
