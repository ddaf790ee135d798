package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
)

// testConfig is a valid configuration on free loopback ports and a temp
// data dir.
func testConfig(tb testing.TB) daemon.Config {
	tb.Helper()
	cfg := daemon.DefaultConfig()
	cfg.DataDir = tb.TempDir()
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.NATSAddr = "127.0.0.1:0"
	cfg.KeyFile = filepath.Join(cfg.DataDir, "kurad.key")
	cfg.WriterMaxBatch = 8
	cfg.ReadPool = 2
	if err := cfg.Validate(); err != nil {
		tb.Fatalf("test config: %v", err)
	}
	return cfg
}

func TestMain_RunClose(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	// A stale address file from an earlier run must be replaced.
	addrPath := filepath.Join(cfg.DataDir, daemon.AddrFile)
	if err := os.WriteFile(addrPath, []byte(`{"http":"127.0.0.1:1","nats":"127.0.0.1:2"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	m := daemon.NewMain(cfg, "test", io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatalf("Run: got %v, want nil", err)
	}
	closed := false
	defer func() {
		if !closed {
			m.Close(context.Background())
		}
	}()

	for name, a := range map[string]string{"HTTPAddr": m.HTTPAddr(), "NATSAddr": m.NATSAddr()} {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatalf("got %s %q, want host:port: %v", name, a, err)
		}
		if p, _ := strconv.Atoi(port); host != "127.0.0.1" || p == 0 {
			t.Errorf("got %s %q, want 127.0.0.1 and a bound port", name, a)
		}
	}

	t.Run("AddrFile", func(t *testing.T) {
		b, err := os.ReadFile(addrPath)
		if err != nil {
			t.Fatalf("read %s: %v", daemon.AddrFile, err)
		}
		var got map[string]string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("got %q, want JSON: %v", b, err)
		}
		want := map[string]string{"http": m.HTTPAddr(), "nats": m.NATSAddr()}
		if len(got) != len(want) || got["http"] != want["http"] || got["nats"] != want["nats"] {
			t.Errorf("got %v, want %v", got, want)
		}
	})

	t.Run("KeyFile", func(t *testing.T) {
		st, err := os.Stat(cfg.KeyFile)
		if err != nil {
			t.Fatalf("stat key file: %v", err)
		}
		if got := st.Mode().Perm(); got != 0o600 {
			t.Errorf("got key file mode %o, want 600", got)
		}
	})

	t.Run("Healthz", func(t *testing.T) {
		client := &http.Client{Timeout: 10 * time.Second}
		resp, err := client.Get("http://" + m.HTTPAddr() + "/healthz")
		if err != nil {
			t.Fatalf("GET /healthz: %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("got status %d (%s), want 200", resp.StatusCode, body)
		}
		client.CloseIdleConnections()
	})

	if m.Store() == nil {
		t.Error("got nil Store() while running, want the store")
	}

	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	closed = true
	if err := m.Close(cctx); err != nil {
		t.Fatalf("first Close: got %v, want nil", err)
	}
	if _, err := os.Stat(addrPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got stat %s error %v after Close, want not exist", daemon.AddrFile, err)
	}
	if err := m.Close(cctx); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
	if c, err := net.DialTimeout("tcp", m.HTTPAddr(), time.Second); err == nil {
		c.Close()
		t.Errorf("got a connection to %s after Close, want refused", m.HTTPAddr())
	}
}

func TestMain_RestartSameDataDir(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 2; i++ {
		m := daemon.NewMain(cfg, "test", io.Discard)
		if err := m.Run(ctx); err != nil {
			t.Fatalf("run %d: got %v, want nil", i, err)
		}
		if err := m.Close(ctx); err != nil {
			t.Fatalf("close %d: got %v, want nil", i, err)
		}
	}
}

func TestMain_CloseUnstarted(t *testing.T) {
	t.Parallel()
	m := daemon.NewMain(testConfig(t), "test", io.Discard)
	if err := m.Close(context.Background()); err != nil {
		t.Errorf("got %v, want nil", err)
	}
	if a := m.HTTPAddr(); a != "" {
		t.Errorf("got HTTPAddr %q, want empty", a)
	}
	if a := m.NATSAddr(); a != "" {
		t.Errorf("got NATSAddr %q, want empty", a)
	}
}

func TestMain_RunFails(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	tests := []struct {
		name string
		mut  func(*daemon.Config)
	}{
		{"HTTPPortInUse", func(c *daemon.Config) { c.HTTPAddr = busy.Addr().String() }},
		{"BadKeyFile", func(c *daemon.Config) {
			os.WriteFile(c.KeyFile, []byte("garbage\n"), 0o600)
		}},
		{"DataDirIsAFile", func(c *daemon.Config) {
			p := filepath.Join(c.DataDir, "file")
			os.WriteFile(p, nil, 0o600)
			c.DataDir = p
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			tt.mut(&cfg)
			m := daemon.NewMain(cfg, "test", io.Discard)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := m.Run(ctx); err == nil {
				m.Close(ctx)
				t.Fatal("got nil error from Run, want one")
			}
			// Run cleans up after itself; Close stays safe.
			if _, err := os.Stat(filepath.Join(cfg.DataDir, daemon.AddrFile)); err == nil {
				t.Errorf("got %s after a failed Run, want none", daemon.AddrFile)
			}
			if err := m.Close(ctx); err != nil {
				t.Errorf("Close after failed Run: got %v, want nil", err)
			}
		})
	}
}

// TestMain_SdNotify plays systemd: it listens on a NOTIFY_SOCKET and checks
// READY=1 with a status, WATCHDOG=1 pings, and STOPPING=1 on Close.
func TestMain_SdNotify(t *testing.T) {
	// Unix socket paths are limited to ~108 bytes; t.TempDir can be longer.
	sockDir, err := os.MkdirTemp("", "sdn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sockPath := filepath.Join(sockDir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen %s: %v", sockPath, err)
	}
	defer conn.Close()

	msgs := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFrom(buf)
			if err != nil {
				close(msgs)
				return
			}
			select {
			case msgs <- string(buf[:n]):
			default: // drop watchdog pings nobody reads
			}
		}
	}()
	next := func(prefix string) string {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatalf("got socket closed, want %q", prefix)
				}
				if strings.HasPrefix(m, prefix) {
					return m
				}
			case <-deadline:
				t.Fatalf("got no %q within 10s", prefix)
			}
		}
	}

	t.Setenv("NOTIFY_SOCKET", sockPath)
	t.Setenv("WATCHDOG_USEC", "40000") // pings every 20ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))

	m := daemon.NewMain(testConfig(t), "test", io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatalf("Run: got %v, want nil", err)
	}
	ready := next("READY=1")
	if !strings.Contains(ready, m.HTTPAddr()) || !strings.Contains(ready, "STATUS=") {
		t.Errorf("got %q, want READY=1 with a STATUS naming %s", ready, m.HTTPAddr())
	}
	next("WATCHDOG=1")
	next("WATCHDOG=1")
	if err := m.Close(ctx); err != nil {
		t.Fatalf("Close: got %v, want nil", err)
	}
	next("STOPPING=1")
}

// TestMain_WatchdogOtherPID checks that a WATCHDOG_PID naming another
// process turns the pings off.
func TestMain_WatchdogOtherPID(t *testing.T) {
	sockDir, err := os.MkdirTemp("", "sdn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sockPath := filepath.Join(sockDir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen %s: %v", sockPath, err)
	}
	defer conn.Close()

	t.Setenv("NOTIFY_SOCKET", sockPath)
	t.Setenv("WATCHDOG_USEC", "2000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()+1))

	m := daemon.NewMain(testConfig(t), "test", io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatalf("Run: got %v, want nil", err)
	}
	// Make sure the HTTP side answers before looking at what was sent: by
	// then a 1ms watchdog would have pinged many times.
	resp, err := http.Get("http://" + m.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := m.Close(ctx); err != nil {
		t.Fatalf("Close: got %v, want nil", err)
	}

	var got []string
	buf := make([]byte, 4096)
	for {
		conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			break
		}
		got = append(got, string(buf[:n]))
		if strings.HasPrefix(string(buf[:n]), "STOPPING=1") {
			break
		}
	}
	for _, msg := range got {
		if strings.HasPrefix(msg, "WATCHDOG=1") {
			t.Errorf("got %q with WATCHDOG_PID of another process, want no pings", msg)
		}
	}
	if len(got) == 0 || !strings.HasPrefix(got[0], "READY=1") {
		t.Errorf("got messages %q, want READY=1 first", got)
	}
}
