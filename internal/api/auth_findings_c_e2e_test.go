package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// hostCall sends one request to base with the given Host header (and
// token, when set): what a browser sends after a DNS rebinding.
func hostCall(t *testing.T, base, host, tok, method, path, body string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, base+path, rd)
	req.Host = host
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s (Host %s): %v", method, path, host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func infoState(t *testing.T, base string) string {
	t.Helper()
	code, b := hostCall(t, base, "", "", "GET", "/v1/info", "")
	if code != 200 {
		t.Fatalf("info: %d %s", code, b)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	out, _ := json.Marshal([]any{m["last_event_seq"], m["counts"]})
	return string(out)
}

// TestAuthC_TokenlessRefusesForeignHost: a page on evil.example whose name
// rebinds to 127.0.0.1 sends Host: evil.example. Tokenless, kurad answers
// only loopback names; every route (health checks and /mcp included) refuses
// any other Host with 403 permission_denied and changes nothing.
func TestAuthC_TokenlessRefusesForeignHost(t *testing.T) {
	d := kuradtest.StartMain(t, kuradtest.Options{})
	base := d.BaseURL()
	_, port, _ := net.SplitHostPort(d.HTTPAddr())
	routes := []struct{ method, path, body string }{
		{"GET", "/healthz", ""},
		{"GET", "/readyz", ""},
		{"GET", "/v1/info", ""},
		{"GET", "/v1/events?limit=1", ""},
		{"GET", "/v1/events/stream", ""},
		{"GET", "/v1/no-such-route", ""},
		{"POST", "/v1/records", `{"type":"agent.thought","content":"rebound","author_id":"agent:x"}`},
		{"POST", "/v1/sessions", `{"project":"p","name":"rebound"}`},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
	}
	for _, host := range []string{
		"evil.example", "evil.example:" + port, "EVIL.example:" + port,
		"localhost.evil.example:" + port, "127.0.0.1.nip.io:" + port, "localhost.:" + port,
		"0.0.0.0:" + port, "10.0.0.1:" + port, "[fe80::1]:" + port, "127.1:" + port,
	} {
		for _, rt := range routes {
			before := infoState(t, base)
			code, b := hostCall(t, base, host, "", rt.method, rt.path, rt.body)
			if code != 403 || !bytes.Contains(b, []byte(`"code":"permission_denied"`)) {
				t.Errorf("%s %s with Host %s: %d %s, want 403 permission_denied", rt.method, rt.path, host, code, b)
			}
			if after := infoState(t, base); after != before {
				t.Errorf("%s %s with Host %s changed the database: %s -> %s", rt.method, rt.path, host, before, after)
			}
		}
	}

	// A request with no Host at all (HTTP/1.0) names no loopback host either.
	conn, err := net.Dial("tcp", d.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(conn, "GET /v1/info HTTP/1.0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	conn.Close()
	if resp.StatusCode != 403 || !bytes.Contains(b, []byte(`"permission_denied"`)) {
		t.Errorf("GET /v1/info without a Host: %d %s, want 403", resp.StatusCode, b)
	}

	for _, host := range []string{
		"127.0.0.1:" + port, "127.0.0.1", "localhost:" + port, "localhost", "LocalHost:" + port,
		"[::1]:" + port, "[::1]", "127.4.5.6:" + port,
	} {
		for _, rt := range []struct{ method, path, body string }{
			{"GET", "/healthz", ""},
			{"GET", "/v1/info", ""},
			{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
			{"POST", "/v1/records", `{"type":"agent.thought","content":"local ` + host + `","author_id":"agent:x"}`},
		} {
			if code, b := hostCall(t, base, host, "", rt.method, rt.path, rt.body); code >= 300 {
				t.Errorf("%s %s with Host %s: %d %s, want it served", rt.method, rt.path, host, code, b)
			}
		}
	}
}

// TestAuthC_TokensDoNotCheckHost: with tokens the Host is not checked (a
// rebinding page holds no token), so kurad works behind a reverse proxy
// that passes its public name; without a token the answer is still 401.
func TestAuthC_TokensDoNotCheckHost(t *testing.T) {
	e := startAuthKurad(t, nil)
	for _, rt := range []struct{ method, path, body string }{
		{"GET", "/healthz", ""},
		{"GET", "/v1/info", ""},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
	} {
		if code, b := hostCall(t, e.base, "kura.example.com", tRA, rt.method, rt.path, rt.body); code != 200 {
			t.Errorf("%s %s with Host kura.example.com and a token: %d %s, want 200", rt.method, rt.path, code, b)
		}
	}
	if code, b := hostCall(t, e.base, "kura.example.com", "", "GET", "/v1/info", ""); code != 401 {
		t.Errorf("GET /v1/info with Host kura.example.com, no token: %d %s, want 401", code, b)
	}
}
