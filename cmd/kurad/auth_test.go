package main_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/testwait"
)

func tokenLine(tok, rest string) string { return auth.HashToken(tok) + " " + rest + "\n" }

func status(t *testing.T, base, path, tok string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
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

// TestKurad_TokensRequired: a tokens file that is empty, does not parse or
// is missing stops kurad (exit 2), naming the reason.
func TestKurad_TokensRequired(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("# no tokens yet\n"), 0o600)
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte(tokenLine("a", "agent:a writer * *")+"nonsense\n"), 0o600)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"empty tokens file", []string{"--http-addr", "0.0.0.0:7700", "--tokens-file", empty}, "holds no token"},
		// Not the tokenless admin mode, even on loopback: the file is named.
		{"empty tokens file on loopback", []string{"--tokens-file", empty}, empty + " holds no token"},
		{"bad tokens file", []string{"--tokens-file", bad}, "line 2"},
		{"missing tokens file", []string{"--tokens-file", filepath.Join(dir, "absent")}, "tokens-file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, kuradBin, append(tc.args, "--data-dir", t.TempDir())...)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), tc.want) {
				t.Fatalf("exit %d, want 2 mentioning %q: %s", code, tc.want, out)
			}
		})
	}
}

// TestKurad_TokensReloadOnSIGHUP runs the real binary with a tokens file:
// anonymous calls get 401 (health checks excepted), SIGHUP swaps the file
// in so a removed token is refused at once, and a file that does not parse
// keeps the tokens in force.
func TestKurad_TokensReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file+".tmp", []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Rename(file+".tmp", file)
	}
	write(tokenLine("tok-a", "agent:a reader * *"))
	p := startKurad(t, filepath.Join(dir, "data"), "--tokens-file", file, "--log-level", "info")
	if c := status(t, p.Base, "/healthz", ""); c != 200 {
		t.Fatalf("healthz %d", c)
	}
	for _, tok := range []string{"", "tok-b", "tok-aa", "Bearer"} {
		if c := status(t, p.Base, "/v1/info", tok); c != 401 {
			t.Fatalf("info with %q: %d, want 401", tok, c)
		}
	}
	if c := status(t, p.Base, "/v1/info", "tok-a"); c != 200 {
		t.Fatalf("info with tok-a: %d", c)
	}
	hup := func(wantLog string) {
		t.Helper()
		p.Cmd.Process.Signal(syscall.SIGHUP)
		if !testwait.Until(10*time.Second, func() bool { return strings.Contains(p.Log.String(), wantLog) }) {
			t.Fatalf("no %q in the log:\n%s", wantLog, p.Log)
		}
	}
	write(tokenLine("tok-b", "agent:b reader * *"))
	hup("tokens reloaded")
	if c := status(t, p.Base, "/v1/info", "tok-a"); c != 401 {
		t.Fatalf("revoked tok-a: %d, want 401", c)
	}
	if c := status(t, p.Base, "/v1/info", "tok-b"); c != 200 {
		t.Fatalf("new tok-b: %d", c)
	}
	write(tokenLine("tok-c", "agent:c owner * *"))
	hup("tokens not reloaded")
	if c := status(t, p.Base, "/v1/info", "tok-b"); c != 200 {
		t.Fatalf("tok-b after a bad reload: %d", c)
	}
	if c := status(t, p.Base, "/v1/info", "tok-c"); c != 401 {
		t.Fatalf("tok-c from a bad file: %d", c)
	}
}
