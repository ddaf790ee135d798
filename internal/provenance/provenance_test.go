package provenance_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/provenance"
)

// graph builds a Graph and its vertices from "a>b" edges (b is a neighbour
// of a in the walked direction). Names starting with "r" are records (keys
// < 0), others nodes whose kind is the name's prefix before "_" ("ep_1" is
// an episode, "note_n" a note). Creation times follow the order of first mention, so sibling
// order is the order the test writes them in.
func graph(root string, edges ...string) (*provenance.Graph, map[int64]*provenance.Vertex, func(int64) string) {
	keys := map[string]int64{}
	names := map[int64]string{}
	vs := map[int64]*provenance.Vertex{}
	key := func(name string) int64 {
		if k, ok := keys[name]; ok {
			return k
		}
		k := int64(len(keys) + 1)
		v := &provenance.Vertex{ID: name, CreatedAt: fmt.Sprintf("2026-01-%02dT00:00:00.000000000Z", k)}
		if strings.HasPrefix(name, "r") {
			k = -k
			v.Kind, v.Type, v.Text, v.AuthorID = "record", "agent.thought", "text of "+name, "agent:bmo"
		} else {
			v.Kind, _, _ = strings.Cut(name, "_")
			if v.Kind == "ep" {
				v.Kind = "episode"
			}
			v.Title, v.SourceType, v.Lifecycle, v.Confidence = "title of "+name, "promote", "candidate", 0.5
		}
		keys[name], names[k], vs[k] = k, name, v
		return k
	}
	g := &provenance.Graph{Root: key(root), Next: map[int64][]int64{}}
	for _, e := range edges {
		a, b, _ := strings.Cut(e, ">")
		ka, kb := key(a), key(b)
		g.Next[ka] = append(g.Next[ka], kb)
	}
	return g, vs, func(k int64) string { return names[k] }
}

// render prints a tree one item a line, indented by depth, with marks:
// "*" shared, "…" truncated, "·" not expanded (no children list).
func render(items []kura.Lineage, forward bool) string {
	var b strings.Builder
	var walk func([]kura.Lineage, int)
	walk = func(items []kura.Lineage, indent int) {
		for _, it := range items {
			_, id, _ := strings.Cut(it.Ref, ":")
			kids := it.Sources
			if forward {
				kids = it.Derived
			}
			mark := ""
			switch {
			case it.Shared:
				mark = "*"
			case it.Truncated:
				mark = "…"
			case kids == nil:
				mark = "·"
			}
			fmt.Fprintf(&b, "%s%s%s@%d\n", strings.Repeat("  ", indent), id, mark, it.Depth)
			walk(kids, indent+1)
		}
	}
	walk(items, 0)
	return b.String()
}

