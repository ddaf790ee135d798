package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
)

// startShortTimeouts runs kurad with timeouts short enough to test.
func startShortTimeouts(t *testing.T) *daemon.Main {
	t.Helper()
	cfg := testConfig(t)
	cfg.HTTPReadHeaderTimeout = 300 * time.Millisecond
	cfg.HTTPReadTimeout = time.Second
	cfg.HTTPWriteTimeout = time.Second
	cfg.HTTPIdleTimeout = time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m := daemon.NewMain(cfg, "test", io.Discard)
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// drip writes parts one every 100ms until the server hangs up or they run
// out, and returns how long the server kept the connection and what it
// answered.
func drip(t *testing.T, addr, head string, parts []string) (time.Duration, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	closed := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(conn) // until the server closes
		closed <- string(b)
	}()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		select {
		case got := <-closed:
			return time.Since(start), got
		case <-time.After(100 * time.Millisecond):
		}
		if _, err := io.WriteString(conn, p); err != nil {
			break // reset by the server
		}
	}
	select {
	case got := <-closed:
		return time.Since(start), got
	case <-time.After(10 * time.Second):
		t.Fatal("the server still holds the connection 10s after the client stopped")
	}
	return 0, ""
}

func TestHTTP_SlowHeadersCutOff(t *testing.T) {
	m := startShortTimeouts(t)
	parts := make([]string, 100) // 10s of headers, one line at a time
	for i := range parts {
		parts[i] = fmt.Sprintf("X-Slow-%d: 1\r\n", i)
	}
	took, got := drip(t, m.HTTPAddr(), "GET /healthz HTTP/1.1\r\nHost: kura\r\n", parts)
	if took > 3*time.Second {
		t.Errorf("a client sending headers slowly held the connection for %s; read-header timeout is 300ms", took)
	}
	if strings.Contains(got, "200 OK") {
		t.Errorf("a request whose headers never finished was served: %q", got)
	}
}

func TestHTTP_SlowBodyCutOff(t *testing.T) {
	m := startShortTimeouts(t)
	body := `{"type":"agent.thought","author_id":"agent:bmo","content":{"slow":"` + strings.Repeat("x", 100) + `"}}`
	head := fmt.Sprintf("POST /v1/records HTTP/1.1\r\nHost: kura\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	parts := make([]string, len(body)) // a byte every 100ms: ~15s
	for i := range body {
		parts[i] = body[i : i+1]
	}
	took, got := drip(t, m.HTTPAddr(), head, parts)
	if took > 4*time.Second {
		t.Errorf("a client sending its body slowly held the connection for %s; read timeout is 1s", took)
	}
	if strings.Contains(got, "201 Created") {
		t.Errorf("a body that never finished was stored: %q", got)
	}
	resp, err := http.Get("http://" + m.HTTPAddr() + "/v1/records")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct{ Records []json.RawMessage }
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != 0 {
		t.Errorf("%d records stored after a cut-off body", len(page.Records))
	}
}

func TestHTTP_IdleConnectionClosed(t *testing.T) {
	m := startShortTimeouts(t)
	conn, err := net.Dial("tcp", m.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: kura\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	start := time.Now()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the server sent bytes on an idle connection")
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("an idle keep-alive connection stayed open %s; idle timeout is 1s", took)
	}
}

func TestHTTP_HeaderLimit(t *testing.T) {
	m := startShortTimeouts(t)
	for _, tt := range []struct {
		size int
		want int
	}{
		{60 << 10, 200},
		// net/http allows 4 KiB over MaxHeaderBytes (64 KiB) for slack.
		{72 << 10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		req, _ := http.NewRequest("GET", "http://"+m.HTTPAddr()+"/healthz", nil)
		req.Header.Set("X-Big", strings.Repeat("a", tt.size))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%d-byte header: %v", tt.size, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%d-byte header: status %d, want %d", tt.size, resp.StatusCode, tt.want)
		}
	}
}

// TestHTTP_LongPollOutlivesWriteTimeout: a long poll answers after its
// wait even when that is longer than the server's write timeout.
func TestHTTP_LongPollOutlivesWriteTimeout(t *testing.T) {
	m := startShortTimeouts(t)
	base := "http://" + m.HTTPAddr()
	start := time.Now()
	resp, err := http.Get(base + "/v1/events?after=0&type=ledger.written&wait=2s")
	if err != nil {
		t.Fatalf("long poll cut off: %v", err)
	}
	defer resp.Body.Close()
	var page struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatalf("long poll answer: %v", err)
	}
	if resp.StatusCode != 200 || len(page.Events) != 0 {
		t.Errorf("status %d, %d events; want 200 and none", resp.StatusCode, len(page.Events))
	}
	if took := time.Since(start); took < 1900*time.Millisecond {
		t.Errorf("answered after %s; the wait is 2s", took)
	}
}
