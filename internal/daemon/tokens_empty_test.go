package daemon_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestConfig_TokensFileWithoutTokens: a tokens file that names no token
// (empty, blank lines, comments only) is a mistake, not a request for the
// tokenless admin mode: kurad refuses it, naming the file, even on
// loopback. No tokens file at all stays the tokenless mode.
func TestConfig_TokensFileWithoutTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ name, body string }{
		{"Empty", ""},
		{"BlankLines", "\n  \n\t\n"},
		{"CommentsOnly", "# tokens go here\n# " + auth.HashToken("x") + " agent:a writer * *\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.name)
			if err := os.WriteFile(file, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, src := range []struct {
				args []string
				env  map[string]string
			}{
				{[]string{"--tokens-file", file}, nil},
				{nil, map[string]string{"KURA_TOKENS_FILE": file}},
			} {
				c, _, err := daemon.LoadConfig(src.args, env(src.env), devNull(t))
				if err == nil || !strings.Contains(err.Error(), "tokens-file") || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "no token") {
					t.Fatalf("args %v env %v: got err %v (tokens required %v), want a refusal naming tokens-file and %s", src.args, src.env, err, c.TokensConfigured(), file)
				}
			}
		})
	}
	t.Run("NoFileIsTokenless", func(t *testing.T) {
		c, _, err := daemon.LoadConfig(nil, env(nil), devNull(t))
		if err != nil || c.TokensConfigured() {
			t.Fatalf("got err %v, tokens required %v; want the tokenless mode", err, c.TokensConfigured())
		}
	})
}

// TestMain_TokensFileEmptiedBeforeStart: the file may change between the
// configuration check and the start; a file holding no token by then stops
// the start too, naming it.
func TestMain_TokensFileEmptiedBeforeStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	if err := os.WriteFile(file, []byte(auth.HashToken("tok")+" agent:a writer * *\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := daemon.DefaultConfig()
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.HTTPAddr, cfg.NATSAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.KeyFile = filepath.Join(dir, "kurad.key")
	cfg.TokensFile = file
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("# revoked everything\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := daemon.NewMain(cfg, "test", io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := m.Run(ctx)
	if err == nil {
		m.Close(ctx)
		t.Fatal("kurad started on a tokens file holding no token; want a refusal")
	}
	if !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "no token") {
		t.Fatalf("got %v, want a refusal naming %s", err, file)
	}
}

// TestMain_ReloadToEmptyTokensFile: a SIGHUP reload that empties the file
// keeps token mode: every call is refused until tokens are added again.
func TestMain_ReloadToEmptyTokensFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte(auth.HashToken("tok")+" agent:a reader * *\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.TokensFile = file }})
	get := func(tok string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", d.BaseURL()+"/v1/info", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get("tok"); got != 200 {
		t.Fatalf("with the token before the reload: got %d, want 200", got)
	}
	if err := os.WriteFile(file, []byte("# emptied\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.ReloadTokens(); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"tok", ""} {
		if got := get(tok); got != 401 {
			t.Fatalf("token %q after emptying the file: got %d, want 401", tok, got)
		}
	}
}
