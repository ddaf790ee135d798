package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/api"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// csrfCall sends one request with exactly the headers given (no others
// added) and returns the status and the body.
func csrfCall(t *testing.T, base, method, path, body string, header map[string]string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, base+path, rd)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// backups lists the backup directory of d.
func backups(t *testing.T, d *kuradtest.Daemon) []string {
	t.Helper()
	ents, err := os.ReadDir(d.Config.BackupPath())
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// unsafeRoutes is every declared write of the matrix ("METHOD pattern"
// with its sample path and body), checked against the route table so that
// a new write cannot miss these tests.
func unsafeRoutes(t *testing.T, vars map[string]string) []matrixCase {
	t.Helper()
	inMatrix := map[string]matrixCase{}
	for _, c := range matrix {
		inMatrix[c.route] = c
	}
	var out []matrixCase
	for _, k := range api.AccessRuleKeys() {
		method := strings.SplitN(k, " ", 2)[0]
		if method == http.MethodGet || method == http.MethodHead {
			continue
		}
		c, ok := inMatrix[k]
		if !ok {
			t.Fatalf("route %s is not in the matrix (auth_e2e_test.go)", k)
		}
		c.path, c.body = fill(c.path, vars, 1), fill(c.body, vars, 1)
		out = append(out, c)
	}
	if len(out) < 20 {
		t.Fatalf("only %d writes in the route table", len(out))
	}
	return out
}

// TestCrossSite_TokenlessRefusesBrowserWrites (M3): a web page the local
// user opens can make their browser send a write to a tokenless kurad on
// 127.0.0.1 without asking first: a form's POST, a no-cors fetch, a
// beacon. Every write of the route table must refuse both such shapes
// before it changes anything: no JSON Content-Type (with or without a
// body) is 415, and a request the browser marks as coming from another
// origin (Sec-Fetch-Site, or Origin from a browser too old to send that)
// is 403, whatever it carries. Nothing changes: the event log, the counts
// and the backup directory stay as they were. Then the same writes from
// kurad's own origin (the console), from a client that is not a browser,
// and from another origin with a token are served.
func TestCrossSite_TokenlessRefusesBrowserWrites(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	base := d.BaseURL()
	none := "0190aaaa-0000-7000-8000-000000000000"
	vars := map[string]string{"sid": none, "tid": none, "lid": none, "rid": none, "scope": "gamma", "proj": "gamma",
		"author": "agent:x", "dir": d.Config.BackupPath()}
	before := infoState(t, base)

	record := `{"type":"agent.thought","content":"sent by another site","author_id":"user:evil"}`
	type shape struct {
		name   string
		body   string // "" keeps the route's sample body; "-" sends none
		header map[string]string
		status int
		code   string
	}
	shapes := []shape{
		// What a form or a no-cors fetch can send.
		{"no body, no type", "-", nil, 415, "unsupported_media_type"},
		{"no body, text/plain", "-", map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type"},
		{"form", "a=b", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"multipart", "--x--\r\n", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, 415, "unsupported_media_type"},
		{"JSON as text/plain", "", map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, 415, "unsupported_media_type"},
		// What a browser marks as another origin's, JSON type and all.
		{"cross-site", "", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}, 403, "permission_denied"},
		{"another port", "", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"}, 403, "permission_denied"},
		{"old browser, another origin", "", map[string]string{"Content-Type": "application/json", "Origin": "http://localhost:6274"}, 403, "permission_denied"},
		{"opaque origin", "", map[string]string{"Content-Type": "application/json", "Origin": "null"}, 403, "permission_denied"},
		{"no-cors fetch, no body", "-", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"}, 403, "permission_denied"},
	}
	for _, c := range unsafeRoutes(t, vars) {
		for _, sh := range shapes {
			body := c.body
			switch sh.body {
			case "-":
				body = ""
			case "":
			default:
				body = sh.body
			}
			if c.route == "POST /v1/records" && sh.body == "" {
				body = record
			}
			code, b := csrfCall(t, base, c.route[:strings.Index(c.route, " ")], c.path, body, sh.header)
			if code != sh.status || !bytes.Contains(b, []byte(`"code":"`+sh.code+`"`)) {
				t.Errorf("%s (%s): %d %s, want %d %s", c.route, sh.name, code, b, sh.status, sh.code)
			}
		}
	}
	if after := infoState(t, base); after != before {
		t.Errorf("refused writes changed the database: %s -> %s", before, after)
	}
	if got := backups(t, d); len(got) != 0 {
		t.Errorf("refused writes made backups: %v", got)
	}

	// Served: kurad's own origin (Sec-Fetch-Site same-origin, or an Origin
	// naming the Host), a request the user typed (none), and clients that
	// are not browsers (neither header), each with the JSON type.
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "same-origin", "Origin": base},
		{"Sec-Fetch-Site": "none"},
		{"Origin": base},
		{},
	} {
		h["Content-Type"] = "application/json"
		if code, b := csrfCall(t, base, "POST", "/v1/records", record, h); code != 201 && code != 200 {
			t.Errorf("POST /v1/records with %v: %d %s, want it written", h, code, b)
		}
	}
	// A backup without a body still works, with the type said.
	if code, b := csrfCall(t, base, "POST", "/v1/admin/backup", "", map[string]string{"Content-Type": "application/json"}); code != 200 {
		t.Errorf("POST /v1/admin/backup, no body, JSON type: %d %s", code, b)
	}
	if got := backups(t, d); len(got) != 1 {
		t.Errorf("backups after one asked for: %v", got)
	}
	// The MCP Inspector's proxy sends no Origin and is served; the
	// Inspector's page itself, straight from the browser, is another
	// origin.
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	mcpHeader := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	if code, b := csrfCall(t, base, "POST", "/mcp", ping, mcpHeader); code != 200 {
		t.Errorf("POST /mcp without Origin: %d %s", code, b)
	}
	mcpHeader["Origin"] = "http://localhost:6274"
	if code, b := csrfCall(t, base, "POST", "/mcp", ping, mcpHeader); code != 403 {
		t.Errorf("POST /mcp from http://localhost:6274: %d %s, want 403", code, b)
	}
}

// TestCrossSite_TokensNeedJSONOnly: with tokens a page holds no token, so
// another Origin is not refused (a reverse proxy may rewrite the Host it
// would be compared with), but a write still needs the JSON type, body or
// not, after its token is checked.
func TestCrossSite_TokensNeedJSONOnly(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	before := e.state()
	bearer := "Bearer " + tRoot
	if code, b := csrfCall(t, e.base, "POST", "/v1/admin/backup", "", map[string]string{"Authorization": bearer}); code != 415 {
		t.Errorf("POST /v1/admin/backup, no type, with a token: %d %s, want 415", code, b)
	}
	if code, b := csrfCall(t, e.base, "DELETE", "/v1/kb/kb1/entries?scope=alpha&identifier=x", "", map[string]string{"Authorization": bearer}); code != 415 {
		t.Errorf("DELETE kb entries, no type, with a token: %d %s, want 415", code, b)
	}
	if code, b := csrfCall(t, e.base, "POST", "/v1/admin/backup", "", nil); code != 401 {
		t.Errorf("POST /v1/admin/backup, no token: %d %s, want 401", code, b)
	}
	if after := e.state(); after != before {
		t.Errorf("refused writes changed the database: %s -> %s", before, after)
	}
	h := map[string]string{"Authorization": bearer, "Content-Type": "application/json", "Origin": "https://console.example", "Sec-Fetch-Site": "cross-site"}
	code, b := csrfCall(t, e.base, "POST", "/v1/records", `{"type":"agent.thought","content":"from a proxied page","author_id":"user:root"}`, h)
	if code != 201 {
		t.Errorf("POST /v1/records with a token from another origin: %d %s, want 201", code, b)
	}
	var rec map[string]any
	json.Unmarshal(b, &rec)
	if rec["id"] == nil {
		t.Errorf("no record id in %s", b)
	}
}
