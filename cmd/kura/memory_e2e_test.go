package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// kuraOK runs a command, fails the test unless it exits 0 and returns what
// it printed.
func kuraOK(t *testing.T, url, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := runKura(t, url, strings.NewReader(stdin), args...)
	if code != exitOK {
		t.Fatalf("kura %q: exit %d, stderr %q", args, code, errOut)
	}
	return out
}

// lines splits output into its lines, without the last newline.
func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

func TestE2E_Memory(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	c := client.New(url)
	rec, err := c.PutRecord(t.Context(), client.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(`"timeouts"`)})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Put", func(t *testing.T) {
		// Flags before and after the scope; ids with '.'.
		out := kuraOK(t, url, "", "memory", "put", "--kind", "belief", "acme", "--id", "pay.retry", "--title", "Payments retry",
			"--summary", "retry failed charges", "--confidence", "0.6", "--target-file", "pay/retry.go", "--target-file", "pay/api.go",
			"--owner", "agent:bmo", "--derived-from", "record:"+rec.ID, "--meta", "team=payments", "--meta", "tier=1", "--authority", "advisory")
		if out != "created belief:pay.retry in scope acme (version 1)\n" {
			t.Errorf("created: got %q", out)
		}
		var n client.Node
		kuraJSON(t, url, "", &n, "memory", "put", "acme", "--kind", "belief", "--id", "pay.retry", "--confidence", "0.9", "--reason", "seen in prod")
		if n.Version != 2 || n.Confidence != 0.9 || n.Title != "Payments retry" || n.Authority != "advisory" || !slices.Equal(n.TargetFiles, []string{"pay/retry.go", "pay/api.go"}) {
			t.Errorf("new version: got %+v, want version 2 keeping the other fields", n)
		}
		var m map[string]string
		if err := json.Unmarshal(n.Metadata, &m); err != nil || m["team"] != "payments" || m["tier"] != "1" {
			t.Errorf("metadata: got %s, want both --meta pairs as strings", n.Metadata)
		}
		out = kuraOK(t, url, "", "memory", "put", "acme", "--kind", "belief", "--id", "pay.retry", "--lifecycle", "active")
		if out != "updated belief:pay.retry in scope acme to version 3\n" {
			t.Errorf("updated: got %q", out)
		}

		// One node from stdin, the flags filling in; then a batch.
		var f client.Node
		kuraJSON(t, url, `{"kind":"fact","summary":"gateway times out after 30s","metadata":{"src":"logs"}}`, &f, "memory", "put", "acme", "--stdin", "--id", "f.1", "--meta", "seen=twice")
		var fm map[string]string
		if err := json.Unmarshal(f.Metadata, &fm); err != nil || f.Ref != "fact:f.1" || len(fm) != 2 || fm["src"] != "logs" || fm["seen"] != "twice" {
			t.Errorf("stdin node: got %+v", f)
		}
		out = kuraOK(t, url, `{"nodes":[{"kind":"decision","id":"d.1","title":"Backoff","summary":"retry with backoff","derived_from":["fact:f.1","belief:pay.retry"]},
			{"kind":"note","id":"n.1","summary":"lunch"}]}`, "memory", "put", "acme", "-")
		if want := "wrote decision:d.1 version 1\nwrote note:n.1 version 1\n"; out != want {
			t.Errorf("batch: got %q, want %q", out, want)
		}
	})

	t.Run("Get", func(t *testing.T) {
		out := kuraOK(t, url, "", "memory", "get", "acme", "belief:pay.retry")
		want := map[string]string{"ref": "belief:pay.retry", "scope": "acme", "version": "3", "title": "Payments retry", "lifecycle": "active",
			"authority": "advisory", "confidence": "0.9", "owner": "agent:bmo", "target files": "pay/retry.go, pay/api.go", "derived from": "record:" + rec.ID}
		got := map[string]string{}
		for _, l := range lines(out) {
			k, v, _ := strings.Cut(l, "  ")
			got[k] = strings.TrimSpace(v)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: got %q, want %q\n%s", k, got[k], v, out)
			}
		}
		var h client.NodeHistory
		kuraJSON(t, url, "", &h, "memory", "history", "acme", "belief:pay.retry")
		var n client.Node
		kuraJSON(t, url, "", &n, "memory", "get", "--as-of", h.Versions[0].UpdatedAt, "acme", "belief:pay.retry")
		if n.Version != 1 || n.Confidence != 0.6 {
			t.Errorf("--as-of the first version: got %+v", n)
		}
	})

	t.Run("List", func(t *testing.T) {
		out := kuraOK(t, url, "", "memory", "list", "acme")
		ls := lines(out)
		if len(ls) != 4 || !strings.HasPrefix(ls[0], "belief:pay.retry") || !strings.Contains(ls[0], "v3") || !strings.Contains(ls[0], "Payments retry") ||
			!strings.HasPrefix(ls[3], "note:n.1") {
			t.Errorf("list: got\n%s", out)
		}
		out = kuraOK(t, url, "", "memory", "list", "acme", "--limit", "1", "--kind", "decision")
		if ls := lines(out); len(ls) != 1 || !strings.HasPrefix(ls[0], "decision:d.1") {
			t.Errorf("--kind decision: got\n%s", out)
		}
		out = kuraOK(t, url, "", "memory", "list", "acme", "--limit", "2")
		ls = lines(out)
		if len(ls) != 3 || !strings.HasPrefix(ls[2], "more: --cursor ") {
			t.Fatalf("--limit 2: got\n%s", out)
		}
		var p client.NodePage
		kuraJSON(t, url, "", &p, "memory", "list", "acme", "--cursor", strings.TrimPrefix(ls[2], "more: --cursor "))
		if len(p.Nodes) != 2 || p.Nodes[0].Ref != "decision:d.1" {
			t.Errorf("next page: got %+v", p.Nodes)
		}
		kuraJSON(t, url, "", &p, "memory", "list", "acme", "--min-confidence", "0.8", "--owner", "agent:bmo", "--lifecycle", "active", "--authority", "advisory")
		if len(p.Nodes) != 1 || p.Nodes[0].Ref != "belief:pay.retry" {
			t.Errorf("filters: got %+v", p.Nodes)
		}
	})

	t.Run("History", func(t *testing.T) {
		out := kuraOK(t, url, "", "memory", "history", "acme", "belief:pay.retry")
		ls := lines(out)
		if len(ls) != 7 || ls[0] != "belief:pay.retry: 3 versions" || !strings.HasPrefix(ls[1], "  v1") || !strings.HasPrefix(ls[3], "  v3") || ls[4] != "confidence:" {
			t.Fatalf("history: got\n%s", out)
		}
		if !strings.Contains(ls[5], "- -> 0.6") || !strings.Contains(ls[5], "created") || !strings.Contains(ls[6], "0.6 -> 0.9") || !strings.Contains(ls[6], "seen in prod") {
			t.Errorf("confidence history: got\n%s", out)
		}
	})

	t.Run("Transition", func(t *testing.T) {
		out := kuraOK(t, url, "", "memory", "transition", "acme", "fact:f.1", "active", "--reason", "checked", "--authority", "trusted")
		if out != "fact:f.1 is now active, authority trusted (version 2)\n" {
			t.Errorf("got %q", out)
		}
		var n client.Node
		kuraJSON(t, url, "", &n, "memory", "transition", "--reason", "quiet", "acme", "note:n.1", "suppressed")
		if n.Lifecycle != "suppressed" || n.Version != 2 {
			t.Errorf("--json: got %+v", n)
		}
	})

	t.Run("RelateAndRelations", func(t *testing.T) {
		out := kuraOK(t, url, "", "memory", "relate", "acme", "fact:f.1", "supports", "decision:d.1", "--id", "r.1", "--reason", "timeouts", "--reason", "logs")
		if out != "created relation r.1: fact:f.1 supports decision:d.1 (confidence 0.7)\n" {
			t.Errorf("relate: got %q", out)
		}
		var r client.Relation
		kuraJSON(t, url, "", &r, "memory", "relate", "--confidence", "0", "acme", "note:n.1", "contradicts", "note:n.1")
		if r.Confidence != 0 || r.Kind != "contradicts" {
			t.Errorf("--confidence 0: got %+v, want it sent, not dropped", r)
		}
		out = kuraOK(t, url, "", "memory", "relations", "acme", "--ref", "decision:d.1")
		if ls := lines(out); len(ls) != 1 || !strings.HasPrefix(ls[0], "r.1") || !strings.Contains(ls[0], "timeouts, logs") {
			t.Errorf("relations --ref: got\n%s", out)
		}
		var p client.RelationPage
		kuraJSON(t, url, "", &p, "memory", "relations", "acme", "--kind", "contradicts")
		if len(p.Relations) != 1 || p.Relations[0].From != "note:n.1" {
			t.Errorf("relations --kind: got %+v", p.Relations)
		}
	})

	t.Run("Feedback", func(t *testing.T) {
		out := kuraOK(t, url, "", "memory", "feedback", "acme", "decision:d.1", "positive", "--author", "agent:bmo", "--note", "worked")
		if !strings.HasPrefix(out, "recorded positive feedback ") || !strings.HasSuffix(out, " on decision:d.1\n") {
			t.Errorf("got %q", out)
		}
		var fb client.Feedback
		kuraJSON(t, url, "", &fb, "memory", "feedback", "--author", "user:oles", "acme", "decision:d.1", "neutral")
		if fb.Outcome != "neutral" || fb.AuthorID != "user:oles" || fb.Note != "" {
			t.Errorf("--json: got %+v", fb)
		}
	})

	t.Run("Search", func(t *testing.T) {
		out := kuraOK(t, url, "", "memory", "search", "acme", "payments", "retry")
		ls := lines(out)
		if len(ls) < 2 {
			t.Fatalf("got\n%s", out)
		}
		f := strings.Fields(ls[0])
		if len(f) < 4 || f[1] != "belief:pay.retry" || !strings.Contains(ls[0], "Payments retry") || !strings.Contains(ls[0], "title_match: payments, retry") {
			t.Errorf("first result: got %q", ls[0])
		}
		out = kuraOK(t, url, "", "memory", "search", "--kind", "decision", "acme", "retry", "--min-confidence", "0.5", "--lifecycle", "candidate", "--limit", "5")
		if ls := lines(out); len(ls) != 1 || !strings.Contains(ls[0], "decision:d.1") || !strings.Contains(ls[0], "kind_filter: decision") ||
			!strings.Contains(ls[0], "min_confidence_filter: 0.5 >= 0.5") {
			t.Errorf("filtered: got\n%s", out)
		}
		var res struct{ Results []client.SearchResult }
		kuraJSON(t, url, "", &res, "memory", "search", "acme", "--target-file", "pay/api.go", "--owner", "agent:bmo", "--authority", "advisory")
		if len(res.Results) != 1 || res.Results[0].Ref != "belief:pay.retry" || res.Results[0].Node == nil {
			t.Errorf("--json filters only: got %+v", res.Results)
		}
		if out := kuraOK(t, url, "", "memory", "search", "other", "payments"); out != "" {
			t.Errorf("another scope: got %q, want nothing", out)
		}
		// A search by meaning on a kurad without an embedder answers by
		// words and says so on stderr; a mode kurad does not know is refused.
		stdout, stderr, code := runKura(t, url, nil, "memory", "search", "--mode", "semantic", "acme", "payments")
		if code != exitOK || !strings.Contains(stdout, "belief:pay.retry") || !strings.Contains(stderr, "warning: mode=semantic needs an embedder") {
			t.Errorf("--mode semantic without an embedder: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		if _, stderr, code := runKura(t, url, nil, "memory", "search", "--mode", "fuzzy", "acme", "payments"); code == exitOK || !strings.Contains(stderr, "mode") {
			t.Errorf("--mode fuzzy: exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("Revise", func(t *testing.T) {
		out := kuraOK(t, url, "", "memory", "revise", "acme", "decision:d.1", "--id", "d.2", "--summary", "retry twice, then fail over", "--idempotency-key", "rev-1")
		ls := lines(out)
		if len(ls) != 3 || ls[0] != "revised decision:d.1 into decision:d.2 (version 1)" || ls[1] != "decision:d.1 is now retired (version 2)" ||
			!strings.HasSuffix(ls[2], ": decision:d.2 supersedes decision:d.1") {
			t.Errorf("got\n%s", out)
		}
		// The same key again: the first answer, not a conflict.
		again := kuraOK(t, url, "", "memory", "revise", "acme", "decision:d.1", "--id", "d.2", "--summary", "retry twice, then fail over", "--idempotency-key", "rev-1")
		if again != out {
			t.Errorf("retry with the key: got\n%s\nwant\n%s", again, out)
		}
		var rev client.Revision
		kuraJSON(t, url, `{"summary":"from stdin"}`, &rev, "memory", "revise", "acme", "note:n.1", "-", "--title", "Lunch")
		if rev.Node == nil || rev.Node.Summary != "from stdin" || rev.Node.Title != "Lunch" || rev.Node.Kind != "note" || rev.Superseded.Lifecycle != "retired" {
			t.Errorf("stdin revise: got %+v", rev)
		}
	})

	t.Run("IdempotencyKey", func(t *testing.T) {
		args := []string{"memory", "put", "acme", "--kind", "note", "--summary", "server picks the id", "--idempotency-key", "note-1", "--json"}
		first := kuraOK(t, url, "", args...)
		second := kuraOK(t, url, "", args...)
		if first != second {
			t.Errorf("retry: got\n%s\nwant\n%s", second, first)
		}
		var p client.NodePage
		kuraJSON(t, url, "", &p, "memory", "list", "acme", "--kind", "note")
		if len(p.Nodes) != 3 { // n.1, its revision and this one
			t.Errorf("notes: got %d, want 3", len(p.Nodes))
		}
	})

	t.Run("Errors", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			stdin  string
			args   []string
			code   int
			stderr string
		}{
			{"confidence out of range", "", []string{"memory", "put", "acme", "--kind", "belief", "--summary", "x", "--confidence", "1.5"}, exitFail, "kura: invalid_argument: confidence must be between 0 and 1\nkura: details: {\"field\":\"confidence\"}\n"},
			{"unknown node", "", []string{"memory", "get", "acme", "belief:ghost"}, exitFail, "kura: not_found: no node belief:ghost in scope acme\n"},
			{"missing parent", "", []string{"memory", "put", "acme", "--kind", "fact", "--summary", "x", "--derived-from", "fact:ghost"}, exitFail, `"missing":["fact:ghost"]`},
			{"bad scope", "", []string{"memory", "list", "Acme"}, exitFail, "kura: invalid_argument: scope must be"},
			{"unknown lifecycle", "", []string{"memory", "transition", "acme", "fact:f.1", "zombie", "--reason", "r"}, exitFail, "invalid_argument"},
			{"unknown outcome", "", []string{"memory", "feedback", "acme", "fact:f.1", "great", "--author", "agent:bmo"}, exitFail, `{"allowed":["positive","negative","neutral"],"field":"outcome"}`},
			{"retired node revised", "", []string{"memory", "revise", "acme", "decision:d.1", "--summary", "again"}, exitFail, "kura: conflict: "},
			{"put without kind", "", []string{"memory", "put", "acme", "--summary", "x"}, exitUsage, "--kind is required"},
			{"put without scope", "", []string{"memory", "put", "--kind", "belief"}, exitUsage, "memory put takes one scope"},
			{"stdin not JSON", "kind: belief", []string{"memory", "put", "acme", "-"}, exitUsage, "stdin is not a node input object"},
			{"stdin unknown field", `{"kind":"belief","colour":"red"}`, []string{"memory", "put", "acme", "--stdin"}, exitUsage, "colour"},
			{"batch with --id", `{"nodes":[]}`, []string{"memory", "put", "acme", "-", "--id", "x"}, exitUsage, "--id names one node"},
			{"transition without reason", "", []string{"memory", "transition", "acme", "fact:f.1", "active"}, exitUsage, "--reason is required"},
			{"feedback without author", "", []string{"memory", "feedback", "acme", "fact:f.1", "positive"}, exitUsage, "--author is required"},
			{"relate with three words", "", []string{"memory", "relate", "acme", "fact:f.1", "supports"}, exitUsage, "memory relate takes"},
			{"get without ref", "", []string{"memory", "get", "acme"}, exitUsage, "memory get takes"},
			{"search without scope", "", []string{"memory", "search"}, exitUsage, "memory search takes"},
			{"confidence not a number", "", []string{"memory", "put", "acme", "--kind", "belief", "--confidence", "high"}, exitUsage, "confidence"},
			{"unknown subcommand", "", []string{"memory", "forget", "acme"}, exitUsage, `unknown command "memory forget"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out, errOut, code := runKura(t, url, strings.NewReader(tc.stdin), tc.args...)
				if code != tc.code || !strings.Contains(errOut, tc.stderr) || out != "" {
					t.Errorf("got exit %d, stdout %q, stderr %q; want exit %d, stderr holding %q", code, out, errOut, tc.code, tc.stderr)
				}
			})
		}
	})

	t.Run("Help", func(t *testing.T) {
		out := kuraOK(t, url, "", "help", "memory")
		for _, sub := range []string{"put", "get", "list", "history", "transition", "revise", "relate", "relations", "feedback", "search"} {
			if !strings.Contains(out, "memory "+sub+" ") {
				t.Errorf("help memory lacks %q:\n%s", sub, out)
			}
		}
		out = kuraOK(t, url, "", "help", "memory", "put")
		if !strings.Contains(out, "-derived-from") || !strings.Contains(out, "-idempotency-key") {
			t.Errorf("help memory put: got\n%s", out)
		}
	})
}
