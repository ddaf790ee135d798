package daemon_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"
)

func writeUsersFile(tb testing.TB, lines ...string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "nats-users")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

func hashLine(tb testing.TB, name, password, projects string) string {
	tb.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		tb.Fatal(err)
	}
	return name + " " + string(h) + " " + projects
}

// writeTokensFile writes a tokens file of one admin token.
func writeTokensFile(tb testing.TB) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(auth.HashToken("tok")+" user:root admin * *\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// NATS may leave loopback with users of its own, once kurad has tokens:
// without tokens every listener stays on loopback, NATS users or not.
func TestConfig_NATSBeyondLoopbackWithUsers(t *testing.T) {
	t.Parallel()
	users := writeUsersFile(t, hashLine(t, "alice", "pw", "alpha"))
	tokens := writeTokensFile(t)
	if _, _, err := daemon.LoadConfig([]string{"--nats-addr", "0.0.0.0:4222", "--nats-users-file", users}, env(nil), devNull(t)); err == nil || !strings.Contains(err.Error(), "without tokens") {
		t.Errorf("NATS 0.0.0.0 with users but no tokens: got %v, want the tokenless refusal", err)
	}
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"Flag", []string{"--nats-addr", "0.0.0.0:4222", "--nats-users-file", users, "--tokens-file", tokens}, nil},
		{"Env", nil, map[string]string{"KURA_NATS_ADDR": "[::]:4222", "KURA_NATS_USERS_FILE": users, "KURA_TOKENS_FILE": tokens}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := daemon.LoadConfig(tt.args, env(tt.env), devNull(t))
			if err != nil {
				t.Fatalf("got %v, want NATS beyond loopback accepted with users", err)
			}
			if c.NATSUsersFile != users {
				t.Errorf("NATSUsersFile %q, want %q", c.NATSUsersFile, users)
			}
		})
	}
	// Users on NATS do nothing for HTTP: it still refuses to leave loopback
	// on its own terms.
	if _, _, err := daemon.LoadConfig([]string{"--http-addr", "0.0.0.0:7700", "--nats-users-file", users}, env(nil), devNull(t)); err == nil || !strings.Contains(err.Error(), "http-addr") {
		t.Errorf("http-addr 0.0.0.0 with NATS users only: got %v, want the http-addr refusal", err)
	}
}

func TestMain_NATSUsersFileRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, want string
		file       func(t *testing.T) string
	}{
		{"Missing", "nats users file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }},
		{"Empty", "defines no users", func(t *testing.T) string { return writeUsersFile(t, "# nobody") }},
		{"PlainPassword", "bcrypt", func(t *testing.T) string { return writeUsersFile(t, "alice hunter2 alpha") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.NATSUsersFile = tt.file(t)
			m := daemon.NewMain(cfg, "test", io.Discard)
			err := m.Run(context.Background())
			if err == nil {
				m.Close(context.Background())
				t.Fatal("Run succeeded, want a refusal")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

// TestMain_NATSAuth runs kurad with NATS on every interface: anonymous
// clients are refused, a user sees its project's doorbell and not others',
// and kurad's own publisher still gets through.
func TestMain_NATSAuth(t *testing.T) {
	t.Parallel()
	if ln, err := net.Listen("tcp", "0.0.0.0:0"); err != nil {
		t.Skipf("cannot bind 0.0.0.0 here (%v)", err)
	} else {
		ln.Close()
	}
	cfg := testConfig(t)
	cfg.NATSAddr = "0.0.0.0:0"
	cfg.NATSUsersFile = writeUsersFile(t, hashLine(t, "alice", "alice-pw", "alpha"))
	cfg.TokensFile = writeTokensFile(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m := daemon.NewMain(cfg, "test", io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	_, port, _ := net.SplitHostPort(m.NATSAddr())
	url := "nats://127.0.0.1:" + port

	if nc, err := nats.Connect(url, nats.NoReconnect(), nats.Timeout(5*time.Second)); err == nil {
		nc.Close()
		t.Fatal("anonymous NATS client connected to kurad listening beyond loopback")
	}
	nc, err := nats.Connect(url, nats.UserInfo("alice", "alice-pw"), nats.NoReconnect(), nats.Timeout(5*time.Second),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	own, err := nc.SubscribeSync("oclaw.v1.alpha.>")
	if err != nil {
		t.Fatal(err)
	}
	other, err := nc.SubscribeSync("oclaw.v1.beta.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	base := "http://" + m.HTTPAddr()
	for _, p := range []string{"beta", "alpha"} {
		body := `{"type":"agent.thought","author_id":"agent:bmo","content":{"p":"` + p + `"},"metadata":{"project_id":"` + p + `"}}`
		req, _ := http.NewRequest("POST", base+"/v1/records", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create record in %s: status %d", p, resp.StatusCode)
		}
	}
	msg, err := own.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatalf("alice got no doorbell for her project: %v", err)
	}
	if msg.Subject != "oclaw.v1.alpha.evt.record.written" {
		t.Errorf("subject %q", msg.Subject)
	}
	// beta's event was committed and published first; had the refused
	// subscription been live, it would have arrived by now.
	if m, err := other.NextMsg(200 * time.Millisecond); err == nil {
		t.Errorf("alice received %s from another project", m.Subject)
	}
}
