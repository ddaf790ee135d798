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
	shot := func(name, route, ready string, dark bool, before ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if mod := viewModule(route); mod != "" && raw["views/"+mod] == 0 {
			t.Logf("%s: no views/%s in this console, skipped", name, mod)
			return
		}
		p.navigate(route)
		theme := "light"
		if dark {
			theme = "dark"
		}
		p.do(chromedp.Evaluate[chromedp.Void](`document.documentElement.dataset.theme = "` + theme + `"`))
		p.waitFor(`document.querySelector("main h1") !== null && !document.querySelector("main").innerText.includes("Loading") && (` + ready + `)`)
		if len(before) > 0 {
			p.do(before...)
		}
		p.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
		png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s.png: %d bytes", name, len(png))
	}
	shot("sessions", "/sessions", `document.querySelectorAll("main tbody tr").length >= 2`, false)
	shot("session", "/sessions/"+c.session, `document.querySelector('[data-kura-verify="ok"]') && document.querySelectorAll("[data-kura-ledger]").length === 4`, false)
	shot("session-dark", "/sessions/"+c.session, `document.querySelector('[data-kura-verify="ok"]') && document.querySelectorAll("[data-kura-ledger]").length === 4`, true)
	shot("ledger", "/ledgers/"+c.out[0], `document.querySelectorAll("#ledger-records tbody tr").length > 0`, false,
		// The proof first: the verify answer above would move its button.
		chromedp.Click(chromedp.CSS("#ledger-records tbody tr:nth-child(2) .prove")),
		chromedp.Poll[chromedp.Void](`document.querySelector('[data-kura-proof]') !== null`),
		chromedp.Click(chromedp.CSS("#verify-ledger")),
		chromedp.Poll[chromedp.Void](`document.querySelector('main [data-kura-verify="ok"]') !== null`))
	shot("record", "/records/"+c.outRecs[0][0], `document.querySelector("[data-kura-record-check]") !== null`, false)
	shot("memory", "/memory/hashi", `true`, false)
	shot("provenance", "/provenance/hashi/decision:ship-rest", `true`, false)
	shot("kb", "/kb/runbook", `true`, false)
	shot("events", "/events", `true`, false)
	shot("log", "/log", `true`, false)
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
