package mcp_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCP_TokenScopes runs the HTTP API's access matrix through /mcp on a
// kurad with tokens: a token limited to scope and project alpha cannot
// read or write beta through any tool, a reader cannot write, a forged
// author is refused, and each refusal is the HTTP API's own error body for
// the same call and changes nothing.
func TestMCP_TokenScopes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	const root, wa, ra = "tok-root", "tok-writer-a", "tok-reader-a"
	lines := auth.HashToken(root) + " user:root admin * *\n" +
		auth.HashToken(wa) + " agent:a writer alpha alpha\n" +
		auth.HashToken(ra) + " agent:r reader alpha alpha\n"
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.TokensFile = file; c.RateLimit = 0 }})
	base := d.BaseURL()
	call := func(tok, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if body != "" || method != http.MethodGet {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	must := func(tok, method, path, body string) map[string]any {
		t.Helper()
		code, b := call(tok, method, path, body)
		if code/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, code, b)
		}
		var m map[string]any
		json.Unmarshal([]byte(b), &m)
		return m
	}
	for _, s := range []string{"alpha", "beta"} {
		must(root, "POST", "/v1/scopes/"+s+"/memory/nodes", `{"kind":"fact","id":"n1","title":"t","summary":"deploy"}`)
		must(root, "PUT", "/v1/kb/kb1/entries", `{"scope":"`+s+`","identifier":"x","value":"v"}`)
	}
	sid := must(root, "POST", "/v1/sessions", `{"project":"beta","name":"s"}`)["id"].(string)
	lid := must(root, "POST", "/v1/sessions/"+sid+"/turns", `{"instruction":{"type":"task.instruction","content":"go","author_id":"user:root"}}`)["context_ledger_id"].(string)
	rid := must(root, "GET", "/v1/ledgers/"+lid, "")["record_ids"].([]any)[0].(string)
	state := func() string {
		m := must(root, "GET", "/v1/info", "")
		b, _ := json.Marshal([]any{m["last_event_seq"], m["counts"]})
		return string(b)
	}

	session := func(tok string) *sdk.ClientSession {
		rt := &headerRT{}
		rt.set("Bearer " + tok)
		return connect(t, base+"/mcp", &http.Client{Transport: rt})
	}
	cases := []struct {
		who, tool     string
		args          map[string]any
		method, path  string
		body          string
		code, errCode string // the HTTP status class and error code both answer
	}{
		{"writer a", "memory_put", map[string]any{"scope": "beta", "kind": "fact", "id": "x1", "title": "t", "summary": "s"},
			"POST", "/v1/scopes/beta/memory/nodes", `{"kind":"fact","id":"x1","title":"t","summary":"s"}`, "403", "permission_denied"},
		{"writer a", "memory_search", map[string]any{"scope": "beta", "q": "deploy"},
			"GET", "/v1/scopes/beta/memory/search?q=deploy", "", "403", "permission_denied"},
		{"writer a", "memory_trace", map[string]any{"scope": "beta", "ref": "fact:n1"},
			"GET", "/v1/scopes/beta/provenance/fact:n1", "", "403", "permission_denied"},
		{"writer a", "get_belief_evidence", map[string]any{"scope": "beta", "ref": "fact:n1"},
			"GET", "/v1/scopes/beta/provenance/fact:n1/evidence", "", "403", "permission_denied"},
		{"writer a", "context_compile", map[string]any{"scope": "beta", "query": "deploy"},
			"POST", "/v1/scopes/beta/context/compile", `{"query":"deploy"}`, "403", "permission_denied"},
		{"writer a", "kb_lookup", map[string]any{"kb": "kb1", "scope": "beta", "q": "x"},
			"GET", "/v1/kb/kb1/lookup?scope=beta&q=x", "", "403", "permission_denied"},
		{"writer a", "kb_search", map[string]any{"kb": "kb1", "scope": "beta", "q": "x"},
			"GET", "/v1/kb/kb1/search?scope=beta&q=x", "", "403", "permission_denied"},
		{"writer a", "kb_put", map[string]any{"kb": "kb1", "scope": "beta", "identifier": "y", "value": "v"},
			"PUT", "/v1/kb/kb1/entries", `{"scope":"beta","identifier":"y","value":"v"}`, "403", "permission_denied"},
		{"writer a", "record_get", map[string]any{"id": rid},
			"GET", "/v1/records/" + rid, "", "404", "not_found"},
		{"writer a", "ledger_verify", map[string]any{"id": lid},
			"GET", "/v1/ledgers/" + lid + "/verify", "", "404", "not_found"},
		{"writer a", "session_log", map[string]any{"session_id": sid},
			"GET", "/v1/sessions/" + sid + "/log", "", "404", "not_found"},
		{"writer a", "record_put", map[string]any{"type": "agent.thought", "content": "c", "author_id": "agent:b"},
			"POST", "/v1/records", `{"type":"agent.thought","content":"c","author_id":"agent:b"}`, "403", "permission_denied"},
		{"reader a", "memory_put", map[string]any{"scope": "alpha", "kind": "fact", "id": "x2", "title": "t", "summary": "s"},
			"POST", "/v1/scopes/alpha/memory/nodes", `{"kind":"fact","id":"x2","title":"t","summary":"s"}`, "403", "permission_denied"},
	}
	tokens := map[string]string{"writer a": wa, "reader a": ra}
	sessions := map[string]*sdk.ClientSession{}
	for _, c := range cases {
		cs := sessions[c.who]
		if cs == nil {
			cs = session(tokens[c.who])
			sessions[c.who] = cs
		}
		before := state()
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s as %s: %v", c.tool, c.who, err)
		}
		code, httpBody := call(tokens[c.who], c.method, c.path, c.body)
		if !res.IsError || !strings.Contains(text(res), `"`+c.errCode+`"`) {
			t.Errorf("%s as %s: %s, want the tool error %s", c.tool, c.who, text(res), c.errCode)
		}
		if want := strings.TrimSpace(httpBody); text(res) != want || code/100 != int(c.code[0]-'0') {
			t.Errorf("%s as %s: tool error %s\nwhile HTTP answers %d %s", c.tool, c.who, text(res), code, want)
		}
		if after := state(); after != before {
			t.Errorf("%s as %s was refused but changed the database: %s -> %s", c.tool, c.who, before, after)
		}
	}
	// The same token works in its own scope.
	res, err := sessions["writer a"].CallTool(t.Context(), &sdk.CallToolParams{Name: "memory_search", Arguments: map[string]any{"scope": "alpha", "q": "deploy"}})
	if err != nil || res.IsError {
		t.Fatalf("memory_search in the token's own scope: %v %s", err, text(res))
	}
	// Without a token, /mcp itself answers 401.
	if code, body := call("", "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); code != 401 {
		t.Errorf("/mcp without a token: %d %s, want 401", code, body)
	}
}
