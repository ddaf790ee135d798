package api_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

// TestRecall_SearchOverHTTP: memory search over a real kurad ranks the way
// a model's questions need: stop words ignored, stems matched, a rare word
// above a common one, a misspelt word found and said so, scores as JSON
// numbers (floats), and a compile with the same query in the same order.
func TestRecall_SearchOverHTTP(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	var nodes []string
	for i := range 8 {
		nodes = append(nodes, `{"kind":"note","id":"chat-`+string(rune('a'+i))+`","title":"Chat","summary":"we talked about the weather and lunch"}`)
	}
	nodes = append(nodes,
		`{"kind":"fact","id":"router","title":"Uniswap router","summary":"The router addresses are listed in the deploy notes","lifecycle":"active","authority":"verified"}`,
		`{"kind":"episode","id":"group","title":"Support group","summary":"She went to the support group on Tuesday","lifecycle":"active","authority":"trusted"}`,
		`{"kind":"note","id":"lunch","title":"Lunch","summary":"lunch with the group, then the weather got worse"}`)
	c.mustPost(acmeMem+"/nodes/batch", `{"nodes":[`+strings.Join(nodes, ",")+`]}`, 201)

	type result struct {
		Ref     string              `json:"ref"`
		Score   json.Number         `json:"score"`
		Reasons []kura.SearchReason `json:"reasons"`
	}
	search := func(q string) []result {
		t.Helper()
		var a struct{ Results []result }
		raw := c.mustGet(acmeMem + "/search?q=" + url.QueryEscape(q))
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("search %q: %v in %s", q, err, raw)
		}
		return a.Results
	}
	refs := func(rs []result) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Ref)
		}
		return out
	}
	// Stop words weigh nothing, a node needs only some of the words, and
	// the node holding both rarer words comes first.
	rs := search("When did she go to the support group?")
	if got := refs(rs); len(got) < 2 || got[0] != "episode:group" || got[1] != "note:lunch" {
		t.Fatalf("support group: got %v, want episode:group, then note:lunch", got)
	}
	if !strings.Contains(rs[0].Score.String(), ".") {
		t.Errorf("score %s: want a float", rs[0].Score)
	}
	// Stems: "addresses" and "address" are one word.
	if got := refs(search("what is the uniswap router address")); !slices.Equal(got, []string{"fact:router"}) {
		t.Errorf("router address: got %v", got)
	}
	// A misspelt word is taken for the word the scope holds.
	rs = search("uniswop addres")
	if len(rs) != 1 || rs[0].Ref != "fact:router" ||
		!slices.Contains(rs[0].Reasons, kura.SearchReason{Code: "typo_match", Detail: "uniswop ~ uniswap"}) {
		t.Fatalf("uniswop: got %+v", rs)
	}
	// A compile with the same query orders by the same ranking.
	b := ctxDecode(t, c.mustPost("/v1/scopes/acme/context/preview", `{"query":"When did she go to the support group?"}`, 200))
	if b.Trace[0].Ref != "episode:group" || b.Trace[0].Score == nil || *b.Trace[0].Score <= 0 || b.Trace[1].Ref != "note:lunch" {
		t.Errorf("compile trace starts %+v %+v", b.Trace[0], b.Trace[1])
	}
	if got := b.refs("use_now"); len(got) == 0 || got[0] != "episode:group" {
		t.Errorf("use_now: got %v, want episode:group first", got)
	}
}
