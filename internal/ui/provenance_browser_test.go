package ui_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// lineage writes a record and, in scope "prov", a diamond over it plus a
// third level:
//
//	record ─┬─> episode:run ─┬─> belief:fast ──> decision:keep
//	        └─> note:load ───┘
//
// and returns the record's id.
func lineage(t *testing.T, base string) string {
	t.Helper()
	rec := postJSON(t, base, "/v1/records", `{"type":"agent.thought","content":"REST answers in 2 ms p99","author_id":"agent:bmo"}`, http.StatusCreated)
	id := rec["id"].(string)
	for _, body := range []string{
		`{"kind":"episode","id":"run","title":"Benchmark run","summary":"2 ms p99","derived_from":["record:` + id + `"]}`,
		`{"kind":"note","id":"load","title":"Pi load","summary":"CPU under 40%","derived_from":["record:` + id + `"]}`,
		`{"kind":"belief","id":"fast","title":"REST is fast enough","summary":"keep REST","derived_from":["episode:run","note:load"]}`,
		`{"kind":"decision","id":"keep","title":"Keep the API on REST","summary":"decided","derived_from":["belief:fast"]}`,
	} {
		postJSON(t, base, "/v1/scopes/prov/memory/nodes", body, http.StatusCreated)
	}
	return id
}

// graphShape reads the drawn graph: the data-ref of every vertex and the
// from→to of every edge, as a person's browser has them.
func graphShape(p *page) (refs, edges []string) {
	refs = eval[[]string](p, `[...document.querySelectorAll("main .graph svg a.node")].map(a => a.dataset.ref)`)
	edges = eval[[]string](p, `[...document.querySelectorAll("main .graph svg path.edge")].map(e => e.dataset.from + " -> " + e.dataset.to)`)
	sort.Strings(refs)
	sort.Strings(edges)
	return refs, edges
}

// edgesThroughVertices lists the edges whose drawn path passes through the
// box of a vertex other than its two ends (sampled every 2 px along the
// path, 1 px inside the box): such an edge reads as two, or hides.
func edgesThroughVertices(p *page) []string {
	return eval[[]string](p, `(() => {
		const svg = document.querySelector("main .graph svg");
		const boxes = [...svg.querySelectorAll("a.node")].map((a) => {
			const r = a.querySelector("rect");
			return { ref: a.dataset.ref, x: +r.getAttribute("x"), y: +r.getAttribute("y"), w: +r.getAttribute("width"), h: +r.getAttribute("height") };
		});
		const bad = new Set();
		for (const e of svg.querySelectorAll("path.edge")) {
			const len = e.getTotalLength();
			for (let s = 0; s <= len; s += 2) {
				const pt = e.getPointAtLength(s);
				for (const b of boxes) {
					if (b.ref === e.dataset.from || b.ref === e.dataset.to) continue;
					if (pt.x > b.x + 1 && pt.x < b.x + b.w - 1 && pt.y > b.y + 1 && pt.y < b.y + b.h - 1) bad.add(e.dataset.from + " -> " + e.dataset.to + " crosses " + b.ref);
				}
			}
		}
		return [...bad];
	})()`)
}

