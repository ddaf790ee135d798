package ui_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/ui"
)

func get(t *testing.T, url string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	// The transport must not unzip for us: the test reads what was sent.
	tr := &http.Transport{DisableCompression: true}
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestServe_Files checks what kurad sends for the console's files: the
// page and its modules with their types and a strict CSP, gzip when asked
// for, 304 on a matching ETag, 404 for a name that is not there, and /ui
// sent to /ui/.
func TestServe_Files(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)

	resp, body := get(t, base+"/ui/", nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("/ui/: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !bytes.Contains(body, []byte(`<script type="module" src="app.js">`)) {
		t.Fatalf("/ui/ is not the console page: %.200s", body)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP allows unsafe sources: %q", csp)
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("no nosniff")
	}

	resp, body = get(t, base+"/ui/app.js", map[string]string{"Accept-Encoding": "gzip"})
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("app.js: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil || !bytes.Contains(plain, []byte("hashchange")) {
		t.Fatalf("app.js unzipped: %v %.100s", err, plain)
	}
	etag := resp.Header.Get("ETag")
	if resp, _ := get(t, base+"/ui/app.js", map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match %s: %d, want 304", etag, resp.StatusCode)
	}
	if resp, _ := get(t, base+"/ui/app.js", map[string]string{"Accept-Encoding": "gzip;q=0"}); resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("gzip;q=0 still got %q", resp.Header.Get("Content-Encoding"))
	}
	for _, p := range []string{"/ui/nope.js", "/ui/views/../../v1/info", "/ui/static/app.js"} {
		if resp, b := get(t, base+p, nil); resp.StatusCode != http.StatusNotFound || !bytes.Contains(b, []byte(`"code":"not_found"`)) {
			t.Errorf("%s: %d %s, want 404 with the error body", p, resp.StatusCode, b)
		}
	}
	// The console is read-only: a write to it is refused with the error body.
	if b := call(t, http.MethodPost, base, "/ui/app.js", `{}`, "", http.StatusMethodNotAllowed); b["error"] == nil {
		t.Errorf("POST /ui/app.js: %v, want the error body", b)
	}
	if resp, _ := get(t, base+"/ui", nil); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("/ui: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestServe_Size holds the console to its budget: at most 300 KB gzipped
// in all, so a Pi serves it quickly and kurad's binary barely grows.
func TestServe_Size(t *testing.T) {
	t.Parallel()
	raw, gz := ui.Sizes()
	var r, z int
	for p := range raw {
		r += raw[p]
		z += gz[p]
	}
	t.Logf("console: %d files, %d bytes, %d gzipped", len(raw), r, z)
	if z > 300<<10 {
		t.Fatalf("console is %d bytes gzipped, budget 300 KB", z)
	}
	if r > 1<<20 {
		t.Fatalf("console is %d bytes, kurad may grow by at most 1 MiB", r)
	}
}

// TestServe_TokenMode: with tokens the page itself needs none (it holds no
// data), while the API it calls still refuses a caller without one.
func TestServe_TokenMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	if err := os.WriteFile(file, []byte(auth.HashToken("console-admin-token-0123456789")+" user:root admin * *\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.TokensFile = file }})
	base := d.BaseURL()
	if resp, _ := get(t, base+"/ui/", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("/ui/ in token mode: %d", resp.StatusCode)
	}
	if resp, _ := get(t, base+"/v1/sessions", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/v1/sessions without a token: %d", resp.StatusCode)
	}
}
