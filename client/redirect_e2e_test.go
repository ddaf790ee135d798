package client_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestClient_TokenNotSentToAnotherOrigin: a redirect to another origin
// (another port of 127.0.0.1 here, which Go's own rule lets the token
// through to) arrives without the bearer token; a redirect within the
// origin keeps it. The far side is a real kurad holding the token: had the
// token gone with the redirect, the call would succeed.
func TestClient_TokenNotSentToAnotherOrigin(t *testing.T) {
	t.Parallel()
	const token = "redirect-token-0123456789abcdef"
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte(auth.HashToken(token)+" agent:r reader * *\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.TokensFile = file }})
	if _, err := client.New(d.BaseURL(), client.WithToken(token)).Info(t.Context()); err != nil {
		t.Fatalf("info straight from kurad: %v", err)
	}

	var mu sync.Mutex
	var homeAuth []string
	var redirector *httptest.Server
	redirector = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/home"); ok {
			mu.Lock()
			homeAuth = append(homeAuth, r.Header.Get("Authorization"))
			mu.Unlock()
			http.Redirect(w, r, d.BaseURL()+rest, http.StatusTemporaryRedirect)
			return
		}
		if r.URL.Query().Get("home") != "" {
			http.Redirect(w, r, redirector.URL+"/home"+r.URL.Path, http.StatusFound)
			return
		}
		http.Redirect(w, r, d.BaseURL()+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(redirector.Close)

	for _, c := range []*client.Client{
		client.New(redirector.URL, client.WithToken(token)),
		client.New(redirector.URL, client.WithToken(token), client.WithHTTPClient(&http.Client{})),
	} {
		_, err := c.Info(t.Context())
		wantCode(t, err, "unauthenticated")
	}

	// Within the redirector's origin the token is kept (seen at /home),
	// and dropped on the way on to kurad.
	req, _ := http.NewRequest(http.MethodGet, "/v1/info?home=1", nil)
	resp, err := client.New(redirector.URL, client.WithToken(token)).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("through /home to kurad: %d, want 401", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(homeAuth) != 1 || homeAuth[0] != "Bearer "+token {
		t.Errorf("the redirector's own /home got Authorization %q, want the token", homeAuth)
	}
}