func TestTree(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		root          string
		edges         []string
		depth, max    int
		forward       bool
		want          string
		wantTruncated bool
	}{
		{
			name: "Chain", root: "belief_b",
			edges: []string{"belief_b>note_n", "note_n>ep_e", "ep_e>r1"},
			depth: 10, max: 100,
			want: "note_n@1\n  ep_e@2\n    r1@3\n",
		},
		{
			name: "ConsolidatedFromThreeEpisodes", root: "belief_b",
			edges: []string{"belief_b>ep_1", "belief_b>ep_2", "belief_b>ep_3", "ep_1>r1", "ep_2>r2", "ep_3>r3"},
			depth: 3, max: 100,
			want: "ep_1@1\n  r1@2\nep_2@1\n  r2@2\nep_3@1\n  r3@2\n",
		},
		{
			// Two paths to one ancestor: expanded once, shared once.
			name: "Diamond", root: "belief_b",
			edges: []string{"belief_b>ep_1", "belief_b>ep_2", "ep_1>note_x", "ep_2>note_x", "note_x>r1"},
			depth: 10, max: 100,
			want: "ep_1@1\n  note_x@2\n    r1@3\nep_2@1\n  note_x*@2\n",
		},
		{
			// Many children of one parent, forward: every one listed.
			name: "FanOutForward", root: "r1",
			edges: []string{"r1>ep_1", "r1>ep_2", "r1>ep_3", "ep_1>belief_b", "ep_2>belief_b", "ep_3>belief_b"},
			depth: 3, max: 100, forward: true,
			want: "ep_1@1\n  belief_b@2\nep_2@1\n  belief_b*@2\nep_3@1\n  belief_b*@2\n",
		},
		{
			// A vertex first met on a long path but also directly: it is
			// expanded where it is closest, so its sources fit the depth.
			name: "ExpandAtShortestDistance", root: "belief_b",
			edges: []string{"belief_b>ep_a", "ep_a>ep_c", "ep_c>note_x", "belief_b>note_x", "note_x>r1"},
			depth: 3, max: 100,
			want: "ep_a@1\n  ep_c@2\n    note_x*@3\nnote_x@1\n  r1@2\n",
		},
		{
			name: "DepthCut", root: "n_0",
			edges: []string{"n_0>n_1", "n_1>n_2", "n_2>n_3", "n_3>r1"},
			depth: 2, max: 100,
			want: "n_1@1\n  n_2…@2\n", wantTruncated: true,
		},
		{
			// At the limit without further lineage: not truncated.
			name: "DepthExact", root: "n_0",
			edges: []string{"n_0>n_1", "n_1>r1"},
			depth: 2, max: 100,
			want: "n_1@1\n  r1·@2\n",
		},
		{
			name: "SizeCap", root: "belief_b",
			edges: []string{"belief_b>ep_1", "belief_b>ep_2", "belief_b>ep_3", "ep_1>r1"},
			depth: 3, max: 2,
			want: "ep_1@1\n  r1@2\n", wantTruncated: true,
		},
		{
			// A damaged table with a cycle still gives a finite tree.
			name: "CorruptCycle", root: "n_a",
			edges: []string{"n_a>n_b", "n_b>n_c", "n_c>n_a"},
			depth: 10, max: 100,
			want: "n_b@1\n  n_c@2\n    n_a*@3\n",
		},
		{
			name: "NoLineage", root: "ep_1",
			depth: 3, max: 100,
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, vs, _ := graph(tt.root, tt.edges...)
			items, truncated := provenance.Tree(g, vs, tt.depth, tt.max, tt.forward)
			if got := render(items, tt.forward); got != tt.want {
				t.Errorf("got tree\n%s\nwant\n%s", got, tt.want)
			}
			if truncated != tt.wantTruncated {
				t.Errorf("truncated: got %v, want %v", truncated, tt.wantTruncated)
			}
			if items == nil {
				t.Error("got a nil list, want an empty one (it serializes as [])")
			}
		})
	}
}

func TestTree_JSON(t *testing.T) {
	t.Parallel()
	g, vs, _ := graph("belief_b", "belief_b>ep_1", "belief_b>ep_2", "ep_1>r1", "ep_2>r1")
	items, _ := provenance.Tree(g, vs, 3, 100, false)
	b, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	json.Unmarshal(b, &got)
	ep1, ep2 := got[0], got[1]
	rec := ep1["sources"].([]any)[0].(map[string]any)
	for k, want := range map[string]any{"ref": "record:r1", "kind": "record", "text": "text of r1", "type": "agent.thought",
		"author_id": "agent:bmo", "source_type": "direct_experience", "depth": 2.0} {
		if rec[k] != want {
			t.Errorf("record item %s: got %v, want %v", k, rec[k], want)
		}
	}
	if s, ok := rec["sources"].([]any); !ok || len(s) != 0 {
		t.Errorf("expanded record: got sources %v, want []", rec["sources"])
	}
	if _, ok := rec["title"]; ok {
		t.Error("a record item has a title; want text only")
	}
	if ep1["title"] != "title of ep_1" || ep1["source_type"] != "promote" {
		t.Errorf("episode item: got %v", ep1)
	}
	shared := ep2["sources"].([]any)[0].(map[string]any)
	if shared["shared"] != true {
		t.Errorf("second path to r1: got %v, want shared", shared)
	}
	if _, ok := shared["sources"]; ok {
		t.Errorf("a shared item carries sources: %v", shared)
	}
	if _, ok := ep1["derived"]; ok {
		t.Errorf("a backward item carries derived: %v", ep1)
	}
}

