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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/nats-io/nats.go"
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
	if body != "" || method != http.MethodGet {
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
	t.Parallel()
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
	t.Parallel()
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

// feedEvents returns the events a token sees in the feed.
func (e *authEnv) feedEvents(tok, query string) []map[string]any {
	e.t.Helper()
	var page struct {
		Events []map[string]any `json:"events"`
	}
	code, b := e.do(tok, "GET", "/v1/events?limit=1000&"+query, "")
	if code != 200 {
		e.t.Fatalf("events as %s: %d %s", tok, code, b)
	}
	json.Unmarshal(b, &page)
	return page.Events
}

// eventFor finds the event of typ naming ref=id in the unrestricted feed.
func (e *authEnv) eventFor(typ, ref, id string) map[string]any {
	e.t.Helper()
	for _, ev := range e.feedEvents(tRoot, "type="+typ) {
		if ev[ref] == id {
			return ev
		}
	}
	e.t.Fatalf("no %s event with %s %s", typ, ref, id)
	return nil
}

// natsLog keeps every message published under oclaw.v1.>.
type natsLog struct {
	t    *testing.T
	ch   chan *nats.Msg
	seen []*nats.Msg
}

func subscribe(t *testing.T, d *kuradtest.Daemon) *natsLog {
	t.Helper()
	// With tokens, kurad's NATS takes a client with a Kura token only.
	nc, err := nats.Connect("nats://"+d.NATSAddr(), nats.Token(tRoot))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	l := &natsLog{t: t, ch: make(chan *nats.Msg, 1000)}
	if _, err := nc.ChanSubscribe("oclaw.v1.>", l.ch); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return l
}

// subject waits for the first message of the event with ref=id and
// returns its subject.
func (l *natsLog) subject(ref, id string) string {
	l.t.Helper()
	match := func(m *nats.Msg) bool {
		var p map[string]any
		json.Unmarshal(m.Data, &p)
		return p[ref] == id
	}
	for _, m := range l.seen {
		if match(m) {
			return m.Subject
		}
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m := <-l.ch:
			l.seen = append(l.seen, m)
			if match(m) {
				return m.Subject
			}
		case <-timeout:
			l.t.Fatalf("no NATS message for %s %s", ref, id)
			return ""
		}
	}
}

// TestAuthC_RecordProjectIDBound: metadata.project_id routes a record's
// event (feed and NATS subject) to that project, so a token may name only a
// project it holds. Records written inside a turn take the session's
// project whatever their metadata says.
func TestAuthC_RecordProjectIDBound(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	msgs := subscribe(t, e.d)
	rec := func(content, pid string) string {
		return `{"type":"agent.thought","content":"` + content + `","author_id":"agent:a","metadata":{"project_id":"` + pid + `"}}`
	}
	for _, c := range []struct{ name, path, body string }{
		{"one", "/v1/records", rec("into beta", "beta")},
		{"batch", "/v1/records/batch", `{"records":[` + rec("fine", "alpha") + `,` + rec("into beta 2", "beta") + `]}`},
		{"unheld project", "/v1/records", rec("into nowhere", "nowhere")},
	} {
		before := e.state()
		code, b := e.do(tWA, "POST", c.path, c.body)
		if code != 403 || !bytes.Contains(b, []byte(`"permission_denied"`)) || !bytes.Contains(b, []byte("project_id")) {
			t.Errorf("%s: writer of alpha naming another project_id: %d %s, want 403 naming project_id", c.name, code, b)
		}
		if after := e.state(); after != before {
			t.Errorf("%s: refused but changed the database: %s -> %s", c.name, before, after)
		}
	}
	for _, beta := range e.feedEvents(tRoot, "project=beta&type=record.written") {
		t.Errorf("beta's feed holds a record event: %v", beta)
	}

	own := e.must(tWA, "POST", "/v1/records", rec("into alpha", "alpha"))["id"].(string)
	if ev := e.eventFor("record.written", "record_id", own); ev["project"] != "alpha" {
		t.Errorf("record with project_id alpha: event project %v, want alpha", ev["project"])
	}
	if s := msgs.subject("record_id", own); s != "oclaw.v1.alpha.evt.record.written" {
		t.Errorf("record with project_id alpha: subject %s", s)
	}
	rootRec := e.must(tRoot, "POST", "/v1/records", `{"type":"agent.thought","content":"root","author_id":"user:root","metadata":{"project_id":"beta"}}`)["id"].(string)
	if ev := e.eventFor("record.written", "record_id", rootRec); ev["project"] != "beta" {
		t.Errorf("projects * naming beta: event project %v, want beta", ev["project"])
	}

	// Inside a turn the session's project wins: naming beta there reaches
	// nothing of beta's.
	sid := e.must(tWA, "POST", "/v1/sessions", `{"project":"alpha","name":"pid"}`)["id"].(string)
	tid := e.must(tWA, "POST", "/v1/sessions/"+sid+"/turns", `{"instruction":{"type":"task.instruction","content":"go","author_id":"agent:a","metadata":{"project_id":"beta"}}}`)["id"].(string)
	out := e.must(tWA, "POST", "/v1/turns/"+tid+"/records", `{"records":[`+rec("in the turn", "beta")+`]}`)
	inTurn := out["records"].([]any)[0].(map[string]any)["id"].(string)
	if ev := e.eventFor("record.written", "record_id", inTurn); ev["project"] != "alpha" {
		t.Errorf("turn record naming project_id beta: event project %v, want the session's alpha", ev["project"])
	}
	if s := msgs.subject("record_id", inTurn); s != "oclaw.v1.alpha.evt.record.written" {
		t.Errorf("turn record naming project_id beta: subject %s", s)
	}
	for _, beta := range e.feedEvents(tRoot, "project=beta&type=record.written") {
		if beta["record_id"] != rootRec {
			t.Errorf("beta's feed holds a record event of alpha's writer: %v", beta)
		}
	}
}

