package ui_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// memoryScope writes three nodes and a contradiction into scope "hashi":
// belief:api-rest is active and trusted (use now), note:pi-load a
// candidate of unknown authority (inspect first), claim:grpc-faster
// contradicted by the belief at 0.8 (do not use). The belief gets a
// second version.
func memoryScope(t *testing.T, base string) {
	t.Helper()
	for _, body := range []string{
		`{"kind":"belief","id":"api-rest","title":"REST is fast enough","summary":"Keep the API on REST/JSON","lifecycle":"active","authority":"trusted","confidence":0.8}`,
		`{"kind":"note","id":"pi-load","title":"Pi load during the run","summary":"CPU stayed under 40% while serving"}`,
		`{"kind":"claim","id":"grpc-faster","title":"gRPC would be faster","summary":"Moving the API to gRPC halves latency","lifecycle":"active","authority":"advisory"}`,
	} {
		postJSON(t, base, "/v1/scopes/hashi/memory/nodes", body, http.StatusCreated)
	}
	postJSON(t, base, "/v1/scopes/hashi/memory/nodes", `{"kind":"belief","id":"api-rest","confidence":0.9,"reason":"load measured too"}`, http.StatusOK)
	postJSON(t, base, "/v1/scopes/hashi/memory/relations", `{"kind":"contradicts","from":"belief:api-rest","to":"claim:grpc-faster","confidence":0.8,"reasons":["2 ms p99 is fast enough"]}`, http.StatusCreated)
}

// TestConsole_MemoryNodes lists a scope's nodes with their lifecycle and
// authority as badges, and opens one node's versions and relations.
func TestConsole_MemoryNodes(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	memoryScope(t, base)
	p := openConsole(t, base, "/memory/hashi")
	p.waitFor(`document.querySelectorAll("#mem-nodes table tbody tr").length === 3`)
	row := func(ref string) string {
		return eval[string](p, `[...document.querySelectorAll("#mem-nodes tbody tr")].find(tr => tr.textContent.includes("`+ref+`")).innerText`)
	}
	for ref, want := range map[string][]string{
		"belief:api-rest":   {"REST is fast enough", "active", "trusted", "0.9", "2"},
		"note:pi-load":      {"Pi load during the run", "candidate", "unknown"},
		"claim:grpc-faster": {"gRPC would be faster", "active", "advisory"},
	} {
		got := row(ref)
		for _, w := range want {
			if !contains(got, w) {
				t.Errorf("row of %s = %q, lacks %q", ref, got, w)
			}
		}
	}
	if n := eval[int](p, `document.querySelectorAll('#mem-nodes [data-lifecycle="candidate"]').length`); n != 1 {
		t.Errorf("%d candidate badges, want 1", n)
	}

	// The node detail: both versions, the relation, a way to its lineage.
	p.do(chromedp.Click(chromedp.CSS(`#mem-nodes a[href$="node=belief%3Aapi-rest"]`)))
	p.waitFor(`document.querySelectorAll("#mem-node table.versions tbody tr").length === 2`)
	if got := p.text("#mem-node table.relations"); !contains(got, "contradicts") || !contains(got, "claim:grpc-faster") || !contains(got, "2 ms p99 is fast enough") {
		t.Errorf("relations = %q", got)
	}
	if got := p.text("#mem-node table.versions"); !contains(got, "0.8") || !contains(got, "0.9") {
		t.Errorf("versions = %q", got)
	}
	if n := eval[int](p, `document.querySelectorAll('#mem-node a[href="#/provenance/hashi/belief%3Aapi-rest"]').length`); n != 1 {
		t.Errorf("%d provenance links in the node detail, want 1", n)
	}
}

// TestConsole_MemorySearchReasons searches a scope and shows the ranked
// result with the fields and words that matched, and its score.
func TestConsole_MemorySearchReasons(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	memoryScope(t, base)
	p := openConsole(t, base, "/memory/hashi")
	p.waitFor(`document.querySelector("#mem-nodes table") !== null`)
	p.do(chromedp.SendKeys(chromedp.CSS(`form[role="search"] input`), "grpc latency\r"))
	p.waitFor(`document.querySelectorAll("#mem-search table tbody tr").length === 1`)
	got := p.text("#mem-search table tbody")
	for _, w := range []string{"claim:grpc-faster", "title_match", "grpc", "summary_match: grpc, latency"} {
		if !contains(got, w) {
			t.Errorf("search result = %q, lacks %q", got, w)
		}
	}
	if s := eval[string](p, `document.querySelector("#mem-search .score").textContent`); s == "" || s == "0" {
		t.Errorf("score = %q", s)
	}
	if h := eval[string](p, `location.hash`); h != "#/memory/hashi?q=grpc+latency" {
		t.Errorf("search address = %q", h)
	}
}

// TestConsole_MemoryPreviewBuckets previews admission: each node lands in
// the bucket the admission rules give it, with its reason.
func TestConsole_MemoryPreviewBuckets(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	memoryScope(t, base)
	p := openConsole(t, base, "/memory/hashi")
	p.waitFor(`document.querySelector("#mem-preview button") !== null`)
	p.do(chromedp.Click(chromedp.CSS(`#mem-preview button[type="submit"]`)))
	p.waitFor(`document.querySelectorAll("#mem-preview [data-bucket] li[data-ref]").length === 3`)
	for _, c := range []struct{ bucket, ref, reason, detail string }{
		{"use_now", "belief:api-rest", "active_authoritative_memory", "active and trusted"},
		{"inspect_before_use", "note:pi-load", "insufficient_authority", "lifecycle candidate, authority unknown"},
		{"do_not_use", "claim:grpc-faster", "blocked_by_relation", "contradicts from belief:api-rest"},
	} {
		got := p.text(`#mem-preview [data-bucket="` + c.bucket + `"] li[data-ref="` + c.ref + `"]`)
		if !contains(got, c.reason) || !contains(got, c.detail) {
			t.Errorf("%s in %s says %q, want %s and %q", c.ref, c.bucket, got, c.reason, c.detail)
		}
	}
	if got := p.text(`#mem-preview [data-bucket="rehydrate"]`); !contains(got, "Rehydrate") || !contains(got, "Empty") {
		t.Errorf("rehydrate bucket = %q", got)
	}
}

// TestConsole_MemoryScopes offers the scopes of sessions and the scopes
// opened before (kept in localStorage, names only).
func TestConsole_MemoryScopes(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	postJSON(t, base, "/v1/sessions", `{"project":"hashi","name":"morning"}`, http.StatusCreated)
	p := openConsole(t, base, "/memory")
	p.waitFor(`document.querySelector('#session-scopes a[href="#/memory/hashi"]') !== null`)
	p.do(chromedp.SendKeys(chromedp.CSS(`main form input`), "bmo-notes\r"))
	p.waitFor(`document.querySelector("main h1")?.textContent === "Memory: bmo-notes" && !document.querySelector("#mem-nodes").textContent.includes("Loading")`)
	if got := p.text("#mem-nodes"); !contains(got, "holds no nodes") {
		t.Errorf("empty scope shows %q", got)
	}
	p.navigate("/memory")
	p.waitFor(`document.querySelector('#recent-scopes a[href="#/memory/bmo-notes"]') !== null`)
	if got := eval[string](p, `localStorage.getItem("kura.recentScopes")`); got != `["bmo-notes"]` {
		t.Errorf("localStorage kura.recentScopes = %q", got)
	}
}