func TestEvidence(t *testing.T) {
	t.Parallel()
	// belief <- three episodes <- a record each; one episode also cites a
	// fact (a conclusion: walked through, not listed) built on a note.
	g, vs, _ := graph("belief_b",
		"belief_b>ep_1", "belief_b>ep_2", "belief_b>ep_3",
		"ep_1>r1", "ep_2>r2", "ep_3>r3",
		"ep_3>fact_f", "fact_f>note_n", "note_n>r1", "fact_f>ep_old")
	e := provenance.Evidence("belief:b", g, vs)
	refs := func(n []kura.EvidenceNode) (out []string) {
		for _, x := range n {
			out = append(out, x.ID)
		}
		return out
	}
	if got, want := refs(e.Evidence.Episodes), []string{"ep_1", "ep_2", "ep_3", "ep_old"}; !slices.Equal(got, want) {
		t.Errorf("episodes: got %v, want %v", got, want)
	}
	if got, want := refs(e.Evidence.Notes), []string{"note_n"}; !slices.Equal(got, want) {
		t.Errorf("notes: got %v, want %v", got, want)
	}
	var raw []string
	for _, r := range e.Evidence.RawEntries {
		raw = append(raw, r.ID)
	}
	if want := []string{"r1", "r2", "r3"}; !slices.Equal(raw, want) {
		t.Errorf("raw entries: got %v, want %v (each once)", raw, want)
	}
	if e.DirectEpisodes != 3 || e.SourceRawEntries != 3 || e.TotalEvidenceCount != 8 {
		t.Errorf("counts: got direct %d raw %d total %d, want 3 3 8", e.DirectEpisodes, e.SourceRawEntries, e.TotalEvidenceCount)
	}
	if d := e.Evidence.Episodes[3].Depth; d != 3 {
		t.Errorf("ep_old depth: got %d, want 3", d)
	}
}

func TestRawSourcesAndDerived(t *testing.T) {
	t.Parallel()
	t.Run("RawSources", func(t *testing.T) {
		g, vs, _ := graph("belief_b", "belief_b>ep_1", "belief_b>ep_2", "ep_1>r1", "ep_2>r1", "ep_2>r2")
		got := provenance.RawSources("belief:b", g, vs)
		if got.Count != 2 || got.RawSources[0].ID != "r1" || got.RawSources[1].ID != "r2" {
			t.Errorf("got %+v, want r1 and r2", got.RawSources)
		}
	})
	t.Run("RecordIsItsOwnRoot", func(t *testing.T) {
		g, vs, _ := graph("r1", "r1>ep_1")
		got := provenance.RawSources("record:r1", g, vs)
		if got.Count != 1 || got.RawSources[0].ID != "r1" || got.RawSources[0].Depth != 0 {
			t.Errorf("got %+v, want the record itself", got.RawSources)
		}
	})
	t.Run("DerivedByDepthThenCreation", func(t *testing.T) {
		// ep_late is created after the belief but sits closer to the root.
		g, vs, _ := graph("r1", "r1>ep_1", "ep_1>belief_b", "r1>ep_late", "ep_late>belief_b", "belief_b>note_n")
		got := provenance.Derived("record:r1", g, vs)
		var order []string
		for _, d := range got.Derived {
			order = append(order, fmt.Sprintf("%s@%d", d.Ref, d.Depth))
		}
		want := []string{"episode:ep_1@1", "episode:ep_late@1", "belief:belief_b@2", "note:note_n@3"}
		if !slices.Equal(order, want) || got.Count != 4 {
			t.Errorf("got %v (count %d), want %v", order, got.Count, want)
		}
	})
	t.Run("LongChainComplete", func(t *testing.T) {
		edges := []string{"r1>n_0"}
		for i := range 299 {
			edges = append(edges, fmt.Sprintf("n_%d>n_%d", i, i+1))
		}
		g, vs, _ := graph("r1", edges...)
		got := provenance.Derived("record:r1", g, vs)
		if got.Count != 300 || got.Derived[299].Depth != 300 {
			t.Errorf("got %d items, last at depth %d; want 300, 300", got.Count, got.Derived[len(got.Derived)-1].Depth)
		}
	})
}

func TestCut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 280, "short"},
		{"abcdef", 3, "abc"},
		{"héllo", 2, "h"}, // é is two bytes: never cut inside it
		{"héllo", 3, "hé"},
		{"日本", 4, "日"},
		{"", 5, ""},
	}
	for _, tt := range tests {
		if got := provenance.Cut(tt.in, tt.n); got != tt.want {
			t.Errorf("Cut(%q, %d): got %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
