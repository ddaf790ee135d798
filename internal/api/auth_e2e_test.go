package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/api"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// Tokens of the matrix: root sees everything; the a-tokens are limited to
// scope and project alpha; b writes project beta.
const (
	tRoot = "tok-root"
	tWA   = "tok-writer-a"
	tWA2  = "tok-writer-a2"
	tRA   = "tok-reader-a"
	tWB   = "tok-writer-b"
	tBad  = "tok-not-in-the-file"
	tRG   = "tok-reader-scope-gamma" // scope gamma, project alpha
)

type authEnv struct {
	t    *testing.T
	base string
	dir  string
	d    *kuradtest.Daemon
}

func startAuthKurad(t *testing.T, configure func(*daemon.Config)) *authEnv {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	lines := auth.HashToken(tRoot) + " user:root admin * *\n" +
		auth.HashToken(tWA) + " agent:a writer alpha alpha\n" +
		auth.HashToken(tWA2) + " agent:a2 writer alpha alpha\n" +
		auth.HashToken(tRA) + " agent:r reader alpha alpha\n" +
		auth.HashToken(tWB) + " agent:b writer beta beta\n" +
		auth.HashToken(tWP) + " agent:p writer gamma alpha\n" +
		auth.HashToken(tRS) + " agent:s reader beta *\n" +
		auth.HashToken(tRG) + " agent:rg reader gamma alpha\n" +
		auth.HashToken(tWD) + " agent:d writer alpha beta,default\n"
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
		c.TokensFile = file
		c.RateLimit = 0
		if configure != nil {
			configure(c)
		}
	}})
	return &authEnv{t: t, base: d.BaseURL(), dir: dir, d: d}
}

// do sends one request; a stream's body is cut short after its headers.
func (e *authEnv) do(tok, method, path, body string) (int, []byte) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if strings.Contains(path, "/events/stream") {
		ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
	}
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, e.base+path, rd)
	if body != "" || method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// must sends a request that has to succeed and decodes its answer.
