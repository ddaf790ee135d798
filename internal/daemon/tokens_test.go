package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
)

// TestConfig_Tokens: a public address needs a tokens file holding a token
// (and NATS, users of its own); the profiler stays on loopback whatever the
// tokens.
func TestConfig_Tokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	one := filepath.Join(dir, "one")
	os.WriteFile(one, []byte(auth.HashToken("t")+" agent:a writer * *\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("# none\n"), 0o600)
	users := writeUsersFile(t, hashLine(t, "alice", "pw", "alpha"))
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string // "" accepted, else a substring of the error
	}{
		{"public http with a token", []string{"--http-addr", "0.0.0.0:7700", "--tokens-file", one}, nil, ""},
		{"public nats with a token but no NATS users", []string{"--nats-addr", "0.0.0.0:4222"}, map[string]string{"KURA_TOKENS_FILE": one}, "nats-users-file"},
		{"public nats with a token and NATS users", []string{"--nats-addr", "0.0.0.0:4222", "--nats-users-file", users}, map[string]string{"KURA_TOKENS_FILE": one}, ""},
		{"public http, empty tokens file", []string{"--http-addr", "0.0.0.0:7700", "--tokens-file", empty}, nil, "holds no token"},
		{"public nats, no tokens", []string{"--nats-addr", "0.0.0.0:4222"}, nil, "nats-addr"},
		{"public debug with a token", []string{"--debug-addr", "0.0.0.0:6060", "--tokens-file", one}, nil, "debug-addr"},
		{"missing tokens file", []string{"--tokens-file", filepath.Join(dir, "absent")}, nil, "tokens-file"},
		{"rate limit negative", []string{"--rate-limit=-1"}, nil, "rate-limit"},
		{"rate limit not a number", []string{"--rate-limit", "fast"}, nil, "rate-limit"},
		{"rate burst zero", []string{"--rate-burst", "0"}, nil, "rate-burst"},
		{"rate limit off, burst zero", []string{"--rate-limit", "0", "--rate-burst", "0"}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := daemon.LoadConfig(tc.args, env(tc.env), devNull(t))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q (config %+v)", err, tc.want, c)
			}
		})
	}
	c, _, err := daemon.LoadConfig(nil, env(nil), devNull(t))
	if err != nil || c.RateLimit != 200 || c.RateBurst != 400 || c.TokensConfigured() {
		t.Fatalf("defaults %v %+v", err, c)
	}
}
