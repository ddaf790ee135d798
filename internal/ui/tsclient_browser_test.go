package ui_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// tsDist is the built ESM of the TypeScript client (clients/typescript):
// KURA_TS_DIST when set (the TypeScript suite sets it to the dist it has
// just built), else a fresh build of the sources into a temp dir with the
// TypeScript compiler npm ci installed. Without either the test skips: make
// test-typescript builds the client and runs this test (test/browser.test.mjs).
func tsDist(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("KURA_TS_DIST"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "index.js")); err != nil {
			t.Fatalf("KURA_TS_DIST=%s: %v", d, err)
		}
		return d
	}
	root, err := filepath.Abs("../../clients/typescript")
	if err != nil {
		t.Fatal(err)
	}
	tsc := filepath.Join(root, "node_modules", "typescript", "bin", "tsc")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(tsc); serr != nil || err != nil {
		t.Skip("the TypeScript client is not built here (no KURA_TS_DIST, and no node with clients/typescript/node_modules " +
			"to build it): make test-typescript builds it and runs this test")
	}
	out := t.TempDir()
	cmd := exec.Command(node, tsc, "-p", "tsconfig.json", "--outDir", out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the TypeScript client: %v\n%s", err, b)
	}
	return out
}

// tsResult is what testdata/tsclient.js leaves in window.kuraResult.
type tsResult struct {
	Errors        []string
	SyncAvailable bool
	Vectors       struct{ Records, Merkle, Ledgers []bool }
	Ledger        struct {
		ID               string
		Records          int
		SignatureChecked bool
	}
	Proofs  int
	Session struct {
		Ledgers, HeadMoves int
		LogChecked         bool
	}
	Tampers struct{ Content, Order, Label, Signature, MissingSeal string }
	Sync    struct {
		Name                         string
		KuraError, VerificationError bool
		Message                      string
	}
}

// TestBrowser_TypeScriptClient loads the built ESM of @kura-memory/client
// in a real Chromium page served from 127.0.0.1 (kurad's API behind the
// same origin, as its README says a page must have it): the Async checks
// (WebCrypto) reproduce the known-answer vectors, verify a real kurad's
// ledger, inclusion proofs and session, and catch tampering with the right
// what; the synchronous ones throw VerificationUnavailableError saying to
// use the Async ones. The page's problems (exceptions, console errors,
// requests to another origin) fail the test, as for the console.
func TestBrowser_TypeScriptClient(t *testing.T) {
	t.Parallel()
	dist := tsDist(t)
	base := kuradtest.Start(t)
	c := seedSession(t, base, "", "hashi", "browser", 2)

	kurad, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", httputil.NewSingleHostReverseProxy(kurad))
	mux.Handle("/dist/", http.StripPrefix("/dist/", http.FileServer(http.Dir(dist))))
	for path, file := range map[string]string{
		"/":             "testdata/tsclient.html",
		"/tsclient.js":  "testdata/tsclient.js",
		"/vectors.json": "../../kurahash/testdata/hashes.json",
	} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				http.NotFound(w, r)
				return
			}
			http.ServeFile(w, r, file)
		})
	}
	srv := httptest.NewServer(mux) // 127.0.0.1, port 0
	t.Cleanup(srv.Close)

	p := openTab(t, srv.URL)
	p.do(chromedp.Navigate(srv.URL + "/?session=" + url.QueryEscape(c.session)))
	p.waitFor(`window.kuraResult !== undefined`)
	var got tsResult
	if err := json.Unmarshal([]byte(eval[string](p, `JSON.stringify(window.kuraResult)`)), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Errors) > 0 {
		t.Fatalf("the page failed: %s", strings.Join(got.Errors, "\n"))
	}
	if got.SyncAvailable {
		t.Errorf("syncVerificationAvailable() = true in a browser")
	}
	for name, oks := range map[string][]bool{"records": got.Vectors.Records, "merkle": got.Vectors.Merkle, "ledgers": got.Vectors.Ledgers} {
		if len(oks) == 0 {
			t.Errorf("no %s vectors checked", name)
		}
		for i, ok := range oks {
			if !ok {
				t.Errorf("%s vector %d: the browser computed another hash", name, i)
			}
		}
	}
	head := c.out[len(c.out)-1]
	if got.Ledger.ID != head || got.Ledger.Records != 2 || !got.Ledger.SignatureChecked {
		t.Errorf("verifyLedgerAsync = %+v, want ledger %s, 2 records, signature checked", got.Ledger, head)
	}
	if got.Proofs != 2 {
		t.Errorf("inclusion proofs verified = %d, want 2", got.Proofs)
	}
	if got.Session.Ledgers != 4 || got.Session.HeadMoves < 4 || !got.Session.LogChecked {
		t.Errorf("verifySession = %+v, want 4 ledgers, 4 or more head moves, the log checked", got.Session)
	}
	want := struct{ Content, Order, Label, Signature, MissingSeal string }{"content_hash", "order", "ledger_hash", "signature", "seal"}
	if got.Tampers != want {
		t.Errorf("tampers caught as %+v, want %+v", got.Tampers, want)
	}
	if got.Sync.Name != "VerificationUnavailableError" || !got.Sync.KuraError || got.Sync.VerificationError ||
		!strings.Contains(got.Sync.Message, "use the Async variants") {
		t.Errorf("verifyRecord in a browser threw %+v, want a VerificationUnavailableError (a KuraError, not a VerificationError) saying to use the Async variants", got.Sync)
	}
}
