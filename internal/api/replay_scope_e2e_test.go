package api_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/auth"
)

// TestAuth_ReplayAfterScopeRevoked: an Idempotency-Key retry is checked
// like the first request. A writer whose token lost the scope of a
// knowledge-base entry it wrote gets 403 on the retry, not the stored
// answer, and nothing is written; a retry by a token that still holds the
// scope replays the first answer.
func TestAuth_ReplayAfterScopeRevoked(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	body := `{"scope":"alpha","identifier":"deploy window","value":"Tuesdays 10:00"}`
	put := func(tok string) (int, string, []byte) {
		req, _ := http.NewRequest("PUT", e.base+"/v1/kb/ops/entries", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Idempotency-Key", "kb-once")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), b
	}
	code, _, first := put(tWA)
	if code != http.StatusCreated {
		t.Fatalf("first write: %d %s", code, first)
	}
	if code, replayed, got := put(tWA); code != http.StatusCreated || replayed != "true" || string(got) != string(first) {
		t.Fatalf("retry with the scope: %d replayed=%q %s, want the first answer", code, replayed, got)
	}

	// a's token keeps its project but its scope becomes beta.
	file := filepath.Join(e.dir, "tokens")
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(old), "\n") {
		if strings.HasPrefix(l, auth.HashToken(tWA)+" ") {
			l = auth.HashToken(tWA) + " agent:a writer beta alpha"
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.d.ReloadTokens(); err != nil {
		t.Fatal(err)
	}

	before := e.state()
	code, replayed, got := put(tWA)
	if code != http.StatusForbidden || replayed != "" || !strings.Contains(string(got), `"permission_denied"`) {
		t.Errorf("retry after the scope was revoked: %d replayed=%q %s, want 403 permission_denied", code, replayed, got)
	}
	if e.state() != before {
		t.Errorf("the refused retry changed the store")
	}
}
