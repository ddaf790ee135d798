package ui_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/ui"
)

// TestScreenshots saves PNGs of the console's main views for
// docs/console.md, taken from the real page on a small, realistic kurad.
// It runs only with KURA_SCREENSHOTS set to the directory to write to
// (make console-screenshots); views whose module is not in the console
// are left out.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("KURA_SCREENSHOTS")
	if dir == "" {
		t.Skip("set KURA_SCREENSHOTS=<dir> (make console-screenshots) to take the console's screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := kuradtest.Start(t)
	c := seedScreenshotData(t, base)

	p := openConsole(t, base, "/sessions")
	p.do(chromedp.EmulateViewport(1200, 800))
	raw, _ := ui.Sizes()
	for _, v := range consoleViews(c) {
		if mod := viewModule(v.route); mod != "" && raw["views/"+mod] == 0 {
			t.Logf("%s: no views/%s in this console, skipped", v.name, mod)
			continue
		}
		p.navigate(v.route)
		theme := "light"
		if v.dark {
			theme = "dark"
		}
		p.do(chromedp.Evaluate[chromedp.Void](`document.documentElement.dataset.theme = "` + theme + `"`))
		p.waitFor(viewReady + ` && (` + v.ready + `)`)
		for _, s := range v.steps {
			p.do(chromedp.Click(chromedp.CSS(s.Click)), chromedp.Poll[chromedp.Void](s.Until))
		}
		p.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
		png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", v.name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, v.name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s.png: %d bytes", v.name, len(png))
	}
}

// viewReady is true once a view has drawn its answer: a heading, and no
// "Loading" left in the main area.
const viewReady = `document.querySelector("main h1") !== null && !document.querySelector("main").innerText.includes("Loading")`

// consoleView is one of the console's main views as a person opens it on
// the seeded kurad (seedScreenshotData): the route, what shows it is
// drawn (JavaScript, with viewReady), and what they then click, each
// click waited out (until). The screenshots and the Firefox check share
// them.
type consoleView struct {
	name, route, ready string
	dark               bool
	steps              []viewStep
}

type viewStep struct {
	Click string `json:"click"`
	Until string `json:"until"`
}

func consoleViews(c chain) []consoleView {
	session := `document.querySelector('[data-kura-verify="ok"]') && document.querySelectorAll("[data-kura-ledger]").length === 4`
	return []consoleView{
		{name: "sessions", route: "/sessions", ready: `document.querySelectorAll("main tbody tr").length >= 2`},
		{name: "session", route: "/sessions/" + c.session, ready: session},
		{name: "session-dark", route: "/sessions/" + c.session, ready: session, dark: true},
		{name: "ledger", route: "/ledgers/" + c.out[0], ready: `document.querySelectorAll("#ledger-records tbody tr").length > 0`,
			// The proof first: the verify answer above would move its button.
			steps: []viewStep{
				{"#ledger-records tbody tr:nth-child(2) .prove", `document.querySelector('[data-kura-proof]') !== null`},
				{"#verify-ledger", `document.querySelector('main [data-kura-verify="ok"]') !== null`},
			}},
		{name: "record", route: "/records/" + c.outRecs[0][0], ready: `document.querySelector("[data-kura-record-check]") !== null`},
		{name: "memory", route: "/memory/hashi", ready: `true`},
		{name: "provenance", route: "/provenance/hashi/decision:ship-rest", ready: `true`},
		{name: "kb", route: "/kb/runbook", ready: `true`},
		{name: "events", route: "/events", ready: `true`},
		{name: "log", route: "/log", ready: `true`},
	}
}

// viewModule names the module a route is drawn by ("" for the shell's).
func viewModule(route string) string {
	for _, m := range []struct{ prefix, mod string }{
		{"/sessions", "sessions.js"}, {"/ledgers/", "ledger.js"}, {"/records/", "record.js"},
		{"/memory", "memory.js"}, {"/provenance/", "provenance.js"}, {"/kb", "kb.js"},
		{"/events", "events.js"}, {"/log", "log.js"},
	} {
		if len(route) >= len(m.prefix) && route[:len(m.prefix)] == m.prefix {
			return m.mod
		}
	}
	return ""
}

// seedScreenshotData writes what a small team's kurad holds after a
// morning: two sessions (one with two turns whose output holds memory),
// a three-level lineage of memory nodes, and a knowledge base.
func seedScreenshotData(t *testing.T, base string) chain {
	t.Helper()
	c := seedSession(t, base, "", "hashi", "morning", 2)
	postJSON(t, base, "/v1/sessions", `{"project":"hashi","name":"evening"}`, http.StatusCreated)
	postJSON(t, base, "/v1/sessions", `{"project":"docs","name":"review"}`, http.StatusCreated)
	for _, n := range []string{
		`{"kind":"episode","id":"bench-run","title":"Benchmark run 2026-11-20","summary":"REST handled 11k writes/s, p99 24 ms","lifecycle":"active","authority":"trusted","confidence":0.9,"source_type":"direct_experience","derived_from":["record:` + c.outRecs[0][0] + `"]}`,
		`{"kind":"belief","id":"api-rest","title":"REST is fast enough","summary":"Keep the API on REST/JSON","lifecycle":"active","authority":"trusted","confidence":0.8,"source_type":"inference","derived_from":["episode:bench-run"]}`,
		`{"kind":"decision","id":"ship-rest","title":"Ship the REST API","summary":"No gRPC for v1; stream events over SSE","lifecycle":"active","authority":"trusted","confidence":0.85,"source_type":"consolidation","derived_from":["belief:api-rest","episode:bench-run"]}`,
		`{"kind":"belief","id":"grpc-later","title":"gRPC may come later","summary":"Revisit if a client needs streaming calls","lifecycle":"candidate","authority":"unknown","confidence":0.4,"source_type":"inference"}`,
	} {
		postJSON(t, base, "/v1/scopes/hashi/memory/nodes", n, http.StatusCreated)
	}
	for _, e := range []struct{ id, keys, value string }{
		{"How to restart kurad on the Pi.", `["kurad","restart","pi"]`, "sudo systemctl restart kurad; check /v1/health"},
		{"Where kurad keeps its data.", `["data","sqlite","backup"]`, "/var/lib/kura/kura.db; take backups with kura backup"},
		{"Who to call when the witness lags.", `["witness","on-call"]`, "The on-call engineer of the week (see the rota)"},
	} {
		call(t, http.MethodPut, base, "/v1/kb/runbook/entries", fmt.Sprintf(`{"identifier":%q,"keys":%s,"value":%q}`, e.id, e.keys, e.value), "", http.StatusCreated)
	}
	return c
}