// TestAuthC_KBEventsCarryScope: kb.changed events carry the KB scope as
// their project (the default scope "" as default), as memory events carry
// theirs, on NATS and in the feed; a restricted token's feed shows only
// its scopes' KB events.
func TestAuthC_KBEventsCarryScope(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, func(c *daemon.Config) { c.DefaultProject = "dflt" })
	msgs := subscribe(t, e.d)
	put := func(tok, scope, id string) string {
		return e.must(tok, "PUT", "/v1/kb/kb1/entries", `{"scope":"`+scope+`","identifier":"`+id+`","value":"v"}`)["id"].(string)
	}
	entries := map[string]string{ // entry id -> want project
		put(tWA, "alpha", "a"):   "alpha",
		put(tWB, "beta", "b"):    "beta",
		put(tRoot, "gamma", "g"): "gamma",
		put(tRoot, "", "d"):      "default",
	}
	// A batch, a patch and a delete change entries too.
	e.must(tWA, "PUT", "/v1/kb/kb1/entries/batch", `{"entries":[{"scope":"alpha","identifier":"a2","value":"v"}]}`)
	e.must(tWA, "PATCH", "/v1/kb/kb1/entries", `{"scope":"alpha","identifier":"a","value":"v2"}`)
	e.must(tRoot, "DELETE", "/v1/kb/kb1/entries?scope=gamma&identifier=g", "")

	for id, want := range entries {
		if ev := e.eventFor("kb.changed", "entry_id", id); ev["project"] != want {
			t.Errorf("kb.changed of entry %s: project %v, want %s", id, ev["project"], want)
		}
		if s := msgs.subject("entry_id", id); s != "oclaw.v1."+want+".evt.kb.changed" {
			t.Errorf("kb.changed of entry %s: subject %s, want oclaw.v1.%s.evt.kb.changed", id, s, want)
		}
	}
	all := e.feedEvents(tRoot, "type=kb.changed")
	if len(all) != 7 {
		t.Fatalf("root sees %d kb.changed events, want 7: %v", len(all), all)
	}
	for _, c := range []struct {
		tok   string
		scope string
	}{
		{tRA, "alpha"}, // scopes alpha
		{tRG, "gamma"}, // scope gamma, project alpha: scope decides
		{tWB, "beta"},
	} {
		var want int
		for _, ev := range all {
			if ev["project"] == c.scope {
				want++
			}
		}
		for _, path := range []string{"/v1/events?type=kb.changed&limit=1000", "/v1/events/stream?type=kb.changed"} {
			got := e.kbEventsSeen(c.tok, path, want)
			if len(got) != want {
				t.Errorf("%s as %s: %d kb.changed events, want %d (scope %s): %v", path, c.tok, len(got), want, c.scope, got)
			}
			for _, ev := range got {
				if ev["project"] != c.scope {
					t.Errorf("%s as %s: sees kb.changed of %v: %v", path, c.tok, ev["project"], ev)
				}
			}
		}
	}
	// The feed's project filter names the scope too.
	if got := e.feedEvents(tRG, "type=kb.changed&project=alpha"); len(got) != 0 {
		t.Errorf("scope gamma token, project=alpha: %v, want none (alpha's KB is not its scope)", got)
	}
}

