package daemon_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
)

// TestMain_CloseDoesNotWaitForSilentConnections: a browser opens a
// connection ahead of need and sends nothing on it. Stopping kurad must not
// wait for it (http.Server.Shutdown alone waits five seconds), while a
// request already begun on another connection still gets its answer.
func TestMain_CloseDoesNotWaitForSilentConnections(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	m := daemon.NewMain(cfg, "test", io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	silent, err := net.Dial("tcp", m.HTTPAddr())
	if err != nil {
		m.Close(ctx)
		t.Fatal(err)
	}
	defer silent.Close()
	// A request that is answered: its connection is then idle, kept alive.
	used, err := net.Dial("tcp", m.HTTPAddr())
	if err != nil {
		m.Close(ctx)
		t.Fatal(err)
	}
	defer used.Close()
	if _, err := io.WriteString(used, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(used), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	start := time.Now()
	if err := m.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("close took %v with a silent connection open; want well under the 5 s Shutdown waits for one", d)
	}
	// The silent connection was closed by kurad, not left dangling.
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("silent connection after close: %v, want it closed by kurad", err)
	}
}