// TestConsole_ProvenanceDrawsEveryNodeOnce is the acceptance check: the
// provenance of a three-level lineage holding a diamond draws each vertex
// exactly once and each lineage edge once, traced from the middle (both
// directions) and from the record at the root (forward only, where the
// diamond's lower corner is reached by two paths).
func TestConsole_ProvenanceDrawsEveryNodeOnce(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	id := lineage(t, base)
	rec := "record:" + id
	wantRefs := []string{"belief:fast", "decision:keep", "episode:run", "note:load", rec}
	sort.Strings(wantRefs)
	wantEdges := []string{
		rec + " -> episode:run",
		rec + " -> note:load",
		"episode:run -> belief:fast",
		"note:load -> belief:fast",
		"belief:fast -> decision:keep",
	}
	sort.Strings(wantEdges)

	for _, route := range []string{"/provenance/prov/belief:fast", "/provenance/prov/" + id} {
		t.Run(route, func(t *testing.T) {
			p := openConsole(t, base, route)
			p.waitFor(`document.querySelectorAll("main .graph svg a.node").length > 0`)
			refs, edges := graphShape(p)
			if strings.Join(refs, "|") != strings.Join(wantRefs, "|") {
				t.Errorf("vertices drawn = %q, want each of %q once", refs, wantRefs)
			}
			if strings.Join(edges, "|") != strings.Join(wantEdges, "|") {
				t.Errorf("edges drawn = %q, want %q", edges, wantEdges)
			}
			if got := p.text("#prov-counts"); !contains(got, "5 vertices, 5 edges") {
				t.Errorf("counts line = %q", got)
			}
			if bad := edgesThroughVertices(p); len(bad) > 0 {
				t.Errorf("edges drawn through other vertices: %q", bad)
			}
			// Every vertex is a link a keyboard reaches: a node goes to its
			// own provenance, the record to its record view.
			hrefs := eval[map[string]string](p, `Object.fromEntries([...document.querySelectorAll("main .graph svg a.node")].map(a => [a.dataset.ref, a.getAttribute("href")]))`)
			if hrefs["belief:fast"] != "#/provenance/prov/belief%3Afast" || hrefs[rec] != "#/records/"+id {
				t.Errorf("links = %v", hrefs)
			}
			if n := eval[int](p, `[...document.querySelectorAll("main .graph svg a.node")].filter(a => a.tabIndex >= 0).length`); n != 5 {
				t.Errorf("%d of 5 vertices are keyboard-focusable", n)
			}
			// The text alternative holds the same vertices.
			list := p.text("main .prov-text")
			for _, r := range []string{"episode:run", "note:load", rec} {
				if !contains(list, r) {
					t.Errorf("text alternative lacks %s: %q", r, list)
				}
			}
		})
	}

	// Following a vertex's link from the keyboard draws that vertex's own lineage.
	p := openConsole(t, base, "/provenance/prov/belief:fast")
	p.waitFor(`document.querySelector('main .graph svg a.node[data-ref="decision:keep"]') !== null`)
	p.do(chromedp.Focus(chromedp.CSS(`main .graph svg a.node[data-ref="decision:keep"]`)), chromedp.KeyEvent("\r"))
	// The heading comes before the graph (which waits for the trace), so
	// wait for the highlighted vertex itself.
	p.waitFor(`document.querySelector("main h1") && document.querySelector("main h1").textContent.includes("decision:keep")`)
	p.waitFor(`document.querySelector("main .graph svg a.node.focus") !== null`)
	if got := eval[string](p, `document.querySelector("main .graph svg a.node.focus").dataset.ref`); got != "decision:keep" {
		t.Errorf("highlighted vertex = %q", got)
	}
}

// TestConsole_ProvenanceSkipLayerEdges: an edge that skips a layer (a belief
// derived from the record and from an episode derived from that record) is
// routed around the vertices between its ends, not drawn through them, so
// every edge the counts line names can be seen:
//
//	record ─┬─> episode:run ─┬─> belief:fast ──┬─> decision:keep
//	        ├─> note:load ───┼─────────────────┤
//	        ├────────────────┘                 │
//	        └──────────────────────────────────┘
func TestConsole_ProvenanceSkipLayerEdges(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	rec := postJSON(t, base, "/v1/records", `{"type":"agent.thought","content":"REST answers in 2 ms p99","author_id":"agent:bmo"}`, http.StatusCreated)
	r := "record:" + rec["id"].(string)
	for _, body := range []string{
		`{"kind":"episode","id":"run","title":"Benchmark run","summary":"2 ms p99","derived_from":["` + r + `"]}`,
		`{"kind":"note","id":"load","title":"Pi load","summary":"CPU under 40%","derived_from":["` + r + `"]}`,
		`{"kind":"belief","id":"fast","title":"REST is fast enough","summary":"keep REST","derived_from":["episode:run","` + r + `"]}`,
		`{"kind":"decision","id":"keep","title":"Keep the API on REST","summary":"decided","derived_from":["belief:fast","note:load","` + r + `"]}`,
	} {
		postJSON(t, base, "/v1/scopes/prov/memory/nodes", body, http.StatusCreated)
	}
	p := openConsole(t, base, "/provenance/prov/decision:keep")
	p.waitFor(`document.querySelectorAll("main .graph svg path.edge").length > 0`)
	if got := p.text("#prov-counts"); !contains(got, "5 vertices, 7 edges") {
		t.Errorf("counts line = %q, want 5 vertices, 7 edges", got)
	}
	if _, edges := graphShape(p); len(edges) != 7 {
		t.Errorf("edges drawn = %q, want 7", edges)
	}
	if bad := edgesThroughVertices(p); len(bad) > 0 {
		t.Errorf("edges drawn through other vertices: %q", bad)
	}
	// No two arrows meet at one point: each can be seen and counted.
	ends := eval[int](p, `new Set([...document.querySelectorAll("main .graph svg path.edge")].map((e) => {
		const pt = e.getPointAtLength(e.getTotalLength());
		return Math.round(pt.x) + "," + Math.round(pt.y);
	})).size`)
	if ends != 7 {
		t.Errorf("the 7 edges end at %d distinct points, want 7", ends)
	}
}