// kbEventsSeen reads the events path (feed or stream) as tok; a stream is
// read until n events arrived or a quiet second passed.
func (e *authEnv) kbEventsSeen(tok, path string, n int) []map[string]any {
	e.t.Helper()
	if !strings.Contains(path, "/stream") {
		var page struct {
			Events []map[string]any `json:"events"`
		}
		code, b := e.do(tok, "GET", path, "")
		if code != 200 {
			e.t.Fatalf("%s: %d %s", path, code, b)
		}
		json.Unmarshal(b, &page)
		return page.Events
	}
	s := e.openStream(tok, path)
	defer s.close()
	var out []map[string]any
	for {
		ev, ok := s.next(time.Second)
		if !ok {
			return out
		}
		out = append(out, ev)
		if len(out) > n {
			return out
		}
	}
}

// sse is an open event stream read line by line in the background.
type sse struct {
	t      *testing.T
	cancel context.CancelFunc
	lines  chan string // closed at the end of the stream
	status int
}

func (e *authEnv) openStream(tok, path string) *sse {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		e.t.Fatalf("stream %s: %v", path, err)
	}
	s := &sse{t: e.t, cancel: cancel, lines: make(chan string, 1000), status: resp.StatusCode}
	go func() {
		defer close(s.lines)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	e.t.Cleanup(cancel)
	return s
}

func (s *sse) close() { s.cancel() }

// next returns the data of the next event frame, or false when the stream
// ended or nothing came within quiet.
func (s *sse) next(quiet time.Duration) (map[string]any, bool) {
	timer := time.NewTimer(quiet)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				return nil, false
			}
			if d, found := strings.CutPrefix(l, "data: "); found {
				var m map[string]any
				json.Unmarshal([]byte(d), &m)
				return m, true
			}
		case <-timer.C:
			return nil, false
		}
	}
}

// ended waits up to d for the end of the stream and returns what came
// before it.
func (s *sse) ended(d time.Duration) ([]string, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	var got []string
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				return got, true
			}
			got = append(got, l)
		case <-timer.C:
			return got, false
		}
	}
}

