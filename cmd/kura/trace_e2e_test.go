package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
)

func TestE2E_Trace(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	c := client.New(url)
	ctx := t.Context()
	recs, err := c.PutRecords(ctx, []client.RecordInput{
		{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(`"Finished implementing user endpoints today.\nREST feels clean, and the handlers are half the size they were"`)},
		{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(`{"text":"Rewrote payments"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	put := func(in client.NodeInput) *client.Node {
		t.Helper()
		n, _, err := c.PutNode(ctx, "hashi", in)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	str := func(s string) *string { return &s }
	ep1 := put(client.NodeInput{Kind: "episode", ID: "def", Title: str("Implemented REST API for users"), Summary: str("s"),
		SourceType: str("promote"), DerivedFrom: []string{"record:" + recs[0].ID}})
	ep2 := put(client.NodeInput{Kind: "episode", ID: "ghi", Title: str("Refactored payments to REST"), Summary: str("s"),
		SourceType: str("promote"), DerivedFrom: []string{"record:" + recs[1].ID, "record:" + recs[0].ID}})
	belief := put(client.NodeInput{Kind: "belief", ID: "abc", Summary: str("API endpoints should be RESTful"),
		SourceType: str("consolidation"), DerivedFrom: []string{"episode:def", "episode:ghi"}})
	note := put(client.NodeInput{Kind: "note", ID: "xyz", Title: str("REST API design decision"), Summary: str("s"),
		SourceType: str("inference"), DerivedFrom: []string{"belief:abc"}})
	day := func(n *client.Node) string { return n.CreatedAt[:10] }
	rday := func(i int) string { return recs[i].CreatedAt[:10] }
	r0, r1 := "record:"+recs[0].ID, "record:"+recs[1].ID

	t.Run("Both", func(t *testing.T) {
		got := kuraOK(t, url, "", "trace", "hashi", "belief:abc")
		want := "belief:abc [consolidation, " + day(belief) + "]\n" +
			"  \"API endpoints should be RESTful\"\n" +
			"├─ episode:def [promote, " + day(ep1) + "] Implemented REST API for users\n" +
			"│  └─ " + r0 + " [agent.thought, " + rday(0) + "] Finished implementing user endpoints today. REST feels clean, and the ha…\n" +
			"└─ episode:ghi [promote, " + day(ep2) + "] Refactored payments to REST\n" +
			"   ├─ " + r0 + " (shared)\n" +
			"   └─ " + r1 + " [agent.thought, " + rday(1) + "] {\"text\":\"Rewrote payments\"}\n" +
			"derived:\n" +
			"└─ note:xyz [inference, " + day(note) + "] REST API design decision\n"
		if got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	})

	t.Run("ForwardFromABareRecordID", func(t *testing.T) {
		want := r1 + " [agent.thought, " + rday(1) + "]\n" +
			"  \"{\"text\":\"Rewrote payments\"}\"\n" +
			"derived:\n" +
			"└─ episode:ghi [promote, " + day(ep2) + "] Refactored payments to REST\n" +
			"   └─ belief:abc [consolidation, " + day(belief) + "] API endpoints should be RESTful\n" +
			"      └─ note:xyz [inference, " + day(note) + "] REST API design decision\n"
		// Flags before or after the positionals; a bare record id is taken
		// as record:<id>, as kura show takes it.
		for _, args := range [][]string{
			{"trace", "--direction=forward", "hashi", recs[1].ID},
			{"trace", "hashi", r1, "--direction", "forward"},
		} {
			if got := kuraOK(t, url, "", args...); got != want {
				t.Errorf("kura %q: got\n%s\nwant\n%s", args, got, want)
			}
		}
	})

	t.Run("DepthCut", func(t *testing.T) {
		got := kuraOK(t, url, "", "trace", "hashi", "note:xyz", "--direction", "backward", "--depth", "1")
		want := "note:xyz [inference, " + day(note) + "]\n" +
			"  \"REST API design decision\"\n" +
			"└─ belief:abc [consolidation, " + day(belief) + "] API endpoints should be RESTful\n" +
			"   └─ …\n" +
			"… truncated: there is more lineage than shown (depth 1)\n"
		if got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	})

	t.Run("NoLineage", func(t *testing.T) {
		got := kuraOK(t, url, "", "trace", "hashi", "note:xyz", "--direction", "forward")
		if want := "derived:\n(nothing derived)\n"; !strings.HasSuffix(got, want) {
			t.Errorf("got %q, want it to end with %q", got, want)
		}
	})

	t.Run("JSON", func(t *testing.T) {
		var tr client.Trace
		kuraJSON(t, url, "", &tr, "trace", "hashi", "belief:abc", "--depth", "2", "--direction", "backward")
		if tr.Memory.Node == nil || tr.Memory.Node.Ref != "belief:abc" || tr.Forward != nil || len(tr.Backward.Sources) != 2 || tr.Depth != 2 {
			t.Errorf("got %+v", tr)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		for _, tc := range []struct {
			args    []string
			code    int
			errText string
		}{
			{[]string{"trace", "hashi"}, exitUsage, "trace takes a scope and a ref"},
			{[]string{"trace", "hashi", "belief:abc", "--depth", "0"}, exitUsage, "--depth must be from 1 to 10"},
			{[]string{"trace", "hashi", "belief:abc", "--depth", "11"}, exitFail, "kura: invalid_argument: depth must be from 1 to 10"},
			{[]string{"trace", "hashi", "belief:abc", "--direction", "up"}, exitFail, "kura: invalid_argument: direction must be"},
			{[]string{"trace", "hashi", "belief:nope"}, exitFail, "kura: not_found: "},
		} {
			_, errOut, code := runKura(t, url, nil, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.errText) {
				t.Errorf("kura %q: got exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.errText)
			}
		}
	})
}