func (e *authEnv) must(tok, method, path, body string) map[string]any {
	e.t.Helper()
	code, b := e.do(tok, method, path, body)
	if code >= 300 {
		e.t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// state is what any write changes: the event log and the counts.
func (e *authEnv) state() string {
	e.t.Helper()
	m := e.must(tRoot, "GET", "/v1/info", "")
	b, _ := json.Marshal([]any{m["last_event_seq"], m["counts"]})
	return string(b)
}

type fixture struct{ in, out, none map[string]string }

func (e *authEnv) seed() fixture {
	sidA := e.must(tWA, "POST", "/v1/sessions", `{"project":"alpha","name":"s"}`)["id"].(string)
	sidB := e.must(tWB, "POST", "/v1/sessions", `{"project":"beta","name":"s"}`)["id"].(string)
	open := func(tok, sid, author string) (tid, lid string) {
		m := e.must(tok, "POST", "/v1/sessions/"+sid+"/turns", `{"instruction":{"type":"task.instruction","content":"go","author_id":"`+author+`"}}`)
		return m["id"].(string), m["context_ledger_id"].(string)
	}
	tidA, lidA := open(tWA, sidA, "agent:a")
	tidB, lidB := open(tWB, sidB, "agent:b")
	recOf := func(lid string) (string, string) {
		l := e.must(tRoot, "GET", "/v1/ledgers/"+lid, "")
		rid := l["record_ids"].([]any)[0].(string)
		return rid, e.must(tRoot, "GET", "/v1/records/"+rid, "")["hash"].(string)
	}
	ridA, hashA := recOf(lidA)
	ridB, hashB := recOf(lidB)
	for _, sc := range []struct{ tok, scope, author string }{{tWA, "alpha", "agent:a"}, {tWB, "beta", "agent:b"}} {
		e.must(sc.tok, "POST", "/v1/scopes/"+sc.scope+"/memory/nodes", `{"kind":"fact","id":"n1","title":"t","summary":"s","owner":"`+sc.author+`"}`)
		e.must(sc.tok, "PUT", "/v1/kb/kb1/entries", `{"scope":"`+sc.scope+`","identifier":"x","value":"v"}`)
	}
	none := "0190aaaa-0000-7000-8000-000000000000"
	return fixture{
		in:   map[string]string{"sid": sidA, "tid": tidA, "lid": lidA, "rid": ridA, "hash": hashA, "scope": "alpha", "proj": "alpha", "author": "agent:a", "authorq": ""},
		out:  map[string]string{"sid": sidB, "tid": tidB, "lid": lidB, "rid": ridB, "hash": hashB, "scope": "beta", "proj": "beta", "author": "agent:b", "authorq": "?author_id=agent:b"},
		none: map[string]string{"sid": none, "tid": none, "lid": none, "rid": none, "hash": strings.Repeat("0", 64), "scope": "gamma", "proj": "gamma", "author": "agent:nobody", "authorq": "?author_id=agent:nobody"},
	}
}

func fill(s string, vars map[string]string, n int) string {
	for k, v := range vars {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return strings.ReplaceAll(s, "{n}", fmt.Sprint(n))
}

// matrixCase is one route. out says what a project/scope-limited caller
// gets for the other project's variant: "404" (answered exactly as a
// nonexistent id), "403" (an explicit scope/project/author it may not use),
// "same" (a filtered listing: answered as for a nonexistent filter value),
// "all" (refused whatever the variant: needs an unlimited token).
type matrixCase struct {
	route, path, body, role, out string
}

var matrix = []matrixCase{
	{"GET /metrics", "/metrics", "", "reader", ""},
	{"GET /v1/info", "/v1/info", "", "reader", ""},
	{"POST /v1/records", "/v1/records", `{"type":"agent.thought","content":"c{n}","author_id":"{author}"}`, "writer", "403"},
	{"POST /v1/records/batch", "/v1/records/batch", `{"records":[{"type":"agent.thought","content":"b{n}","author_id":"{author}"}]}`, "writer", "403"},
	{"GET /v1/records", "/v1/records{authorq}", "", "reader", "403"},
	{"GET /v1/records/by-hash/{hash}", "/v1/records/by-hash/{hash}", "", "reader", "404"},
	{"GET /v1/records/{id}", "/v1/records/{rid}", "", "reader", "404"},
	{"POST /v1/ledgers", "/v1/ledgers", `{"label":"l{n}","record_ids":["{rid}"]}`, "writer", "all"},
	{"GET /v1/ledgers/{id}", "/v1/ledgers/{lid}", "", "reader", "404"},
	{"GET /v1/ledgers/{id}/records", "/v1/ledgers/{lid}/records", "", "reader", "404"},
	{"GET /v1/ledgers/{id}/verify", "/v1/ledgers/{lid}/verify", "", "reader", "404"},
	{"GET /v1/ledgers/{id}/diff/{other}", "/v1/ledgers/{lid}/diff/{lid}", "", "reader", "404"},
	{"GET /v1/ledgers/{id}/proof/{record_id}", "/v1/ledgers/{lid}/proof/{rid}", "", "reader", "404"},
	{"POST /v1/sessions", "/v1/sessions", `{"project":"{proj}","name":"m{n}"}`, "writer", "403"},
	{"GET /v1/sessions", "/v1/sessions?project={proj}", "", "reader", "403"},
	{"GET /v1/sessions/{id}", "/v1/sessions/{sid}", "", "reader", "404"},
	{"GET /v1/sessions/{id}/log", "/v1/sessions/{sid}/log", "", "reader", "404"},
	{"GET /v1/sessions/{id}/reflog", "/v1/sessions/{sid}/reflog", "", "reader", "404"},
	{"GET /v1/sessions/{id}/verify", "/v1/sessions/{sid}/verify", "", "reader", "404"},
	{"POST /v1/sessions/{id}/head", "/v1/sessions/{sid}/head", `{"ledger_id":"{lid}","expected_head":null}`, "writer", "404"},
	{"POST /v1/sessions/{id}/turns", "/v1/sessions/{sid}/turns", `{"instruction":{"type":"task.instruction","content":"t{n}","author_id":"{author}"}}`, "writer", "404"},
	{"GET /v1/turns", "/v1/turns?session_id={sid}", "", "reader", "same"},
	{"GET /v1/turns/{id}", "/v1/turns/{tid}", "", "reader", "404"},
	{"POST /v1/turns/{id}/claim", "/v1/turns/{tid}/claim", `{"worker":"w{n}"}`, "writer", "404"},
	{"POST /v1/turns/{id}/renew", "/v1/turns/{tid}/renew", `{"epoch":1}`, "writer", "404"},
	{"POST /v1/turns/{id}/records", "/v1/turns/{tid}/records", `{"records":[{"type":"agent.thought","content":"a{n}","author_id":"{author}"}]}`, "writer", "404"},
	{"POST /v1/turns/{id}/close", "/v1/turns/{tid}/close", `{"status":"complete"}`, "writer", "404"},
	{"GET /v1/events", "/v1/events?project={proj}", "", "reader", "403"},
	{"GET /v1/events/stream", "/v1/events/stream?project={proj}", "", "reader", "403"},
	{"POST /v1/scopes/{scope}/memory/nodes", "/v1/scopes/{scope}/memory/nodes", `{"kind":"fact","id":"p{n}","title":"t","summary":"s"}`, "writer", "403"},
	{"POST /v1/scopes/{scope}/memory/nodes/batch", "/v1/scopes/{scope}/memory/nodes/batch", `{"nodes":[{"kind":"fact","id":"q{n}","title":"t","summary":"s"}]}`, "writer", "403"},
	{"GET /v1/scopes/{scope}/memory/nodes", "/v1/scopes/{scope}/memory/nodes", "", "reader", "403"},
	{"GET /v1/scopes/{scope}/memory/nodes/{ref}", "/v1/scopes/{scope}/memory/nodes/fact:n1", "", "reader", "403"},
	{"GET /v1/scopes/{scope}/memory/nodes/{ref}/history", "/v1/scopes/{scope}/memory/nodes/fact:n1/history", "", "reader", "403"},
	{"POST /v1/scopes/{scope}/memory/nodes/{ref}/transition", "/v1/scopes/{scope}/memory/nodes/fact:n1/transition", `{"lifecycle":"candidate","reason":"r"}`, "writer", "403"},
	{"POST /v1/scopes/{scope}/memory/nodes/{ref}/revise", "/v1/scopes/{scope}/memory/nodes/fact:n1/revise", `{"kind":"fact","id":"r{n}","title":"t","summary":"s"}`, "writer", "403"},
	{"POST /v1/scopes/{scope}/memory/relations", "/v1/scopes/{scope}/memory/relations", `{"from":"fact:n1","kind":"supports","to":"fact:n1"}`, "writer", "403"},
	{"GET /v1/scopes/{scope}/memory/relations", "/v1/scopes/{scope}/memory/relations", "", "reader", "403"},
	{"POST /v1/scopes/{scope}/memory/feedback", "/v1/scopes/{scope}/memory/feedback", `{"ref":"fact:n1","outcome":"positive","author_id":"{author}"}`, "writer", "403"},
	{"GET /v1/scopes/{scope}/memory/search", "/v1/scopes/{scope}/memory/search?q=t", "", "reader", "403"},
	{"POST /v1/scopes/{scope}/context/preview", "/v1/scopes/{scope}/context/preview", `{}`, "reader", "403"},
	{"POST /v1/scopes/{scope}/context/compile", "/v1/scopes/{scope}/context/compile", `{}`, "writer", "403"},
	{"GET /v1/scopes/{scope}/context/bundles/{id}", "/v1/scopes/{scope}/context/bundles/{rid}", "", "reader", "403"},
	{"GET /v1/scopes/{scope}/provenance/{ref}", "/v1/scopes/{scope}/provenance/fact:n1", "", "reader", "403"},
	{"GET /v1/scopes/{scope}/provenance/{ref}/evidence", "/v1/scopes/{scope}/provenance/fact:n1/evidence", "", "reader", "403"},
	{"GET /v1/scopes/{scope}/provenance/{ref}/raw-sources", "/v1/scopes/{scope}/provenance/fact:n1/raw-sources", "", "reader", "403"},
	{"GET /v1/scopes/{scope}/provenance/{ref}/derived", "/v1/scopes/{scope}/provenance/fact:n1/derived", "", "reader", "403"},
	{"PUT /v1/kb/{kb}/entries", "/v1/kb/kb1/entries", `{"scope":"{scope}","identifier":"y{n}","value":"v"}`, "writer", "403"},
	{"PUT /v1/kb/{kb}/entries/batch", "/v1/kb/kb1/entries/batch", `{"entries":[{"scope":"{scope}","identifier":"z{n}","value":"v"}]}`, "writer", "403"},
	{"PATCH /v1/kb/{kb}/entries", "/v1/kb/kb1/entries", `{"scope":"{scope}","identifier":"x","value":"v{n}"}`, "writer", "403"},
	{"DELETE /v1/kb/{kb}/entries", "/v1/kb/kb1/entries?scope={scope}&identifier=nothing", "", "writer", "403"},
	{"GET /v1/kb/{kb}/entries", "/v1/kb/kb1/entries?scope={scope}", "", "reader", "403"},
	{"GET /v1/kb/{kb}/stats", "/v1/kb/kb1/stats?scope={scope}", "", "reader", "403"},
	{"GET /v1/kb/{kb}/history", "/v1/kb/kb1/history?scope={scope}&identifier=x", "", "reader", "403"},
	{"GET /v1/kb/{kb}/lookup", "/v1/kb/kb1/lookup?scope={scope}&q=x", "", "reader", "403"},
	{"GET /v1/kb/{kb}/search", "/v1/kb/kb1/search?scope={scope}&q=x", "", "reader", "403"},
	{"POST /v1/admin/import", "/v1/admin/import", `{"records":[],"ledgers":[],"sessions":[]}`, "admin", "all"},
	{"POST /v1/admin/backup", "/v1/admin/backup", `{"path":"{dir}/backup-{n}"}`, "admin", "all"},
	{"POST /v1/admin/compact-events", "/v1/admin/compact-events", `{"before_seq":1}`, "admin", "all"},
	{"GET /v1/log/checkpoint", "/v1/log/checkpoint", "", "reader", ""},
	{"GET /v1/log/cosigned", "/v1/log/cosigned", "", "reader", ""},
	{"GET /v1/log/consistency", "/v1/log/consistency?old=1", "", "reader", ""},
	{"GET /v1/log/inclusion", "/v1/log/inclusion?ledger_id={lid}", "", "reader", "404"},
	{"GET /v1/log/inclusion", "/v1/log/inclusion?session_id={sid}", "", "reader", "404"},
	{"GET /v1/log/leaves", "/v1/log/leaves?start=0&end=1", "", "reader", ""},
	{"POST /v1/admin/log/acknowledge", "/v1/admin/log/acknowledge", `{"reason":"r{n}"}`, "admin", "all"},
	{"POST /mcp", "/mcp", `{"jsonrpc":"2.0","id":{n},"method":"ping"}`, "reader", ""},
	// Last: it drops the fixture records' content.
	{"POST /v1/records/{id}/redact", "/v1/records/{rid}/redact", `{"reason":"r{n}"}`, "admin", "404"},
}

// TestAuth_RouteRoleScopeMatrix walks every route × caller (anonymous, a
// bad token, reader, writer, admin) × the caller's own project/scope and
// another's. A refusal must change nothing (event seq and counts), and a
// refusal for the other project must read exactly as for what does not
// exist.
func TestAuth_RouteRoleScopeMatrix(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	fx := e.seed()
	for _, m := range []map[string]string{fx.in, fx.out, fx.none} {
		m["dir"] = e.dir
	}
	covered := map[string]bool{"GET /healthz": true, "GET /readyz": true, "GET /ui": true, "GET /ui/*": true}
	for _, c := range matrix {
		covered[c.route] = true
	}
	for _, k := range api.AccessRuleKeys() {
		if !covered[k] {
			t.Errorf("route %s is not in the matrix", k)
		}
	}
	// The console's files are open (the page holds no data; what it shows
	// comes from the routes above, with the token the person enters).
	for _, p := range []string{"/healthz", "/readyz", "/ui/", "/ui/app.js"} {
		if code, _ := e.do("", "GET", p, ""); code != 200 {
			t.Errorf("%s without a token: %d", p, code)
		}
	}
	rank := map[string]int{"reader": 1, "writer": 2, "admin": 3}
	callers := []struct {
		name, tok string
		rank      int
		limited   bool
	}{
		{"anonymous", "", 0, true},
		{"bad token", tBad, 0, true},
		{"reader a", tRA, 1, true},
		{"writer a", tWA, 2, true},
		{"root", tRoot, 3, false},
	}
	n := 0
	for _, c := range matrix {
		write := c.role != "reader" || (c.body != "" && !strings.Contains(c.route, "preview"))
		for _, who := range callers {
			for _, variant := range []string{"in", "out"} {
				n++
				vars := fx.in
				if variant == "out" {
					vars = fx.out
				}
				path, body := fill(c.path, vars, n), fill(c.body, vars, n)
				before := e.state()
				code, got := e.do(who.tok, strings.Fields(c.route)[0], path, body)
				after := e.state()
				name := fmt.Sprintf("%s as %s (%s)", c.route, who.name, variant)
				refused := true
				switch {
				case who.rank == 0:
					if code != 401 || !bytes.Contains(got, []byte(`"unauthenticated"`)) {
						t.Errorf("%s: %d %s, want 401 unauthenticated", name, code, got)
					}
				case who.rank < rank[c.role]:
					if code != 403 || !bytes.Contains(got, []byte(`"permission_denied"`)) {
						t.Errorf("%s: %d %s, want 403", name, code, got)
					}
				case who.limited && c.out == "all":
					if code != 403 {
						t.Errorf("%s: %d %s, want 403 (needs an unlimited token)", name, code, got)
					}
				case who.limited && variant == "out" && c.out == "403":
					if code != 403 || !bytes.Contains(got, []byte(`"permission_denied"`)) {
						t.Errorf("%s: %d %s, want 403", name, code, got)
					}
				case who.limited && variant == "out" && (c.out == "404" || c.out == "same"):
					ncode, ngot := e.do(who.tok, strings.Fields(c.route)[0], fill(c.path, fx.none, n), fill(c.body, fx.none, n))
					for _, k := range []string{"sid", "tid", "lid", "rid", "hash"} {
						got = bytes.ReplaceAll(got, []byte(fx.out[k]), []byte(fx.none[k]))
					}
					if code != ncode || !bytes.Equal(got, ngot) {
						t.Errorf("%s: %d %s\nwhile a nonexistent id gets %d %s", name, code, got, ncode, ngot)
					}
					refused = c.out == "404"
				default:
					refused = false
					if code == 401 || code == 403 || code >= 500 {
						t.Errorf("%s: %d %s, want it allowed", name, code, got)
					}
				}
				if refused && write && before != after {
					t.Errorf("%s was refused but changed the database: %s -> %s", name, before, after)
				}
			}
		}
	}
}
