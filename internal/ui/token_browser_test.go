package ui_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestConsole_TokenMode (acceptance): on a kurad with tokens, the session
// view without a token shows none of the session (the API answers 401,
// which the page says), and the token dialog asks for one. Typed into the
// dialog, the token is kept in sessionStorage only, and the view renders
// the chain with every call carrying it.
func TestConsole_TokenMode(t *testing.T) {
	t.Parallel()
	const token = "console-reader-token-0123456789abcdef"
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte(auth.HashToken(token)+" user:oles admin * *\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.TokensFile = file }})
	base := d.BaseURL()
	c := seedSession(t, base, token, "hashi", "night", 1)

	p := openConsole(t, base, "/sessions/"+c.session)
	p.waitFor(`document.getElementById("token-dialog").open`)
	if got := p.text("#token-reason"); !contains(got, "asks for a token") {
		t.Fatalf("dialog says %q", got)
	}
	if !slices.Contains(p.statuses("/v1/sessions/"+c.session), 401) {
		t.Fatalf("the API did not refuse the page's call: %v", p.statuses("/v1/"))
	}
	// Cancelled, the view shows the refusal and no data.
	p.do(chromedp.Click(chromedp.CSS("#token-cancel")))
	p.waitFor(`document.querySelector("main .error") !== null`)
	if got := p.text("main .error"); !contains(got, "401") {
		t.Fatalf("refusal shown as %q", got)
	}
	if got := p.text("main"); contains(got, "hashi/night") || eval[int](p, `document.querySelectorAll("[data-kura-ledger]").length`) != 0 {
		t.Fatalf("the view shows data without a token: %q", got)
	}
	for _, s := range p.statuses("/v1/") {
		if s != 401 {
			t.Fatalf("a call without a token got %d: %v", s, p.statuses("/v1/"))
		}
	}

	// The Token button, the token typed, submitted: the view renders.
	p.do(chromedp.Click(chromedp.CSS("#token-button")))
	p.waitFor(`document.getElementById("token-dialog").open`)
	p.do(chromedp.SendKeys(chromedp.CSS("#token-input"), token), chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)))
	p.waitFor(`document.querySelector('[data-kura-verify="ok"]') !== null && document.querySelectorAll("[data-kura-ledger]").length === 2`)
	if got := p.text("main h1"); got != "hashi/night" {
		t.Fatalf("heading %q", got)
	}
	if got := eval[string](p, `sessionStorage.getItem("kura.token")`); got != token {
		t.Fatalf("sessionStorage holds %q", got)
	}
	if eval[bool](p, `Object.keys(localStorage).some(k => localStorage.getItem(k).includes("`+token+`"))`) {
		t.Fatalf("the token is in localStorage")
	}
	p.allow("401")
}