// TestAuthC_IdempotencyKeyPerIdentity: an Idempotency-Key belongs to the
// identity that sent it. Another identity reusing it writes afresh (no 409
// telling it the key exists, no replay of someone else's answer), and the
// owner's retry still replays its own answer.
func TestAuthC_IdempotencyKeyPerIdentity(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	send := func(tok, key, body string) (int, http.Header, []byte) {
		req, _ := http.NewRequest("POST", e.base+"/v1/records", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	bodyA := `{"type":"agent.thought","content":"from a","author_id":"agent:a"}`
	bodyB := `{"type":"agent.thought","content":"from a2","author_id":"agent:a2"}`
	codeA, _, firstA := send(tWA, "shared-key", bodyA)
	if codeA != 201 {
		t.Fatalf("a: %d %s", codeA, firstA)
	}
	before := e.state()
	codeB, hB, gotB := send(tWA2, "shared-key", bodyB)
	if codeB != 201 || hB.Get("Idempotent-Replayed") != "" || !bytes.Contains(gotB, []byte(`"agent:a2"`)) {
		t.Errorf("a2 reusing a's key with its own body: %d replayed=%q %s, want a fresh 201 write", codeB, hB.Get("Idempotent-Replayed"), gotB)
	}
	if e.state() == before {
		t.Errorf("a2's write with a's key wrote nothing")
	}
	// The admin may send a's very body: still its own write, not a's answer.
	codeR, hR, gotR := send(tRoot, "shared-key", bodyA)
	if hR.Get("Idempotent-Replayed") != "" || codeR >= 300 || !bytes.Contains(gotR, []byte(`"deduplicated":true`)) {
		t.Errorf("root reusing a's key and body: %d replayed=%q %s, want its own (deduplicated) answer", codeR, hR.Get("Idempotent-Replayed"), gotR)
	}
	// Each identity's retry replays its own first answer.
	for _, c := range []struct {
		tok, body string
		want      []byte
	}{{tWA, bodyA, firstA}, {tWA2, bodyB, gotB}} {
		code, h, got := send(c.tok, "shared-key", c.body)
		if code != 201 || h.Get("Idempotent-Replayed") != "true" || !bytes.Equal(got, c.want) {
			t.Errorf("retry as %s: %d replayed=%q %s, want the first answer %s", c.tok, code, h.Get("Idempotent-Replayed"), got, c.want)
		}
	}
	// The key still guards its owner: another body under it is 409.
	if code, _, got := send(tWA, "shared-key", `{"type":"agent.thought","content":"other","author_id":"agent:a"}`); code != 409 {
		t.Errorf("a reusing its key with another body: %d %s, want 409", code, got)
	}
}

// TestAuthC_StreamsEndWhenTokenRevoked: a reload of the tokens file that
// removes a token ends that token's open event stream and long poll within
// a second or two, as one that changes a token's rights ends its stream;
// other tokens' streams keep going.
func TestAuthC_StreamsEndWhenTokenRevoked(t *testing.T) {
	e := startAuthKurad(t, nil)
	revoked := e.openStream(tWA, "/v1/events/stream")
	kept := e.openStream(tRA, "/v1/events/stream?project=alpha")
	widened := e.openStream(tWA2, "/v1/events/stream")
	if revoked.status != 200 || kept.status != 200 || widened.status != 200 {
		t.Fatalf("streams: %d %d %d", revoked.status, kept.status, widened.status)
	}
	type answer struct {
		code int
		body []byte
	}
	poll := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("GET", e.base+"/v1/events?after=1000000&wait=50s", nil)
		req.Header.Set("Authorization", "Bearer "+tWA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			poll <- answer{code: -1, body: []byte(err.Error())}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		poll <- answer{resp.StatusCode, b}
	}()
	// Both streams are live before the reload.
	sid := e.must(tWA, "POST", "/v1/sessions", `{"project":"alpha","name":"before"}`)["id"].(string)
	for _, s := range []*sse{revoked, kept, widened} {
		if ev, ok := s.next(10 * time.Second); !ok || ev["session_id"] != sid {
			t.Fatalf("stream before the reload: %v %v, want the session event", ev, ok)
		}
	}

	file := filepath.Join(e.dir, "tokens")
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// a's line goes; a2's stays with another project added.
	var keep []string
	for _, l := range strings.Split(string(old), "\n") {
		switch {
		case strings.HasPrefix(l, auth.HashToken(tWA)+" "):
		case strings.HasPrefix(l, auth.HashToken(tWA2)+" "):
			keep = append(keep, auth.HashToken(tWA2)+" agent:a2 writer alpha alpha,beta")
		default:
			keep = append(keep, l)
		}
	}
	if err := os.WriteFile(file, []byte(strings.Join(keep, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.d.ReloadTokens(); err != nil {
		t.Fatal(err)
	}

	lines, ok := revoked.ended(3 * time.Second)
	if !ok {
		t.Errorf("the revoked token's stream is still open 3s after the reload")
	} else if !strings.Contains(strings.Join(lines, "\n"), `"unauthenticated"`) {
		t.Errorf("the revoked stream ended without saying why: %q", lines)
	}
	// A token whose rights changed: its stream ends (it was filtered by
	// the old rights) without an error; a new one carries the new rights.
	if lines, ok := widened.ended(3 * time.Second); !ok {
		t.Errorf("the stream of a token whose rights changed is still open 3s after the reload")
	} else if strings.Contains(strings.Join(lines, "\n"), "event: error") {
		t.Errorf("the stream of a token whose rights changed ended with an error: %q", lines)
	}
	select {
	case a := <-poll:
		if a.code != 401 || !bytes.Contains(a.body, []byte(`"unauthenticated"`)) {
			t.Errorf("the revoked token's long poll: %d %s, want 401 unauthenticated", a.code, a.body)
		}
	case <-time.After(3 * time.Second):
		t.Errorf("the revoked token's long poll is still waiting 3s after the reload")
	}
	sid2 := e.must(tWA2, "POST", "/v1/sessions", `{"project":"alpha","name":"after"}`)["id"].(string)
	if ev, ok := kept.next(10 * time.Second); !ok || ev["session_id"] != sid2 {
		t.Errorf("a kept token's stream after the reload: %v %v, want the new session event", ev, ok)
	}
	if code, _ := e.do(tWA, "GET", "/v1/events/stream", ""); code != 401 {
		t.Errorf("a new stream with the revoked token: %d, want 401", code)
	}
}

// TestAuthC_ClaimWorkerBound: a writer claims turns only as itself; a claim
// naming another worker is 403 and writes nothing. Admins may name anyone,
// and a claim without worker is the caller's.
func TestAuthC_ClaimWorkerBound(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	turn := func(name string) string {
		sid := e.must(tWA, "POST", "/v1/sessions", `{"project":"alpha","name":"`+name+`"}`)["id"].(string)
		return e.must(tWA, "POST", "/v1/sessions/"+sid+"/turns", `{"instruction":{"type":"task.instruction","content":"go","author_id":"agent:a"}}`)["id"].(string)
	}
	t1, t2, t3 := turn("c1"), turn("c2"), turn("c3")
	for _, w := range []string{"agent:a2", "agent:someone-else", "user:root", "sys:kurad"} {
		before := e.state()
		code, b := e.do(tWA, "POST", "/v1/turns/"+t1+"/claim", `{"worker":"`+w+`","lease_seconds":60}`)
		if code != 403 || !bytes.Contains(b, []byte(`"permission_denied"`)) {
			t.Errorf("writer a claiming as %s: %d %s, want 403", w, code, b)
		}
		if after := e.state(); after != before {
			t.Errorf("refused claim as %s changed the database: %s -> %s", w, before, after)
		}
		if got := e.must(tRoot, "GET", "/v1/turns/"+t1, ""); got["epoch"] != float64(0) || got["worker"] != nil {
			t.Errorf("after a refused claim as %s the turn reads epoch %v worker %v", w, got["epoch"], got["worker"])
		}
	}
	if l := e.must(tWA, "POST", "/v1/turns/"+t1+"/claim", `{"worker":"agent:a","lease_seconds":60}`); l["worker"] != "agent:a" || l["epoch"] != float64(1) {
		t.Errorf("writer a claiming as itself: %v", l)
	}
	if l := e.must(tWA, "POST", "/v1/turns/"+t2+"/claim", `{"lease_seconds":60}`); l["worker"] != "agent:a" {
		t.Errorf("claim without worker: worker %v, want the caller agent:a", l["worker"])
	}
	if l := e.must(tRoot, "POST", "/v1/turns/"+t3+"/claim", `{"worker":"agent:pool-7"}`); l["worker"] != "agent:pool-7" {
		t.Errorf("admin claiming for agent:pool-7: %v", l)
	}
}

// TestAuth_ClaimedTurnWrittenByItsWorker: the epoch of a claimed turn is
// readable by every reader of its project, so holding it is not enough:
// append, renew and close of a claimed turn come from its worker (or an
// admin). Another writer of the project gets 403 and nothing is written.
func TestAuth_ClaimedTurnWrittenByItsWorker(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	sid := e.must(tWA, "POST", "/v1/sessions", `{"project":"alpha","name":"lease"}`)["id"].(string)
	tid := e.must(tWA, "POST", "/v1/sessions/"+sid+"/turns", `{"instruction":{"type":"task.instruction","content":"go","author_id":"agent:a"}}`)["id"].(string)
	e.must(tWA, "POST", "/v1/turns/"+tid+"/claim", `{"lease_seconds":60}`)
	epoch := fmt.Sprint(e.must(tRA, "GET", "/v1/turns/"+tid, "")["epoch"])
	refused := []struct{ name, path, body string }{
		{"append", "/records", `{"epoch":` + epoch + `,"records":[{"type":"agent.thought","content":"mine now","author_id":"agent:a2"}]}`},
		{"renew", "/renew", `{"epoch":` + epoch + `,"lease_seconds":60}`},
		{"close", "/close", `{"epoch":` + epoch + `,"status":"failed"}`},
	}
	for _, c := range refused {
		before := e.state()
		code, b := e.do(tWA2, "POST", "/v1/turns/"+tid+c.path, c.body)
		if code != 403 || !bytes.Contains(b, []byte(`"worker":"agent:a"`)) {
			t.Errorf("%s by another writer of the project: %d %s, want 403 naming the worker", c.name, code, b)
		}
		if after := e.state(); after != before {
			t.Errorf("refused %s changed the database: %s -> %s", c.name, before, after)
		}
	}
	// The worker, and an admin, still write it.
	e.must(tWA, "POST", "/v1/turns/"+tid+"/records", `{"epoch":`+epoch+`,"records":[{"type":"agent.thought","content":"step","author_id":"agent:a"}]}`)
	e.must(tWA, "POST", "/v1/turns/"+tid+"/renew", `{"epoch":`+epoch+`,"lease_seconds":60}`)
	e.must(tRoot, "POST", "/v1/turns/"+tid+"/close", `{"epoch":`+epoch+`,"status":"complete"}`)
}
